"""Iterative Narrowing: re-ground on a window half the size of the current view, centred on
the last point, a fixed number of rounds.

Paper: A. Nguyen, "Improved GUI Grounding via Iterative Narrowing", arXiv:2411.13591 (2024).
Code: ant-8/GUI-Grounding-via-Iterative-Shrinking @ 14c05afb, region_traverser.py and the
eval-*.ipynb notebooks: ``consume_coordinate`` takes the next region as (W/2, H/2) of the current
region centred on the point (portrait screens: W/1.2, H/2), shifted back inside the *current*
region, and crops the original image; ``eval_row`` runs ``k = 3`` predictions, the first on the
full screenshot (here the baseline), so ``rounds`` (2) crops follow it.

Deviations from the official code (ant-8/GUI-Grounding-via-Iterative-Shrinking @ 14c05afb):
every view there (the full screenshot and each crop) is resized to a 999 x 999 square before it
is sent, whatever its aspect; here a crop goes at its own pixels and the model's processor
resizes it (``zoom``). The prompts there are per model (Qwen2-VL: "In the attached UI
screenshot, calculate the exact position ..." with an assistant prefill; OS-Atlas, InternVL,
ShowUI their own); here the model adapter's grounding prompt. A crop that answers nothing ends
the loop with the last point (there the notebook would raise). Greedy decoding in both.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..geometry import Point
from .base import Attempt, BaseStrategy, box_inside, first_point, refine_in_crops


@dataclass
class IterativeNarrowing(BaseStrategy):
    name = "iterative-narrowing"
    paper = "Nguyen 2024, Improved GUI Grounding via Iterative Narrowing (arXiv:2411.13591)"
    call_budget = "rounds (2) crops"
    requires = "rounds >= 1, 0 < ratio <= 1, 0 < portrait_ratio <= 1"

    rounds: int = 2  # official k = 3 predictions, the first on the full screenshot
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
