"""Layout box proposer: the panel around the focal point, read from the screenshot's own structure.

GUI panels are separated by long straight lines, by a change of background colour, or by wide
uniform gutters. This module finds those separators with OpenCV and numpy (no model weights)
and splits the screen recursively around the focal point, like an XY-cut restricted to the
branch that contains the point: whole screen -> the band that holds the point -> the pane ->
the group inside the pane ... Each level becomes a candidate box, so the views see the
innermost panel and its enclosing panels.

Frames: the focal point and every returned box are in pixels of the original screenshot. The
work happens on a copy box-downscaled by an integer ``factor`` ("work pixels"); work pixel
(x, y) covers screenshot pixels [x * factor, (x + 1) * factor).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import KW_ONLY, dataclass

import cv2
import numpy as np
from PIL import Image

from ..checks import require
from ..geometry import Box, Point, clamp_point
from .base import BoxProposer, FixedRatioProposer, ProposalContext, enforce_min_size


@dataclass(frozen=True)
class _Edges:
    """Integral images of the work image's binary edge maps: ``steps_y[i, x]`` = a colour step
    between rows i and i + 1 at column x (shape (h - 1, w) before integration), ``steps_x[y, j]``
    = a step between columns j and j + 1 on row y (shape (h, w - 1)). Integrals make every
    per-line count over any span O(lines), whatever the region."""

    steps_y: np.ndarray
    steps_x: np.ndarray

    def line_sums(self, which: str, d: int, lines: tuple[int, int], span: tuple[int, int]) -> np.ndarray:
        """Counts of ``which`` ("y" or "x") steps on each line in ``lines`` over ``span``;
        lines are rows of the step map when d = 0, its columns when d = 1."""
        integral = self.steps_y if which == "y" else self.steps_x
        (a, b), (s0, s1) = lines, span
        if d == 0:
            return (integral[a + 1 : b + 1, s1] - integral[a + 1 : b + 1, s0]) - (
                integral[a:b, s1] - integral[a:b, s0]
            )
        return (integral[s1, a + 1 : b + 1] - integral[s0, a + 1 : b + 1]) - (
            integral[s1, a:b] - integral[s0, a:b]
        )


def _edge_maps(rgb: np.ndarray, threshold: int) -> _Edges:
    """Steps larger than ``threshold`` in any colour channel (so equal-grey colours still part);
    ``rgb`` is (h, w, 3) or a grey (h, w) uint8 array."""

    def step(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = cv2.absdiff(a, b)
        if d.ndim == 3:  # np.maximum on channel views: ~50x faster than d.max(axis=2)
            d = np.maximum(np.maximum(d[..., 0], d[..., 1]), d[..., 2])
        return cv2.integral((d > threshold).view(np.uint8))

    return _Edges(steps_y=step(rgb[1:], rgb[:-1]), steps_x=step(rgb[:, 1:], rgb[:, :-1]))


def _intervals(flags: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) runs of True in a 1-D boolean array."""
    padded = np.concatenate(([False], flags, [False]))
    change = np.flatnonzero(padded[1:] != padded[:-1])
    return list(zip(change[0::2].tolist(), change[1::2].tolist(), strict=True))


@dataclass
class LayoutProposer:
    """Boxes of the nested GUI panels that contain the focal point, smallest first.

    At each level the current region is cut along every *separator* that spans it:
    a rule or colour boundary (a step between two lines of pixels over at least
    ``line_coverage`` of the region, with one side uniform along its length); failing those,
    a gutter (at least ``gutter`` x the screen's shorter side of lines with no edges across
    the region, with content on both sides); failing those, wide blank margins are trimmed.
    The part holding the focal point is the next level (a point in a gutter keeps the region
    whole in that direction); the descent stops when nothing divides the part.

    Returned: up to ``max_boxes`` levels, each grown to ``min_size`` and kept inside the
    image, sorted by area: the innermost level, then enclosing levels grouped in scale bands.
    A band opens at a level at least ``min_growth`` times the area of the previous band's
    first level and is represented by its outermost level, so the views spread over scales
    instead of being three near-equal boxes, and a whole panel is preferred to most of one.
    Levels covering more than ``max_cover`` of the screen are not a zoom and are skipped. If
    even the largest box is under ``small_panel`` of the screen, the smallest box of
    ``fallback`` is added as context. With no structure at all the fallback's boxes are
    returned unchanged.
    """

    name = "layout"

    min_size: float = 64
    fallback: BoxProposer | None = None
    _: KW_ONLY
    max_boxes: int = 3
    work_side: int = 1920
    edge_threshold: int = 5
    line_coverage: float = 0.95
    gutter: float = 0.015
    max_cover: float = 0.85
    small_panel: float = 0.03
    min_growth: float = 1.5
    max_depth: int = 12

    def __post_init__(self) -> None:
        self.fallback = self.fallback or FixedRatioProposer()
        require(self, "max_boxes >= 1, 0 < line_coverage <= 1")

    async def propose(self, ctx: ProposalContext) -> list[Box]:
        boxes = await asyncio.to_thread(self.panel_boxes, ctx.screenshot, ctx.focal)
        if not boxes:
            return await self.fallback.propose(ctx)
        screen_area = ctx.screenshot.size[0] * ctx.screenshot.size[1]
        if boxes[-1].area < self.small_panel * screen_area:
            context = min(await self.fallback.propose(ctx), key=lambda b: b.area)
            if context.area >= self.min_growth * boxes[-1].area:
                boxes = [*boxes, context]
        return boxes

    def panel_boxes(self, image: Image.Image, focal: Point) -> list[Box]:
        """The selected panel boxes (see the class docstring), smallest first; [] when the
        screenshot shows no usable structure around ``focal``."""
        size = image.size
        screen_area = size[0] * size[1]
        picked: list[Box] = []
        band = 0.0  # area of the level that opened the scale band of picked[-1]
        for panel in reversed(self.panel_chain(image, focal)[1:]):
            if panel.area > self.max_cover * screen_area:
                break
            box = enforce_min_size(panel, self.min_size, size)
            if not picked:
                picked, band = [box], box.area
            elif box.area >= self.min_growth * band:
                if len(picked) == self.max_boxes:
                    break
                picked.append(box)
                band = box.area
            elif len(picked) > 1:
                picked[-1] = box  # same scale as the last pick: prefer the enclosing panel
        return sorted(picked, key=lambda b: b.area)

    def panel_chain(self, image: Image.Image, focal: Point) -> list[Box]:
        """Nested regions holding ``focal``, from the whole screenshot to the innermost panel,
        in screenshot pixels (raw: no minimum size, no filtering)."""
        w, h = image.size
        factor = max(1, math.ceil(max(w, h) / self.work_side))
        small = image if image.mode in ("RGB", "RGBA", "L") else image.convert("RGB")
        if factor > 1:
            small = small.reduce(factor)  # box filter: work pixel = mean of a factor^2 block
        if small.mode == "RGBA":
            small = small.convert("RGB")  # after reducing: a quarter of the pixels to convert
        rgb = np.asarray(small)
        edges = _edge_maps(rgb, self.edge_threshold)
        hw, ww = rgb.shape[:2]
        f = clamp_point(focal, (w, h))
        fx, fy = min(int(f.x) // factor, ww - 1), min(int(f.y) // factor, hw - 1)
        min_gutter = max(2, round(self.gutter * min(w, h) / factor))

        region = (0, 0, ww, hw)  # x0, y0, x1, y1 in work pixels, ends exclusive
        chain = [region]
        for _ in range(self.max_depth):
            x0, y0, x1, y1 = region
            rows = self._separators(edges, 0, (y0, y1), (x0, x1), min_gutter)
            cols = self._separators(edges, 1, (x0, x1), (y0, y1), min_gutter)
            # Rules and colour steps first; gutters only where no rule spans the region. A gutter
            # in one direction is often crossed only by a rule in the other (a column of empty
            # screen crosses the title bar's edge), so mixing the two would cut through panels.
            kind = next(k for k in ("rule", "gutter", "margin") if rows[k] or cols[k] or k == "margin")
            ys = _part_holding(rows[kind], y0, y1, fy)
            xs = _part_holding(cols[kind], x0, x1, fx)
            child = (xs[0], ys[0], xs[1], ys[1])
            if child == region or child[2] - child[0] < 2 or child[3] - child[1] < 2:
                break
            region = child
            chain.append(region)
        return [
            Box(x0 * factor, y0 * factor, min(w, x1 * factor), min(h, y1 * factor))
            for x0, y0, x1, y1 in chain
        ]

    def _separators(
        self, edges: _Edges, d: int, lines: tuple[int, int], span: tuple[int, int], min_gutter: int
    ) -> dict[str, list[tuple[int, int]]]:
        """Separators across the region, as [start, end) ranges of lines (rows if d = 0,
        columns if d = 1) that belong to no panel, by kind: "rule" (a line or a colour step
        spanning the region) and "gutter" (a wide band with nothing crossing it)."""
        lo, hi = lines
        s0, s1 = span
        n = s1 - s0
        if hi - lo < 3 or n < 2:
            return {"rule": [], "gutter": [], "margin": []}
        # Steps across the lines (between line i and i+1) and along them (within a line).
        across, along = ("y", "x") if d == 0 else ("x", "y")
        coverage = edges.line_sums(across, d, (lo, hi - 1), (s0, s1)) / n
        busy = edges.line_sums(along, d, (lo, hi), (s0, s1 - 1)) / (n - 1)
        smooth = busy <= 0.1  # mostly one colour along the line, as a rule or a background is
        blank = busy <= 0.002

        # A step between lines i and i+1 is a zero-width cut at i+1; a 1-px rule gives two
        # steps around it and so excludes the rule itself from both sides.
        is_step = (coverage >= self.line_coverage) & (smooth[:-1] | smooth[1:])
        rules = [(lo + a + 1, lo + b) for a, b in _intervals(is_step)]
        gutters = [(lo + a, lo + b) for a, b in _intervals(blank) if b - a >= min_gutter]
        # A separator at the very edge of the region is a margin, not a split; a wide blank
        # margin is trimmed when nothing else divides the region (a dialog on an empty desk).
        edge = max(3, min_gutter // 2)
        inner = {
            kind: [(a, b) for a, b in _merge(seps) if a - lo >= edge and hi - b >= edge]
            for kind, seps in (("rule", rules), ("gutter", gutters))
        }
        inner["margin"] = [(a, b) for a, b in gutters if (a == lo) != (b == hi)]
        return inner


def _merge(seps: list[tuple[int, int]], gap: int = 2) -> list[tuple[int, int]]:
    """Join separators that touch or leave only a sliver of ``gap`` lines between them (the
    two sides of an anti-aliased or 2-px rule)."""
    merged: list[list[int]] = []
    for a, b in sorted(seps):
        if merged and a <= merged[-1][1] + gap:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _part_holding(cuts: list[tuple[int, int]], lo: int, hi: int, at: int) -> tuple[int, int]:
    """The [start, end) part of [lo, hi) between the ``cuts`` that holds line ``at``. A point on
    a thin rule joins the nearer part; a point in a wide gutter belongs to no part, so the
    region stays whole in this direction (every box must contain the focal point)."""
    for a, b in cuts:
        if a <= at < b and b - a > 4:
            return lo, hi
    parts, start = [], lo
    for a, b in cuts:
        parts.append((start, a))
        start = b
    parts.append((start, hi))
    parts = [p for p in parts if p[1] > p[0]]
    if not parts:
        return lo, hi
    start, end = min(parts, key=lambda p: 0 if p[0] <= at < p[1] else min(abs(at - p[0]), abs(at - p[1] + 1)))
    return min(start, at), max(end, at + 1)
