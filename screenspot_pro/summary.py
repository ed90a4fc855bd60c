"""summary.md, and the parts of it report.html shows too: what a run's numbers are (flips,
trigger rate, the self-judge's quality, cost per sample, dollars) beside the tables of
:mod:`.tables`.

Sections are lists of (line, sub-lines) items, so the Markdown and the HTML page say the same.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from regionfocus.kit import prices, stats
from regionfocus.kit.runlog import flatten

from . import strategies
from .metrics import CORRECT
from .rows import benchmark, enabled_in, peer_names, row_label, shown_rows, strategy_rows
from .tables import app_table, interval_table, markdown_table, paired_table, split_table, table1_markdown

Items = list[tuple[str, list[str]]]  # a section: each line with its sub-lines


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

    def mean(key: str) -> float | None:
        """Per sample over every record; None when no record has it."""
        if not any(r.get(key) is not None for r in records):
            return None
        return sum(float(r.get(key) or 0) for r in records) / n if n else 0.0

    # A record sums its calls' tokens, 0 for calls that reported none: tokens are known only
    # when some call's usage had them (the OCR stand-in reports none: "–", not 0).
    costs = [c for r in records for c in (r.get("cost") or {}).values()]
    tokens_known = not costs or any(c.get("prompt_tokens") is not None for c in costs)

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
        "prompt_tokens_per_sample": mean("prompt_tokens") if tokens_known else None,
        "completion_tokens_per_sample": mean("completion_tokens") if tokens_known else None,
        "seconds_per_sample": mean("seconds"),
        "model_seconds_per_sample": mean("model_seconds"),
    }


# ----------------------------------------------------------------------------- money
def price_table(config: dict[str, Any], override: str | Path | None = None) -> prices.PriceTable:
    """The table a run is priced with: ``override`` (``--prices`` of ``report``), else the file
    the run was started with, else the built-in one."""
    return prices.load(override or config.get("invocation", {}).get("prices"))


def pricing(config: dict[str, Any], table: prices.PriceTable) -> strategies.Pricing:
    """USD of a cost row's tokens; calls whose backend named no model are the run's ``--model``."""
    model = config.get("identity", {}).get("model")
    return lambda by_model: table.cost(by_model, model)


def money_items(records: Sequence[dict[str, Any]], config: dict[str, Any], table: prices.PriceTable) -> Items:
    """Dollars per sample of every row, and the rates they came from; nothing when no call
    named a model with tokens (an agent without tokens: its cost in money is unknown, not $0)."""
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
        f"{row_label(name)} {strategies.usd_cell(rows[name].get('usd'))}"
        for name in shown_rows(records, enabled_in(config))
        if name in rows
    ]
    return [(f"USD: {', '.join(cells)} (prices: {table.origin})", table.describe(models))]


# ----------------------------------------------------------------------------- sections
def _counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (-kv[1], str(kv[0]))))


def _num(v: float | None, digits: int) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def regionfocus_items(s: dict[str, Any]) -> Items:
    """The trigger rate, the self-judge's quality and the flips of a run (:func:`run_stats`)."""
    j, oc = s["judge"], s["outcomes"]
    return [
        (
            f"Trigger rate: {s['triggered']}/{s['n']} ({100 * s['trigger_rate']:.1f}%)"
            + (f"; by trigger: {_counts(s['triggers'])}" if s["triggers"] else ""),
            [],
        ),
        (
            f"Self-judge: {j['judged']} judged ({_counts(j['verdicts']) or 'none'}); "
            f"rejected {j['rejected_wrong']} wrong and {j['rejected_right']} right baselines; "
            f"accepted {j['accepted_right']} right and {j['accepted_wrong']} wrong baselines.",
            [],
        ),
        (
            f"Flips: wrong→right {oc.get('wrong→right', 0)}, right→wrong {oc.get('right→wrong', 0)}"
            f" (unchanged right {oc.get('right→right', 0)}, unchanged wrong {oc.get('wrong→wrong', 0)}).",
            [],
        ),
    ]


def cost_items(
    records: Sequence[dict[str, Any]], config: dict[str, Any], table: prices.PriceTable, s: dict[str, Any]
) -> Items:
    """Model calls, tokens, seconds, dollars and memory per sample ("–": not reported)."""
    tokens = (
        f"Tokens: {_num(s['prompt_tokens_per_sample'], 0)} prompt, "
        f"{_num(s['completion_tokens_per_sample'], 0)} completion"
    )
    return [
        (f"Model calls: {s['calls_per_sample']:.2f} ({s['failed_calls']} failed calls in total)", []),
        (tokens, []),
        (
            f"Seconds: {_num(s['seconds_per_sample'], 2)} wall, "
            f"{_num(s['model_seconds_per_sample'], 2)} summed over model calls",
            [],
        ),
        *money_items(records, config, table),
        *_peak_rss(records),
    ]


def _peak_rss(records: Sequence[dict[str, Any]]) -> Items:
    """The client's peak resident memory: each record carries its process's peak when it
    finished (resumed runs: the largest of every session's)."""
    peaks = [r["peak_rss_mb"] for r in records if isinstance(r.get("peak_rss_mb"), (int, float))]
    return [(f"Client peak RSS: {max(peaks):.0f} MB", [])] if peaks else []


def items_markdown(items: Items) -> list[str]:
    return [line for text, subs in items for line in [f"- {text}", *(f"  - {sub}" for sub in subs)]]


def uncertainty_markdown(records: Sequence[dict[str, Any]], enabled: bool) -> list[str]:
    names = shown_rows(records, enabled)
    lines = ["## Accuracy with 95 % intervals", "", markdown_table(*interval_table(records, names)), ""]
    pairs = paired_table(records, names)
    if pairs:
        lines += ["## Paired comparisons", "", markdown_table(stats.PAIRED_HEAD, pairs), ""]
    return lines + [stats.HOW_TO_READ, ""]


# ----------------------------------------------------------------------------- summary.md
def non_click_lines(records: Sequence[dict[str, Any]]) -> list[str]:
    """How many answers named a point with an action that is no click (a scroll, a hover, typing
    at the target; the record's ``non_click``): scored wrong, as wrong as a miss; nothing when
    there were none."""
    count = {
        row: sum(bool((r.get(row) or {}).get("non_click")) for r in records) for row in ("baseline", "final")
    }
    if not any(count.values()):
        return []
    return [
        f"Not clicks (a scroll, hover or typing at a point; counted wrong): baseline {count['baseline']}, "
        f"final {count['final']}."
    ]


def summary_markdown(
    records: Sequence[dict[str, Any]],
    config: dict[str, Any],
    n_selected: int | None = None,
    table: prices.PriceTable | None = None,
) -> str:
    table = table or price_table(config)
    ident = config.get("identity", {})
    enabled = enabled_in(config)
    rows = strategy_rows(records, enabled)
    s = run_stats(records)
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
        *non_click_lines(records),
        "",
    ]
    if fmt.parser is None:
        lines += ["## Table 1 layout", "", table1_markdown(rows), ""]
        lines += ["## Per application", "", markdown_table(*app_table(rows)), ""]
    else:
        lines += ["## Per split (the official tables)", "", markdown_table(*split_table(rows, fmt)), ""]
    lines += uncertainty_markdown(records, enabled)
    if enabled:
        lines += ["## RegionFocus", "", *items_markdown(regionfocus_items(s)), ""]
    lines += ["## Cost per sample", "", *items_markdown(cost_items(records, config, table, s)), ""]
    if peer_names(records):
        lines += [
            "## Strategies",
            "",
            "Accuracy in %; cost per sample, the baseline's request included (image tokens as the "
            "model's processor counts them; text tokens = prompt + completion - image). "
            "W→R / R→W: flips against the baseline. Figure: strategies.png (strategies.svg, "
            "strategies.pdf).",
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
