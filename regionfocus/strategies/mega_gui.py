"""MEGA-GUI stage 1: a bidirectional region-of-interest zoom that trims the view while the
point stays inside it and widens it again when the point is lost.

Code: samsungsds-research-papers/mega-gui @ e5fabcd9, "4. main_code/MEGA-GUI_state_1_2.ipynb"
(``propose_candidate_point``, ``refine_search_area``, ``check_terminate_condition``,
``router``; the run: ``step_ratio = 0.1``, ``target_roi_size = 1000``,
``max_zoom_out_count = 5``). Each step grounds the current region of interest (ROI); the
answer is valid when it lies inside the ROI (borders included). Valid: the
step (``trim`` = 10 % of the ROI's long side) is cut from the end of the long side farther from
the point (the vertical side when the ROI is square; the near end on a tie). Not valid (none,
or outside): while zoom-outs are left (``zoom_outs`` 5) every side moves out by half a step,
clipped to the image; after that every side moves in by half a step ("correction zoom-in"),
on an axis longer than a step. It stops when the ROI's long side is at most ``stop_side``
(1000) px, or when the last ``agree_n`` (3) valid points are each within ``agree_px`` (50) px
of the newest. The final point is the last valid one (stage 1's ROI is centred there).

Deviations from the official code (samsungsds-research-papers/mega-gui @ e5fabcd9): stage 2
(application lookup, instruction rewriting and grounding on a 3000 px upscale of the 1000 px
ROI) is not part of this strategy. The prompt is the model adapter's (the notebook's are per
model: UI-TARS-72B gets the bare instruction, Qwen-72B an INSTRUCTION_TEMPLATE, ...). A zoom-out
there is not clipped (the crop is padded past the image); here it is. The loop there has no
step cap; here ``max_steps`` (60) is a safety cap. The notebook asks up to 4 times when a
model's answer cannot be parsed, with the same prompt at temperature 0 (its ``try_idx`` never
reaches the model); here once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..geometry import Box, Point
from .base import Attempt, BaseStrategy, clip_box, first_point, full_box, ground_view


def trim_away(roi: Box, point: Point, frac: float) -> Box:
    """``roi`` with ``frac`` of its long side cut from the end farther from ``point`` (the
    official comparisons: a square ROI trims vertically; a tie cuts the far end second)."""
    if roi.width > roi.height:
        cut = frac * roi.width
        if point.x - roi.left > roi.right - point.x:
            return Box(roi.left + cut, roi.top, roi.right, roi.bottom)
        return Box(roi.left, roi.top, roi.right - cut, roi.bottom)
    cut = frac * roi.height
    if point.y - roi.top > roi.bottom - point.y:
        return Box(roi.left, roi.top + cut, roi.right, roi.bottom)
    return Box(roi.left, roi.top, roi.right, roi.bottom - cut)


def widen(roi: Box, frac: float, size: tuple[int, int]) -> Box:
    """``roi`` with every side moved out by half of ``frac`` of its long side, clipped."""
    g = frac * max(roi.width, roi.height) / 2
    return clip_box(Box(roi.left - g, roi.top - g, roi.right + g, roi.bottom + g), size)


def narrow(roi: Box, frac: float) -> Box:
    """The official correction zoom-in: every side in by half a step, on an axis longer than it."""
    step = frac * max(roi.width, roi.height)
    gx, gy = (step / 2 if step < roi.width else 0.0), (step / 2 if step < roi.height else 0.0)
    return Box(roi.left + gx, roi.top + gy, roi.right - gx, roi.bottom - gy)


@dataclass
class MegaGuiZoom(BaseStrategy):
    name = "mega-gui"
    paper = "samsungsds-research-papers/mega-gui @ e5fabcd9 (stage 1: bidirectional ROI zoom)"
    call_budget = "until the ROI is <= 1000 px or 3 points agree (<= 60 crops)"
    requires = "0 < trim < 1, stop_side > 0, agree_n >= 2, agree_px >= 0, zoom_outs >= 0, max_steps >= 1"

    trim: float = 0.1
    stop_side: float = 1000.0
    agree_n: int = 3
    agree_px: float = 50.0
    zoom_outs: int = 5
    max_steps: int = 60
    zoom: str = "native"

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        size = screenshot.size
        roi = full_box(size)
        point = await first_point(ledger, model, screenshot, instruction)
        valid = [point] if _valid(roi, point) else []
        outs = self.zoom_outs
        for s in range(1, self.max_steps + 1):
            if max(roi.width, roi.height) <= self.stop_side:
                ledger.note(f"ROI long side <= {self.stop_side:g} px: stopped after {s - 1} steps")
                break
            if len(valid) >= self.agree_n and _agree(valid[-self.agree_n :], self.agree_px):
                ledger.note(f"last {self.agree_n} points agree within {self.agree_px:g} px: stopped")
                break
            if _valid(roi, point):
                roi, move = trim_away(roi, point, self.trim), "trim"
            elif outs > 0:
                roi, move, outs = widen(roi, self.trim, size), "widen", outs - 1
            else:
                roi, move = narrow(roi, self.trim), "narrow"
            point, _ = await ground_view(
                ledger, model, source, screenshot, roi, instruction, self.zoom, f"roi[{s}]"
            )
            ledger.step(step=s, move=move, roi=roi, point=point)
            if _valid(roi, point):
                valid.append(point)
        else:
            ledger.note(f"{self.max_steps} steps (the safety cap): stopped")
        return valid[-1] if valid else None


def _valid(roi: Box, p: Point | None) -> bool:
    return p is not None and roi.contains(p)


def _agree(points: list[Point], radius: float) -> bool:
    """The official convergence: each earlier point within ``radius`` of the newest."""
    return all(p.distance(points[-1]) <= radius for p in points[:-1])
