"""ReGround: one square crop around the first point, grounded once more.

Source: the issue text ("one centre crop, 1024x1024 around the first point, re-ground once");
no public code found with the search tools. Chosen: the crop is shifted (not shrunk) to lie
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
    paper = "issue text (one 1024x1024 centre crop, re-ground once); no public code found"
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
