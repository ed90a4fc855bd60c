"""Chain-of-Ground: no crop; each step marks the previous point on the full screenshot and asks
again, possibly with a different model.

Source: the issue text (no public code found with the search tools under "Chain-of-Ground"):
step 1 draws a large translucent circle around the first point and asks for a refined point
inside it; step 2 draws a small square around that point and asks for the exact centre of the
target. Chosen and parameters: circle radius ``circle_frac`` (6 %) and square side
``square_frac`` (2 %) of the screenshot's long side; translucent red fill with an opaque
outline (the element under it stays visible); the hints appended to the instruction; the
models of the two steps (``models``; None = the grounder). Every request carries the whole
screenshot, so the answer is already in screenshot pixels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw

from ..geometry import Point
from ..model import GroundingModel
from .base import Attempt, BaseStrategy, first_point, ground_full, strategy_prompt

MARK_RGB = (230, 20, 20)
CIRCLE_HINT = strategy_prompt("chain_of_ground_circle_hint.txt")
SQUARE_HINT = strategy_prompt("chain_of_ground_square_hint.txt")


def draw_mark(
    image: Image.Image, center: Point, radius: float, shape: str, alpha: float = 0.25
) -> Image.Image:
    """A copy of ``image`` with a translucent ``shape`` ("circle" or "square", half-size
    ``radius`` px) centred on ``center``, outlined opaquely."""
    base = image.convert("RGBA")
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    box = (center.x - radius, center.y - radius, center.x + radius, center.y + radius)
    width = max(2, round(radius / 15))
    fill, outline = (*MARK_RGB, round(255 * alpha)), (*MARK_RGB, 255)
    if shape == "circle":
        draw.ellipse(box, fill=fill, outline=outline, width=width)
    else:
        draw.rectangle(box, fill=fill, outline=outline, width=width)
    return Image.alpha_composite(base, overlay).convert("RGB")


@dataclass
class ChainOfGround(BaseStrategy):
    name = "chain-of-ground"
    paper = "issue text (Chain-of-Ground: circle then square marks, per-step models); no public code found"
    call_budget = "2 marked full screenshots"
    ignores_views = "chain-of-ground never crops"  # marks drawn on the whole screenshot
    requires = "circle_frac > 0, square_frac > 0"

    models: Sequence[GroundingModel | None] = (None, None)
    circle_frac: float = 0.06
    square_frac: float = 0.02
    circle_hint: str = CIRCLE_HINT
    square_hint: str = SQUARE_HINT

    def __post_init__(self) -> None:
        self.models = tuple(self.models)
        super().__post_init__()
        if len(self.models) != 2:
            raise ValueError(
                f"chain-of-ground: models must name the 2 refining steps' models, got {self.models}"
            )

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        point = await first_point(ledger, model, screenshot, instruction)
        long_side = max(screenshot.size)
        steps = (("circle", self.circle_frac * long_side), ("square", self.square_frac * long_side / 2))
        hints = (self.circle_hint, self.square_hint)
        for i, ((shape, radius), hint) in enumerate(zip(steps, hints, strict=True)):
            if point is None:
                break
            step_model = self.models[i] or model
            marked = draw_mark(screenshot, point, radius, shape)
            asked = f"{instruction}\n{hint}" if hint else instruction
            ledger.model = step_model  # cost counted with the step's own model
            new = await ground_full(ledger, step_model, marked, asked, shape)
            ledger.step(
                step=shape, mark_center=point, radius=radius, point=new, model=type(step_model).__name__
            )
            if new is None:
                ledger.note(f"{shape} step: no point; the previous point stands")
                break
            point = new
        ledger.model = model
        return point
