"""The figures the harnesses' reports write, drawn with matplotlib off screen (the Agg canvas;
no pyplot, no display, no global state).

Two kinds, both with 95 % intervals as error bars:

- :func:`accuracy_against_cost`: one panel per cost (calls, tokens, dollars per sample), each a
  labelled point per row with its accuracy interval; a panel only for a cost some row has, a log
  axis where the costs span a decade or more (ScreenSpot-Pro's strategies);
- :func:`rates_with_intervals`: one row per category (a site, ``overall``), its rate and interval
  (WebVoyager's success per site).

Every text (title, axis and tick labels, point labels, legend) is measured with the renderer
after layout: point labels are placed where their boxes meet no other label, point or interval,
inside their panel; a label with no such place is left to the figure's legend instead. A figure
whose texts still overlap or leave the canvas raises :class:`FigureError` rather than being
written. Each point and interval carries a ``gid`` (``point:PANEL:LABEL``,
``interval:PANEL:LABEL``), kept as element ids in the SVG.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, PercentFormatter
from matplotlib.transforms import Bbox

DPI = 150
PANEL_IN = (4.3, 3.6)  # one panel's size in inches: three fit a 1400 px report column at 1x
# Colours for rows in turn, told apart by most colour-blind readers: Okabe-Ito's without its black,
# the yellow that vanishes on white and the pink a caller may keep for itself, then brown, wine
# and indigo. No grey: a baseline is grey.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#d55e00", "#56b4e9", "#8c564b", "#882255", "#332288")
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "h")
SUFFIXES = ("png", "svg", "pdf")
_PAD = 2.0  # px kept clear around every measured box


class FigureError(RuntimeError):
    """A figure that cannot be drawn readably (overlapping or clipped text)."""


@dataclass(frozen=True)
class Point:
    """One row on one panel: ``x`` its cost, ``y`` its rate in %, ``low``/``high`` the rate's
    interval in %; ``colour``/``marker`` the same on every panel."""

    label: str
    x: float
    y: float
    low: float
    high: float
    colour: str = PALETTE[0]
    marker: str = "o"


@dataclass(frozen=True)
class Panel:
    """``key``: the panel's id in gids; ``unit``: how its ticks read ("", "usd")."""

    key: str
    xlabel: str
    points: tuple[Point, ...]
    unit: str = ""


def style(i: int) -> tuple[str, str]:
    """The ``i``-th default (colour, marker)."""
    return PALETTE[i % len(PALETTE)], MARKERS[(i // len(PALETTE)) % len(MARKERS)]


def spans_decades(values: Sequence[float]) -> bool:
    """Whether a log axis suits ``values``: all positive, the largest ten times the smallest or more."""
    return bool(values) and min(values) > 0 and max(values) >= 10 * min(values)


# ------------------------------------------------------------------------------ drawing
def accuracy_against_cost(panels: Sequence[Panel], *, title: str, ylabel: str) -> Figure:
    """Rates with their intervals against each panel's cost; panels without a point are left out.
    Raises ValueError when no panel has one."""
    panels = [p for p in panels if p.points]
    if not panels:
        raise ValueError("no panel has a point to draw")
    fig = _figure((PANEL_IN[0] * max(len(panels), 1.5), PANEL_IN[1] + 0.6))
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    for ax, panel in zip(axes, panels, strict=True):
        for p in panel.points:
            bars = ax.errorbar(
                [p.x],
                [p.y],
                yerr=[[p.y - p.low], [p.high - p.y]],
                fmt=p.marker,
                color=p.colour,
                markersize=10 if p.marker == "*" else 7,  # a star's points leave it looking smaller
                capsize=4,
                elinewidth=1.4,
                zorder=3,
            )
            bars.lines[0].set_gid(f"point:{panel.key}:{p.label}")
            bars.lines[2][0].set_gid(f"interval:{panel.key}:{p.label}")
        _cost_axis(ax, panel)
        ax.tick_params(labelleft=True)  # each panel read on its own, as in a paper's subfigures
        ax.grid(True, color="#e4e4e4", linewidth=0.8, zorder=0)
    _rate_axis(axes[0], [p for panel in panels for p in panel.points], "y")  # shared by the panels
    axes[0].set_ylabel(ylabel)
    fig.suptitle(title, wrap=True, parse_math=False)
    points = {ax: panel for ax, panel in zip(axes, panels, strict=True)}
    return _finish(fig, points, _legend_of([p for panel in panels for p in panel.points]))


def rates_with_intervals(
    rows: Sequence[tuple[str, float, float, float]],
    *,
    title: str,
    xlabel: str,
    key: str = "rate",
    total_last: bool = False,
) -> Figure:
    """One row per (label, rate %, low %, high %), top to bottom as given, the rate a dot and its
    interval a bar; the labels are the y axis's ticks. ``total_last``: the last row is the
    total of the others, set apart by a rule."""
    if not rows:
        raise ValueError("no row to draw")
    fig = _figure((7.0, 1.2 + 0.32 * len(rows)))
    ax = fig.subplots()
    ys = list(range(len(rows)))[::-1]
    for y, (label, rate, low, high) in zip(ys, rows, strict=True):
        bars = ax.errorbar(
            [rate], [y], xerr=[[rate - low], [high - rate]], fmt="o", color=PALETTE[0], capsize=3, zorder=3
        )
        bars.lines[0].set_gid(f"point:{key}:{label}")
        bars.lines[2][0].set_gid(f"interval:{key}:{label}")
    ax.set_yticks(ys, [r[0] for r in rows], parse_math=False)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    if total_last and len(rows) > 1:
        ax.axhline(0.5, color="#999", linewidth=0.8)
    _rate_axis(ax, [Point(r[0], 0, r[1], r[2], r[3]) for r in rows], "x")
    ax.set_xlabel(xlabel)
    ax.grid(True, axis="x", color="#e4e4e4", linewidth=0.8, zorder=0)
    fig.suptitle(title, wrap=True, parse_math=False)
    return _finish(fig, {}, None)


def _figure(size: tuple[float, float]) -> Figure:
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _number(unit: str) -> Callable[[float, Any], str]:
    def fmt(v: float, _pos: Any = None) -> str:
        if unit == "usd":
            return f"${v:g}"
        if abs(v) >= 1e6:
            return f"{v / 1e6:g}M"
        return f"{v / 1e3:g}k" if abs(v) >= 1e3 else f"{v:g}"

    return fmt


def _cost_axis(ax: Any, panel: Panel) -> None:
    xs = [p.x for p in panel.points]
    if spans_decades(xs):
        ax.set_xscale("log")
        ax.set_xlim(min(xs) / 1.8, max(xs) * 1.8)
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        top = max(xs) * 1.2 if max(xs) > 0 else 1.0
        ax.set_xlim(0, top)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10], min_n_ticks=3))
    ax.xaxis.set_major_formatter(FuncFormatter(_number(panel.unit)))
    ax.set_xlabel(panel.xlabel + (" (log scale)" if ax.get_xscale() == "log" else ""))


def _rate_axis(ax: Any, points: Sequence[Point], which: str) -> None:
    """The intervals with room to label the points, within 0-100 % and a margin (a point at 0
    or 100 % is drawn whole; the margin is narrower than a tick step, so no tick falls in it)."""
    low = min(p.low for p in points)
    high = max(p.high for p in points)
    span = max(high - low, 10.0)
    lo, hi = low - 0.18 * span, high + 0.18 * span
    margin = 0.03 * (hi - lo)
    lim = (max(lo, -margin), min(hi, 100.0 + margin))
    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_ylim if which == "y" else ax.set_xlim)(*lim)
    axis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
    axis.set_major_formatter(PercentFormatter(100, decimals=0))


def _legend_of(points: Sequence[Point]) -> list[tuple[str, Line2D]]:
    seen: dict[str, Line2D] = {}
    for p in points:
        seen.setdefault(
            p.label,
            Line2D(
                [],
                [],
                color=p.colour,
                marker=p.marker,
                linestyle="none",
                markersize=10 if p.marker == "*" else 7,
            ),
        )
    return list(seen.items())


# ------------------------------------------------------------------------------ labels
def _finish(fig: Figure, points: dict[Any, Panel], legend: list | None) -> Figure:
    """Lay the figure out, place the point labels, thin crowded ticks; a legend when some label
    found no place. Raises FigureError when texts still overlap or leave the canvas."""
    fig.draw_without_rendering()
    fig.set_layout_engine("none")  # the labels are placed against these axes: keep them still
    unplaced = _place_all(fig, points)
    thin_ticks(fig)
    problems = text_problems(fig)
    # A legend for the labels that found no place; as many columns as the canvas's width takes
    # (long strategy names in five columns run off it).
    for ncols in range(min(len(legend or ()), 5), 0, -1) if unplaced and legend else ():
        for t in [t for ax in points for t in ax.texts]:
            t.remove()
        for old in list(fig.legends):
            old.remove()
        fig.set_layout_engine("constrained")
        fig.legend(
            [h for _, h in legend],
            [name for name, _ in legend],
            loc="outside lower center",
            ncols=ncols,
            frameon=False,
        )
        fig.draw_without_rendering()
        fig.set_layout_engine("none")
        _place_all(fig, points)  # what still finds no place is named by the legend
        thin_ticks(fig)
        problems = text_problems(fig)
        if not problems:
            break
    if problems:
        raise FigureError("figure text overlaps or is clipped: " + "; ".join(problems[:5]))
    return fig


def _place_all(fig: Figure, points: dict[Any, Panel]) -> list[str]:
    renderer = fig.canvas.get_renderer()
    unplaced = []
    for ax, panel in points.items():
        frame = ax.get_window_extent(renderer).padded(-_PAD)
        obstacles = _point_boxes(ax, renderer)
        placed: list[Bbox] = []
        for p in sorted(panel.points, key=lambda p: (-p.y, p.x)):
            box = _place(ax, panel.key, p, renderer, frame, obstacles, placed)
            if box is None:
                unplaced.append(p.label)
            else:
                placed.append(box)
    return unplaced


# Where a label is tried, nearest first: (anchor, dx, dy) in points from the point ("y") or from
# its interval's top or bottom cap ("high", "low"): beside the point, above the top cap or below
# the bottom one, then diagonally; then further out in eight directions with a leader line.
_NEAR = [
    ("y", 9, 0), ("y", -9, 0), ("high", 0, 4), ("low", 0, -4), ("high", 9, 3), ("high", -9, 3),
    ("low", 9, -3), ("low", -9, -3), ("y", 9, 8), ("y", -9, 8), ("y", 9, -8), ("y", -9, -8),
]  # fmt: skip
_FAR = [
    ("y", r * math.cos(a), r * math.sin(a)) for r in (22, 36, 52) for a in (k * math.pi / 4 for k in range(8))
]


def _place(
    ax: Any, key: str, p: Point, renderer: Any, frame: Bbox, obstacles: list[Bbox], placed: list[Bbox]
) -> Bbox | None:
    """The first offset where ``p``'s label stays inside ``frame`` and clear of every point,
    interval and label placed so far (a leader line, too, crosses no label); its box, or None."""
    for where, dx, dy in _NEAR + _FAR:
        far = (where, dx, dy) not in _NEAR
        xy = (p.x, {"y": p.y, "high": p.high, "low": p.low}[where])
        text = ax.annotate(
            p.label,
            xy,
            xytext=(dx, dy),
            textcoords="offset points",
            ha="left" if dx > 2 else "right" if dx < -2 else "center",
            va="bottom" if dy > 2 else "top" if dy < -2 else "center",
            fontsize=9,
            color="#222",
            zorder=4,
            parse_math=False,  # a label is a name, never TeX: "$" is a dollar sign
            arrowprops={"arrowstyle": "-", "color": "#999", "lw": 0.7, "shrinkA": 0, "shrinkB": 4}
            if far
            else None,
        )
        text.set_gid(f"label:{key}:{p.label}")
        text.update_positions(renderer)
        box = Text.get_window_extent(text, renderer).padded(_PAD)
        if (
            frame.containsx(box.x0)
            and frame.containsx(box.x1)
            and frame.containsy(box.y0)
            and frame.containsy(box.y1)
            and not any(box.overlaps(t) for t in [*obstacles, *placed])
            and not (far and _crosses(ax, p, (dx, dy), renderer, placed))
        ):
            return box
        text.remove()
    return None


def _crosses(ax: Any, p: Point, offset: tuple[float, float], renderer: Any, boxes: list[Bbox]) -> bool:
    """Whether the leader line from ``p`` to its label at ``offset`` (points) runs through a box."""
    (x, y) = ax.transData.transform((p.x, p.y))
    k = renderer.points_to_pixels(1.0)
    steps = [i / 16 for i in range(17)]
    return any(b.contains(x + t * offset[0] * k, y + t * offset[1] * k) for t in steps for b in boxes)


def _point_boxes(ax: Any, renderer: Any) -> list[Bbox]:
    """The drawn markers and interval bars of ``ax`` (with their caps), in display pixels."""
    out = []
    for line in ax.lines:
        if line.get_gid() and line.get_gid().startswith("point:"):
            ((x, y),) = ax.transData.transform(line.get_xydata())
            r = line.get_markersize() * renderer.points_to_pixels(1.0) / 2 + _PAD
            out.append(Bbox.from_extents(x - r, y - r, x + r, y + r))
    for coll in ax.collections:
        if coll.get_gid() and coll.get_gid().startswith("interval:"):
            for seg in coll.get_segments():
                (x0, y0), (x1, y1) = ax.transData.transform(seg)
                cap = 4 * renderer.points_to_pixels(1.0) + _PAD
                out.append(Bbox.from_extents(min(x0, x1) - cap, min(y0, y1), max(x0, x1) + cap, max(y0, y1)))
    return out


def thin_ticks(fig: Figure) -> None:
    """Fewer ticks on an axis whose tick labels touch (a narrow panel, long dollar amounts)."""
    for _ in range(3):
        texts = dict(_drawn_texts(fig))
        crowded = []
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                boxes = [texts[t].padded(_PAD) for t in axis.get_ticklabels(which="both") if t in texts]
                if any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :]):
                    crowded.append((axis, max(2, len(boxes) // 2)))
        if not crowded:
            return
        for axis, n in crowded:
            log = axis.get_scale() == "log"
            axis.set_major_locator(LogLocator(numticks=n + 1) if log else MaxNLocator(nbins=n))
            axis.set_minor_formatter(NullFormatter())


# ------------------------------------------------------------------------------ checks
def _overlap(a: Bbox, b: Bbox) -> bool:
    """Whether two boxes share an area (boxes that only touch are apart)."""
    return min(a.x1, b.x1) > max(a.x0, b.x0) and min(a.y1, b.y1) > max(a.y0, b.y0)


def _drawn_texts(fig: Figure) -> list[tuple[Text, Bbox]]:
    """Every non-empty text the canvas draws, with its box in display pixels (tick labels only
    of ticks inside their axis's view)."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    ticks = {}
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            tol = 1e-9 * max(abs(lo), abs(hi), 1.0)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for label in (tick.label1, tick.label2):
                    ticks[label] = lo - tol <= tick.get_loc() <= hi + tol
    return [
        (t, Text.get_window_extent(t, renderer))
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and ticks.get(t, True)
    ]


def text_problems(fig: Figure) -> list[str]:
    """What is wrong with the figure's texts: pairs whose boxes overlap, texts off the canvas."""
    texts = _drawn_texts(fig)
    canvas = fig.bbox.padded(0.5)
    out = [
        f"{t.get_text()!r} leaves the canvas"
        for t, b in texts
        if not (
            canvas.containsx(b.x0)
            and canvas.containsx(b.x1)
            and canvas.containsy(b.y0)
            and canvas.containsy(b.y1)
        )
    ]
    for i, (a, ba) in enumerate(texts):
        for b, bb in texts[i + 1 :]:
            if _overlap(ba, bb):
                out.append(f"{a.get_text()!r} overlaps {b.get_text()!r}")
    return out


# ------------------------------------------------------------------------------ files
def encode(fig: Figure, suffix: str) -> bytes:
    """The figure as ``png``, ``svg`` or ``pdf`` bytes, the same on every run (no dates; SVG ids
    from a fixed salt)."""
    buf = io.BytesIO()
    meta: dict[str, Any] = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}[
        suffix
    ]
    with rc_context({"svg.hashsalt": "regionfocus"}):
        fig.savefig(buf, format=suffix, dpi=DPI, metadata=meta)
    return buf.getvalue()


def save(fig: Figure, stem: str | Path, write: Callable[[Path, bytes], None]) -> dict[str, bytes]:
    """``stem.png``, ``stem.svg`` and ``stem.pdf`` side by side, each through ``write`` (an atomic
    writer); what was written, by suffix."""
    stem = Path(stem)
    out = {suffix: encode(fig, suffix) for suffix in SUFFIXES}
    for suffix, data in out.items():
        write(stem.with_name(f"{stem.name}.{suffix}"), data)
    return out
