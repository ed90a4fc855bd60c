"""MEGA-GUI stage 1: a bidirectional region-of-interest zoom that trims the view while the
point stays inside it and widens it again when the point is lost.

Source: the issue text (no public code found with the search tools under "MEGA-GUI"). Each
step grounds the current region of interest (ROI) and then: while the answer is inside the
ROI, trims ``trim`` (10 %) of the ROI's long side, taken from the end farther from the point
(the point stays inside); when the answer is "outside" (no point, or within ``edge_frac`` of
the ROI's size from its border, where a target is probably cut off) widens the long side by the
same amount on both ends, clipped to the image. It stops when the ROI's long side is at most
``stop_side`` (1000) px, when the last ``agree_n`` (3) points agree within ``agree_px`` (50)
px, or after ``max_steps`` (30) steps. The final point is the last one found.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..geometry import Box, Point
from .base import Attempt, BaseStrategy, clip_box, first_point, full_box, ground_view


def trim_away(roi: Box, point: Point, frac: float) -> Box:
    """``roi`` with ``frac`` of its long side cut from the end farther from ``point``."""
    if roi.width >= roi.height:
        cut = frac * roi.width
        if point.x - roi.left >= roi.right - point.x:
            return Box(roi.left + cut, roi.top, roi.right, roi.bottom)
        return Box(roi.left, roi.top, roi.right - cut, roi.bottom)
    cut = frac * roi.height
    if point.y - roi.top >= roi.bottom - point.y:
        return Box(roi.left, roi.top + cut, roi.right, roi.bottom)
    return Box(roi.left, roi.top, roi.right, roi.bottom - cut)


def widen(roi: Box, frac: float, size: tuple[int, int]) -> Box:
    """``roi`` with its long side grown by ``frac`` of itself on each end, clipped to the image."""
    if roi.width >= roi.height:
        g = frac * roi.width
        return clip_box(Box(roi.left - g, roi.top, roi.right + g, roi.bottom), size)
    g = frac * roi.height
    return clip_box(Box(roi.left, roi.top - g, roi.right, roi.bottom + g), size)


@dataclass
class MegaGuiZoom(BaseStrategy):
    name = "mega-gui"
    paper = "issue text (MEGA-GUI stage 1: bidirectional ROI zoom); no public code found"
    call_budget = "until the ROI is <= 1000 px or 3 points agree (<= 30 crops)"
    requires = "0 < trim < 1, stop_side > 0, agree_n >= 2, agree_px >= 0, max_steps >= 1"

    trim: float = 0.1
    stop_side: float = 1000.0
    agree_n: int = 3
    agree_px: float = 50.0
    edge_frac: float = 0.02
    max_steps: int = 30
    zoom: str = "native"

    def _inside(self, roi: Box, p: Point | None, size: tuple[int, int]) -> bool:
        """Is ``p`` usable inside ``roi``: found, and clear of the border unless the ROI is the
        whole image (nothing can be cut off there)."""
        if p is None:
            return False
        if roi == full_box(size):
            return True
        mx, my = self.edge_frac * roi.width, self.edge_frac * roi.height
        return roi.left + mx <= p.x <= roi.right - mx and roi.top + my <= p.y <= roi.bottom - my

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        size = screenshot.size
        point = await first_point(ledger, model, screenshot, instruction)
        roi = full_box(size)
        history = [point] if point is not None else []
        for s in range(1, self.max_steps + 1):
            if max(roi.width, roi.height) <= self.stop_side:
                ledger.note(f"ROI long side <= {self.stop_side:g} px: stopped after {s - 1} steps")
                break
            if len(history) >= self.agree_n and _agree(history[-self.agree_n :], self.agree_px):
                ledger.note(f"last {self.agree_n} points agree within {self.agree_px:g} px: stopped")
                break
            if self._inside(roi, point, size):
                roi, move = trim_away(roi, point, self.trim), "trim"
            elif roi != full_box(size):
                roi, move = widen(roi, self.trim, size), "widen"
            else:
                ledger.note("no point on the whole image: stopped")
                break
            point, _ = await ground_view(
                ledger, model, source, screenshot, roi, instruction, self.zoom, f"roi[{s}]"
            )
            ledger.step(step=s, move=move, roi=roi, point=point)
            if point is not None:
                history.append(point)
        return history[-1] if history else None


def _agree(points: list[Point], radius: float) -> bool:
    return all(a.distance(b) <= radius for i, a in enumerate(points) for b in points[i + 1 :])
