"""Everything derived from a run folder's records: official results, summary.md, report.html,
and the side-by-side comparison of two runs.

Nothing here needs the dataset or the model: ``write_reports(run_dir)`` rebuilds every file from
``records.jsonl`` (and ``config.json`` when present). The screenshots are read from the paths the
records name, only for the HTML report, which says so when one is missing.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from regionfocus.kit import prices, stats
from regionfocus.kit.report_shell import Overlay, jpeg_data_url, render, thumbnail
from regionfocus.kit.runlog import (
    RECORDS,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    flatten,
    read_config,
    read_records,
    selected_count,
    selected_ids,
)

from . import strategies
from .dataset import GROUPS, sample_order_key
from .formats import Format, by_name
from .metrics import CORRECT, detail
from .record_fields import RECORD_FIELDS

ROWS = (("baseline", "baseline"), ("final", "+ RegionFocus"))


# ----------------------------------------------------------------------------- loading
def load_run(run_dir: str | Path) -> list[dict[str, Any]]:
    """The run's records in dataset order (annotation file, then id), each checked against the
    record contract (:mod:`.record_fields`; ids among those the run selected, when its config
    says): a line that breaks it raises, naming file, line and field."""
    path = Path(run_dir) / RECORDS
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} is not a run folder: no {RECORDS} in it")
    records = read_records(path, RECORD_FIELDS, selected_ids(read_config(run_dir)))
    records.sort(key=lambda r: sample_order_key(r["sample"]["task_filename"], r["id"]))
    return records


def benchmark(config: dict[str, Any]) -> Format:
    """The benchmark a run folder's config pinned (none: ScreenSpot-Pro)."""
    return by_name(config.get("identity", {}).get("format"))


def regionfocus_enabled(run_dir: str | Path) -> bool:
    return bool(read_config(run_dir).get("identity", {}).get("regionfocus_enabled", True))


def peer_names(records: Sequence[dict[str, Any]]) -> list[str]:
    """The peer strategies a run compared (``--strategy``), as first met."""
    return [n for n in strategies.rows_of(records) if n not in (strategies.BASELINE, strategies.REGIONFOCUS)]


def details_for(records: Sequence[dict[str, Any]], row: str) -> list[dict[str, Any]]:
    """Official detail entries for ``row`` ("baseline", "final", or a peer strategy's name).
    Error samples stay in, scored wrong, and carry our ``status``/``error`` beside the
    official keys; partial samples are scored as answered and carry what they lost as ``error``."""
    out = []
    for r in records:
        res = r[row] if row in ("baseline", "final") else strategies.row_result(r, row)
        if res is None:  # the strategy has no result for this sample (an error record)
            res = {"point": None, "raw_response": "", "correctness": "wrong"}
        d = detail(r["sample"], res["point"], res["raw_response"], res["correctness"])
        if r["status"] != "ok":
            d.update(status=r["status"], error=r.get("error") or r.get("lost"))
        out.append(d)
    return out


# ----------------------------------------------------------------------------- tables
def _pct(details: Sequence[dict[str, Any]]) -> str:
    if not details:
        return "–"
    return f"{100 * sum(d['correctness'] == CORRECT for d in details) / len(details):.1f}"


def _groups_of(*detail_lists: Sequence[dict[str, Any]]) -> list[str]:
    present = {d["group"] for ds in detail_lists for d in ds}
    return list(GROUPS) + sorted(g for g in present if g not in GROUPS and g is not None)


def table1_cells(details: Sequence[dict[str, Any]], groups: Sequence[str]) -> list[str]:
    """The paper's Table 1 cells: for each group then overall, text / icon / avg accuracy (%)."""
    cells = []
    for g in [*groups, None]:
        sub = [d for d in details if g is None or d["group"] == g]
        cells += [
            _pct([d for d in sub if d["ui_type"] == "text"]),
            _pct([d for d in sub if d["ui_type"] == "icon"]),
            _pct(sub),
        ]
    return cells


def table1_markdown(rows: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> str:
    groups = _groups_of(*(d for _, d in rows))
    head = ["Model"] + [f"{g} {k}" for g in [*groups, "Overall"] for k in ("Text", "Icon", "Avg")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, details in rows:
        lines.append("| " + " | ".join([label, *table1_cells(details, groups)]) + " |")
    return "\n".join(lines)


def table1_text(rows: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> str:
    """Table 1 for a terminal: a group header line above Text/Icon/Avg columns."""
    groups = _groups_of(*(d for _, d in rows))
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


def app_table_markdown(rows: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> str:
    apps = sorted({(d["group"] or "", d["application"]) for _, ds in rows for d in ds})
    head = ["Group", "Application", "n"] + [label for label, _ in rows]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group, app in apps:
        cells = []
        n = 0
        for _, ds in rows:
            sub = [d for d in ds if d["application"] == app and (d["group"] or "") == group]
            n = len(sub)
            cells.append(_pct(sub))
        lines.append("| " + " | ".join([group, app, str(n), *cells]) + " |")
    return "\n".join(lines)


def split_table(rows: Sequence[tuple[str, Sequence[dict[str, Any]]]], fmt: Format) -> tuple[list, list]:
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


# ----------------------------------------------------------------------------- uncertainty
def _row_label(name: str) -> str:
    return dict(ROWS).get("final" if name == strategies.REGIONFOCUS else name, name)


def shown_rows(records: Sequence[dict[str, Any]], enabled: bool) -> list[str]:
    """The strategy rows a run reports: the baseline, RegionFocus when it ran, the peers."""
    return [n for n in strategies.rows_of(records) if enabled or n != strategies.REGIONFOCUS]


def interval_table(records: Sequence[dict[str, Any]], names: Sequence[str]) -> tuple[list, list]:
    """Each row's accuracy with its 95 % interval, overall, per ui_type and per group."""
    n = len(records)
    slices: list[tuple[str, Any]] = [("Overall", lambda s: True)]
    if any(r["sample"].get("ui_type") in ("text", "icon") for r in records):
        slices += [(k, lambda s, k=k: s.get("ui_type") == k) for k in ("text", "icon")]
    slices += [(g, lambda s, g=g: s.get("group") == g) for g in _groups_of([r["sample"] for r in records])]
    slices = [(k, keep) for k, keep in slices if any(keep(r["sample"]) for r in records)]
    head = ["", f"overall (n={n})", *(k for k, _ in slices[1:])]
    body = []
    for name in names:
        right = strategies.outcomes(records, name)
        cells = []
        for _, keep in slices:
            sel = [ok for ok, r in zip(right, records, strict=True) if keep(r["sample"])]
            cells.append(stats.pct_ci(sum(sel), len(sel)))
        body.append([_row_label(name), *cells])
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
            out.append(stats.paired_cells(_row_label(a), _row_label(b), t))
    return out


def uncertainty_markdown(records: Sequence[dict[str, Any]], enabled: bool) -> list[str]:
    names = shown_rows(records, enabled)
    lines = ["## Accuracy with 95 % intervals", "", markdown_table(*interval_table(records, names)), ""]
    pairs = paired_table(records, names)
    if pairs:
        lines += ["## Paired comparisons", "", markdown_table(stats.PAIRED_HEAD, pairs), ""]
    return lines + [stats.HOW_TO_READ, ""]


# ----------------------------------------------------------------------------- statistics
def outcome(rec: dict[str, Any]) -> str:
    """How the sample moved: "error", "wrong→right", "right→wrong", "right→right", "wrong→wrong".
    A partial sample (some model calls failed) moved as its recorded answers say."""
    if rec["status"] == "error":
        return "error"
    b = "right" if rec["baseline"]["correctness"] == CORRECT else "wrong"
    f = "right" if rec["final"]["correctness"] == CORRECT else "wrong"
    return f"{b}→{f}"


def run_stats(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Trigger rate, judge quality, flips, errors and cost; every count over all records."""
    n = len(records)
    judged = [r for r in records if r.get("verdict") is not None]
    base_right = [r["baseline"]["correctness"] == CORRECT for r in judged]
    rejected = [r.get("trigger") is not None for r in judged]
    judge = {
        "judged": len(judged),
        "verdicts": dict(Counter(r["verdict"] for r in judged)),
        "rejected_right": sum(rj and br for rj, br in zip(rejected, base_right, strict=True)),
        "rejected_wrong": sum(rj and not br for rj, br in zip(rejected, base_right, strict=True)),
        "accepted_right": sum(not rj and br for rj, br in zip(rejected, base_right, strict=True)),
        "accepted_wrong": sum(not rj and not br for rj, br in zip(rejected, base_right, strict=True)),
    }

    def mean(key: str) -> float:
        return sum(float(r.get(key) or 0) for r in records) / n if n else 0.0

    triggered = [r for r in records if r.get("trigger")]
    return {
        "n": n,
        "errors": sum(r["status"] == "error" for r in records),
        "partial": sum(r["status"] == "partial" for r in records),
        "error_examples": [f"{r['id']}: {r.get('error')}" for r in records if r["status"] == "error"][:5],
        "partial_examples": [f"{r['id']}: {r.get('lost')}" for r in records if r["status"] == "partial"][:5],
        "triggered": len(triggered),
        "trigger_rate": len(triggered) / n if n else 0.0,
        "triggers": dict(Counter(r["trigger"] for r in triggered)),
        "judge": judge,
        "outcomes": dict(Counter(outcome(r) for r in records)),
        "calls_per_sample": mean("n_calls"),
        "failed_calls": sum(int(r.get("n_failed_calls") or 0) for r in records),
        "prompt_tokens_per_sample": mean("prompt_tokens"),
        "completion_tokens_per_sample": mean("completion_tokens"),
        "seconds_per_sample": mean("seconds"),
        "model_seconds_per_sample": mean("model_seconds"),
    }


def price_table(config: dict[str, Any], override: str | Path | None = None) -> prices.PriceTable:
    """The table a run is priced with: ``override`` (``--prices`` of ``report``), else the file
    the run was started with, else the built-in one."""
    return prices.load(override or config.get("invocation", {}).get("prices"))


def pricing(config: dict[str, Any], table: prices.PriceTable) -> strategies.Pricing:
    """USD of a cost row's tokens; calls whose backend named no model are the run's ``--model``."""
    model = config.get("identity", {}).get("model")
    return lambda by_model: table.cost(by_model, model)


def money_lines(
    records: Sequence[dict[str, Any]], config: dict[str, Any], table: prices.PriceTable
) -> list[str]:
    """Dollars per sample of the baseline and RegionFocus rows, and the rates they came from."""
    rows = {r["strategy"]: r for r in strategies.comparison(records, pricing(config, table))}
    models = {
        m or config.get("identity", {}).get("model") or "(unnamed)"
        for r in records
        for cost in (r.get("cost") or {}).values()
        for m in (cost.get("by_model") or {})
    }
    if not models:
        return []
    cells = [
        f"{label} {strategies.usd_cell(rows[name].get('usd'))}"
        for name in shown_rows(records, config.get("identity", {}).get("regionfocus_enabled", True))
        if name in (strategies.BASELINE, strategies.REGIONFOCUS) and name in rows
        for label in [_row_label(name)]
    ]
    return [
        f"- USD: {', '.join(cells)} (prices: {table.origin})",
        *(f"  - {line}" for line in table.describe(models)),
    ]


def summary_markdown(
    records: Sequence[dict[str, Any]],
    config: dict[str, Any],
    n_selected: int | None = None,
    table: prices.PriceTable | None = None,
) -> str:
    table = table or price_table(config)
    ident = config.get("identity", {})
    enabled = ident.get("regionfocus_enabled", True)
    rows = [(label, details_for(records, row)) for row, label in ROWS if enabled or row == "baseline"]
    s = run_stats(records)
    j = s["judge"]
    oc = s["outcomes"]
    done = f"{s['n']} samples" + (
        f" of {n_selected} selected (rerun the same command to finish)"
        if n_selected is not None and n_selected > s["n"]
        else ""
    )
    who = ", ".join(f"{k}={ident[k]}" for k in ("agent", "model") if ident.get(k))
    fmt = benchmark(config)
    lines = [
        f"# {fmt.title} run",
        "",
        f"{done}; {who or 'agent unknown'}; data: {ident.get('data', 'unknown')}.",
        "Accuracy in %, a point is right when it falls inside the target box (edges inclusive)."
        if fmt.parser is None
        else f"Accuracy in %, each answer scored as {fmt.title}'s official script scores it.",
        f"Errors (counted wrong, kept in the denominator): {s['errors']}. "
        f"Partial (some model calls failed; scored as answered, kept in the denominator): {s['partial']}."
        + (" `--retry-errors` reruns both." if s["errors"] or s["partial"] else ""),
        "",
    ]
    if fmt.parser is None:
        lines += [
            "## Table 1 layout",
            "",
            table1_markdown(rows),
            "",
            "## Per application",
            "",
            app_table_markdown(rows),
            "",
        ]
    else:
        lines += ["## Per split (the official tables)", "", markdown_table(*split_table(rows, fmt)), ""]
    lines += uncertainty_markdown(records, enabled)
    if enabled:
        lines += [
            "## RegionFocus",
            "",
            f"- Trigger rate: {s['triggered']}/{s['n']} ({100 * s['trigger_rate']:.1f}%)"
            + (f"; by trigger: {_counts(s['triggers'])}" if s["triggers"] else ""),
            f"- Self-judge: {j['judged']} judged ({_counts(j['verdicts']) or 'none'}); "
            f"rejected {j['rejected_wrong']} wrong and {j['rejected_right']} right baselines; "
            f"accepted {j['accepted_right']} right and {j['accepted_wrong']} wrong baselines.",
            f"- Flips: wrong→right {oc.get('wrong→right', 0)}, right→wrong {oc.get('right→wrong', 0)}"
            f" (unchanged right {oc.get('right→right', 0)}, unchanged wrong {oc.get('wrong→wrong', 0)}).",
            "",
        ]
    lines += [
        "## Cost per sample",
        "",
        f"- Model calls: {s['calls_per_sample']:.2f} ({s['failed_calls']} failed calls in total)",
        f"- Tokens: {s['prompt_tokens_per_sample']:.0f} prompt, {s['completion_tokens_per_sample']:.0f} completion",
        f"- Seconds: {s['seconds_per_sample']:.2f} wall, {s['model_seconds_per_sample']:.2f} summed over model calls",
        *money_lines(records, config, table),
        *_peak_rss_line(records),
        "",
    ]
    if peer_names(records):
        lines += [
            "## Strategies",
            "",
            "Accuracy in %; cost per sample, the baseline's request included (image tokens as the "
            "model's processor counts them; text tokens = prompt + completion - image). "
            "W→R / R→W: flips against the baseline. Plot: strategies.png.",
            "",
            strategies.comparison_markdown(strategies.comparison(records, pricing(config, table))),
        ]
    if s["error_examples"]:
        lines += ["## Errors (first 5)", ""] + [f"- {e}" for e in s["error_examples"]] + [""]
    if s["partial_examples"]:
        lines += ["## Partial samples (first 5)", ""] + [f"- {e}" for e in s["partial_examples"]] + [""]
    if ident:
        lines += ["## Configuration", "", "```"]
        lines += [f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in flatten(ident).items()]
        lines += ["```", ""]
    return "\n".join(lines)


def _counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (-kv[1], str(kv[0]))))


# ----------------------------------------------------------------------------- writing
def write_reports(
    run_dir: str | Path,
    *,
    n_selected: int | None = None,
    thumb_width: int = 1200,
    max_images: int | None = 400,
    prices_file: str | Path | None = None,
) -> list[dict[str, Any]]:
    """(Re)write results.json, results_baseline.json, summary.md and report.html from the
    folder alone, each atomically. Returns the records in dataset order. ``prices_file``:
    another price table than the run's (``report --prices``). ``n_selected``: the samples the
    run selected (default: as its config.json says)."""
    run_dir = Path(run_dir)
    records = load_run(run_dir)
    config = read_config(run_dir)
    n_selected = selected_count(config) if n_selected is None else n_selected
    table = price_table(config, prices_file)
    evaluate = benchmark(config).evaluate
    atomic_write_json(run_dir / "results.json", evaluate(details_for(records, "final")))
    atomic_write_json(run_dir / "results_baseline.json", evaluate(details_for(records, "baseline")))
    for name in peer_names(records):
        atomic_write_json(run_dir / f"results_{name}.json", evaluate(details_for(records, name)))
    if peer_names(records):
        buf = io.BytesIO()
        strategies.plot_png(strategies.comparison(records, pricing(config, table))).save(buf, "PNG")
        atomic_write_bytes(run_dir / "strategies.png", buf.getvalue())
    atomic_write_text(run_dir / "summary.md", summary_markdown(records, config, n_selected, table))
    atomic_write_text(
        run_dir / "report.html",
        html_report(records, config, thumb_width=thumb_width, max_images=max_images, table=table),
    )
    return records


def table_for_run(run_dir: str | Path) -> str:
    """The Table 1 text printed at the end of a run."""
    records = load_run(run_dir)
    enabled = regionfocus_enabled(run_dir)
    rows = [(label, details_for(records, row)) for row, label in ROWS if enabled or row == "baseline"]
    fmt = benchmark(read_config(run_dir))
    return table1_text(rows) if fmt.parser is None else markdown_table(*split_table(rows, fmt))


def compare_runs(run_a: str | Path, run_b: str | Path) -> str:
    """Two runs side by side: overall, text, icon and each group, for baseline and + RegionFocus.
    When the runs cover different samples, both are restricted to the samples they share."""
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
    names = ["A", "B"]
    cols: list[tuple[str, list[dict[str, Any]]]] = []
    for name, rd, rs in zip(names, (run_a, run_b), recs, strict=True):
        for row, _ in ROWS:
            if row == "final" and not regionfocus_enabled(rd):
                continue
            cols.append((f"{name} {'base' if row == 'baseline' else '+RF'}", details_for(rs, row)))
    per_run = [details_for(rs, "baseline") for rs in recs]
    groups = [
        g for g in _groups_of(*(d for _, d in cols)) if any(d["group"] == g for _, ds in cols for d in ds)
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
        cells = [_pct([d for d in ds if keep(d)]) for _, ds in cols]
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
            rows.append(stats.paired_cells(f"A {_row_label(name)}", f"B {_row_label(name)}", t))
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


# ----------------------------------------------------------------------------- HTML
BASELINE_COLOR = "#e61e1e"
FINAL_COLOR = "#145aff"


def _overlay(rec: dict[str, Any]) -> Overlay:
    """The last RegionFocus round (boxes, candidates, focal point), the baseline and final
    points, and the ground-truth box, in screenshot pixels."""
    rounds = (rec.get("trace") or {}).get("rounds") or []
    out = Overlay.of_round(rounds[-1]) if rounds else Overlay()
    out.boxes = [b for rnd in rounds for b in rnd.get("boxes", [])]
    if rec["baseline"]["point"]:
        out.marks.append((rec["baseline"]["point"], BASELINE_COLOR, "B"))
    if rec["final"]["point"] and rec["final"]["point"] != rec["baseline"]["point"]:
        out.marks.append((rec["final"]["point"], FINAL_COLOR, "F"))
    out.target = rec["sample"]["bbox"]
    return out


class _ImageCache:
    """Keeps the last screenshot decoded, and its thumbnail: consecutive samples (dataset
    order) usually share a screenshot."""

    def __init__(self, thumb_width: int) -> None:
        self.thumb_width = thumb_width
        self.path: str | None = None
        self.image: Image.Image | None = None
        self.thumb_url: str | None = None

    def get(self, path: str) -> tuple[Image.Image, str] | None:
        """(full screenshot, its thumbnail as a data URL), or None if unreadable."""
        if path != self.path:
            self.path, self.image, self.thumb_url = path, None, None
            try:
                with Image.open(path) as im:
                    self.image = im.convert("RGB")
            except (OSError, ValueError):
                return None
            self.thumb_url = jpeg_data_url(thumbnail(self.image, self.thumb_width), 65)
        if self.image is None or self.thumb_url is None:
            return None
        return self.image, self.thumb_url


def sample_images(rec: dict[str, Any], cache: _ImageCache) -> list[tuple[Any, ...]] | None:
    """The whole screen (thumbnail) and a magnified crop around the target, each with the
    overlay to draw over it (the arguments of shell.html's ``shot``); None when the screenshot
    is unreadable."""
    got = cache.get(rec["sample"]["img_path"])
    if got is None:
        return None
    full, thumb_url = got
    w, h = full.size
    overlay = _overlay(rec)
    # The crop: about 360x210 screenshot px around the target (more if the target is larger),
    # shown 720 px wide: a 10 px icon and the markers around it stay legible.
    x1, y1, x2, y2 = rec["sample"]["bbox"]
    cw, ch = min(w, max(360, round(3 * (x2 - x1)))), min(h, max(210, round(3 * (y2 - y1))))
    left = round(min(max(0, (x1 + x2) / 2 - cw / 2), w - cw))
    top = round(min(max(0, (y1 + y2) / 2 - ch / 2), h - ch))
    zoom = 720 / cw
    crop = full.crop((left, top, left + cw, top + ch)).resize(
        (round(cw * zoom), round(ch * zoom)), Image.Resampling.LANCZOS
    )
    return [
        (thumb_url, overlay, (0, 0, w, h), "overview", "screenshot with overlays"),
        (jpeg_data_url(crop, 80), overlay, (left, top, cw, ch), "crop", "region around the target"),
    ]


_OMITTED = "omitted"  # what the template shows instead of a screenshot left out
# Outcomes in the order their screenshots are worth the bytes when a report must leave some out.
_IMAGE_PRIORITY = ("error", "right→wrong", "wrong→right", "wrong→wrong", "right→right")


def images_for(records: Sequence[dict[str, Any]], max_images: int | None) -> set[str]:
    """Ids of the samples whose screenshots the report embeds: all of them up to
    ``max_images`` (None: no limit), else errors and flips first, then the rest, each in
    dataset order. Every image costs ~100-150 kB, and a full ScreenSpot-Pro run has 1,581."""
    if max_images is None or len(records) <= max_images:
        return {r["id"] for r in records}
    ranked = sorted(records, key=lambda r: _IMAGE_PRIORITY.index(outcome(r)))
    return {r["id"] for r in ranked[: max(0, max_images)]}


def html_report(
    records: Sequence[dict[str, Any]],
    config: dict[str, Any],
    *,
    thumb_width: int = 1200,
    max_images: int | None = 400,
    table: prices.PriceTable | None = None,
) -> str:
    """One self-contained HTML page (templates/report.html on the shared shell: inline CSS, JS
    and JPEG data URLs, overlays as SVG). At most ``max_images`` samples carry screenshots (see
    :func:`images_for`), so the page stays a reasonable size."""
    enabled = config.get("identity", {}).get("regionfocus_enabled", True)
    rows = [(label, details_for(records, row)) for row, label in ROWS if enabled or row == "baseline"]
    groups = _groups_of(*(d for _, d in rows))
    table = table or price_table(config)
    comparison = strategies.comparison(records, pricing(config, table)) if peer_names(records) else []
    head, body = strategies.comparison_cells(comparison)
    cache = _ImageCache(thumb_width)
    shown = images_for(records, max_images)
    fmt = benchmark(config)
    return render(
        __package__,
        "report.html",
        title=f"{fmt.title} run",
        splits=fmt.parser is not None and split_table(rows, fmt),
        records=records,
        groups=groups,
        table1=[(label, table1_cells(ds, groups)) for label, ds in rows],
        intervals=interval_table(records, shown_rows(records, enabled)),
        paired=(stats.PAIRED_HEAD, paired_table(records, shown_rows(records, enabled))),
        how_to_read=stats.HOW_TO_READ,
        strategies=comparison
        and {
            "head": head,
            "body": body,
            "notes": strategies.comparison_notes(comparison),
            "plot": jpeg_data_url(strategies.plot_png(comparison), 90),
        },
        omitted=len(records) - len(shown),
        outcome=outcome,
        images_of=lambda r: sample_images(r, cache) if r["id"] in shown else _OMITTED,
    )


def _peak_rss_line(records: Sequence[dict[str, Any]]) -> list[str]:
    """The client's peak resident memory: each record carries its process's peak when it
    finished (resumed runs: the largest of every session's)."""
    peaks = [r["peak_rss_mb"] for r in records if isinstance(r.get("peak_rss_mb"), (int, float))]
    return [f"- Client peak RSS: {max(peaks):.0f} MB"] if peaks else []
