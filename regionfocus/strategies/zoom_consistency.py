"""Zoom-consistency routing: two models each ground the screenshot, then a half-size crop around
their own point; the one whose zoomed point lies nearer its crop's centre is trusted.

Paper: K. Kim and K. Chelikavada, "Zoom Consistency: A Free Confidence Signal in Multi-Step
Visual Grounding Pipelines" (2026). Code: omxyz/zoom-consistency-routing, commit
4ddfd141585e3cbfacb5a280f42df3bcbe3dc73b: ``src/zoom.py`` (the two-step pipeline),
``run_capture.py`` (each model on its own crop), ``generate_submission.py`` ``router`` (the
80.9 % submission: KV-Ground-8B first, Qwen3.5-27B second). What that code does, kept here:

- per model: step 1 on the screenshot; a crop of ``ratio`` = 0.5 of its width and height
  (integer sizes) centred on the step-1 point (integer), shifted inside the screenshot;
  the crop resized to the screenshot's size and grounded again (step 2); the answer is the
  step-2 point mapped back, or the step-1 point when step 2 gives none (then no consistency);
  no answer at all when step 1 gives none;
- zoom consistency: the distance of the step-2 point from the crop's centre, in the crop's
  0-1000 coordinates (lower: step 1 was already on target);
- routing: the first model's answer when its consistency is no higher than the second's
  (ties go to the first), the second's when it is lower; a model without a consistency
  loses to one with it; neither: the first model's answer.

The first model is the grounder the harness runs (its step 1 is the baseline); the second is
``second``, another :class:`GroundingModel` (a second endpoint), costed in the same ledger
(its calls are named ``second:...``; its step 1 is ``second:baseline``). Without one there is nothing to route between: the
grounder's own two-step answer stands (noted), one zoomed request per sample.

Deviations. Requests use each adapter's own grounding prompt, not the code's
``SYSTEM_PROMPT`` (a computer_use tool call on a 1000x1000 screen, ``src/models.py``
lines 14-42; see ``prompts/SOURCES.md``); the crop is resampled once, straight to the size the
model sees for the whole screenshot (:func:`regionfocus.views.crop_view`), rather than to the
screenshot's size and again by the processor; the consistency is measured on the step-2
point after it is clamped into the screenshot. Pixel limit: the code loads both models'
processors with ``max_pixels`` 99,999,999 (``src/models.py`` line 62, and ``paper.md``
section 4.2: "no resolution cap"), so a ScreenSpot-Pro screenshot reaches the model whole; here
each model runs at its adapter's own limit (Qwen2.5-VL: 12,845,056, which a 4K screenshot
stays under; other families their own), and the result says which (a "ran with" note; in the
step, per model, the limit and the size the screenshot was seen at), so a table never passes
a capped run off as the official setting. From the command line the second model is
``regionfocus screenspot-pro --strategy zoom-consistency --second-agent F --second-base-url URL``;
without it the router runs its one-model form.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import NamedTuple

from PIL import Image

from ..geometry import Box, Point
from ..model import GroundingModel
from ..views import ViewSource
from .base import BaseStrategy, first_point, ground_view, view_source
from .protocol import Ledger, StrategyResult

OFFICIAL_MAX_PIXELS = 99_999_999  # src/models.py line 62 at the commit above


def pixel_limit(model: GroundingModel, size: tuple[int, int]) -> dict:
    """What ``model`` is sent of a screenshot of ``size``: its ``max_pixels`` when it states one
    (the VLM adapters do), and the size it sees the screenshot at."""
    limit = getattr(model, "max_pixels", None)
    return {"max_pixels": limit if isinstance(limit, int) else None, "seen": list(model.input_size(size))}


def _limit_text(limit: int | None) -> str:
    return f"max_pixels {limit:,}" if limit is not None else "an unstated pixel limit"


class Zoomed(NamedTuple):
    """One model's two-step answer: the point (None: none), the crop, its consistency."""

    point: Point | None
    crop: Box | None = None
    consistency: float | None = None


def half_crop(point: Point, size: tuple[int, int], ratio: float) -> Box:
    """The code's crop: ``ratio`` of each side (integer), centred on the integer point, shifted
    inside the image."""
    w, h = size
    cw, ch = int(w * ratio), int(h * ratio)
    left = min(max(0, int(point.x) - cw // 2), w - cw)
    top = min(max(0, int(point.y) - ch // 2), h - ch)
    return Box(left, top, left + cw, top + ch)


def consistency(point: Point, crop: Box) -> float:
    """Distance of ``point`` from ``crop``'s centre, in the crop's 0-1000 coordinates."""
    dx = (point.x - crop.left) / crop.width * 1000 - 500
    dy = (point.y - crop.top) / crop.height * 1000 - 500
    return math.hypot(dx, dy)


def route(first: Zoomed, second: Zoomed) -> tuple[str, Zoomed]:
    """The code's router: the lower consistency wins, ties and unknowns favour ``first``."""
    if second.consistency is not None and (
        first.consistency is None or second.consistency < first.consistency
    ):
        return "second", second
    return "first", first


@dataclass
class ZoomConsistencyRouter(BaseStrategy):
    name = "zoom-consistency"
    paper = "Zoom Consistency routing (Kim & Chelikavada 2026; code omxyz/zoom-consistency-routing)"
    call_budget = (
        "1 zoomed crop (+2 on the second model: full screenshot and its crop); each model at its "
        "own max_pixels, stated in the result (the official code runs at 99,999,999)"
    )
    zoom = "fill"
    requires = "0 < ratio < 1"

    ratio: float = 0.5
    second: GroundingModel | None = None

    async def two_step(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str, views: ViewSource | None
    ) -> Zoomed:
        """The pipeline of ``ledger``'s model; step 1 is the ledger's baseline when it has one."""
        model = ledger.model
        start = await first_point(ledger, model, screenshot, instruction)
        if start is None:
            return Zoomed(None)
        source = view_source(model, screenshot, views, self.zoom)
        crop = half_crop(start, screenshot.size, self.ratio)
        end, _ = await ground_view(ledger, model, source, screenshot, crop, instruction, self.zoom, "zoom")
        if end is None:
            return Zoomed(start, crop)
        return Zoomed(end, crop, consistency(end, crop))

    async def answer(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str, views: ViewSource | None
    ) -> StrategyResult:
        pixels = {"first": pixel_limit(ledger.model, screenshot.size)}
        if self.second is not None:
            pixels["second"] = pixel_limit(self.second, screenshot.size)
        ledger.note(
            "ran with "
            + ", ".join(f"{_limit_text(p['max_pixels'])} ({who} model)" for who, p in pixels.items())
            + f"; the official code runs at max_pixels {OFFICIAL_MAX_PIXELS:,}"
        )
        pixels["official_max_pixels"] = OFFICIAL_MAX_PIXELS
        if self.second is None:
            ledger.note("no second model: the grounder's two-step answer stands, unrouted")
            mine = await self.two_step(ledger, screenshot, instruction, views)
            ledger.step(first=mine._asdict(), pixels=pixels)
            return ledger.finish(mine.point)
        # The second model's calls go through a ledger of its own, so they are costed as its
        # processor sees their images; they join this one's record after the first model's.
        other = Ledger(self.name, self.second, None)
        mine, theirs = await asyncio.gather(
            self.two_step(ledger, screenshot, instruction, views),
            self.two_step(other, screenshot, instruction, views),
        )
        for call in other.result.calls:
            call.kind = f"second:{call.kind}"
        ledger.result.calls.extend(other.result.calls)
        chosen, answer = route(mine, theirs)
        ledger.result.candidates = [z.point for z in (mine, theirs) if z.point is not None]
        ledger.step(first=mine._asdict(), second=theirs._asdict(), chosen=chosen, pixels=pixels)
        return ledger.finish(answer.point)
