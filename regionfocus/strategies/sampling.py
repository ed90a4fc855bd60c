"""Drawing n answers at a temperature for the sampling strategies (UI-Zoomer, GUI-RC).

A model that implements :class:`~regionfocus.strategies.protocol.SamplingModel` answers all n in one
request (the OpenAI API's ``n``, with ``logprobs`` for token confidence). A model that does not
(the OCR agent, any deterministic grounder) would give n identical answers: the strategy then
takes its one answer (the baseline's point, or one ``act``) as the only sample and says so in
the result's notes, instead of paying n requests for the same point.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image

from ..geometry import Box, Point, clamp_point
from ..model import GroundingModel, ModelReply, Query
from .base import first_point, reply_point
from .protocol import Ledger, Samples, SamplingModel

DEGENERATE = "model cannot sample (deterministic): its one answer is the only sample"


@dataclass
class Drawn:
    """Sample points (screenshot pixels), boxes when the model gave them, confidences."""

    points: list[Point]
    boxes: list[Box | None]
    confidences: list[float | None]
    degenerate: bool


async def draw_samples(
    ledger: Ledger,
    model: GroundingModel,
    screenshot: Image.Image,
    instruction: str,
    n: int,
    temperature: float,
) -> Drawn:
    if not isinstance(model, SamplingModel):
        ledger.note(DEGENERATE)
        p = await first_point(ledger, model, screenshot, instruction)
        return Drawn([p] if p else [], [None] if p else [], [None] if p else [], True)
    got: list[Samples] = []

    async def ask() -> ModelReply:
        s = await model.sample(screenshot, Query(instruction), n, temperature)
        got.append(s)
        return ModelReply("\n---\n".join(r.text for r in s.replies), usage=s.usage)

    await ledger.call(f"sample[n={n}]", screenshot, ask(), n=n)
    points, boxes, confs = [], [], []
    for s in got:
        for reply, conf in zip(s.replies, s.confidences, strict=False):
            p = reply_point(reply)
            if p is None:
                continue
            points.append(clamp_point(p, screenshot.size))
            boxes.append(reply.box)
            confs.append(conf)
    if got and len(points) < n:
        ledger.note(f"{n - len(points)} of {n} samples named no point")
    return Drawn(points, boxes, confs, False)


def point_box(p: Point, side: float, size: tuple[int, int]) -> Box:
    """A ``side`` px square centred on ``p``, clipped to the image (GUI-RC's point expansion)."""
    h = side / 2
    return Box(
        max(0.0, p.x - h), max(0.0, p.y - h), min(float(size[0]), p.x + h), min(float(size[1]), p.y + h)
    )
