"""Iterative Focusing: re-ground on the 2x2 quadrant of the current view that holds the last
point, repeatedly.

No paper or public code defines it: a control of ours, the simplest zoom loop beside Iterative
Narrowing. Chosen and documented:
the quadrants are the exact halves of the current view (no overlap, no re-centring); the number
of rounds is a parameter (default 3, like Iterative Narrowing, so both cost the same); a round
stops early when the view would fall below ``min_side`` pixels on a side.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..geometry import Box, Point
from .base import Attempt, BaseStrategy, first_point, refine_in_crops


def quadrant(view: Box, point: Point) -> Box:
    """The quarter of ``view`` holding ``point`` (ties go right/down)."""
    cx, cy = view.center.x, view.center.y
    left, right = (view.left, cx) if point.x < cx else (cx, view.right)
    top, bottom = (view.top, cy) if point.y < cy else (cy, view.bottom)
    return Box(left, top, right, bottom)


@dataclass
class IterativeFocusing(BaseStrategy):
    name = "iterative-focusing"
    paper = "our control, no paper: Iterative Narrowing's loop on 2x2 quadrants (3 re-grounds)"
    call_budget = "rounds (3) quadrant crops"
    requires = "rounds >= 1"

    rounds: int = 3
    min_side: float = 32.0
    zoom: str = "native"

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        point = await first_point(ledger, model, screenshot, instruction)

        def next_crop(view: Box, point: Point, r: int) -> Box | None:
            nxt = quadrant(view, point)
            if min(nxt.width, nxt.height) < self.min_side:
                ledger.note(f"round {r}: a quadrant would be under {self.min_side:g} px; stopped")
                return None
            return nxt

        return await refine_in_crops(
            ledger, model, source, screenshot, instruction, self.zoom, point, self.rounds, next_crop, "focus"
        )
