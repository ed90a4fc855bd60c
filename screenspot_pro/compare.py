"""``screenspot-pro compare RUN_A RUN_B``: two run folders side by side, every strategy row each
ran (baseline, + RegionFocus, the peers of ``--strategy``), overall, per ui_type and per group,
then the rows both have paired sample by sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from regionfocus.kit import stats

from . import strategies
from .rows import details_for, load_run, regionfocus_enabled, row_label, shown_rows, strategy_rows
from .tables import groups_of, pct


def _short(label: str) -> str:
    return {"baseline": "base", "+ RegionFocus": "+RF"}.get(label, label)


def compare_runs(run_a: str | Path, run_b: str | Path) -> str:
    """Two runs side by side: overall, text, icon and each group, for every strategy row each run
    has. When the runs cover different samples, both are restricted to the samples they share."""
    recs = [load_run(run_a), load_run(run_b)]
    ids = [{r["id"] for r in rs} for rs in recs]
    common = ids[0] & ids[1]
    note = ""
    if ids[0] != ids[1] and common:
        note = (
            f"note: the runs cover different samples ({len(ids[0])} and {len(ids[1])}); "
            f"compared on the {len(common)} they share\n"
        )
        recs = [[r for r in rs if r["id"] in common] for rs in recs]
    elif ids[0] != ids[1]:
        note = "note: the runs share no sample; each is scored on its own samples\n"
    cols: list[tuple[str, list[dict[str, Any]]]] = [
        (f"{name} {_short(label)}", details)
        for name, rd, rs in zip("AB", (run_a, run_b), recs, strict=True)
        for label, details in strategy_rows(rs, regionfocus_enabled(rd))
    ]
    per_run = [details_for(rs, "baseline") for rs in recs]
    groups = [
        g for g in groups_of(*(d for _, d in cols)) if any(d["group"] == g for _, ds in cols for d in ds)
    ]
    slices: list[tuple[str, Any]] = [
        ("Overall", lambda d: True),
        ("  text", lambda d: d["ui_type"] == "text"),
        ("  icon", lambda d: d["ui_type"] == "icon"),
    ] + [(g, lambda d, g=g: d["group"] == g) for g in groups]
    w = max(12, *(len(s) for s, _ in slices))
    cw = max(9, *(len(c) for c, _ in cols))
    out = [
        f"A: {run_a}  ({len(recs[0])} samples)",
        f"B: {run_b}  ({len(recs[1])} samples)",
        note.rstrip("\n") if note else "",
        f"{'':<{w}} " + " ".join(f"{c:>{cw}}" for c, _ in cols) + f" {'n':>6}",
    ]
    for name, keep in slices:
        cells = [pct([d for d in ds if keep(d)]) for _, ds in cols]
        counts = [sum(1 for d in ds if keep(d)) for ds in per_run]
        n = str(counts[0]) if counts[0] == counts[1] else f"{counts[0]}/{counts[1]}"
        out.append(f"{name:<{w}} " + " ".join(f"{c:>{cw}}" for c in cells) + f" {n:>6}")
    if common:
        out += ["", *_paired_runs(recs, (run_a, run_b))]
    return "\n".join(line for line in out if line != "") + "\n"


def _paired_runs(recs: Sequence[Sequence[dict[str, Any]]], run_dirs: Sequence[str | Path]) -> list[str]:
    """Each row both runs have, A against B on the samples they share (paired by id)."""
    by_id = [{r["id"]: r for r in rs} for rs in recs]
    ids = [i for i in by_id[0] if i in by_id[1]]
    aligned = [[b[i] for i in ids] for b in by_id]
    names = [shown_rows(rs, regionfocus_enabled(rd)) for rs, rd in zip(aligned, run_dirs, strict=True)]
    rows = []
    for name in (n for n in names[0] if n in names[1]):
        t = stats.paired(strategies.outcomes(aligned[0], name), strategies.outcomes(aligned[1], name))
        if t is not None:
            rows.append(stats.paired_cells(f"A {row_label(name)}", f"B {row_label(name)}", t))
    if not rows:
        return []
    widths = [max(len(str(c)) for c in col) for col in zip(stats.PAIRED_HEAD, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [
        f"Paired on the {len(ids)} shared samples:",
        fmt.format(*stats.PAIRED_HEAD),
        *(fmt.format(*r) for r in rows),
        stats.HOW_TO_READ,
    ]
