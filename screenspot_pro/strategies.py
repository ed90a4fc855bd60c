"""Peer strategies on ScreenSpot-Pro: the same samples, the same baseline, the same accounting.

``--strategy regionfocus,zoomclick,...`` runs the baseline once per sample; RegionFocus (when
named) is the one-pass prediction the harness always made, and every other strategy starts
from that baseline (:mod:`regionfocus.strategies`). A record then carries, per strategy, its
point scored like the official harness, its cost (requests, completions, image tokens as the
model's processor counts them, text tokens, model seconds, wall seconds) and its trace. From
the records: ``results_<name>.json`` in the official format, a comparison table (accuracy
overall, per group and per ui_type, cost per sample, flips against the baseline) and a plot
of accuracy against calls, tokens and dollars per sample (:mod:`.figure`).

Costs include the baseline's own request for every row, so rows compare what a user pays.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from PIL import Image

from regionfocus.agent import StaticPrediction
from regionfocus.kit import stats
from regionfocus.model import GroundingModel
from regionfocus.strategies import STRATEGIES, get_strategy
from regionfocus.strategies.protocol import CostedCall, StrategyResult

from .metrics import CORRECT, judge

BASELINE = "baseline"
REGIONFOCUS = "regionfocus"


def second_options(names: Sequence[str], second: GroundingModel | None) -> dict[str, dict[str, Any]]:
    """:func:`run_peers`'s options giving ``second`` to every named strategy that takes a second
    model (a ``second`` keyword); {} without one. Raises ValueError when ``second`` is given
    and none of ``names`` would use it."""
    if second is None:
        return {}
    takers = [n for n in names if _takes_second(n)]
    if not takers:
        raise ValueError(
            "--second-agent: no --strategy here uses a second model; the ones that do: "
            + ", ".join(filter(_takes_second, STRATEGIES))
        )
    return {n: {"second": second} for n in takers}


def _takes_second(name: str) -> bool:
    return "second" in inspect.signature(STRATEGIES[name].factory).parameters


def perception_options(name: str, model: GroundingModel) -> dict[str, Any]:
    """What a strategy that reads the screen itself gets from the adapters: ``hints`` (OCR lines
    and detected UI elements, ``adapters/perception/hints.py``; GUI-Lens's evidence lists).
    {} for every other strategy; explicit options win over these. The coordinates a strategy
    asks for are its own (a GUI-Lens preset's are its config's: pixels, 0-1000 for gui-lens-m3),
    never set from the adapter's frame."""
    params = inspect.signature(STRATEGIES[name].factory).parameters
    out: dict[str, Any] = {}
    if "hints" in params:
        from regionfocus.adapters.perception.hints import shared_hints

        out["hints"] = shared_hints()
    return out


def fit_to_model(
    names: Sequence[str], model: GroundingModel, *, every: bool = False
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The named strategies ``model`` can run, and why each other cannot (a strategy's optional
    ``unfit(model)``: MVP's attention views need an in-process model), checked before any call.
    ``every`` ("all" was asked for): those are left out; otherwise one is bad input (ValueError)."""
    unfit = {}
    for n in names:
        check = getattr(STRATEGIES[n].factory, "unfit", None)
        reason = check(model) if callable(check) else None
        if reason:
            unfit[n] = reason
    if unfit and not every:
        n, reason = next(iter(unfit.items()))
        raise ValueError(f"--strategy {n}: {reason}")
    return tuple(n for n in names if n not in unfit), unfit


def totals(calls: Sequence[CostedCall]) -> dict[str, Any]:
    """Requests, completions, tokens and model seconds over ``calls`` (the record's cost)."""
    return StrategyResult("", None, None, list(calls)).totals()


async def run_peers(
    names: Sequence[str],
    model: GroundingModel,
    image: Image.Image,
    instruction: str,
    pred: StaticPrediction,
    options: dict[str, dict[str, Any]] | None = None,
) -> dict[str, StrategyResult | BaseException]:
    """Every named strategy but RegionFocus, from the prediction's baseline, concurrently.
    A strategy that raises is that strategy's error on this sample, not the sample's."""
    peers = [n for n in names if n != REGIONFOCUS]
    results = await asyncio.gather(
        *(
            get_strategy(n, **{**perception_options(n, model), **(options or {}).get(n, {})}).run(
                model, image, instruction, pred.baseline
            )
            for n in peers
        ),
        return_exceptions=True,
    )
    for r in results:
        if isinstance(r, asyncio.CancelledError):
            raise r
    return dict(zip(peers, results, strict=True))


def peer_rows(
    sample: Any, results: dict[str, StrategyResult | BaseException], baseline_calls: Sequence[CostedCall]
) -> dict[str, dict[str, Any]]:
    """The record's ``strategies`` field: per strategy, its scored point, cost and trace."""
    out: dict[str, dict[str, Any]] = {}
    for name, res in results.items():
        if isinstance(res, BaseException):
            out[name] = {
                "point": None,
                "action": None,
                "correctness": "wrong",
                "raw_response": "",
                "error": f"{type(res).__name__}: {res}",
                "cost": totals(baseline_calls),
                "seconds": 0.0,
                "trace": None,
            }
            continue
        point = [float(res.point.x), float(res.point.y)] if res.point is not None else None
        last_text = next((c.text for c in reversed(res.calls) if c.text and not c.error), "")
        out[name] = {
            "point": point,
            "action": res.action.to_dict() if res.action else None,
            "correctness": judge(sample, point, declined=res.action is not None and point is None),
            "raw_response": last_text,
            "error": None,
            "cost": totals([*baseline_calls, *res.calls]),
            "seconds": round(res.wall_s, 4),
            "trace": res.to_dict(),
        }
    return out


# ------------------------------------------------------------------------------ comparison
def rows_of(records: Sequence[dict[str, Any]]) -> list[str]:
    """The strategy rows present in a run's records, in a stable order: baseline, RegionFocus
    (when the run had it), then the peers as first met."""
    names: list[str] = [BASELINE]
    if any(r.get("cost", {}).get(REGIONFOCUS) for r in records) or not any(
        r.get("strategies") for r in records
    ):
        names.append(REGIONFOCUS)
    for r in records:
        for n in r.get("strategies") or {}:
            if n not in names:
                names.append(n)
    return names


def row_result(rec: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The scored result of ``name`` on one record, shaped like the record's baseline/final."""
    if name == BASELINE:
        return rec["baseline"]
    if name == REGIONFOCUS:
        return rec["final"]
    return (rec.get("strategies") or {}).get(name)


def row_cost(rec: dict[str, Any], name: str) -> dict[str, Any]:
    if name in (BASELINE, REGIONFOCUS):
        cost = (rec.get("cost") or {}).get(name)
        if cost:
            return cost
        return {
            "requests": rec.get("n_calls") if name == REGIONFOCUS else 1,
            "latency_s": rec.get("model_seconds"),
        }
    return ((rec.get("strategies") or {}).get(name) or {}).get("cost") or {}


def outcomes(records: Sequence[dict[str, Any]], name: str) -> list[bool]:
    """Whether row ``name`` got each record right (an error record, or no result, is wrong)."""
    out = []
    for r in records:
        res = row_result(r, name)
        out.append(res is not None and res.get("correctness") == CORRECT and r["status"] != "error")
    return out


Pricing = Callable[[dict[str, Any]], "float | None"]


def comparison(records: Sequence[dict[str, Any]], pricing: Pricing | None = None) -> list[dict[str, Any]]:
    """One row per strategy: accuracy (overall, per group, per ui_type), cost per sample and
    flips against the baseline, over every record (errors count wrong). ``pricing``: USD of a
    cost row's ``by_model`` tokens (None: unknown), from the run's price table."""
    n = len(records)
    groups = sorted({r["sample"]["group"] for r in records})
    out = []
    base = outcomes(records, BASELINE)
    for name in rows_of(records):
        right = outcomes(records, name)

        def acc(mask: Sequence[bool], right=right) -> float | None:
            sel = [x for x, m in zip(right, mask, strict=True) if m]
            return 100 * sum(sel) / len(sel) if sel else None

        costs = [row_cost(r, name) for r in records]

        def per_sample(key: str, costs=costs) -> float | None:
            vals = [c.get(key) for c in costs]
            known = [v for v in vals if v is not None]
            return sum(known) / n if known and n else None

        out.append(
            {
                "strategy": name,
                "accuracy": acc([True] * n),
                "interval": stats.wilson(sum(right), n),
                "vs_baseline": stats.paired(right, base) if name != BASELINE else None,
                "by_group": {g: acc([r["sample"]["group"] == g for r in records]) for g in groups},
                "text": acc([r["sample"]["ui_type"] == "text" for r in records]),
                "icon": acc([r["sample"]["ui_type"] == "icon" for r in records]),
                "calls": per_sample("requests"),
                "completions": per_sample("completions"),
                "image_tokens": per_sample("image_tokens"),
                "text_tokens": _text_tokens(costs, n),
                "text_tokens_note": _text_tokens_note(name, costs),
                "ran_with": _ran_with(records, name),
                "model_s": per_sample("latency_s"),
                "usd": _usd_per_sample(costs, pricing),
                "wrong_to_right": sum(ri and not b for ri, b in zip(right, base, strict=True)),
                "right_to_wrong": sum(b and not ri for ri, b in zip(right, base, strict=True)),
            }
        )
    return out


def _usd_per_sample(costs: Sequence[dict[str, Any]], pricing: Pricing | None) -> float | None:
    """Mean USD per sample; None without a price table, without token counts (a record written
    before models were costed, an agent that reports none), or when any sample's tokens have no
    price: unknown, never $0."""
    if pricing is None or not costs or any("by_model" not in c for c in costs):
        return None
    if not any(c["by_model"] for c in costs):  # no call named a model with tokens (the OCR stand-in)
        return None
    usd = [pricing(c["by_model"]) for c in costs]
    return None if any(u is None for u in usd) else sum(usd) / len(usd)


def _text_tokens(costs: Sequence[dict[str, Any]], n: int) -> float | None:
    """Prompt minus image tokens plus completion tokens, per sample; None when unknown, or when
    the server's prompt count leaves the images out (a difference would go negative)."""
    if _images_uncounted(costs):
        return None
    vals = [
        (c.get("prompt_tokens") or 0) - (c.get("image_tokens") or 0) + (c.get("completion_tokens") or 0)
        for c in costs
        if c.get("prompt_tokens") is not None
    ]
    return sum(vals) / n if vals and n else None


def _images_uncounted(costs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        c
        for c in costs
        if c.get("prompt_tokens") is not None and (c.get("prompt_tokens") or 0) < (c.get("image_tokens") or 0)
    ]


def _text_tokens_note(name: str, costs: Sequence[dict[str, Any]]) -> str | None:
    short = _images_uncounted(costs)
    if not short:
        return None
    c = short[0]
    return (
        f"text tok of {name}: n/a. The server reported fewer prompt tokens than the image tokens "
        f"counted here ({c['prompt_tokens']} < {c['image_tokens']} in {len(short)} sample(s)): its "
        "usage leaves the images out, so text tokens cannot be told apart."
    )


def _ran_with(records: Sequence[dict[str, Any]], name: str) -> list[str]:
    """What a strategy's results say it ran with (their "ran with ..." notes: a pixel limit, a
    fallback), each with the share of samples it held for when not all."""
    counts: dict[str, int] = {}
    for r in records:
        trace = (row_result(r, name) or {}).get("trace") or {}
        for note in trace.get("notes") or []:
            if note.startswith("ran with "):
                counts[note] = counts.get(note, 0) + 1
    n = len(records)
    return [f"{name} {note}" + (f" (on {k} of {n} samples)" if k < n else "") for note, k in counts.items()]


def comparison_notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """What the table cannot show as a number, one sentence per strategy and matter."""
    out = []
    for r in rows:
        out += r.get("ran_with") or []
        if r.get("text_tokens_note"):
            out.append(r["text_tokens_note"])
    return out


def _f(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def comparison_cells(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The comparison as a header and rows of formatted cells (for Markdown and for HTML)."""
    if not rows:
        return [], []
    groups = list(rows[0]["by_group"])
    head = [
        "strategy",
        "overall",
        "95 % CI",
        *groups,
        "text",
        "icon",
        "calls",
        "image tok",
        "text tok",
        "model s",
        "$/sample",
        "W→R",
        "R→W",
        "p vs baseline",
    ]
    body = [
        [
            r["strategy"],
            _f(r["accuracy"]),
            _ci(r.get("interval")),
            *(_f(r["by_group"][g]) for g in groups),
            _f(r["text"]),
            _f(r["icon"]),
            _f(r["calls"], 2),
            _f(r["image_tokens"], 0),
            "n/a" if r.get("text_tokens_note") else _f(r["text_tokens"], 0),
            _f(r["model_s"], 2),
            usd_cell(r.get("usd")),
            str(r["wrong_to_right"]) if r["strategy"] != BASELINE else "–",
            str(r["right_to_wrong"]) if r["strategy"] != BASELINE else "–",
            stats.p_value(r["vs_baseline"].p) if r.get("vs_baseline") else "–",
        ]
        for r in rows
    ]
    return head, body


def usd_cell(v: float | None) -> str:
    """Dollars with four significant digits: a grounding call costs fractions of a cent."""
    return "–" if v is None else f"${v:.4g}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "–" if ci is None else f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f}"


def comparison_markdown(rows: Sequence[dict[str, Any]]) -> str:
    head, body = comparison_cells(rows)
    if not head:
        return ""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    lines += ["", *comparison_notes(rows)] if comparison_notes(rows) else []
    return "\n".join(lines) + "\n"
