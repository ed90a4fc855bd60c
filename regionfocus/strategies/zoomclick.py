"""ZoomClick: a pre-zoom over 2x2 tiles that can correct the full-image point, then
depth-limited shrinking around the point.

Code: Princeton-AI2-Lab/ZoomClick @ 6a0c3633, grounding/eval_sspro_zoomclick.py
(``PrezoomIterativeNarrowingRunner``, ``prezoom_first_iteration_distance``) with the settings of
its published runs (scripts/run_zoomclick_*.slurm: ``--in_depth 3 --in_ratio 0.5
--in_min_crop 768 --patch_size 2 --center_mode clip --prezoom_px_thresh 50``). Pre-zoom grounds
the full image (the baseline) and each 2x2 tile; a tile that answers nothing counts as its
centre; the nearest tile point replaces the full-image point when it is closer than
``agree_px`` (50) px (strictly); with no full-image point the first tile's point is the start
(the code's ``patch_points_norm[0]``), which is that tile's centre when it answered nothing, even
if a later tile found the target. The published runs never took that branch (each of their
1,581 samples had a full-image point); the OCR stand-in, silent where it cannot read, takes it
often: before c089554 we started from the first tile that answered, 47.2 % on the built-in set
against 30.6 % with the code's rule (BENCHMARKS.md §7, "traced").
Then each step sizes the next crop from the current one: ``shrink`` (0.5x) of its width and
height, at least ``min_side`` (768) px, at most the current crop; centred on the point and
clipped to the current crop ("clip" mode). A step that could not shrink either side ends the
loop; ``depth`` (2) crops at most: the official ``in_depth`` 3 counts the pre-zoom iteration.
The final point is the last prediction.

Deviations from the official code (Princeton-AI2-Lab/ZoomClick @ 6a0c3633): the prompt is the
model adapter's own grounding prompt (the official backends are Qwen3-VL, with its tool-call
prompt, and UI-Venus, with its own); crops are cut at their own pixels (as there), then our view
source fits them to the model's input size with our resampler where the official code hands the
crop to the model's processor (on the built-in set this changed one OCR reading of 144, no
verdict); distances are measured in screenshot pixels, as there. A later step that answers
nothing keeps the last point (as there). None else known.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..geometry import Box, Point
from .base import Attempt, BaseStrategy, first_point, full_box, ground_view


def tiles_2x2(size: tuple[int, int]) -> list[Box]:
    w, h = size
    return [Box(x0, y0, x0 + w / 2, y0 + h / 2) for y0 in (0.0, h / 2) for x0 in (0.0, w / 2)]


def clip_into(box: Box, bounds: Box) -> Box:
    """``box`` intersected with ``bounds`` (the official "clip" centre mode)."""
    return Box(
        max(box.left, bounds.left),
        max(box.top, bounds.top),
        min(box.right, bounds.right),
        min(box.bottom, bounds.bottom),
    )


@dataclass
class ZoomClick(BaseStrategy):
    name = "zoomclick"
    paper = "Princeton-AI2-Lab/ZoomClick @ 6a0c3633 (2x2 pre-zoom, 0.5x shrinking, 768 px floor, clip)"
    call_budget = "4 tiles + up to depth (2) crops"
    requires = "depth >= 0, 0 < shrink < 1, min_side > 0, agree_px >= 0"

    depth: int = 2  # official in_depth 3 = the pre-zoom iteration + 2 crops
    shrink: float = 0.5
    min_side: float = 768.0
    agree_px: float = 50.0
    zoom: str = "native"

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        size = screenshot.size
        full = await first_point(ledger, model, screenshot, instruction)
        tiles = tiles_2x2(size)
        found = await asyncio.gather(
            *(
                ground_view(ledger, model, source, screenshot, t, instruction, self.zoom, f"tile[{i}]")
                for i, t in enumerate(tiles)
            )
        )
        answered = [p for p, _ in found]
        ledger.step(stage="pre-zoom", full=full, tiles=tiles, points=answered)
        # as the official code: a tile that answered nothing stands for its centre
        tile_points = [p if p is not None else t.center for p, t in zip(answered, tiles, strict=True)]
        point = full
        if full is not None:
            nearest = min(tile_points, key=lambda p: p.distance(full))
            if nearest.distance(full) < self.agree_px:
                point = nearest
                ledger.step(stage="pre-zoom-agree", point=point)
        else:
            point = tile_points[0]
            ledger.note("no full-image point: the first tile's point is the start")
        ledger.result.candidates = [p for p in [full, *answered] if p is not None]

        crop = full_box(size)
        for d in range(1, self.depth + 1):
            nw = min(crop.width, max(self.min_side, crop.width * self.shrink))
            nh = min(crop.height, max(self.min_side, crop.height * self.shrink))
            if (nw, nh) == (crop.width, crop.height):
                ledger.note(f"step {d}: the crop is at its {self.min_side:g} px floor; stopped")
                break
            crop = clip_into(
                Box(point.x - nw / 2, point.y - nh / 2, point.x + nw / 2, point.y + nh / 2), crop
            )
            new, _ = await ground_view(
                ledger, model, source, screenshot, crop, instruction, self.zoom, f"shrink[{d}]"
            )
            ledger.step(stage="shrink", depth=d, crop=crop, point=new)
            if new is None:
                ledger.note(f"step {d}: no point in the crop; the previous point stands")
                break
            point = new
        return point
