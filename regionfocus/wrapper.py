"""FocusWrapper: RegionFocus around an agent it does not own.

The caller runs its own agent. Each step it hands the wrapper what the screen shows
(:class:`Observed`) and the action its agent proposed (points in the caller's screenshot pixels,
with the agent's text), and gets back the action to execute, in the same pixels. In between the
wrapper keeps the paper's live bookkeeping (docs/ARCHITECTURE.md §2): whether the action it
returned last time changed anything (read from the previous and the current observation:
pixels outside the ``ignore`` boxes, URL, accessibility tree; or as the caller reports it with
:meth:`FocusWrapper.observe`), the actions executed on the current screen, the history stars of
RegionFocus choices that failed there (cleared by the first action that takes effect), and the
round caps of :class:`~regionfocus.config.RegionFocusConfig`. When a trigger fires it runs a
round through :class:`~regionfocus.orchestrator.RegionFocus`.

Triggers, in the order they are checked:

* ``env-error``: the environment reported an error for the last executed point action
  (``Observed.error``);
* ``no-effect``: the last executed point action changed nothing;
* ``no-action``: the agent proposed nothing parseable (``proposed=None``);
* ``repeat``: the proposal repeats the last ``repeat_k - 1`` actions executed on this screen;
* ``no-target`` (opt-in, ``no_target_trigger``): a proposed click lands on no interactive element
  of the tree passed as ``elements``;
* ``self-judge`` (opt-in, ``judge=True``): the model, shown a star at the proposed point, says it
  is wrong (one extra call per point proposal).

The first two are about the action already executed, so they are known before the agent is
asked (:meth:`FocusWrapper.pending`): an owner that has not asked its agent yet may skip the
question and pass ``proposed=None`` (our own loop does; the round's answer is the step's action).
For a proposal the caller already has, they mean: a point proposal (or none) is replaced by the
round's choice, which grounds the step's ``instruction`` afresh on the screen (the proposal stands
when the round chooses nothing); a proposal without a point (typing, a key, scrolling without a
point, going back, finishing) passes through, because the agent has moved on to something a
round cannot place; the other triggers still apply to it.

:class:`~regionfocus.agent.RegionFocusAgent`'s live mode is this object with the agent's own
model as the actor: the triggers and the history exist once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from .actions import Action, click
from .config import RegionFocusConfig
from .geometry import Box, Point
from .model import GroundingModel, Query, Verdict
from .orchestrator import RegionFocus
from .screen import pixel_change, same_screen, screen_signature
from .stars import mark_for_model
from .trace import CallRecord, RefineResult, record_call
from .triggers import Effect, NoAction, NoEffect, NoTarget, Repeat, SelfJudge, TriggerState, any_of
from .views import ViewSource

if TYPE_CHECKING:  # the strategies package imports the agent, which imports this module
    from .strategies.protocol import Strategy

# A pixel changed when a channel moved by more than this (0-255); this many changed pixels are
# a visible change (a checkbox tick at 1x is about 30 px). The browser's thresholds, §8.
CHANNEL_DELTA = 16
MIN_CHANGED_PIXELS = 20


@dataclass(frozen=True)
class Observed:
    """What the caller's environment shows at one step.

    ``screenshot``: the screen the agent saw (RGB). ``url``/``tree``: the page's address and any
    text form of its accessibility tree or DOM, when the caller has them (compared for change
    only). ``error``: the environment's own error for the last executed action (e.g. BrowserGym's
    ``last_action_error``). ``ignore``: boxes (screenshot pixels) whose pixels never count as a
    change, such as the mouse cursor an OSWorld screenshot draws.
    """

    screenshot: Image.Image
    url: str | None = None
    tree: str | None = None
    error: str | None = None
    ignore: tuple[Box, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.screenshot, Image.Image):
            raise TypeError(f"Observed.screenshot must be a PIL image, got {type(self.screenshot).__name__}")
        boxes = []
        for b in self.ignore:
            if not isinstance(b, Box):
                try:
                    b = Box.from_list(b)
                except (TypeError, ValueError, IndexError):
                    raise ValueError(
                        f"Observed.ignore: each region must be a Box or (x0, y0, x1, y1), got {b!r}"
                    ) from None
            boxes.append(b)
        object.__setattr__(self, "ignore", tuple(boxes))
        object.__setattr__(self, "error", self.error or None)


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


async def judge_point(
    model: GroundingModel,
    screenshot: Image.Image,
    query: Query,
    point: Point,
    calls: list[CallRecord],
    star_scale: float = 1.0,
) -> Verdict:
    """The model's verdict on ``point``, drawn as a star on ``screenshot`` (UNKNOWN when the
    call failed or the answer is unreadable). The call is appended to ``calls``."""
    image = await mark_for_model(model, screenshot, [point], [""], scale=star_scale)
    reply = await record_call(calls, "judge", model.judge(image, query, point))
    return reply.verdict if reply and reply.verdict else Verdict.UNKNOWN


class FocusWrapper:
    """RegionFocus around a caller's agent (see the module docstring).

    ``enabled=False``: the same bookkeeping, never a round (a plain run to compare with).
    ``refiner``: another test-time strategy (:mod:`regionfocus.strategies`) run in place of a
    RegionFocus round; it starts from the failed point and grounds the instruction (no stars).
    ``judge``: ask the model about every point proposal (the self-judge trigger).
    ``infer``: read the effect of the returned action from the next observation; False when
    the caller always reports it with :meth:`observe` (our loop, whose browser measures it).
    ``min_changed_pixels``/``channel_delta``: what counts as a visible change.
    """

    def __init__(
        self,
        model: GroundingModel,
        config: RegionFocusConfig | None = None,
        *,
        enabled: bool = True,
        refiner: Strategy | None = None,
        judge: bool = False,
        infer: bool = True,
        min_changed_pixels: int = MIN_CHANGED_PIXELS,
        channel_delta: int = CHANNEL_DELTA,
    ):
        if min_changed_pixels < 1 or not 0 <= channel_delta < 255:
            raise ValueError(
                f"min_changed_pixels must be >= 1 and channel_delta in [0, 255), got "
                f"{min_changed_pixels} and {channel_delta}"
            )
        self.model = model
        self.config = config or RegionFocusConfig()
        self.enabled = enabled
        self.refiner = refiner
        self.judge = judge
        self.infer = infer
        self.min_changed_pixels = min_changed_pixels
        self.channel_delta = channel_delta
        self.regionfocus = RegionFocus(model, self.config)
        self.reset()

    def reset(self) -> None:
        """Forget everything about the current task (call between tasks)."""
        self.history: list[Point] = []  # failed RegionFocus points on the current screen (stars)
        self.recent: list[Action] = []  # actions executed on the current screen
        self.last_effect: Effect | None = None
        self.rounds_on_screen = 0
        self.rounds_total = 0
        self._signature: np.ndarray | None = None
        self._last_source: str | None = None  # who chose the action the caller will execute
        self._returned: Action | None = None  # returned by the last step, effect not yet known
        self._before: Observed | None = None  # the observation it was returned on
        self._executed: Action | None = None  # the last action whose effect is known
        self._seen: Observed | None = None
        self._error: str | None = None  # the environment's error for ``_executed``

    # ------------------------------------------------------------------ what happened
    def effect_between(self, before: Observed, after: Observed) -> Effect:
        """The effect of an action executed between two observations: the OR of a visible
        pixel change (outside both observations' ``ignore`` boxes), a URL change and a tree
        change (each compared only when both observations have it). An action the environment
        reported an error for (``after.error``) changed nothing."""
        count, fraction = pixel_change(
            before.screenshot, after.screenshot, self.channel_delta, (*before.ignore, *after.ignore)
        )
        visible = count >= self.min_changed_pixels
        url_changed = before.url is not None and after.url is not None and before.url != after.url
        tree_changed = before.tree is not None and after.tree is not None and before.tree != after.tree
        return Effect(
            changed=(visible or url_changed or tree_changed) and after.error is None,
            url_changed=url_changed,
            dom_mutations=int(tree_changed),
            pixel_diff=round(fraction, 6) if visible else 0.0,
            error=after.error,
        )

    def observe(self, action: Action | None, effect: Effect) -> None:
        """Record the effect of the executed ``action`` (instead of letting the next
        observation tell it). An effective action clears the stars; a RegionFocus choice that
        changed nothing becomes a star (the agent's own no-effect actions too, with
        ``star_agent_failures``)."""
        self._returned = None
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
        self._executed = action

    def pending(self, obs: Observed) -> str | None:
        """Take in ``obs`` (the effect of the last returned action, a new screen) and name the
        trigger that fires whatever the agent proposes ("env-error", "no-effect"), or None.
        Calling it again with the same object changes nothing."""
        if obs is not self._seen:
            self._see(obs)
        if not self._may_refine():
            return None
        if self._error is not None:
            return "env-error"
        if NoEffect().fires(TriggerState(None, self.recent, self.last_effect)):
            return "no-effect"
        return None

    def _see(self, obs: Observed) -> None:
        self._seen = obs
        returned, self._returned = self._returned, None
        if returned is not None and self.infer and self._before is not None:
            self.observe(returned, self.effect_between(self._before, obs))
        signature = screen_signature(obs.screenshot)
        if self._signature is not None and not same_screen(signature, self._signature):
            self._new_screen()
        self._signature = signature
        last = self._executed
        self._error = obs.error if last is not None and last.is_point_action else None

    # ------------------------------------------------------------------ deciding
    async def step(
        self,
        obs: Observed,
        proposed: Action | None,
        *,
        instruction: str = "",
        text: str = "",
        views: ViewSource | None = None,
        elements: Sequence[Any] = (),
        query: Query | None = None,
        refine: bool = True,
    ) -> LiveDecision:
        """The action to execute on ``obs``: ``proposed`` (points in ``obs.screenshot`` pixels;
        None when the agent gave nothing parseable), or a RegionFocus round's choice when a
        trigger fires. ``instruction``: what the round grounds (the task, or the step's own goal
        when the agent states one); ``text``: the agent's answer, carried in the decision.
        ``views``: a live view source (true zoom); default crops the screenshot. ``elements``:
        the screen's accessibility tree (:class:`~regionfocus.a11y.A11yElement`, screenshot
        pixels) for the a11y proposer and the no-target trigger. ``query``: a full query
        instead of ``instruction``/``elements`` (our loop passes its own). ``refine=False``: the
        proposal is returned and recorded as executed, and no round runs, whatever fires (a
        caller that could not apply a round's choice, such as OSWorld code that is not a click)."""
        if query is None:
            if not isinstance(instruction, str) or not instruction.strip():
                raise ValueError("step needs the instruction (the task or the step's goal) to ground")
            query = Query(instruction, "agent", url=obs.url or "", elements=tuple(elements))
        if proposed is not None and not isinstance(proposed, Action):
            raise TypeError(f"proposed must be a regionfocus Action or None, got {type(proposed).__name__}")
        before = self.pending(obs)
        if refine:
            decision = await self._decide(obs.screenshot, proposed, text, query, views, before)
        else:
            decision = LiveDecision(proposed, "agent", text)
        self._last_source = decision.source
        self._returned, self._before = decision.action, obs
        return decision

    async def _decide(
        self,
        screenshot: Image.Image,
        proposed: Action | None,
        text: str,
        query: Query,
        views: ViewSource | None,
        before: str | None,
    ) -> LiveDecision:
        if before is not None and (proposed is None or proposed.is_point_action):
            failed = self._executed.point if self._executed is not None else None
            fallback = proposed.point if proposed is not None else failed
            rnd = await self._refine(screenshot, query, views, before, fallback)
            if rnd.action is None and proposed is not None:
                return LiveDecision(proposed, "agent", text, before, rnd)
            return LiveDecision(rnd.action, "regionfocus", text, before, rnd)

        cfg = self.config
        calls: list[CallRecord] = []
        triggers = [NoAction(), Repeat(cfg.repeat_k, cfg.repeat_radius)]
        if cfg.no_target_trigger:
            triggers.append(NoTarget())
        trigger = any_of(triggers, TriggerState(proposed, self.recent, elements=query.elements))
        if (
            trigger is None
            and self.judge
            and self._may_refine()
            and proposed is not None
            and proposed.point is not None
        ):
            verdict = await judge_point(
                self.model, screenshot, query, proposed.point, calls, self.config.star_scale
            )
            if SelfJudge(cfg.judge_unknown).fires(TriggerState(proposed, verdict=verdict)):
                trigger = "self-judge"
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

    # ------------------------------------------------------------------ per-screen state
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

    def _remember(self, point: Point) -> None:
        if all(point.distance(p) > self.config.merge_radius for p in self.history):
            self.history.append(point)
