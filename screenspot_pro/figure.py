"""strategies.png (and .svg, .pdf): each strategy's accuracy, with its 95 % interval, against
what it cost per sample, drawn by :mod:`regionfocus.kit.figures` from the comparison rows
summary.md prints (:func:`.strategies.comparison`).

A cost panel is drawn only when some row has that cost: an agent without tokens (the OCR
stand-in) gets no tokens panel, a model without a price no dollars panel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from regionfocus.kit import figures

from .strategies import BASELINE, REGIONFOCUS

STEM = "strategies"  # strategies.png, strategies.svg, strategies.pdf in the run folder
YLABEL = "accuracy (bars: 95 % Wilson interval)"


def tokens_of(row: dict[str, Any]) -> float | None:
    """Image plus text tokens per sample; None when the run reported neither."""
    if row["image_tokens"] is None and row["text_tokens"] is None:
        return None
    return (row["image_tokens"] or 0) + (row["text_tokens"] or 0)


COSTS: tuple[tuple[str, str, str, Callable[[dict[str, Any]], float | None]], ...] = (
    ("calls", "model calls per sample", "", lambda r: r["calls"]),
    ("tokens", "tokens per sample (image + text)", "", tokens_of),
    ("usd", "USD per sample", "usd", lambda r: r.get("usd")),
)


def styles(names: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Colour and marker per strategy, the same on every panel: the baseline grey squares,
    RegionFocus pink stars, the peers the palette's colours in turn."""
    out = {BASELINE: ("#555555", "s"), REGIONFOCUS: ("#d6287a", "*")}
    peers = [n for n in names if n not in out]
    out.update({n: figures.style(i) for i, n in enumerate(peers)})
    return out


def panels(rows: Sequence[dict[str, Any]]) -> list[figures.Panel]:
    """One panel per cost with a value above 0 for some row (0 is what a run that did not
    report the cost holds), each row that has it a point."""
    look = styles([r["strategy"] for r in rows])
    out = []
    for key, xlabel, unit, cost in COSTS:
        points = []
        for r in rows:
            x = cost(r)
            if x is None or x <= 0 or r["accuracy"] is None or r.get("interval") is None:
                continue
            low, high = r["interval"]
            colour, marker = look[r["strategy"]]
            points.append(
                figures.Point(r["strategy"], float(x), r["accuracy"], 100 * low, 100 * high, colour, marker)
            )
        if points:
            out.append(figures.Panel(key, xlabel, tuple(points), unit))
    return out


def title(config: dict[str, Any], benchmark: str, n: int) -> str:
    """The benchmark, then what was run on which data with how many samples."""
    ident = config.get("identity", {})
    who = f"model {ident['model']} (agent {ident.get('agent')})" if ident.get("model") else None
    who = who or (f"agent {ident['agent']}" if ident.get("agent") else "agent unknown")
    return f"{benchmark}: accuracy against cost per sample\n{who} · data {data_name(ident.get('data'))} · n = {n}"


def data_name(data: str | None) -> str:
    """A data set's name short enough for a title: a Hub id as pinned, else the folder's last
    two parts (the built-in set's cache folder and version)."""
    if not data:
        return "unknown"
    if data.startswith("hf:"):
        return data
    return "/".join(Path(data).parts[-2:])


def strategies_figure(
    rows: Sequence[dict[str, Any]], config: dict[str, Any], benchmark: str, n: int
) -> Any | None:
    """The figure of the comparison ``rows`` over ``n`` samples (a matplotlib Figure); None when
    no row has a point."""
    drawn = panels(rows)
    if not drawn:
        return None
    return figures.accuracy_against_cost(drawn, title=title(config, benchmark, n), ylabel=YLABEL)
