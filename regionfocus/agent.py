"""RegionFocusAgent: wraps a GroundingModel and decides when to spend a RegionFocus round.

Static mode (ScreenSpot-Pro): predict, self-judge, refine on rejection.
Live mode (WebVoyager): act, execute (the caller does), observe the effect; a point action that
changed nothing, a repeated action or an unparseable answer triggers a round. The live
bookkeeping (triggers, history stars, round caps) is :class:`~regionfocus.wrapper.FocusWrapper`'s,
with the agent's own model as the actor it wraps.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PIL import Image

from .actions import Action
from .config import RegionFocusConfig
from .geometry import Point
from .model import GroundingModel, Query, Verdict
from .trace import CallRecord, RefineResult, record_call
from .triggers import CLICK_TYPES, Effect, SelfJudge, TriggerState
from .views import ViewSource
from .wrapper import FocusWrapper, LiveDecision, Observed, judge_point

if TYPE_CHECKING:  # the strategies package imports this module
    from .strategies.protocol import Strategy

__all__ = ["LiveDecision", "RegionFocusAgent", "StaticPrediction", "is_click"]


def is_click(action: Action | None) -> bool:
    """A grounding answer: a click of any button at a point. A scroll, hover or typing at the
    target names a place but is not a click on it."""
    return action is not None and action.point is not None and action.type in CLICK_TYPES


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
    # The agent's answer when it was no click: no point (typing, a key, finishing), or a point
    # action that is not a click (a scroll, a hover, typing at the target).
    baseline_non_point: Action | None = None

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

    @property
    def error(self) -> str | None:
        """Why a :attr:`failed` sample failed: its first failed call, named; None otherwise."""
        if not self.failed:
            return None
        first = self.lost_calls[0]
        return f"{first.kind} call failed: {first.error}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "failed": self.failed,
            "error": self.error,
            "baseline": self.baseline.to_dict() if self.baseline else None,
            "final": self.final.to_dict() if self.final else None,
            "verdict": self.verdict.value if self.verdict else None,
            "trigger": self.trigger,
            "baseline_non_point": self.baseline_non_point.to_dict() if self.baseline_non_point else None,
            "rounds": [r.to_dict() for r in self.rounds],
            "calls": [c.to_dict() for c in self.calls],
            "wall_s": round(self.wall_s, 4),
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
        # Our loop reports every effect with observe(): nothing is inferred from pixels.
        self.wrapper = FocusWrapper(model, config, enabled=enabled, refiner=refiner, infer=False)

    # The model, the config, the round and the live state are the wrapper's: one copy.
    model = property(lambda self: self.wrapper.model)
    config = property(lambda self: self.wrapper.config)
    enabled = property(lambda self: self.wrapper.enabled)
    refiner = property(lambda self: self.wrapper.refiner)
    regionfocus = property(lambda self: self.wrapper.regionfocus)
    history = property(lambda self: self.wrapper.history, doc="failed RegionFocus points on this screen")
    recent = property(lambda self: self.wrapper.recent, doc="actions executed on the current screen")
    last_effect = property(lambda self: self.wrapper.last_effect)
    rounds_on_screen = property(lambda self: self.wrapper.rounds_on_screen)
    rounds_total = property(lambda self: self.wrapper.rounds_total)

    # ---------------------------------------------------------------- static mode
    async def predict(self, screenshot: Image.Image, instruction: str) -> StaticPrediction:
        """Ground one instruction on a static screenshot (baseline and RegionFocus in one pass).

        Grounding answers are clicks (:func:`is_click`): any other answer (type, key, finished,
        and a scroll, hover or typing at a point) is kept in ``baseline_non_point``, counts as
        no action and triggers a round. Round 1 asks for the focal point on the unannotated
        screenshot: the rejected baseline is not starred (``star_baseline`` restores that
        variant); a later round stars the RegionFocus choices the judge rejected.

        A baseline call that failed (transport, provider, after the backend's own retries) ends
        the sample at once: no judge and no round against a provider that did not answer. The
        result is returned, not raised, with :attr:`StaticPrediction.failed` True and
        :attr:`StaticPrediction.error` naming the cause, so a harness records the sample as an
        error and keeps it in the denominator (an answer that merely did not parse is no
        failure: it triggers a round).
        """
        t0 = time.perf_counter()
        cfg = self.config
        query = Query(instruction, "grounding")
        calls: list[CallRecord] = []
        reply = await record_call(calls, "act", self.model.act(screenshot, query))
        answered = reply.action if reply else None
        baseline = answered if is_click(answered) else None
        result = StaticPrediction(baseline, baseline, None, None, calls=calls)
        if answered is not None and baseline is None:
            result.baseline_non_point = answered
        if reply is None or not self.enabled or cfg.static_trigger == "never":
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
        return await judge_point(self.model, screenshot, query, point, calls, self.config.star_scale)

    # ---------------------------------------------------------------- live mode
    def reset(self) -> None:
        """Forget everything about the current task (call between tasks)."""
        self.wrapper.reset()

    async def step(
        self, screenshot: Image.Image, query: Query, views: ViewSource | None = None
    ) -> LiveDecision:
        """Decide the next action on the current screen. The caller executes it and reports
        the effect with :meth:`observe`. When the last point action changed nothing the model
        is not asked: a round decides the step (:meth:`FocusWrapper.pending`)."""
        obs = Observed(screenshot, url=query.url or None)
        calls: list[CallRecord] = []
        proposed, text = None, ""
        if self.wrapper.pending(obs) is None:
            reply = await record_call(calls, "act", self.model.act(screenshot, query))
            proposed, text = (reply.action, reply.text) if reply else (None, "")
        decision = await self.wrapper.step(obs, proposed, text=text, query=query, views=views)
        decision.calls[:0] = calls
        return decision

    def observe(self, action: Action | None, effect: Effect) -> None:
        """Record the effect of the executed ``action`` (:meth:`FocusWrapper.observe`)."""
        self.wrapper.observe(action, effect)
