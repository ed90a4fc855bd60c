"""RegionFocus's aggregation, the one every caller uses: a RegionFocus round
(:mod:`regionfocus.orchestrator`) and any strategy that ends with several candidate points
(:mod:`regionfocus.strategies.compose`).

Candidates that are the same action within ``radius`` px merge; point candidates are numbered
first, 1..k, and drawn as numbered pink stars on the model's own copy of the screenshot
(:func:`~regionfocus.stars.mark_for_model`), or listed in text (aggregation "text");
non-point candidates follow as text options. The model answers a number; an unreadable answer
is asked again in firmer words (a different request, the same numbers), then the caller's
documented ``fallback`` picks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from PIL import Image

from .actions import Action
from .geometry import Point
from .model import GroundingModel, ModelReply, Option, Query
from .stars import mark_for_model
from .trace import Candidate

# Awaits one request (``kind``: "choose", "choose-retry1", ...) and records it; None on failure.
Ask = Callable[[str, Awaitable[ModelReply]], Awaitable[ModelReply | None]]


@dataclass
class Choice:
    """``merged``: the candidates after merging, numbered; ``number``: the one picked (1-based,
    None: no candidate); ``method``: "none", "single" (no request), "model", "model-retry" or
    "rule" (the fallback's pick)."""

    merged: list[Candidate]
    number: int | None
    method: str

    @property
    def action(self) -> Action | None:
        return self.merged[self.number - 1].action if self.number else None


def merge_candidates(candidates: Sequence[Candidate], radius: float) -> list[Candidate]:
    """Merge candidates that are the same action within ``radius`` px (greedy, in order).

    The merged point is the first member's: it is a point a model actually produced, which
    the mean of several need not be (it can fall between two buttons).
    """
    merged: list[Candidate] = []
    for c in candidates:
        for m in merged:
            if m.action.same_as(c.action, radius):
                m.views.extend(c.views)
                break
        else:
            merged.append(Candidate(c.action, list(c.views)))
    return merged


def majority_choice(merged: Sequence[Candidate], focal: Point) -> int:
    """RegionFocus's rule for an unreadable choice: the candidate most views proposed; ties go
    to the point candidate nearest the focal point, then to the lower number."""

    def key(c: Candidate) -> tuple:
        dist = c.action.point.distance(focal) if c.action.point is not None else float("inf")
        return (-len(c.views), dist, c.number or 0)

    return min(merged, key=key).number or 1


async def choose(
    model: GroundingModel,
    screenshot: Image.Image,
    query: Query,
    candidates: Sequence[Candidate],
    ask: Ask,
    fallback: Callable[[list[Candidate]], int],
    *,
    radius: float,
    on_image: bool = True,
    star_scale: float = 1.0,
    retries: int = 1,
) -> Choice:
    """Merge ``candidates`` and let ``model`` pick one (see the module docstring); every
    request goes through ``ask``. ``fallback(merged)``: the number to take when no answer is
    readable after ``retries`` more askings."""
    merged = merge_candidates(candidates, radius)
    merged.sort(key=lambda c: not c.action.is_point_action)  # stable: points first
    for n, c in enumerate(merged, start=1):
        c.number = n
    if len(merged) <= 1:
        return Choice(merged, 1 if merged else None, "single" if merged else "none")
    options = [Option(c.number, c.action, on_image and c.action.is_point_action) for c in merged]
    starred = [o for o in options if o.on_image]
    image = screenshot
    if starred:
        points, labels = [o.action.point for o in starred], [str(o.number) for o in starred]
        image = await mark_for_model(model, screenshot, points, labels, scale=star_scale)
    for attempt in range(1 + retries):
        kind = "choose" if attempt == 0 else f"choose-retry{attempt}"
        reply = await ask(kind, model.choose(image, query, options, retry=attempt))
        if reply is not None and reply.choice is not None and 1 <= reply.choice <= len(options):
            return Choice(merged, reply.choice, "model" if attempt == 0 else "model-retry")
    return Choice(merged, fallback(merged), "rule")
