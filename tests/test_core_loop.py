"""The live loop (regionfocus.loop) against a scripted world, without Chromium.

The world is a screen with buttons drawn on it; clicking a button changes the screen (and may
end the episode with a reward), clicking elsewhere changes nothing. The real browser
implements the same protocol (tests/test_webvoyager_browser.py runs the loop on Chromium).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from PIL import Image, ImageDraw

from regionfocus import ModelReply, Point, RegionFocusAgent, RegionFocusConfig
from regionfocus.actions import Action, ActionType, click
from regionfocus.environment import Environment, EpisodeStatus, StepResult
from regionfocus.geometry import Box
from regionfocus.loop import NO_MODEL, Limits, run_episode
from regionfocus.model import Usage
from regionfocus.triggers import Effect
from regionfocus.views import StaticViews

from .scripted import ScriptedModel

SIZE = (400, 300)


@dataclass
class ButtonWorld:
    """``buttons``: name -> box. Clicking ``goal`` ends the episode with reward +1; clicking
    another button changes the screen; clicking blank space does nothing. ``crash_at``: the
    step whose action crashes the world."""

    buttons: dict[str, Box]
    goal: str = "ok"
    crash_at: int | None = None
    screens: int = 0
    acted: list[Action] = field(default_factory=list)
    finished: bool = False

    def __post_init__(self) -> None:
        self._shot = self._draw()
        self.views = StaticViews(self._shot)

    def _draw(self) -> Image.Image:
        img = Image.new("RGB", SIZE, (240, 240, 240))
        d = ImageDraw.Draw(img)
        for box in self.buttons.values():
            d.rectangle(
                (box.left, box.top, box.right, box.bottom), fill=(40, 90, 200 - 20 * self.screens % 100)
            )
        return img

    async def start(self) -> str:
        return "press ok"

    async def observe(self) -> Image.Image:
        return self._shot

    async def act(self, action: Action) -> StepResult:
        self.acted.append(action)
        if self.crash_at == len(self.acted):
            return StepResult(Effect(changed=False), None, crashed=True, error="crashed")
        hit = next((n for n, b in self.buttons.items() if b.contains(action.point)), None)
        if hit is None:
            return StepResult(Effect(changed=False), self._shot, url=self.url)
        self.screens += 1
        self.finished = hit == self.goal
        self._shot = self._draw()
        self.views = StaticViews(self._shot)
        return StepResult(Effect(changed=True, dom_mutations=3), self._shot, url=self.url)

    async def status(self) -> EpisodeStatus | None:
        return EpisodeStatus(self.finished, 1.0 if self.finished else 0.0, 1.0 if self.finished else 0.0)

    @property
    def url(self) -> str:
        return f"world://screen/{self.screens}"

    async def info(self) -> dict:
        return {}


class Steps:
    """A Recorder that keeps what it is shown, to prove each step is seen when it happens."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, str | None, int]] = []

    def step(self, step, views) -> None:
        self.seen.append(
            (step.n, step.decision.action.type.value if step.decision.action else None, len(views))
        )


def acting(*points: tuple[float, float] | None):
    """A model that answers the agent request with the given clicks in order (None: junk),
    then keeps clicking the last one."""
    plan = list(points)

    def on_act(image, query, zoomed=False):
        if zoomed:
            return ModelReply("(view)")
        p = plan.pop(0) if len(plan) > 1 else plan[0]
        return ModelReply("junk") if p is None else ModelReply(f"click {p}", action=click(*p))

    return on_act


def test_the_scripted_world_fits_the_protocol():
    world = ButtonWorld({"ok": Box(10, 10, 50, 30)})
    assert isinstance(world, Environment)


async def test_an_episode_ends_when_the_world_says_done():
    world = ButtonWorld({"ok": Box(100, 100, 160, 130)})
    rec = Steps()
    ep = await run_episode(RegionFocusAgent(ScriptedModel(on_act=acting((130, 115)))), world, Limits(10), rec)
    assert ep.ending.reason == "done" and ep.status.success and len(ep.steps) == 1
    assert rec.seen == [(1, "click", 0)]
    assert ep.instruction == "press ok" and ep.final_screenshot is not None


async def test_limits_end_the_task_in_one_place():
    world = ButtonWorld({"ok": Box(100, 100, 160, 130), "other": Box(200, 200, 260, 230)})
    model = ScriptedModel(on_act=acting((230, 215)))  # keeps pressing a button that is not the goal
    ep = await run_episode(RegionFocusAgent(model, enabled=False), world, Limits(max_steps=3))
    assert ep.ending.reason == "max-steps" and len(ep.steps) == 3 and len(world.acted) == 3


async def test_model_steps_count_answers_not_queued_commands():
    """Limits.max_model_steps (the screen-to-text paper's 10 completions): a reply no model was
    asked for (an answer's queued command, endpoint NO_MODEL) is no model step, and the decision
    past the limit is not executed."""
    world = ButtonWorld({"ok": Box(100, 100, 160, 130)})
    replies = 0

    def on_act(image, query, zoomed=False):
        nonlocal replies
        replies += 1
        queued = replies % 2 == 0  # every other reply continues the answer before it
        return ModelReply("click", action=click(5, 5), usage=Usage(endpoint=NO_MODEL if queued else None))

    agent = RegionFocusAgent(ScriptedModel(on_act=on_act), enabled=False)
    ep = await run_episode(agent, world, Limits(10, max_model_steps=2))
    assert ep.ending.reason == "max-model-steps" and ep.model_steps == 3
    assert len(ep.steps) == 4 and len(world.acted) == 4 and replies == 5


async def test_no_action_can_end_the_task():
    world = ButtonWorld({"ok": Box(100, 100, 160, 130)})
    agent = RegionFocusAgent(ScriptedModel(on_act=acting(None)), enabled=False)
    ep = await run_episode(agent, world, Limits(5, end_on_no_action=True))
    assert ep.ending.reason == "no-action" and len(ep.steps) == 1 and world.acted == []
    assert ep.ending.error is None and ep.model_steps == 1  # a result, not an error


async def test_finished_and_call_user_end_without_acting():
    world = ButtonWorld({"ok": Box(100, 100, 160, 130)})

    def on_act(image, query, zoomed=False):
        return ModelReply("done", action=Action(ActionType.FINISHED, text="forty-two"))

    ep = await run_episode(RegionFocusAgent(ScriptedModel(on_act=on_act)), world, Limits(5))
    assert (ep.ending.reason, ep.ending.answer, world.acted) == ("finished", "forty-two", [])

    def hand_back(image, query, zoomed=False):
        return ModelReply("help", action=Action(ActionType.CALL_USER))

    ep = await run_episode(RegionFocusAgent(ScriptedModel(on_act=hand_back)), world, Limits(5))
    assert (ep.ending.reason, ep.ending.answer) == ("call_user", None)


async def test_a_crash_and_an_exception_are_endings_with_errors():
    world = ButtonWorld({"ok": Box(100, 100, 160, 130)}, crash_at=1)
    ep = await run_episode(RegionFocusAgent(ScriptedModel(on_act=acting((5, 5)))), world, Limits(5))
    assert ep.ending.reason == "error" and "crashed at step 1" in ep.ending.error

    class Broken(ButtonWorld):
        async def observe(self):
            raise OSError("display gone")

    ep = await run_episode(RegionFocusAgent(ScriptedModel(on_act=acting((5, 5)))), Broken({}), Limits(5))
    assert ep.ending.reason == "error" and "display gone" in ep.ending.error and ep.steps == []


async def test_no_effect_triggers_a_round_whose_choice_is_executed_and_history_carries_outcomes():
    world = ButtonWorld({"ok": Box(300, 200, 330, 215)})
    # The agent clicks beside the small button; in a zoomed view it finds the button.

    def on_act(image, query, zoomed=False):
        if zoomed:
            t = query.view  # screenshot -> view pixels
            p = t.screen_to_view(Point(315, 207))
            return ModelReply("view click", action=click(p.x, p.y))
        return ModelReply("click beside", action=click(280, 207))

    model = ScriptedModel(
        on_act=on_act, on_focal=lambda *a, **k: ModelReply("(300,207)", point=Point(300, 207))
    )
    rec = Steps()
    ep = await run_episode(RegionFocusAgent(model, RegionFocusConfig()), world, Limits(5), rec)
    assert ep.ending.reason == "done" and len(ep.steps) == 2
    assert ep.model_steps == 2  # the agent's answer and the round: a model decided each step
    first, second = ep.steps
    assert first.decision.source == "agent" and not first.result.effect.changed
    assert second.decision.source == "regionfocus" and second.decision.trigger == "no-effect"
    assert rec.seen[1][2] == 4  # the recorder saw the round's four views with its step
    assert first.outcome == "no visible effect" and second.outcome == "changed the page"


@pytest.mark.parametrize("max_steps", [1, 2])
async def test_no_action_steps_count_against_the_limit(max_steps):
    world = ButtonWorld({"ok": Box(100, 100, 160, 130)})
    ep = await run_episode(
        RegionFocusAgent(ScriptedModel(on_act=acting(None)), enabled=False), world, Limits(max_steps)
    )
    assert ep.ending.reason == "max-steps" and len(ep.steps) == max_steps and world.acted == []
    assert all(s.outcome == "no action" for s in ep.steps)


async def test_another_strategy_can_be_the_live_refinement():
    """--strategy for the browsing harness: after a click that changed nothing, Iterative
    Narrowing starts from that click, crops around it, and its point is executed."""
    from regionfocus.strategies import get_strategy

    world = ButtonWorld({"ok": Box(300, 200, 330, 215)})

    def on_act(image, query, zoomed=False):
        if query.view is not None:  # a crop around the failed click: the button is visible there
            p = query.view.screen_to_view(Point(315, 207))
            return ModelReply("crop click", action=click(p.x, p.y))
        return ModelReply("click beside", action=click(280, 207))

    agent = RegionFocusAgent(ScriptedModel(on_act=on_act), refiner=get_strategy("iterative-narrowing"))
    ep = await run_episode(agent, world, Limits(5))
    assert ep.ending.reason == "done" and len(ep.steps) == 2
    second = ep.steps[1].decision
    assert second.source == "regionfocus" and second.round.focal_source == "strategy:iterative-narrowing"
    assert Box(300, 200, 330, 215).contains(second.action.point)
    assert all(c.image_size for c in second.round.calls)  # the strategy's costed calls
