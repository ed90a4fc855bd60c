"""One RegionFocus round: focal point -> boxes -> views -> candidates -> choice.

Read top to bottom, :meth:`RegionFocus.refine` is the algorithm of the paper
(docs/ARCHITECTURE.md §2); the choice among the candidates is :func:`regionfocus.choice.choose`.
Candidate requests are independent and run concurrently; a failed model call is recorded in the
trace and never ends the round.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace

from PIL import Image

from .choice import choose, majority_choice
from .config import RegionFocusConfig
from .geometry import Point, clamp_point
from .model import Avoid, GroundingModel, Query
from .proposers import build_proposer
from .proposers.base import BoxProposer, ProposalContext
from .stars import mark_for_model
from .trace import CallRecord, Candidate, RefineResult, record_call
from .triggers import CLICK_TYPES
from .views import StaticViews, ViewSource


class RegionFocus:
    """The orchestrator. Holds a model, a proposer and the config; keeps no per-screen state
    (history belongs to the caller, :class:`~regionfocus.agent.RegionFocusAgent`)."""

    def __init__(
        self,
        model: GroundingModel,
        config: RegionFocusConfig | None = None,
        proposer: BoxProposer | None = None,
    ):
        self.model = model
        self.config = config or RegionFocusConfig()
        self.proposer = proposer or build_proposer(self.config)

    async def refine(
        self,
        screenshot: Image.Image,
        query: Query,
        *,
        history: Sequence[Point] = (),
        views: ViewSource | None = None,
        trigger: str = "manual",
        fallback_point: Point | None = None,
    ) -> RefineResult:
        """Run one round on ``screenshot`` and return the chosen action with its trace.

        ``history``: points of earlier failed RegionFocus attempts on this screen (drawn as
        stars, or listed in text). ``views``: a live environment's view source (true zoom);
        default crops the screenshot. ``fallback_point``: where to centre the boxes if the model
        names no focal point (typically the rejected prediction).
        """
        t0 = time.perf_counter()
        cfg = self.config
        calls: list[CallRecord] = []
        size = screenshot.size
        history = list(history)
        result = RefineResult(trigger, None, None, "skipped", [], [], [], [], None, "none", history, calls)

        if getattr(self.proposer, "needs_focal", True):
            focal, result.focal_source = await self._focal_point(screenshot, query, history, calls)
            if focal is None:
                # A rejected prediction off the screen (another frame's numbers) centres nothing.
                usable = fallback_point is not None and within_image(fallback_point, size)
                focal = fallback_point if usable else Point(size[0] / 2, size[1] / 2)
                result.focal_source = "fallback-prediction" if usable else "fallback-center"
            result.focal = clamp_point(focal, size)

        ctx = ProposalContext(screenshot, result.focal, query, self.model, elements=query.elements)
        result.boxes = await self.proposer.propose(ctx)
        calls += [CallRecord.from_reply(kind, r) for kind, r in ctx.replies]
        if not result.boxes:  # predict-region without a usable box: a failed round, said so
            result.failure = "no-box"
            result.wall_s = time.perf_counter() - t0
            return result

        target = cfg.view_target or self.model.input_size(size)
        source = views or StaticViews(screenshot, cfg.max_zoom, fit=self.model.input_size)
        shown = await asyncio.gather(*(source.view(b, target) for b in result.boxes))
        result.views = [v.describe() for v in shown]
        # Each view image goes with its request (a backend may let it go once it is encoded):
        # the round keeps only the transforms, not four model-size images until the choice.
        asks = [
            record_call(calls, f"candidate[{i}]", self._locate(v.image, replace(query, view=v.transform)))
            for i, v in enumerate(shown)
        ]
        for v in shown:
            v.image = None
        replies = await asyncio.gather(*asks)
        del asks
        for i, (view, reply) in enumerate(zip(shown, replies, strict=True)):
            if reply is None or reply.action is None:
                continue
            t = view.transform
            shown_size = (t.box.width * t.scale_x, t.box.height * t.scale_y)
            if not all(within_image(p, shown_size) for p in reply.action.points):
                # A point off the view it answers about (another frame's numbers): a wrong answer,
                # kept in the trace where it points, never moved onto the screen as a candidate.
                result.dropped.append(Candidate(reply.action.map_points(t.view_to_screen), [i]))
                continue
            action = reply.action.map_points(lambda p, t=t: clamp_point(t.view_to_screen(p), size))
            # Grounding answers are clicks: a view that answers "type" or "finished" names no
            # target, and a scroll or hover at a point is no click on it.
            clicked = action.point is not None and action.type in CLICK_TYPES
            bucket = result.dropped if query.mode == "grounding" and not clicked else result.candidates
            bucket.append(Candidate(action, [i]))

        anchor = result.focal or fallback_point or Point(size[0] / 2, size[1] / 2)
        picked = await choose(
            self.model,
            screenshot,
            query,
            result.candidates,
            lambda kind, request: record_call(calls, kind, request),
            lambda merged: majority_choice(merged, anchor),
            radius=cfg.merge_radius,
            on_image=cfg.aggregation == "image",
            star_scale=cfg.star_scale,
            retries=cfg.choice_retries,
        )
        result.merged, result.choice, result.choice_method = picked.merged, picked.number, picked.method
        result.action = picked.action
        if result.action is None:
            result.failure = "no-candidate"
        result.wall_s = time.perf_counter() - t0
        return result

    def _locate(self, view: Image.Image, query: Query):
        """The candidate request on one view: the model's own RegionFocus view request when it
        has one (``locate_in_view``: the authors' zoom text for the families their code serves),
        else its next action on the zoomed image."""
        locate = getattr(self.model, "locate_in_view", None)
        return locate(view, query) if callable(locate) else self.model.act(view, query, zoomed=True)

    async def _focal_point(
        self, screenshot: Image.Image, query: Query, history: list[Point], calls: list[CallRecord]
    ) -> tuple[Point | None, str]:
        """Ask for the focal point; an unparseable answer is asked again up the temperature
        ladder. A failed call (transport) is not retried here: the backend already did."""
        on_image = self.config.history == "image"
        image = screenshot
        if history and on_image:
            # The model answers this request with a point: a crowd's magnified inset would put
            # the points it sees where they are not, so the stars stay on the screen itself.
            image = await mark_for_model(
                self.model, screenshot, history, scale=self.config.star_scale, magnify=False
            )
        ladder = (None, *self.config.focal_retry_temperatures)
        for attempt, temperature in enumerate(ladder):
            kind = "focal" if attempt == 0 else f"focal-retry{attempt}"
            reply = await record_call(
                calls,
                kind,
                self.model.propose_point(image, query, Avoid(history, on_image), temperature=temperature),
            )
            if reply is None:
                return None, "none"
            point = reply.point
            # Some models answer the focal request with an action; its point is as good.
            if point is None and reply.action is not None:
                point = reply.action.point
            # A point off the screenshot (another frame's numbers) is no focal point: asked again.
            if point is not None and within_image(point, screenshot.size):
                return point, "model" if attempt == 0 else "model-retry"
        return None, "none"


# How far past an edge a point still counts as on the image (then clamped onto it), as a
# fraction of the image's long side: a model writes 1000 on a 0-999 grid, or a pixel past the
# border; further out it answered in another frame (pixels where 0-1 or 0-1000 was asked).
EDGE_SLACK = 0.01


def within_image(point: Point, size: tuple[float, float]) -> bool:
    """Whether ``point`` lies on an image of ``size`` = (W, H), up to :data:`EDGE_SLACK`."""
    slack = EDGE_SLACK * max(size)
    return -slack <= point.x <= size[0] + slack and -slack <= point.y <= size[1] + slack
