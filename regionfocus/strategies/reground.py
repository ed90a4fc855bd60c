"""ReGround: one square crop around the first point, grounded once more.

No paper or public code defines it: a control of ours, the cheapest zoom (one 1024x1024 crop
around the first point, grounded once more). Chosen: the crop is shifted (not shrunk) to lie
inside the screenshot, and is the whole side where the screenshot is smaller; ``side`` and
``zoom`` are parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..geometry import Point
from .base import Attempt, BaseStrategy, box_inside, first_point, full_box, ground_view


@dataclass
class ReGround(BaseStrategy):
    name = "reground"
    paper = "our control, no paper: one 1024x1024 crop around the first point, grounded again"
    call_budget = "1 crop"
    requires = "side > 0"

    side: float = 1024.0
    zoom: str = "native"

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        point = await first_point(ledger, model, screenshot, instruction)
        if point is not None:
            crop = box_inside(point, self.side, self.side, full_box(screenshot.size))
            new, _ = await ground_view(
                ledger, model, source, screenshot, crop, instruction, self.zoom, "reground"
            )
            ledger.step(crop=crop, point=new)
            if new is None:
                ledger.note("no point in the crop; the first point stands")
            point = new or point
        return point
