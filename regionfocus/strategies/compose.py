"""Compositions: any strategy behind RegionFocus's triggers, and RegionFocus's image-as-map
choice as the final step of any strategy that ends with several candidate points.

:func:`choose_on_map` is RegionFocus's aggregation (:func:`regionfocus.choice.choose`, the one
the orchestrator uses) on points: candidates closer than ``merge_radius`` merge (the first
member's point is kept: a point a model produced), the rest are drawn as numbered pink stars on
the model's copy of the screenshot and the model answers with a number; an unreadable answer is
asked again in firmer words, then the first candidate (the strategy's own pick) stands.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from ..actions import Action, click
from ..choice import choose
from ..geometry import Point
from ..model import Query, Verdict
from ..stars import mark_for_model
from ..trace import Candidate
from ..triggers import Effect, NoAction, NoEffect, Repeat, SelfJudge, Trigger, TriggerState, any_of
from ..views import ViewSource
from .base import BaseStrategy
from .protocol import Ledger, Strategy, StrategyResult


async def choose_on_map(
    ledger: Ledger,
    screenshot: Image.Image,
    instruction: str,
    points: Sequence[Point | None],
    *,
    merge_radius: float = 8.0,
    star_scale: float = 1.0,
    retries: int = 1,
) -> tuple[Point | None, str]:
    """The pick of ``ledger``'s model among ``points`` drawn as numbered stars. Returns (point,
    method): "none", "single" (no request), "model", "model-retry" or "rule" (the first point)."""
    picked = await choose(
        ledger.model,
        screenshot,
        Query(instruction),
        [Candidate(click(p.x, p.y), [i]) for i, p in enumerate(points) if p is not None],
        # Costed as the screenshot: the starred copy stands for it, whatever size it is drawn at.
        lambda kind, request: ledger.call(kind, screenshot, request),
        lambda merged: 1,
        radius=merge_radius,
        star_scale=star_scale,
        retries=retries,
    )
    if picked.method in ("model", "model-retry", "rule"):
        candidates = [c.action.point for c in picked.merged]
        ledger.step(
            stage="choose", candidates=candidates, choice=None if picked.method == "rule" else picked.number
        )
    if picked.method == "rule":
        ledger.note("choice unreadable: the strategy's own first candidate stands")
    return (picked.action.point if picked.action else None), picked.method


@dataclass
class MapChoice(BaseStrategy):
    """``inner``'s candidates (its final point first) end in an image-as-map choice."""

    inner: Strategy
    merge_radius: float = 8.0
    star_scale: float = 1.0
    retries: int = 1

    def __post_init__(self) -> None:
        inner = self.inner
        self.name = f"{inner.name}+map-choice"
        self.paper = f"{inner.paper}; final choice: RegionFocus image-as-map"
        self.call_budget = f"{inner.call_budget} + 1 choice (when candidates differ)"
        self.needs_sampling, self.needs_planner = inner.needs_sampling, inner.needs_planner

    async def answer(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str, views: ViewSource | None
    ) -> StrategyResult:
        baseline = ledger.result.baseline
        result = await self.inner.run(ledger.model, screenshot, instruction, baseline, views=views)
        ledger.result = result  # choice calls and steps land in the inner result
        point, method = await choose_on_map(
            ledger,
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
        result.wall_s = time.perf_counter() - ledger.t0
        return result


TRIGGERS = ("self-judge", "no-action", "no-effect", "repeat", "always")


class Triggered(BaseStrategy):
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

    async def answer(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str, views: ViewSource | None
    ) -> StrategyResult:
        model, baseline = ledger.model, ledger.result.baseline
        proposed = baseline if baseline is not None and baseline.point is not None else None
        state = TriggerState(proposed, list(self.recent), self.last_effect)
        if "self-judge" in self.triggers and proposed is not None:
            image = await mark_for_model(model, screenshot, [proposed.point], [""], scale=self.star_scale)
            judged = model.judge(image, Query(instruction), proposed.point)
            reply = await ledger.call("judge", screenshot, judged)  # costed as the screenshot it stands for
            state.verdict = reply.verdict if reply is not None and reply.verdict else Verdict.UNKNOWN
        fired = "always" if "always" in self.triggers else any_of(self._checks, state)
        ledger.step(stage="trigger", verdict=state.verdict.value if state.verdict else None, fired=fired)
        if not fired:
            result = ledger.result
            result.action = baseline
            ledger.note("not triggered: the baseline stands")
            result.wall_s = time.perf_counter() - ledger.t0
            return result
        inner = await self.inner.run(model, screenshot, instruction, baseline, views=views)
        inner.wall_s = time.perf_counter() - ledger.t0
        inner.strategy = self.name
        inner.calls = ledger.result.calls + inner.calls
        inner.steps = ledger.result.steps + inner.steps
        return inner
