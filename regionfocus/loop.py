"""The live loop: observe -> decide -> act -> observe, until the task ends.

Written against :class:`~regionfocus.environment.Environment` and
:class:`~regionfocus.agent.RegionFocusAgent` only, so it runs the same on Chromium and on a
scripted world. Every limit is checked in one place (:meth:`Limits.check`); every way a task can
end is an exception carrying the final state (:class:`Ended`); a :class:`Recorder` sees each
step as soon as it happened, so a trajectory can be saved after every step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from PIL import Image

from .actions import ActionType
from .agent import LiveDecision, RegionFocusAgent
from .environment import Environment, EpisodeStatus, StepResult
from .model import Query, Turn

# ``Usage.endpoint`` of a reply no model was asked for (an answer's next command, queued by the
# screen-to-text agent; a proposer's fallback): not a model call, not a model step.
NO_MODEL = "none"


class Ended(Exception):
    """The task is over. ``reason``: "finished" (the agent answered), "call_user" (it handed the
    task back), "done" (the environment ended the episode), "max-steps", "max-model-steps",
    "no-action" (with :attr:`Limits.end_on_no_action`), or "error"."""

    def __init__(self, reason: str, *, answer: str | None = None, error: str | None = None):
        super().__init__(reason if error is None else f"{reason}: {error}")
        self.reason = reason
        self.answer = answer
        self.error = error


@dataclass(frozen=True)
class Limits:
    """``max_steps``: actions per task (the RegionFocus paper's main WebVoyager setting is 100).
    ``keep_screens``: earlier screenshots kept for agents that are shown them (UI-TARS).
    ``max_model_steps``: steps a model decided (an agent's answer or a RegionFocus round; a
    command queued from an earlier answer is none), the screen-to-text paper's "at most 10
    completions": a decision past it is not executed. ``end_on_no_action``: a step that decides
    nothing ends the task (that paper's "no next action"), instead of asking again."""

    max_steps: int = 100
    keep_screens: int = 8
    max_model_steps: int | None = None
    end_on_no_action: bool = False

    def check(self, steps_done: int, model_steps: int = 0) -> None:
        if steps_done >= self.max_steps:
            raise Ended("max-steps")
        if self.max_model_steps is not None and model_steps > self.max_model_steps:
            raise Ended("max-model-steps")


@dataclass
class Step:
    """One step as it happened: what the agent saw and decided, and what acting did."""

    n: int
    screenshot: Image.Image
    url: str
    decision: LiveDecision
    result: StepResult | None = None  # None: nothing was executed (no action, or an ending)
    status: EpisodeStatus | None = None
    wall_s: float = 0.0

    @property
    def outcome(self) -> str:
        """The step's result in words, as an agent's history shows it."""
        if self.result is None:
            return "no action" if self.decision.action is None else ""
        if self.result.error:
            return f"error: {self.result.error}"
        return "changed the page" if self.result.effect.changed else "no visible effect"


class Recorder(Protocol):
    """Sees each step when it is complete (to save it); ``views`` are the zoomed images the
    RegionFocus round of this step looked at, in request order."""

    def step(self, step: Step, views: list[Image.Image | None]) -> None: ...


@dataclass
class Episode:
    """The final state of a task: the ending, every step, the last status and screen."""

    instruction: str
    ending: Ended
    steps: list[Step] = field(default_factory=list)
    status: EpisodeStatus | None = None
    final_screenshot: Image.Image | None = None  # the screen the last action left
    wall_s: float = 0.0
    model_steps: int = 0  # steps a model decided (Limits.max_model_steps)


class _RecordingViews:
    """Passes view requests to the environment and keeps each view's image, in request order."""

    def __init__(self, source: Any):
        self.source = source
        self.images: list[Image.Image | None] = []

    async def view(self, box, target):
        i = len(self.images)
        self.images.append(None)
        v = await self.source.view(box, target)
        self.images[i] = v.image
        return v

    def take(self) -> list[Image.Image | None]:
        out, self.images = self.images, []
        return out


_ENDINGS = {ActionType.FINISHED: "finished", ActionType.CALL_USER: "call_user"}


async def run_episode(
    agent: RegionFocusAgent,
    env: Environment,
    limits: Limits,
    recorder: Recorder | None = None,
    *,
    observation: str = "screenshot",
    observation_phases: tuple[str, ...] | None = None,
) -> Episode:
    """Run one task in ``env`` to its end. Never raises for the task's own trouble (a page that
    will not load, a crash, an exception of the environment or the model): that is an ending
    with ``reason="error"``. Cancellation propagates. ``observation``: what the agent is shown
    besides the screenshot (``Query.observation``); the environment's tree, when it offers one,
    travels in ``Query.elements``."""
    t0 = time.perf_counter()
    agent.reset()
    episode = Episode("", Ended("error", error="not started"))
    views = _RecordingViews(env.views)
    turns: list[Turn] = []
    try:
        episode.instruction = await env.start()
        shot = await env.observe()
        while True:
            limits.check(len(episode.steps), episode.model_steps)
            step = await _step(
                agent, env, episode, shot, tuple(turns), views, limits, observation, observation_phases
            )
            if recorder is not None:
                recorder.step(step, views.take())
            else:
                views.take()
            _remember(turns, step, limits.keep_screens)
            _end_if_over(step, limits)
            shot = step.result.screenshot if step.result is not None else shot
    except Ended as e:
        episode.ending = e
    except Exception as e:  # noqa: BLE001 - one task's failure must not end the run
        episode.ending = Ended("error", error=f"{type(e).__name__}: {e}")
    if episode.status is None and episode.ending.reason != "error":
        try:
            episode.status = await env.status()
        except Exception as e:  # noqa: BLE001
            episode.ending = Ended("error", error=f"could not read the episode's status: {e}")
    episode.wall_s = time.perf_counter() - t0
    return episode


def model_calls(calls) -> int:
    """The calls among ``calls`` (:class:`~regionfocus.trace.CallRecord`) a model answered."""
    return sum(c.endpoint != NO_MODEL for c in calls)


async def _step(agent, env, episode: Episode, shot, turns, views, limits, observation: str, phases) -> Step:
    ts = time.perf_counter()
    url = env.url
    elements = tuple((await env.info()).get("elements") or ())
    query = Query(
        episode.instruction,
        "agent",
        url=url,
        turns=turns,
        elements=elements,
        observation=observation,
        **({"observation_phases": tuple(phases)} if phases else {}),
    )
    decision = await agent.step(shot, query, views=views)
    episode.model_steps += model_calls(decision.all_calls) > 0
    limits.check(len(episode.steps), episode.model_steps)
    step = Step(len(episode.steps) + 1, shot, url, decision)
    episode.steps.append(step)
    action = decision.action
    if action is not None and action.type not in _ENDINGS:
        step.result = await env.act(action)
        agent.observe(action, step.result.effect)
        if step.result.screenshot is not None:
            episode.final_screenshot = step.result.screenshot
        if not step.result.crashed:
            step.status = episode.status = await env.status()
    step.wall_s = time.perf_counter() - ts
    return step


def _end_if_over(step: Step, limits: Limits) -> None:
    """Every way a step can end the task, in one place."""
    action = step.decision.action
    if action is None and limits.end_on_no_action:
        raise Ended("no-action")
    if action is not None and action.type in _ENDINGS:
        # call_user hands the task back: an ending, not an answer.
        answer = action.text if action.type == ActionType.FINISHED else None
        raise Ended(_ENDINGS[action.type], answer=answer)
    if step.result is None:
        return
    if step.result.crashed:
        raise Ended("error", error=f"page crashed at step {step.n}")
    if step.status is not None and step.status.done:
        raise Ended("done")
    if step.result.screenshot is None:
        raise Ended("error", error=f"no screenshot after step {step.n}: {step.result.error}")


def _remember(turns: list[Turn], step: Step, keep_screens: int) -> None:
    """The step as the agent's history holds it: the model's own answer when the executed action
    is the one it wrote on this screenshot, else only the action (RegionFocus chose it).
    Screenshots older than the last ``keep_screens`` are let go."""
    d = step.decision
    own = d.source == "agent"
    turns.append(Turn(step.screenshot, step.screenshot.size, d.action, d.text if own else "", step.outcome))
    old = len(turns) - keep_screens - 1
    if old >= 0 and turns[old].image is not None:
        turns[old] = replace(turns[old], image=None)
