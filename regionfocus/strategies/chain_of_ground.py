"""Chain-of-Ground: no crop; each step marks the previous points on the full screenshot and asks
again, possibly with a different model.

Code: Princeton-AI2-Lab/Chain-of-Ground @ 9ee87ef8, scripts/models/ScreenSpot-pro/
Triple-layers(RedCircle+BlueBox)/samemodels/qwen3vl_32b_triple.py (``ground_only_positive``,
``plot_annotated_circle``, ``plot_annotated_box``) and cli/core/prompts.py. Layer 1 is the
baseline's point. Layer 2 asks on the screenshot with a translucent red disc (radius
``circle_px`` 100, alpha 60/255, no outline) on that point. Layer 3 asks on the clean
screenshot with that red disc again plus a translucent blue square (side ``square_px`` 100,
alpha 60/255) on layer 2's point; a layer that answers nothing keeps the previous point. The
official sizes are pixels of the image the model is sent (Qwen3-VL's smart_resize, max_pixels
2007040), so here they are pixels at the grounder's ``input_size`` scaled to the screenshot.
``models``: the two refining layers' models (None = the grounder); every request carries the
whole screenshot, so the answer is already in screenshot pixels.

Deviations from the official code (Princeton-AI2-Lab/Chain-of-Ground @ 9ee87ef8): the official
prompts are whole per-family user prompts (Qwen3-VL: REFINE_QWEN_CIRCLE / FINAL_QWEN_BLUEBOX
with the marks' centres written as 0-1000 coordinates and a tool-call output format; UI-TARS:
REFINE_UITARS_CIRCLE), sent after the family's tool system prompt; a grounding request here
carries only an instruction inside the model adapter's own prompt, so the hints appended to
the instruction (``prompts/chain_of_ground_*_hint.txt``) are our words, not theirs. Layer 1
there is the first model's own answer on the resized screenshot; here the baseline's point.
Greedy decoding in both (temperature 0 there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw

from ..geometry import Point
from ..model import GroundingModel
from .base import Attempt, BaseStrategy, first_point, ground_full, strategy_prompt

MARK_RGB = (230, 20, 20)
CIRCLE_RGB, SQUARE_RGB = (255, 0, 0), (0, 0, 255)  # the official red circle and blue box
MARK_ALPHA = 60 / 255  # the official alpha=60
CIRCLE_HINT = strategy_prompt("chain_of_ground_circle_hint.txt")
SQUARE_HINT = strategy_prompt("chain_of_ground_square_hint.txt")


def draw_mark(
    image: Image.Image,
    center: Point,
    radius: float,
    shape: str,
    alpha: float = 0.25,
    rgb: tuple[int, int, int] = MARK_RGB,
    outline: bool = True,
) -> Image.Image:
    """A copy of ``image`` with a translucent ``shape`` ("circle" or "square", half-size
    ``radius`` px) centred on ``center``, outlined opaquely unless ``outline`` is False."""
    base = image.convert("RGBA")
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    box = (center.x - radius, center.y - radius, center.x + radius, center.y + radius)
    width = max(2, round(radius / 15)) if outline else 0
    fill, line = (*rgb, round(255 * alpha)), ((*rgb, 255) if outline else None)
    if shape == "circle":
        draw.ellipse(box, fill=fill, outline=line, width=width)
    else:
        draw.rectangle(box, fill=fill, outline=line, width=width)
    return Image.alpha_composite(base, overlay).convert("RGB")


@dataclass
class ChainOfGround(BaseStrategy):
    name = "chain-of-ground"
    paper = (
        "Princeton-AI2-Lab/Chain-of-Ground @ 9ee87ef8 (triple layer: red circle, then red circle + blue box)"
    )
    call_budget = "2 marked full screenshots"
    ignores_views = "chain-of-ground never crops"  # marks drawn on the whole screenshot
    requires = "circle_px > 0, square_px > 0"

    models: Sequence[GroundingModel | None] = (None, None)
    circle_px: float = 100.0  # radius, in pixels of the image the model is sent
    square_px: float = 100.0  # side, likewise
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
        first = point = await first_point(ledger, model, screenshot, instruction)
        scale = screenshot.width / model.input_size(screenshot.size)[0]
        radius, half_side = self.circle_px * scale, self.square_px * scale / 2
        hints = (self.circle_hint, self.square_hint)
        for i, (shape, hint) in enumerate(zip(("circle", "square"), hints, strict=True)):
            if point is None:
                break
            step_model = self.models[i] or model
            marked = draw_mark(screenshot, first, radius, "circle", MARK_ALPHA, CIRCLE_RGB, outline=False)
            if shape == "square":
                marked = draw_mark(marked, point, half_side, "square", MARK_ALPHA, SQUARE_RGB, outline=False)
            asked = f"{instruction}\n{hint}" if hint else instruction
            ledger.model = step_model  # cost counted with the step's own model
            new = await ground_full(ledger, step_model, marked, asked, shape)
            ledger.step(
                step=shape,
                mark_center=point,
                radius=radius if shape == "circle" else half_side,
                point=new,
                model=type(step_model).__name__,
            )
            if new is None:
                ledger.note(f"{shape} step: no point; the previous point stands")
                break
            point = new
        ledger.model = model
        return point
