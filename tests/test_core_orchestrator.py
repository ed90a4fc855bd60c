"""RegionFocus.refine with a scripted model: order, concurrency, merging, choice rules, history."""

import asyncio

import numpy as np
import pytest
from PIL import Image

from regionfocus import (
    Action,
    ActionType,
    Box,
    ModelReply,
    Point,
    Query,
    RegionFocus,
    RegionFocusConfig,
    crop_view,
    fixed_ratio_boxes,
)
from regionfocus.actions import click
from regionfocus.choice import majority_choice, merge_candidates
from regionfocus.stars import STAR_FILL
from regionfocus.trace import Candidate
from tests.scripted import ScriptedModel

SCREEN = Image.new("RGB", (1600, 1000), (250, 250, 250))
Q = Query("click the save button")


def view_center_act(image, query, zoomed):
    """Answers the centre of whatever image it is shown (so candidates = box centres)."""
    return ModelReply("center", action=click(image.width / 2, image.height / 2))


def screen_answers(actions, focal, config=RegionFocusConfig()):
    """An act handler whose i-th answer is ``actions[i]`` given in *screenshot* pixels: it
    converts each to the pixels of the i-th view, as a real model would answer in the image it
    sees. (Views are requested in box order; the i-th act call is the i-th view.)"""
    boxes = fixed_ratio_boxes(focal, SCREEN.size, config.ratios)
    transforms = [crop_view(SCREEN, b, SCREEN.size, config.max_zoom).transform for b in boxes]
    count = iter(range(len(boxes)))

    def act(image, query, zoomed):
        i = next(count)
        return ModelReply(f"view {i}", action=actions[i].map_points(transforms[i].screen_to_view))

    return act


def has_pink_at(image, p, r=4):
    a = np.asarray(image.convert("RGB")).astype(int)
    patch = a[int(p.y) - r : int(p.y) + r + 1, int(p.x) - r : int(p.x) + r + 1]
    return bool((np.abs(patch - np.array(STAR_FILL)).sum(-1) < 40).any())


async def test_call_order_and_candidates_in_screenshot_pixels():
    model = ScriptedModel(
        on_focal=lambda *a, **k: ModelReply("p", point=Point(800, 500)),
        on_act=view_center_act,
        on_choose=lambda image, query, **k: ModelReply("Choice: 2", choice=2),
    )
    res = await RegionFocus(model).refine(SCREEN, Q)
    assert model.kinds() == ["focal", "act", "act", "act", "act"]
    assert all(c.kwargs["zoomed"] for c in model.calls if c.kind == "act")
    # Each candidate (the view's centre) maps back to its box's centre in screenshot pixels.
    for cand, box in zip(res.candidates, res.boxes, strict=True):
        assert cand.action.point.distance(box.center) < 1.0
    # Centred boxes share a centre: the four candidates merge into one, so no choice request.
    assert len(res.merged) == 1 and res.choice_method == "single"
    assert res.action.point.distance(Point(800, 500)) < 1
    assert [c.kind for c in res.calls] == ["focal"] + [f"candidate[{i}]" for i in range(4)]


async def test_candidates_run_concurrently():
    """The four candidate requests are in flight at once (a counter, not a clock)."""
    model = ScriptedModel(
        on_focal=lambda *a, **k: ModelReply("p", point=Point(100, 100)),  # corner: boxes shift apart
        on_act=view_center_act,
        on_choose=lambda image, query, **k: ModelReply("Choice: 1", choice=1),
        latency=0.2,
    )
    res = await RegionFocus(model).refine(SCREEN, Q)
    assert model.max_in_flight == 4
    assert res.choice_method == "model" and len(res.merged) > 1


async def test_views_are_zoomed_to_model_input_size():
    model = ScriptedModel(
        on_focal=lambda *a, **k: ModelReply("p", point=Point(800, 500)),
        on_act=view_center_act,
        seen_size=(1280, 800),
    )
    await RegionFocus(model).refine(SCREEN, Q)
    sizes = [c.image.size for c in model.calls if c.kind == "act"]
    assert all(w == 1280 or h == 800 for w, h in sizes)  # one side reaches what the model sees


async def test_history_stars_in_focal_request_only():
    seen = {}

    def focal(image, query, avoid, avoid_on_image, **k):
        seen["image"], seen["avoid"], seen["on_image"] = image, avoid, avoid_on_image
        return ModelReply("p", point=Point(300, 300))

    model = ScriptedModel(on_focal=focal, on_act=view_center_act)
    hist = [Point(1200, 700), Point(400, 800)]
    await RegionFocus(model).refine(SCREEN, Q, history=hist)
    assert seen["avoid"] == hist and seen["on_image"] is True
    assert all(has_pink_at(seen["image"], p) for p in hist)
    assert not has_pink_at(SCREEN, hist[0])  # the caller's screenshot is untouched
    # Candidate requests see the plain screen (crops of it), never the stars.
    assert not any(
        has_pink_at(c.image, Point(c.image.width / 2, c.image.height / 2), 30)
        for c in model.calls
        if c.kind == "act"
    )

    model2 = ScriptedModel(on_focal=focal, on_act=view_center_act)
    await RegionFocus(model2, RegionFocusConfig(history="text")).refine(SCREEN, Q, history=hist)
    assert seen["on_image"] is False and not has_pink_at(seen["image"], hist[0])


async def test_image_aggregation_draws_numbered_stars_and_text_options():
    got = {}
    focal = Point(800, 500)
    answers = [click(700, 400), click(1000, 600), Action(ActionType.HOTKEY, keys=("enter",)), click(701, 399)]

    def choose(image, query, options, **k):
        got["image"], got["options"] = image, options
        return ModelReply("Choice: 2", choice=2)

    model = ScriptedModel(
        on_focal=lambda *a, **k: ModelReply("p", point=focal),
        on_act=screen_answers(answers, focal),
        on_choose=choose,
    )
    res = await RegionFocus(model).refine(SCREEN, Query("press enter on the form", "agent"))
    opts = got["options"]
    assert [o.number for o in opts] == [1, 2, 3]
    assert [o.on_image for o in opts] == [True, True, False]  # points drawn first, hotkey as text
    # Views answered in their own pixels; merged candidates are in screenshot pixels, not views'.
    assert (
        opts[0].action.point.distance(Point(700, 400)) < 1
        and opts[1].action.point.distance(Point(1000, 600)) < 1
    )
    assert all(has_pink_at(got["image"], o.action.point) for o in opts if o.on_image)
    assert res.choice == 2 and res.action == opts[1].action
    # The two near-identical clicks (from views 0 and 3) were merged into one candidate.
    assert sorted(len(c.views) for c in res.merged) == [1, 1, 2]

    got.clear()
    answers = [click(700, 400), click(1000, 600), click(600, 600), click(900, 450)]
    model = ScriptedModel(
        on_focal=lambda *a, **k: ModelReply("p", point=focal),
        on_act=screen_answers(answers, focal),
        on_choose=choose,
    )
    await RegionFocus(model, RegionFocusConfig(aggregation="text")).refine(SCREEN, Q)
    assert not any(o.on_image for o in got["options"])
    assert got["image"].tobytes() == SCREEN.tobytes()


async def test_unparseable_choice_is_asked_again_then_resolved_by_rule_not_candidate_1():
    focal = Point(800, 500)
    answers = [click(700, 400), click(1000, 600), click(1002, 601), click(600, 600)]
    model = ScriptedModel(
        on_focal=lambda *a, **k: ModelReply("p", point=focal),
        on_act=screen_answers(answers, focal),
        on_choose=lambda image, query, **k: ModelReply("I think the best one is the blue"),
    )
    res = await RegionFocus(model).refine(SCREEN, Q)
    assert model.kinds().count("choose") == 2  # asked once more, in other words
    assert [c.kwargs["retry"] for c in model.calls if c.kind == "choose"] == [0, 1]
    assert res.choice_method == "rule"
    # The rule: most views agree (candidate at ~(1000, 600), proposed by two views); not "1".
    assert res.action.point.distance(Point(1000, 600)) < 1 and res.choice == 2


async def test_retry_answer_is_used():
    focal = Point(800, 500)
    answers = [click(700, 400), click(1000, 600), click(600, 600), click(900, 450)]
    replies = iter([ModelReply("hmm"), ModelReply("Choice: 3", choice=3)])
    model = ScriptedModel(
        on_focal=lambda *a, **k: ModelReply("p", point=focal),
        on_act=screen_answers(answers, focal),
        on_choose=lambda *a, **k: next(replies),
    )
    res = await RegionFocus(model).refine(SCREEN, Q)
    assert res.choice == 3 and res.choice_method == "model-retry"


async def test_failures_are_recorded_not_raised():
    def boom(*a, **k):
        raise ConnectionError("server went away")

    model = ScriptedModel(on_focal=boom, on_act=boom)
    res = await RegionFocus(model).refine(SCREEN, Q, fallback_point=Point(10, 20))
    assert res.action is None and res.choice_method == "none"
    assert res.focal == Point(10, 20) and res.focal_source == "fallback-prediction"
    assert len(res.calls) == 5 and all("server went away" in c.error for c in res.calls)
    res2 = await RegionFocus(ScriptedModel()).refine(SCREEN, Q)
    assert res2.focal_source == "fallback-center" and res2.focal == Point(800, 500)


async def test_predict_region_ablation_asks_for_the_box_directly():

    model = ScriptedModel(
        on_focal=lambda *a, **k: ModelReply("p", point=Point(800, 500)),
        on_box=lambda image, query, focal: ModelReply("box", box=Box(700, 450, 760, 480)),
        on_act=view_center_act,
    )
    res = await RegionFocus(model, RegionFocusConfig(proposer="predict-region", min_box_size=64)).refine(
        SCREEN, Q
    )
    assert len(res.boxes) == 1 and res.boxes[0].width == 64 and res.boxes[0].height == 64
    # As the paper runs it: no focal request first, no hint in the box request.
    assert "focal" not in model.kinds() and res.focal is None and res.focal_source == "skipped"
    assert next(c for c in model.calls if c.kind == "box").kwargs["focal"] is None
    assert [c.kind for c in res.calls][0] == "propose_box"
    # No usable box: a failed round, said so; never a silent fallback to fixed boxes.
    model.on_box = lambda *a, **k: ModelReply("nope")
    res = await RegionFocus(model, RegionFocusConfig(proposer="predict-region")).refine(SCREEN, Q)
    assert res.boxes == [] and res.action is None and res.failure == "no-box"
    assert res.to_dict()["failure"] == "no-box"


async def test_unparseable_focal_is_asked_again_up_the_temperature_ladder():
    answers = iter([ModelReply("I am not sure."), ModelReply("hmm"), ModelReply("p", point=Point(640, 410))])
    model = ScriptedModel(on_focal=lambda *a, **k: next(answers), on_act=view_center_act)
    res = await RegionFocus(model).refine(SCREEN, Q)
    temps = [c.kwargs["temperature"] for c in model.calls if c.kind == "focal"]
    assert temps == [None, 0.3, 0.7]  # the model's own (0 by default), then the released ladder
    assert res.focal == Point(640, 410) and res.focal_source == "model-retry"
    assert [c.kind for c in res.calls][:3] == ["focal", "focal-retry1", "focal-retry2"]
    # Every rung unparseable: the fallback point, and no fourth request.
    model = ScriptedModel(on_focal=lambda *a, **k: ModelReply("??"), on_act=view_center_act)
    res = await RegionFocus(model).refine(SCREEN, Q, fallback_point=Point(10, 20))
    assert model.kinds().count("focal") == 3 and res.focal_source == "fallback-prediction"


def test_merge_and_majority_helpers():
    cands = [Candidate(click(10, 10), [0]), Candidate(click(13, 12), [1]), Candidate(click(300, 300), [2])]
    merged = merge_candidates(cands, radius=8)
    assert [m.views for m in merged] == [[0, 1], [2]]
    assert merged[0].action.point == Point(10, 10)  # a point a model produced, not a mean
    for n, m in enumerate(merged, 1):
        m.number = n
    assert majority_choice(merged, Point(300, 300)) == 1
    tie = [Candidate(click(10, 10), [0], 1), Candidate(click(300, 300), [1], 2)]
    assert majority_choice(tie, Point(290, 290)) == 2  # tie -> nearest the focal point


def test_refine_is_usable_without_an_event_loop():
    model = ScriptedModel(on_focal=lambda *a, **k: ModelReply("p", point=Point(5, 5)), on_act=view_center_act)
    res = asyncio.run(RegionFocus(model).refine(SCREEN, Q))
    assert res.action is not None


@pytest.mark.parametrize("proposer", ["fixed", "predict-region"])
def test_trace_serialises(proposer):
    import json

    model = ScriptedModel(
        on_focal=lambda *a, **k: ModelReply("p", point=Point(5, 5)),
        on_box=lambda *a, **k: ModelReply("box", box=Box(0, 0, 300, 200)),
        on_act=view_center_act,
    )
    res = asyncio.run(RegionFocus(model, RegionFocusConfig(proposer=proposer)).refine(SCREEN, Q))
    d = json.loads(json.dumps(res.to_dict()))
    assert len(d["views"]) == len(d["boxes"])
    assert d["focal"] == ([5.0, 5.0] if proposer == "fixed" else None)
    assert {"size", "box", "scale_x", "scale_y"} <= set(d["views"][0])


async def test_crowded_history_on_the_focal_request_has_no_magnified_inset():
    """The focal request is answered with a point: its history stars are drawn where they are,
    never as a magnified inset whose copies of the points would sit elsewhere."""
    from regionfocus.stars import draw_stars, star_map

    seen = {}

    def focal(image, query, avoid, avoid_on_image, **k):
        seen["image"] = image
        return ModelReply("p", point=Point(300, 300))

    hist = [Point(800, 500), Point(809, 500), Point(800, 509)]  # a crowd: stars overlap
    assert star_map(SCREEN.size, hist, [str(i) for i in range(1, 4)]).insets  # would be magnified
    await RegionFocus(ScriptedModel(on_focal=focal, on_act=view_center_act)).refine(SCREEN, Q, history=hist)
    plain = draw_stars(SCREEN, hist, magnify=False)
    assert np.array_equal(np.asarray(seen["image"]), np.asarray(plain))
    assert not np.array_equal(np.asarray(plain), np.asarray(draw_stars(SCREEN, hist)))
