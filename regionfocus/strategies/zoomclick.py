"""ZoomClick: a pre-zoom over 2x2 tiles that can correct the full-image point, then
depth-limited shrinking around the point.

Source: the issue text (no public code found with the search tools under "ZoomClick"):
pre-zoom grounds the full image (the baseline) and each of the 2x2 tiles; a tile's point
replaces the full-image point when it lies within ``agree_px`` (50) of it (the nearest such
tile wins). Then each step crops ``shrink`` (0.5x) of the previous crop's width and height,
never below ``min_side`` (768) px nor above the image, centred on the point and clipped to the
image; a step that could not shrink further ends the loop, as does ``depth`` steps (chosen: 3).
The final point is the last prediction.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..geometry import Box, Point
from .base import Attempt, BaseStrategy, clip_box, first_point, ground_view


def tiles_2x2(size: tuple[int, int]) -> list[Box]:
    w, h = size
    return [Box(x0, y0, x0 + w / 2, y0 + h / 2) for y0 in (0.0, h / 2) for x0 in (0.0, w / 2)]


@dataclass
class ZoomClick(BaseStrategy):
    name = "zoomclick"
    paper = "issue text (ZoomClick: 2x2 pre-zoom, 0.5x shrinking, 768 px floor); no public code found"
    call_budget = "4 tiles + up to depth (3) crops"
    requires = "depth >= 0, 0 < shrink < 1, min_side > 0, agree_px >= 0"

    depth: int = 3
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
        tile_points = [p for p, _ in found]
        ledger.step(stage="pre-zoom", full=full, tiles=tiles, points=tile_points)
        point = full
        if full is not None:
            near = [p for p in tile_points if p is not None and p.distance(full) <= self.agree_px]
            if near:
                point = min(near, key=lambda p: p.distance(full))
                ledger.step(stage="pre-zoom-agree", point=point)
        else:
            point = next((p for p in tile_points if p is not None), None)
            if point is not None:
                ledger.note("no full-image point: the first tile point is the start")
        ledger.result.candidates = [p for p in [full, *tile_points] if p is not None]

        cw, ch = float(size[0]), float(size[1])
        for d in range(1, self.depth + 1):
            if point is None:
                break
            nw = min(float(size[0]), max(self.min_side, cw * self.shrink))
            nh = min(float(size[1]), max(self.min_side, ch * self.shrink))
            if (nw, nh) == (cw, ch):
                ledger.note(f"step {d}: the crop is at its {self.min_side:g} px floor; stopped")
                break
            cw, ch = nw, nh
            crop = clip_box(Box(point.x - cw / 2, point.y - ch / 2, point.x + cw / 2, point.y + ch / 2), size)
            new, _ = await ground_view(
                ledger, model, source, screenshot, crop, instruction, self.zoom, f"shrink[{d}]"
            )
            ledger.step(stage="shrink", depth=d, crop=crop, point=new)
            if new is None:
                ledger.note(f"step {d}: no point in the crop; the previous point stands")
                break
            point = new
        return point
