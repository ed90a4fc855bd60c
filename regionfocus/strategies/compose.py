"""Compositions: any strategy behind RegionFocus's triggers, and RegionFocus's image-as-map
choice as the final step of any strategy that ends with several candidate points.

:func:`choose_on_map` is RegionFocus's aggregation (regionfocus/orchestrator.py ``_choose``):
candidates closer than ``merge_radius`` merge (the first member's point is kept: a point a model
produced), the rest are drawn as numbered pink stars on the screenshot and the model answers
with a number; an unreadable answer is asked again in firmer words, then the first candidate
(the strategy's own pick) stands.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from PIL import Image

from ..actions import Action, click
from ..geometry import Point
from ..model import GroundingModel, Option, Query, Verdict
from ..stars import draw_stars
from ..strategy import Ledger, Strategy, StrategyResult
from ..triggers import Effect, NoAction, NoEffect, Repeat, SelfJudge, Trigger, TriggerState, any_of
from ..views import ViewSource


def distinct_points(points: Sequence[Point | None], radius: float) -> list[Point]:
    """Greedy merge in order: a point within ``radius`` of a kept one is dropped."""
    kept: list[Point] = []
    for p in points:
        if p is not None and all(p.distance(k) > radius for k in kept):
            kept.append(p)
    return kept


async def choose_on_map(
    ledger: Ledger,
    model: GroundingModel,
    screenshot: Image.Image,
    instruction: str,
    points: Sequence[Point | None],
    *,
    merge_radius: float = 8.0,
    star_scale: float = 1.0,
    retries: int = 1,
) -> tuple[Point | None, str]:
    """The model's pick among ``points`` drawn as numbered stars. Returns (point, method):
    "none", "single" (no request), "model", "model-retry" or "rule" (the first point)."""
    cands = distinct_points(points, merge_radius)
    if not cands:
        return None, "none"
    if len(cands) == 1:
        return cands[0], "single"
    options = [Option(i, click(p.x, p.y), True) for i, p in enumerate(cands, start=1)]
    image = draw_stars(screenshot, cands, [str(o.number) for o in options], scale=star_scale)
    query = Query(instruction)
    for attempt in range(1 + retries):
        kind = "choose" if attempt == 0 else f"choose-retry{attempt}"
        reply = await ledger.call(kind, image, model.choose(image, query, options, retry=attempt))
        if reply is not None and reply.choice is not None and 1 <= reply.choice <= len(cands):
            ledger.step(stage="choose", candidates=cands, choice=reply.choice)
            return cands[reply.choice - 1], "model" if attempt == 0 else "model-retry"
    ledger.step(stage="choose", candidates=cands, choice=None)
    ledger.note("choice unreadable: the strategy's own first candidate stands")
    return cands[0], "rule"


class MapChoice:
    """``inner``'s candidates (its final point first) end in an image-as-map choice."""

    needs_planner = False

    def __init__(self, inner: Strategy, merge_radius: float = 8.0, star_scale: float = 1.0, retries: int = 1):
        self.inner, self.merge_radius, self.star_scale, self.retries = (
            inner,
            merge_radius,
            star_scale,
            retries,
        )
        self.name = f"{inner.name}+map-choice"
        self.paper = f"{inner.paper}; final choice: RegionFocus image-as-map"
        self.call_budget = f"{inner.call_budget} + 1 choice (when candidates differ)"
        self.needs_sampling = inner.needs_sampling
        self.needs_planner = inner.needs_planner

    async def run(
        self,
        model: GroundingModel,
        screenshot: Image.Image,
        instruction: str,
        baseline: Action | None,
        *,
        views: ViewSource | None = None,
    ) -> StrategyResult:
        result = await self.inner.run(model, screenshot, instruction, baseline, views=views)
        t0 = time.perf_counter()
        ledger = Ledger(self.name, model, baseline)
        ledger.result = result  # choice calls and steps land in the inner result
        point, method = await choose_on_map(
            ledger,
            model,
            screenshot,
            instruction,
            [result.point, *result.candidates],
            merge_radius=self.merge_radius,
            star_scale=self.star_scale,
            retries=self.retries,
        )
        result.strategy = self.name
        result.steps.append({"stage": "map-choice", "method": method})
        if point is not None:
            result.action = ledger.finish(point).action
        result.wall_s += time.perf_counter() - t0
        return result


TRIGGERS = ("self-judge", "no-action", "no-effect", "repeat", "always")


class Triggered:
    """Run ``inner`` only when one of RegionFocus's triggers fires; otherwise the baseline stands.

    Static triggers: "self-judge" (a star at the baseline point, the model is asked whether it is
    right; one judge call), "no-action" (no baseline point), "always". Live triggers: "no-effect"
    and "repeat" read what :meth:`observe` was told about the executed actions on this screen,
    exactly as :class:`~regionfocus.agent.RegionFocusAgent` does."""

    def __init__(
        self,
        inner: Strategy,
        triggers: Sequence[str] = ("no-action", "self-judge"),
        *,
        judge_unknown: str = "reject",
        repeat_k: int = 2,
        repeat_radius: float = 12.0,
        star_scale: float = 1.0,
    ):
        bad = [t for t in triggers if t not in TRIGGERS]
        if bad or not triggers:
            raise ValueError(f"triggers must be a non-empty subset of {TRIGGERS}, got {list(triggers)}")
        self.inner, self.triggers, self.star_scale = inner, tuple(triggers), star_scale
        self.name = f"{inner.name}+trigger({','.join(self.triggers)})"
        self.paper = f"{inner.paper}; triggers: RegionFocus"
        self.call_budget = (
            f"{'1 judge + ' if 'self-judge' in self.triggers else ''}{inner.call_budget} when triggered"
        )
        self.needs_sampling, self.needs_planner = inner.needs_sampling, inner.needs_planner
        table: dict[str, Trigger] = {
            "no-action": NoAction(),
            "no-effect": NoEffect(),
            "repeat": Repeat(repeat_k, repeat_radius),
            "self-judge": SelfJudge(judge_unknown),
        }
        self._checks = [table[t] for t in self.triggers if t in table]
        self.recent: list[Action] = []
        self.last_effect: Effect | None = None

    def observe(self, action: Action | None, effect: Effect) -> None:
        """Record the effect of an executed action (live use); a change starts a new screen."""
        if action is None:
            return
        if effect.changed:
            self.recent.clear()
        self.recent.append(action)
        self.last_effect = effect

    async def run(
        self,
        model: GroundingModel,
        screenshot: Image.Image,
        instruction: str,
        baseline: Action | None,
        *,
        views: ViewSource | None = None,
    ) -> StrategyResult:
        t0 = time.perf_counter()
        ledger = Ledger(self.name, model, baseline)
        proposed = baseline if baseline is not None and baseline.point is not None else None
        state = TriggerState(proposed, list(self.recent), self.last_effect)
        if "self-judge" in self.triggers and proposed is not None:
            image = draw_stars(screenshot, [proposed.point], [""], scale=self.star_scale)
            reply = await ledger.call("judge", image, model.judge(image, Query(instruction), proposed.point))
            state.verdict = reply.verdict if reply is not None and reply.verdict else Verdict.UNKNOWN
        fired = "always" if "always" in self.triggers else any_of(self._checks, state)
        ledger.step(stage="trigger", verdict=state.verdict.value if state.verdict else None, fired=fired)
        if not fired:
            result = ledger.result
            result.action = baseline
            ledger.note("not triggered: the baseline stands")
            result.wall_s = time.perf_counter() - t0
            return result
        inner = await self.inner.run(model, screenshot, instruction, baseline, views=views)
        inner.wall_s = time.perf_counter() - t0
        inner.strategy = self.name
        inner.calls = ledger.result.calls + inner.calls
        inner.steps = ledger.result.steps + inner.steps
        return inner
