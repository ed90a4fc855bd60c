"""Iterative Narrowing: re-ground on a window half the size of the current view, centred on
the last point, a fixed number of rounds.

Paper: A. Nguyen, "Improved GUI Grounding via Iterative Narrowing", arXiv:2411.13591 (2024).
Code: ant-8/GUI-Grounding-via-Iterative-Shrinking, region_traverser.py (commit 8810f444):
``consume_coordinate`` takes the next region as (W/2, H/2) of the current region centred on the
point (portrait screens: W/1.2, H/2), shifted back inside the *current* region, and crops the
original image (no resize: the model's processor sees the crop as any image). The number of
rounds is 3 in the issue; ``ratio``/``portrait_ratio``/``rounds``/``zoom`` are parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..geometry import Point
from .base import Attempt, BaseStrategy, box_inside, first_point, refine_in_crops


@dataclass
class IterativeNarrowing(BaseStrategy):
    name = "iterative-narrowing"
    paper = "Nguyen 2024, Improved GUI Grounding via Iterative Narrowing (arXiv:2411.13591)"
    call_budget = "rounds (3) crops"
    requires = "rounds >= 1, 0 < ratio <= 1, 0 < portrait_ratio <= 1"

    rounds: int = 3
    ratio: tuple[float, float] = (0.5, 0.5)
    portrait_ratio: tuple[float, float] = (1 / 1.2, 0.5)
    zoom: str = "native"

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        point = await first_point(ledger, model, screenshot, instruction)
        rx, ry = self.portrait_ratio if screenshot.width < screenshot.height else self.ratio
        return await refine_in_crops(
            ledger,
            model,
            source,
            screenshot,
            instruction,
            self.zoom,
            point,
            self.rounds,
            lambda view, point, r: box_inside(point, view.width * rx, view.height * ry, view),
            "narrow",
        )
