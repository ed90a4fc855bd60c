"""RegionFocusAgent in static mode (self-judge) and live mode (no effect, repeat, history, caps)."""

from PIL import Image, ImageDraw

from regionfocus import Effect, ModelReply, Point, Query, RegionFocusAgent, RegionFocusConfig, Verdict
from regionfocus.actions import click
from tests.scripted import ScriptedModel

SCREEN = Image.new("RGB", (1200, 800), (250, 250, 250))
TARGET = Point(900, 600)


def zoom_aware_act(baseline):
    """Acts at ``baseline`` on the full screen, at the view's centre on a zoomed view."""

    def act(image, query, zoomed):
        if zoomed:
            return ModelReply("zoomed", action=click(image.width / 2, image.height / 2))
        return ModelReply("Action: click", action=baseline) if baseline else ModelReply("???")

    return act


def judge_by_distance(image, query, point):
    v = Verdict.YES if point.distance(TARGET) < 20 else Verdict.NO
    return ModelReply(f"Verdict: {v.value}", verdict=v)


def model_for(baseline, judge=judge_by_distance):
    return ScriptedModel(
        on_act=zoom_aware_act(baseline),
        on_judge=judge,
        on_focal=lambda image, query, **k: ModelReply("p", point=TARGET),
        on_choose=lambda image, query, **k: ModelReply("Selected point: 1", choice=1),
    )


async def test_static_accepted_baseline_skips_regionfocus():
    model = model_for(click(901, 601))
    pred = await RegionFocusAgent(model).predict(SCREEN, "click ok")
    assert model.kinds() == ["act", "judge"]
    assert pred.verdict == Verdict.YES and pred.trigger is None and pred.final == pred.baseline


async def test_static_rejected_baseline_runs_one_round_on_the_unannotated_screenshot():
    model = model_for(click(100, 100))
    pred = await RegionFocusAgent(model).predict(SCREEN, "click ok")
    assert pred.trigger == "self-judge" and len(pred.rounds) == 1
    focal_call = next(c for c in model.calls if c.kind == "focal")
    # The paper's round 1: no stars; the rejected baseline is not a RegionFocus attempt.
    assert focal_call.kwargs["avoid"] == [] and focal_call.image is SCREEN
    assert pred.rounds[0].history == []
    assert pred.final.point.distance(TARGET) < 1 and pred.baseline.point == Point(100, 100)
    assert model.kinds().count("judge") == 1  # the paper's default: one round, no re-judge


async def test_star_baseline_switch_restores_the_starred_round_1():
    model = model_for(click(100, 100))
    pred = await RegionFocusAgent(model, RegionFocusConfig(star_baseline=True)).predict(SCREEN, "ok")
    focal_call = next(c for c in model.calls if c.kind == "focal")
    assert focal_call.kwargs["avoid"] == [Point(100, 100)] and focal_call.kwargs["avoid_on_image"]
    assert focal_call.image is not SCREEN and focal_call.image.getpixel((100, 100)) != SCREEN.getpixel(
        (100, 100)
    )
    assert pred.rounds[0].history == [Point(100, 100)]


async def test_grounding_is_point_only():
    """A baseline without a point is "no action"; views answering without a point are dropped
    and recorded; the final answer is a point or nothing."""
    from regionfocus.actions import Action, ActionType

    typed = Action(ActionType.TYPE, text="hello")

    def act(image, query, zoomed):
        if zoomed and image.width > 700:  # one view types instead of pointing
            return ModelReply("type", action=typed)
        return (
            ModelReply("zoomed", action=click(image.width / 2, image.height / 2))
            if zoomed
            else ModelReply("type(content='hello')", action=typed)
        )

    model = model_for(None)
    model.on_act = act
    pred = await RegionFocusAgent(model).predict(SCREEN, "x")
    assert pred.trigger == "no-action" and pred.baseline is None and pred.baseline_non_point == typed
    rnd = pred.rounds[0]
    assert rnd.dropped and all(c.action.point is None for c in rnd.dropped)
    assert all(c.action.point is not None for c in rnd.candidates)
    assert pred.final is not None and pred.final.point is not None
    assert pred.to_dict()["baseline_non_point"]["type"] == "type"

    # No view names a point: the final answer is nothing, never the typed text.
    model = model_for(None)
    model.on_act = lambda image, query, zoomed: ModelReply("type", action=typed)
    pred = await RegionFocusAgent(model).predict(SCREEN, "x")
    assert pred.final is None and pred.rounds[0].failure == "no-candidate"


async def test_static_judge_sees_a_star_at_the_point():
    seen = {}

    def judge(image, query, point):
        seen["px"] = image.getpixel((int(point.x), int(point.y) - 3))
        return ModelReply("Verdict: YES", verdict=Verdict.YES)

    await RegionFocusAgent(model_for(click(300, 300), judge)).predict(SCREEN, "x")
    assert seen["px"] != SCREEN.getpixel((300, 297))


async def test_static_unknown_verdict_follows_config():
    unknown = lambda *a, **k: ModelReply("I do not know", verdict=Verdict.UNKNOWN)  # noqa: E731
    rej = await RegionFocusAgent(model_for(click(1, 1), unknown)).predict(SCREEN, "x")
    acc = await RegionFocusAgent(
        model_for(click(1, 1), unknown), RegionFocusConfig(judge_unknown="accept")
    ).predict(SCREEN, "x")
    assert rej.trigger == "self-judge" and acc.trigger is None


async def test_static_no_action_always_never_and_disabled():
    pred = await RegionFocusAgent(model_for(None)).predict(SCREEN, "x")
    assert pred.trigger == "no-action" and pred.baseline is None and pred.final.point.distance(TARGET) < 1
    assert pred.rounds[0].focal_source == "model"
    pred = await RegionFocusAgent(
        model_for(click(901, 601)), RegionFocusConfig(static_trigger="always")
    ).predict(SCREEN, "x")
    assert pred.trigger == "always" and pred.verdict is None
    model = model_for(click(1, 1))
    pred = await RegionFocusAgent(model, RegionFocusConfig(static_trigger="never")).predict(SCREEN, "x")
    assert model.kinds() == ["act"] and pred.final == pred.baseline
    model = model_for(click(1, 1))
    await RegionFocusAgent(model, enabled=False).predict(SCREEN, "x")
    assert model.kinds() == ["act"]


async def test_static_more_rounds_rejudge_and_star_failed_regionfocus_choices():
    model = model_for(click(100, 100), judge=lambda *a, **k: ModelReply("Verdict: NO", verdict=Verdict.NO))
    focal_points = iter([Point(300, 300), Point(700, 200), Point(1000, 700)])
    model.on_focal = lambda *a, **k: ModelReply("p", point=next(focal_points))
    pred = await RegionFocusAgent(model, RegionFocusConfig(rounds_per_sample=3)).predict(SCREEN, "x")
    assert len(pred.rounds) == 3
    focal_avoids = [c.kwargs["avoid"] for c in model.calls if c.kind == "focal"]
    # Round 1 has no star; each later round stars the earlier rounds' rejected choices.
    assert [len(a) for a in focal_avoids] == [0, 1, 2]
    assert focal_avoids[2] == [pred.rounds[0].action.point, pred.rounds[1].action.point]


async def test_static_all_calls_failed_is_an_error_sample():
    def boom(*a, **k):
        raise TimeoutError("timed out")

    pred = await RegionFocusAgent(ScriptedModel(on_act=boom, on_focal=boom)).predict(SCREEN, "x")
    assert pred.failed and pred.final is None
    assert not (await RegionFocusAgent(model_for(click(1, 1))).predict(SCREEN, "x")).failed


# ------------------------------------------------------------------------------- live mode
Q = Query("open settings", "agent")


async def test_live_only_failed_regionfocus_choices_become_stars():
    model = model_for(click(100, 100))
    agent = RegionFocusAgent(model)
    d1 = await agent.step(SCREEN, Q)
    assert d1.source == "agent" and d1.action.point == Point(100, 100)
    agent.observe(d1.action, Effect(changed=False))
    assert agent.history == []  # the base agent's own miss is not a star
    d2 = await agent.step(SCREEN, Q)
    assert d2.source == "regionfocus" and d2.trigger == "no-effect"
    assert d2.round.history == [] and d2.round.focal_source == "model"
    agent.observe(d2.action, Effect(changed=False))
    assert agent.history == [d2.action.point]  # a RegionFocus choice that changed nothing is
    d3 = await agent.step(SCREEN, Q)
    assert d3.source == "regionfocus" and d3.round.history == [d2.action.point]
    agent.observe(d3.action, Effect(changed=True, dom_mutations=3))
    assert agent.history == [] and agent.rounds_on_screen == 0 and agent.rounds_total == 2
    d4 = await agent.step(SCREEN, Q)
    assert d4.source == "agent"  # the effective action cleared the trigger


async def test_live_star_agent_failures_switch():
    agent = RegionFocusAgent(model_for(click(100, 100)), RegionFocusConfig(star_agent_failures=True))
    d1 = await agent.step(SCREEN, Q)
    agent.observe(d1.action, Effect(changed=False))
    assert agent.history == [Point(100, 100)]
    d2 = await agent.step(SCREEN, Q)
    assert d2.round.history == [Point(100, 100)]


async def test_live_repeat_triggers_even_when_things_changed():
    model = model_for(click(100, 100))
    agent = RegionFocusAgent(model, RegionFocusConfig(repeat_k=2))
    d1 = await agent.step(SCREEN, Q)
    agent.observe(d1.action, Effect(changed=True, dom_mutations=1))  # same screen, invisible change
    d2 = await agent.step(SCREEN, Q)
    assert d2.trigger == "repeat" and d2.source == "regionfocus"
    assert d2.round.history == []  # starred only with star_agent_failures
    agent = RegionFocusAgent(model, RegionFocusConfig(repeat_k=2, star_agent_failures=True))
    d1 = await agent.step(SCREEN, Q)
    agent.observe(d1.action, Effect(changed=True, dom_mutations=1))
    d2 = await agent.step(SCREEN, Q)
    assert Point(100, 100) in d2.round.history


async def test_live_caps_default_to_none():
    cfg = RegionFocusConfig()
    assert cfg.max_rounds_per_screen is None and cfg.max_rounds_per_task is None
    agent = RegionFocusAgent(model_for(click(100, 100)))
    rounds = 0
    for _ in range(12):  # well past the old caps (3 per screen, 15 per task is checked below)
        d = await agent.step(SCREEN, Q)
        rounds += d.source == "regionfocus"
        agent.observe(d.action, Effect(changed=False))
    assert rounds >= 6 and agent.rounds_on_screen == rounds


async def test_live_caps_per_screen_and_task():
    model = model_for(click(100, 100))
    agent = RegionFocusAgent(model, RegionFocusConfig(max_rounds_per_screen=2, max_rounds_per_task=3))
    sources = []
    for _ in range(5):
        d = await agent.step(SCREEN, Q)
        sources.append(d.source)
        agent.observe(d.action, Effect(changed=False))
    assert sources.count("regionfocus") == 2  # per-screen cap
    other = SCREEN.copy()
    ImageDraw.Draw(other).rectangle((0, 0, 1200, 400), fill=(20, 20, 20))  # a new screen
    d = await agent.step(other, Q)
    assert agent.history == [] and d.source == "agent"
    agent.observe(d.action, Effect(changed=False))
    d = await agent.step(other, Q)
    assert d.source == "regionfocus"
    agent.observe(d.action, Effect(changed=False))
    d = await agent.step(other, Q)
    assert d.source == "agent" and agent.rounds_total == 3  # per-task cap reached
    agent.reset()
    assert agent.rounds_total == 0 and agent.history == []


async def test_live_unparseable_answer_triggers_and_disabled_agent_never_does():
    agent = RegionFocusAgent(model_for(None))
    d = await agent.step(SCREEN, Q)
    assert d.trigger == "no-action" and d.source == "regionfocus" and d.action is not None
    model = model_for(None)
    d = await RegionFocusAgent(model, enabled=False).step(SCREEN, Q)
    assert d.action is None and model.kinds() == ["act"]
