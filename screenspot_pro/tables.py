"""The tables of a run's reports, each from the rows of :mod:`.rows`: the paper's Table 1
(text and markdown), accuracy per application, a benchmark's official per-split table, each
row's accuracy with its 95 % interval, and the paired comparisons of the rows.

Tables are (head, body) of formatted cells where both summary.md and report.html show them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from regionfocus.kit import stats

from . import strategies
from .dataset import GROUPS
from .formats import Format
from .metrics import CORRECT
from .rows import row_label

Rows = Sequence[tuple[str, Sequence[dict[str, Any]]]]


def pct(details: Sequence[dict[str, Any]]) -> str:
    """Accuracy in % of the entries, one decimal; "–" for none."""
    if not details:
        return "–"
    return f"{100 * sum(d['correctness'] == CORRECT for d in details) / len(details):.1f}"


def groups_of(*detail_lists: Sequence[dict[str, Any]]) -> list[str]:
    present = {d["group"] for ds in detail_lists for d in ds}
    return list(GROUPS) + sorted(g for g in present if g not in GROUPS and g is not None)


def table1_cells(details: Sequence[dict[str, Any]], groups: Sequence[str]) -> list[str]:
    """The paper's Table 1 cells: for each group then overall, text / icon / avg accuracy (%)."""
    cells = []
    for g in [*groups, None]:
        sub = [d for d in details if g is None or d["group"] == g]
        cells += [
            pct([d for d in sub if d["ui_type"] == "text"]),
            pct([d for d in sub if d["ui_type"] == "icon"]),
            pct(sub),
        ]
    return cells


def table1_markdown(rows: Rows) -> str:
    groups = groups_of(*(d for _, d in rows))
    head = ["Model"] + [f"{g} {k}" for g in [*groups, "Overall"] for k in ("Text", "Icon", "Avg")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, details in rows:
        lines.append("| " + " | ".join([label, *table1_cells(details, groups)]) + " |")
    return "\n".join(lines)


def table1_text(rows: Rows) -> str:
    """Table 1 for a terminal: a group header line above Text/Icon/Avg columns."""
    groups = groups_of(*(d for _, d in rows))
    label_w = max(14, *(len(label) for label, _ in rows))
    cw = 5
    block = 3 * cw + 2
    top = " " * label_w + " | " + " | ".join(f"{g:^{block}}" for g in [*groups, "Overall"])
    sub = (
        " " * label_w
        + " | "
        + " | ".join(" ".join(f"{k:>{cw}}" for k in ("Text", "Icon", "Avg")) for _ in [*groups, "Overall"])
    )
    out = [top, sub, "-" * len(sub)]
    for label, details in rows:
        cells = table1_cells(details, groups)
        blocks = [" ".join(f"{c:>{cw}}" for c in cells[i : i + 3]) for i in range(0, len(cells), 3)]
        out.append(f"{label:<{label_w}} | " + " | ".join(blocks))
    return "\n".join(out)


def app_table(rows: Rows) -> tuple[list[str], list[list[str]]]:
    """Accuracy (%) per application (with its group and sample count), one column per row."""
    apps = sorted({(d["group"] or "", d["application"]) for _, ds in rows for d in ds})
    head = ["Group", "Application", "n"] + [label for label, _ in rows]
    body = []
    for group, app in apps:
        subs = [[d for d in ds if d["application"] == app and (d["group"] or "") == group] for _, ds in rows]
        body.append([group, app, str(len(subs[-1])), *(pct(sub) for sub in subs)])
    return head, body


def split_table(rows: Rows, fmt: Format) -> tuple[list, list]:
    """The benchmark's official per-split table: accuracy (%) per split (with its sample count),
    over all samples, and the unweighted mean of the splits when its table has one."""
    docs = [(label, fmt.evaluate(ds)["metrics"]) for label, ds in rows]
    splits = docs[0][1]["splits"] if docs else {}
    head = ["", *(f"{k} (n={b['num_total']})" for k, b in splits.items()), "Overall"]
    head += ["Final Avg (mean of splits)"] if fmt.mean_of else []
    body = []
    for label, m in docs:
        accs = [b["action_acc"] for b in (*m["splits"].values(), m["overall"])] + (
            [m["mean_of_splits"]] if fmt.mean_of else []
        )
        body.append([label, *(f"{100 * a:.1f}" for a in accs)])
    return head, body


def markdown_table(head: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in body])


def interval_table(records: Sequence[dict[str, Any]], names: Sequence[str]) -> tuple[list, list]:
    """Each row's accuracy with its 95 % interval, overall, per ui_type and per group."""
    n = len(records)
    slices: list[tuple[str, Any]] = [("Overall", lambda s: True)]
    if any(r["sample"].get("ui_type") in ("text", "icon") for r in records):
        slices += [(k, lambda s, k=k: s.get("ui_type") == k) for k in ("text", "icon")]
    slices += [(g, lambda s, g=g: s.get("group") == g) for g in groups_of([r["sample"] for r in records])]
    slices = [(k, keep) for k, keep in slices if any(keep(r["sample"]) for r in records)]
    head = ["", f"overall (n={n})", *(k for k, _ in slices[1:])]
    body = []
    for name in names:
        right = strategies.outcomes(records, name)
        cells = []
        for _, keep in slices:
            sel = [ok for ok, r in zip(right, records, strict=True) if keep(r["sample"])]
            cells.append(stats.pct_ci(sum(sel), len(sel)))
        body.append([row_label(name), *cells])
    return head, body


def paired_table(records: Sequence[dict[str, Any]], names: Sequence[str]) -> list[list[str]]:
    """Every row against the baseline, then every two other rows against each other."""
    vectors = {n: strategies.outcomes(records, n) for n in names}
    others = [n for n in names if n != strategies.BASELINE]
    pairs = [(n, strategies.BASELINE) for n in others if strategies.BASELINE in vectors]
    pairs += [(a, b) for i, a in enumerate(others) for b in others[i + 1 :]]
    out = []
    for a, b in pairs:
        t = stats.paired(vectors[a], vectors[b])
        if t is not None:
            out.append(stats.paired_cells(row_label(a), row_label(b), t))
    return out
