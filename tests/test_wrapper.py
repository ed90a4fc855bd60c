"""FocusWrapper: RegionFocus around an agent it does not own (issue 36 item 1).

The caller's agent is a few lines of test code proposing actions; the grounding model is the
scripted one (a VLM we cannot run here). What is under test is ours and real: the effect read
from consecutive observations, the triggers, the stars, the caps, the round.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from regionfocus import (
    Action,
    ActionType,
    Box,
    Effect,
    ModelReply,
    Point,
    RegionFocusAgent,
    RegionFocusConfig,
)
from regionfocus.actions import click
from regionfocus.model import Query, Verdict
from regionfocus.screen import pixel_change
from regionfocus.wrapper import FocusWrapper, Observed
from tests.scripted import ScriptedModel

SCREEN = Image.new("RGB", (1200, 800), (250, 250, 250))
TARGET = Point(900, 600)
MISS = click(860, 600)  # the caller's agent clicks beside the target
TASK = "press the blue button"


def grounder(judge_verdict: Verdict = Verdict.YES) -> ScriptedModel:
    """Names the target as the focal point and, on a zoomed view, its centre; judges by a fixed
    verdict. It is never asked to act on the full screen (the caller's agent does that)."""

    def act(image, query, zoomed):
        assert zoomed, "the wrapper never asks the grounding model for the step's action"
        return ModelReply("view", action=click(image.width / 2, image.height / 2))

    return ScriptedModel(
        on_act=act,
        on_focal=lambda image, query, **k: ModelReply("p", point=TARGET),
        on_judge=lambda image, query, point: ModelReply(judge_verdict.value, verdict=judge_verdict),
        on_choose=lambda image, query, **k: ModelReply("1", choice=1),
    )


def with_cursor(image: Image.Image, at: tuple[int, int]) -> Image.Image:
    """A copy with an arrow-ish cursor drawn at ``at`` (as OSWorld's screenshots show it)."""
    out = image.copy()
    x, y = at
    ImageDraw.Draw(out).polygon([(x, y), (x, y + 18), (x + 5, y + 14), (x + 12, y + 14)], fill=(0, 0, 0))
    return out


def changed(image: Image.Image) -> Image.Image:
    out = image.copy()
    ImageDraw.Draw(out).rectangle((100, 100, 400, 300), fill=(30, 60, 200))  # a menu opened
    return out


async def test_a_click_that_changed_nothing_is_refined_on_the_next_step():
    model = grounder()
    w = FocusWrapper(model)
    d1 = await w.step(Observed(SCREEN), MISS, instruction=TASK, text="I click the button")
    assert d1.source == "agent" and d1.action == MISS and d1.trigger is None and model.calls == []
    # The same pixels again: the returned click changed nothing.
    d2 = await w.step(Observed(SCREEN.copy()), MISS, instruction=TASK)
    assert d2.trigger == "no-effect" and d2.source == "regionfocus"
    assert d2.action.point.distance(TARGET) < 1
    assert w.last_effect is not None and not w.last_effect.changed
    focal = next(c for c in model.calls if c.kind == "focal")
    assert focal.query.instruction == TASK and focal.query.mode == "agent"


async def test_an_effective_action_is_not_refined_and_clears_the_screen():
    w = FocusWrapper(grounder())
    await w.step(Observed(SCREEN), MISS, instruction=TASK)
    d = await w.step(Observed(changed(SCREEN)), click(200, 200), instruction=TASK)
    assert d.source == "agent" and d.trigger is None
    assert w.last_effect is None and w.recent == []  # a new screen: nothing executed on it yet


async def test_the_cursor_in_ignored_regions_does_not_count_as_a_change():
    # The click moved the drawn cursor from one place to another and did nothing else.
    first, second = with_cursor(SCREEN, (300, 300)), with_cursor(SCREEN, (860, 600))
    cursor = lambda at: Box(at[0] - 2, at[1] - 2, at[0] + 16, at[1] + 22)  # noqa: E731
    w = FocusWrapper(grounder())
    await w.step(Observed(first, ignore=(cursor((300, 300)),)), MISS, instruction=TASK)
    d = await w.step(Observed(second, ignore=[(858, 598, 876, 622)]), click(870, 590), instruction=TASK)
    assert d.trigger == "no-effect"
    # Not told where the cursor is, the wrapper sees a change (and so no trigger).
    w = FocusWrapper(grounder(), min_changed_pixels=20)
    await w.step(Observed(first), MISS, instruction=TASK)
    d = await w.step(Observed(second), click(870, 590), instruction=TASK)
    assert d.trigger is None and w.rounds_total == 0 and w.last_effect.changed


def test_pixel_change_counts_outside_ignored_boxes_only():
    a = np.zeros((100, 200, 3), np.uint8)
    b = a.copy()
    b[10:20, 10:20] = 200  # 100 px changed
    b[50:52, 150:160] = 10  # below the channel threshold: noise
    before, after = Image.fromarray(a), Image.fromarray(b)
    assert pixel_change(before, after) == (100, 100 / 20000)
    assert pixel_change(before, after, ignore=[Box(10, 10, 15, 20)])[0] == 50
    assert pixel_change(before, after, ignore=[Box(-50, -50, 500, 500)])[0] == 0
    assert pixel_change(before, after.resize((100, 100)))[1] == 1.0


async def test_url_and_tree_changes_are_effects_without_pixels():
    for before, after in (
        ({"url": "https://a.test/1"}, {"url": "https://a.test/2"}),
        ({"tree": "[1] button 'Next'"}, {"tree": "[1] button 'Next'\n[2] dialog 'Saved'"}),
    ):
        w = FocusWrapper(grounder())
        await w.step(Observed(SCREEN, **before), MISS, instruction=TASK)
        d = await w.step(Observed(SCREEN, **after), click(100, 700), instruction=TASK)
        assert d.trigger is None and w.last_effect.changed, (before, after)
    # Either one compared against nothing (the caller gave it once) says nothing.
    w = FocusWrapper(grounder())
    await w.step(Observed(SCREEN, url="https://a.test/1"), MISS, instruction=TASK)
    assert (await w.step(Observed(SCREEN), click(100, 700), instruction=TASK)).trigger == "no-effect"


async def test_the_environments_error_triggers_for_a_point_action_only():
    w = FocusWrapper(grounder())
    await w.step(Observed(SCREEN), MISS, instruction=TASK)
    # The error screen differs (a toast), but the environment said the click failed.
    d = await w.step(Observed(changed(SCREEN), error="element is not clickable"), MISS, instruction=TASK)
    assert d.trigger == "env-error" and d.source == "regionfocus"
    typed = Action(ActionType.TYPE, text="hello")
    w = FocusWrapper(grounder())
    await w.step(Observed(SCREEN), typed, instruction=TASK)
    d = await w.step(Observed(SCREEN, error="no focused field"), click(10, 10), instruction=TASK)
    assert d.trigger is None and d.action == click(10, 10)


async def test_after_no_effect_a_proposal_without_a_point_passes_through():
    w = FocusWrapper(grounder())
    await w.step(Observed(SCREEN), MISS, instruction=TASK)
    typed = Action(ActionType.TYPE, text="hello")
    d = await w.step(Observed(SCREEN), typed, instruction=TASK)
    assert d.action == typed and d.source == "agent" and d.round is None
    # No proposal at all (the agent's answer did not parse): the round decides.
    w = FocusWrapper(grounder())
    d = await w.step(Observed(SCREEN), None, instruction=TASK)
    assert d.trigger == "no-action" and d.action.point.distance(TARGET) < 1


async def test_repeat_fires_even_when_the_screen_changed_a_little():
    w = FocusWrapper(grounder())
    await w.step(Observed(SCREEN), MISS, instruction=TASK)
    w.observe(MISS, Effect(changed=True, dom_mutations=1))  # reported: an invisible change
    d = await w.step(Observed(SCREEN), MISS, instruction=TASK)
    assert d.trigger == "repeat" and d.source == "regionfocus"


async def test_self_judge_is_opt_in_and_costs_one_call_a_point_proposal():
    model = grounder(Verdict.NO)
    d = await FocusWrapper(model).step(Observed(SCREEN), MISS, instruction=TASK)
    assert d.trigger is None and model.calls == []
    d = await FocusWrapper(model, judge=True).step(Observed(SCREEN), MISS, instruction=TASK)
    assert d.trigger == "self-judge" and d.calls[0].kind == "judge" and d.action.point.distance(TARGET) < 1
    judged = next(c for c in model.calls if c.kind == "judge")
    assert judged.kwargs["point"] == MISS.point and judged.image is not SCREEN  # a star was drawn
    model = grounder(Verdict.YES)
    d = await FocusWrapper(model, judge=True).step(Observed(SCREEN), MISS, instruction=TASK)
    assert d.source == "agent" and model.kinds() == ["judge"]


async def test_a_failed_regionfocus_choice_is_starred_until_an_action_takes_effect():
    w = FocusWrapper(grounder())
    await w.step(Observed(SCREEN), MISS, instruction=TASK)
    d2 = await w.step(Observed(SCREEN), MISS, instruction=TASK)
    assert d2.source == "regionfocus" and d2.round.history == []
    d3 = await w.step(Observed(SCREEN), MISS, instruction=TASK)  # the round's click did nothing too
    assert d3.round.history == [d2.action.point] and w.history == [d2.action.point]
    d4 = await w.step(Observed(changed(SCREEN)), click(5, 5), instruction=TASK)
    assert d4.source == "agent" and w.history == [] and w.rounds_on_screen == 0 and w.rounds_total == 2


async def test_round_caps_per_screen():
    w = FocusWrapper(grounder(), RegionFocusConfig(max_rounds_per_screen=1))
    sources = [(await w.step(Observed(SCREEN), MISS, instruction=TASK)).source for _ in range(4)]
    assert sources == ["agent", "regionfocus", "agent", "agent"]
    w.reset()
    assert w.rounds_total == 0 and w.history == [] and w.recent == []


async def test_disabled_keeps_the_bookkeeping_and_never_refines():
    model = grounder()
    w = FocusWrapper(model, enabled=False, judge=True)
    for _ in range(3):
        d = await w.step(Observed(SCREEN), MISS, instruction=TASK)
        assert d.source == "agent" and d.action == MISS
    assert model.calls == [] and len(w.recent) == 2


async def test_bad_input_is_one_clear_error():
    w = FocusWrapper(grounder())
    with pytest.raises(TypeError, match="PIL image"):
        Observed(np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(ValueError, match="Observed.ignore"):
        Observed(SCREEN, ignore=[(1, 2)])
    with pytest.raises(ValueError, match="instruction"):
        await w.step(Observed(SCREEN), MISS, instruction="  ")
    with pytest.raises(TypeError, match="regionfocus Action"):
        await w.step(Observed(SCREEN), {"x": 1, "y": 2}, instruction=TASK)


async def test_our_agent_is_the_wrapper_with_its_own_model_as_the_actor():
    """One copy of the live state: the agent's is its wrapper's, and on a no-effect step the
    agent's model is not asked (a round decides the step, as our loop always did)."""
    acted = []

    def act(image, query, zoomed):
        acted.append(zoomed)
        return ModelReply("v", action=click(image.width / 2, image.height / 2) if zoomed else MISS)

    model = grounder()
    model.on_act = act
    agent = RegionFocusAgent(model)
    assert isinstance(agent.wrapper, FocusWrapper) and agent.history is agent.wrapper.history
    q = Query(TASK, "agent")
    d1 = await agent.step(SCREEN, q)
    agent.observe(d1.action, Effect(changed=False))
    n = len(acted)
    d2 = await agent.step(SCREEN, q)
    assert d2.trigger == "no-effect" and d2.calls == [] and not any(a is False for a in acted[n:])
    # The agent never infers an effect from pixels: a step without observe() is no evidence.
    agent = RegionFocusAgent(model)
    await agent.step(SCREEN, q)
    assert (await agent.step(SCREEN, q)).trigger is None and agent.recent == []
