"""RegionFocusAgent: wraps a GroundingModel and decides when to spend a RegionFocus round.

Static mode (ScreenSpot-Pro): predict, self-judge, refine on rejection.
Live mode (WebVoyager): act, execute (the caller does), observe the effect; a point action that
changed nothing, a repeated action or an unparseable answer triggers a round. History stars
mark the RegionFocus choices that failed on the current screen (as in the paper) and are
cleared by the first action that takes effect.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from .actions import Action, click
from .config import RegionFocusConfig
from .geometry import Point
from .model import GroundingModel, Query, Verdict
from .orchestrator import RegionFocus
from .screen import same_screen, screen_signature
from .stars import mark_for_model
from .trace import CallRecord, RefineResult, record_call
from .triggers import Effect, NoAction, NoEffect, NoTarget, Repeat, SelfJudge, TriggerState, any_of
from .views import ViewSource

if TYPE_CHECKING:  # the strategies package imports this module
    from .strategies.protocol import Strategy


@dataclass
class StaticPrediction:
    """One static sample: the baseline (the wrapped agent alone) and the final answer."""

    baseline: Action | None
    final: Action | None
    verdict: Verdict | None
    trigger: str | None
    rounds: list[RefineResult] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    wall_s: float = 0.0
    baseline_non_point: Action | None = None  # the agent's answer when it named no point

    @property
    def all_calls(self) -> list[CallRecord]:
        return self.calls + [c for r in self.rounds for c in r.calls]

    @property
    def failed(self) -> bool:
        """Every model call failed: the sample is an error, not merely a wrong answer."""
        calls = self.all_calls
        return bool(calls) and all(c.error for c in calls)

    @property
    def lost_calls(self) -> list[CallRecord]:
        """The calls that failed. Some but not all: the answer is the best the calls that did
        answer allow (a failed judge keeps the baseline, a failed view drops its candidate), so
        the sample is partial, not ok."""
        return [c for c in self.all_calls if c.error]

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline.to_dict() if self.baseline else None,
            "final": self.final.to_dict() if self.final else None,
            "verdict": self.verdict.value if self.verdict else None,
            "trigger": self.trigger,
            "baseline_non_point": self.baseline_non_point.to_dict() if self.baseline_non_point else None,
            "rounds": [r.to_dict() for r in self.rounds],
            "calls": [c.to_dict() for c in self.calls],
            "wall_s": round(self.wall_s, 4),
        }


@dataclass
class LiveDecision:
    """What the agent decided for one live step. ``source``: "agent" or "regionfocus"."""

    action: Action | None
    source: str
    text: str
    trigger: str | None = None
    round: RefineResult | None = None
    calls: list[CallRecord] = field(default_factory=list)

    @property
    def all_calls(self) -> list[CallRecord]:
        return self.calls + (self.round.calls if self.round else [])

    @property
    def lost_calls(self) -> list[CallRecord]:
        """Calls of this step that failed (a step whose round lost calls is partial)."""
        return [c for c in self.all_calls if c.error]

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action.to_dict() if self.action else None,
            "source": self.source,
            "text": self.text,
            "trigger": self.trigger,
            "round": self.round.to_dict() if self.round else None,
            "calls": [c.to_dict() for c in self.calls],
        }


class RegionFocusAgent:
    """The wrapper. ``enabled=False`` gives the plain agent with the same bookkeeping, so a
    baseline run and a RegionFocus run differ in nothing else."""

    def __init__(
        self,
        model: GroundingModel,
        config: RegionFocusConfig | None = None,
        *,
        enabled: bool = True,
        refiner: Strategy | None = None,
    ):
        """``refiner``: live mode, another test-time strategy (:mod:`regionfocus.strategies`) run
        when a trigger fires, in place of a RegionFocus round; it starts from the action that
        failed (or was about to) and grounds the task's instruction (no history stars)."""
        self.model = model
        self.config = config or RegionFocusConfig()
        self.enabled = enabled
        self.regionfocus = RegionFocus(model, self.config)
        self.refiner = refiner
        self.reset()

    # ---------------------------------------------------------------- static mode
    async def predict(self, screenshot: Image.Image, instruction: str) -> StaticPrediction:
        """Ground one instruction on a static screenshot (baseline and RegionFocus in one pass).

        Grounding is point-only: a baseline answer without a point (type, key, finished, a scroll
        without a point) counts as no action and triggers a round, and the final answer is a
        point action or None. Round 1 asks for the focal point on the unannotated screenshot:
        the rejected baseline is not starred (``star_baseline`` restores that variant); a later
        round stars the RegionFocus choices the judge rejected.
        """
        t0 = time.perf_counter()
        cfg = self.config
        query = Query(instruction, "grounding")
        calls: list[CallRecord] = []
        reply = await record_call(calls, "act", self.model.act(screenshot, query))
        answered = reply.action if reply else None
        baseline = answered if answered is not None and answered.point is not None else None
        result = StaticPrediction(baseline, baseline, None, None, calls=calls)
        if answered is not None and baseline is None:
            result.baseline_non_point = answered
        if not self.enabled or cfg.static_trigger == "never":
            result.wall_s = time.perf_counter() - t0
            return result

        trigger = "no-action" if baseline is None else None
        if baseline is not None and cfg.static_trigger == "always":
            trigger = "always"
        elif baseline is not None:
            result.verdict = await self._judge(screenshot, query, baseline.point, calls)
            trigger = (
                "self-judge"
                if SelfJudge(cfg.judge_unknown).fires(TriggerState(baseline, verdict=result.verdict))
                else None
            )
        result.trigger = trigger

        history: list[Point] = [baseline.point] if (cfg.star_baseline and baseline is not None) else []
        fallback = baseline.point if baseline is not None else None
        for r in range(cfg.rounds_per_sample if trigger else 0):
            rnd = await self.regionfocus.refine(
                screenshot, query, history=history, trigger=trigger or "", fallback_point=fallback
            )
            result.rounds.append(rnd)
            if rnd.action is None or r + 1 == cfg.rounds_per_sample:
                if rnd.action is not None:
                    result.final = rnd.action
                break
            result.final = rnd.action
            verdict = await self._judge(screenshot, query, rnd.action.point, calls)
            if not SelfJudge(cfg.judge_unknown).fires(TriggerState(rnd.action, verdict=verdict)):
                break
            # A RegionFocus choice the judge rejected: a failed attempt, starred for the next round.
            if all(rnd.action.point.distance(p) > cfg.merge_radius for p in history):
                history.append(rnd.action.point)
            fallback = rnd.action.point
            trigger = "self-judge"
        result.wall_s = time.perf_counter() - t0
        return result

    def predict_sync(self, screenshot: Image.Image, instruction: str) -> StaticPrediction:
        """Blocking facade for scripts and notebooks without an event loop."""
        return asyncio.run(self.predict(screenshot, instruction))

    async def _judge(
        self, screenshot: Image.Image, query: Query, point: Point, calls: list[CallRecord]
    ) -> Verdict:
        image = await mark_for_model(self.model, screenshot, [point], [""], scale=self.config.star_scale)
        reply = await record_call(calls, "judge", self.model.judge(image, query, point))
        return reply.verdict if reply and reply.verdict else Verdict.UNKNOWN

    # ---------------------------------------------------------------- live mode
    def reset(self) -> None:
        """Forget everything about the current task (call between tasks)."""
        self.history: list[Point] = []  # failed points on the current screen (stars)
        self.recent: list[Action] = []  # actions executed on the current screen
        self.last_effect: Effect | None = None
        self.rounds_on_screen = 0
        self.rounds_total = 0
        self._signature: np.ndarray | None = None
        self._last_source: str | None = None  # who chose the action the caller will execute

    def _new_screen(self) -> None:
        self.history.clear()
        self.recent.clear()
        self.last_effect = None
        self.rounds_on_screen = 0

    def _may_refine(self) -> bool:
        cfg = self.config
        return (
            self.enabled
            and (cfg.max_rounds_per_screen is None or self.rounds_on_screen < cfg.max_rounds_per_screen)
            and (cfg.max_rounds_per_task is None or self.rounds_total < cfg.max_rounds_per_task)
        )

    async def step(
        self, screenshot: Image.Image, query: Query, views: ViewSource | None = None
    ) -> LiveDecision:
        """Decide the next action on the current screen. The caller executes it and reports
        the effect with :meth:`observe`."""
        decision = await self._decide(screenshot, query, views)
        self._last_source = decision.source
        return decision

    async def _decide(self, screenshot: Image.Image, query: Query, views: ViewSource | None) -> LiveDecision:
        signature = screen_signature(screenshot)
        if self._signature is not None and not same_screen(signature, self._signature):
            self._new_screen()
        self._signature = signature

        if self._may_refine() and NoEffect().fires(TriggerState(None, self.recent, self.last_effect)):
            rnd = await self._refine(screenshot, query, views, "no-effect", self.recent[-1].point)
            return LiveDecision(rnd.action, "regionfocus", "", "no-effect", rnd)

        calls: list[CallRecord] = []
        reply = await record_call(calls, "act", self.model.act(screenshot, query))
        proposed = reply.action if reply else None
        text = reply.text if reply else ""
        cfg = self.config
        triggers = [NoAction(), Repeat(cfg.repeat_k, cfg.repeat_radius)]
        if cfg.no_target_trigger:
            triggers.append(NoTarget())
        state = TriggerState(proposed, self.recent, elements=query.elements)
        trigger = any_of(triggers, state)
        if trigger and self._may_refine():
            repeated = trigger == "repeat" and proposed is not None and proposed.point is not None
            if repeated and cfg.star_agent_failures:
                self._remember(proposed.point)
            rnd = await self._refine(screenshot, query, views, trigger, proposed.point if proposed else None)
            if rnd.action is not None:
                return LiveDecision(rnd.action, "regionfocus", text, trigger, rnd, calls)
            return LiveDecision(proposed, "agent", text, trigger, rnd, calls)
        return LiveDecision(proposed, "agent", text, None, None, calls)

    async def _refine(self, screenshot, query, views, trigger, fallback) -> RefineResult:
        self.rounds_on_screen += 1
        self.rounds_total += 1
        if self.refiner is not None:
            start = click(fallback.x, fallback.y) if fallback is not None else None
            res = await self.refiner.run(self.model, screenshot, query.instruction, start, views=views)
            return RefineResult(
                trigger,
                res.action if res.action is not start else None,  # nothing better found: no choice
                None,
                f"strategy:{res.strategy}",
                [],
                [],
                [],
                [],
                None,
                "strategy",
                list(self.history),
                list(res.calls),
                failure=None if res.action is not start else "; ".join(res.notes) or "no better point",
                wall_s=res.wall_s,
            )
        return await self.regionfocus.refine(
            screenshot,
            query,
            history=list(self.history),
            views=views,
            trigger=trigger,
            fallback_point=fallback,
        )

    def observe(self, action: Action | None, effect: Effect) -> None:
        """Record the effect of the executed ``action``. An effective action clears the stars;
        a RegionFocus choice that changed nothing becomes a star (the base agent's own
        no-effect actions too, with ``star_agent_failures``)."""
        if action is None:
            return
        if effect.changed:
            self._new_screen()
        elif action.is_point_action and (
            self._last_source == "regionfocus" or self.config.star_agent_failures
        ):
            self._remember(action.point)
        self.recent.append(action)
        self.last_effect = effect

    def _remember(self, point: Point) -> None:
        if all(point.distance(p) > self.config.merge_radius for p in self.history):
            self.history.append(point)
