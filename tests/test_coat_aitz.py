"""CoAT prompt parts and history (adapters/reasoning/coat.py) and the AITZ reader and scorer
(aitz/) on a small AITZ-shaped sample this test writes (tiny PNGs, the released
field names and encodings)."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.reasoning.coat import (
    CoatConfig,
    CoatHistory,
    CoatStep,
    coat_context,
    coat_instructions,
    parse_coat,
)
from regionfocus.aitz import (
    AitzError,
    Prediction,
    coat_history,
    from_action,
    levenshtein_ratio,
    load_aitz,
    match_step,
    score,
)
from regionfocus.geometry import Box, Point

# ---------------------------------------------------------------------------- CoAT


def test_config_parse_and_ablation_parts():
    assert CoatConfig.parse("all").enabled == (
        "previous_action_result",
        "screen_description",
        "action_think",
        "next_action_description",
    )
    cfg = CoatConfig.parse("par, ad")
    assert cfg.enabled == ("previous_action_result", "next_action_description")
    assert cfg.spec() == "par,ad"
    assert CoatConfig.parse("none").enabled == ()
    with pytest.raises(ValueError, match="unknown CoAT part"):
        CoatConfig.parse("sd,xx")


def test_instructions_name_only_enabled_parts():
    text = coat_instructions(CoatConfig.parse("sd,at"))
    assert "Screen description:" in text and "Action think:" in text
    assert "Previous action result" not in text and "Next action description" not in text
    assert coat_instructions(CoatConfig.parse("none")) == ""
    assert '"action_think"' in coat_instructions(CoatConfig.parse("at"), style="json")


def test_parse_coat_reads_labelled_parts_and_keeps_the_action():
    answer = (
        "Previous action result: By doing so, the menu opened.\n"
        "**Screen description**: A settings page with a list of options,\n"
        "including Wi-Fi and Bluetooth.\n"
        "Action think: Think: the Wi-Fi row is visible. Possible actions are to tap it.\n"
        "Next action description: click on the Wi-Fi row\n"
        "Thought: tap Wi-Fi\nAction: click(start_box='(10,20)')"
    )
    p = parse_coat(answer)
    assert p.previous_action_result == "By doing so, the menu opened."
    assert p.screen_description == "A settings page with a list of options, including Wi-Fi and Bluetooth."
    assert p.action_think.startswith("Think: the Wi-Fi row")
    assert p.next_action_description == "click on the Wi-Fi row"
    assert p.rest == "Thought: tap Wi-Fi\nAction: click(start_box='(10,20)')"


def test_history_carries_descriptions_results_and_outcomes_per_switch():
    h = CoatHistory()
    h.append(
        CoatStep("CLICK_COORDS [5, 6]", action_description="click on Search", outcome="changed the screen")
    )
    h.set_last_result("By doing so, the search box is active.")
    h.set_last_result("ignored: the step already has a result")
    h.append(CoatStep('TYPE_TEXT "cats"', action_description="type cats"))
    full = coat_context(h, CoatConfig())
    assert "Step 1: click on Search [CLICK_COORDS [5, 6]] (changed the screen)" in full
    assert "Result: By doing so, the search box is active." in full
    assert "ignored" not in full
    bare = coat_context(h, CoatConfig.parse("sd"))  # no AD, no PAR: the chain of actions
    assert "Step 1: CLICK_COORDS [5, 6] (changed the screen)" in bare and "Result" not in bare
    assert coat_context(CoatHistory(), CoatConfig()) == "Previous actions: none"


# ---------------------------------------------------------------------------- AITZ sample


def _step(ep, i, n, action_type, **kw):
    base = {
        "episode_id": ep,
        "episode_length": n,
        "step_id": i,
        "instruction": 'open app "Clock"',
        "ui_positions": json.dumps([[100, 20, 40, 80], [300, 150, 30, 60]]),  # [top, left, h, w]
        "ui_text": json.dumps(["Clock", "Maps"]),
        "ui_types": json.dumps(["TEXT", "TEXT"]),
        "result_action_type": action_type,
        "result_action_text": "",
        "result_touch_yx": "[-1.0, -1.0]",
        "result_lift_yx": "[-1.0, -1.0]",
        "image_path": f"general/{ep}/{ep}_{i}.png",
        "coat_screen_desc": f"screen {i}",
        "coat_action_think": f"think {i}",
        "coat_action_desc": f"desc {i}",
        "coat_action_result": f"result {i}",
    }
    base.update(kw)
    return base


@pytest.fixture
def sample(tmp_path):
    """Two episodes on a 200x400 screen: (click Clock, type, press enter, stop) and
    (scroll up, press home)."""
    eps = {
        "E1": [
            _step(
                "E1", 0, 4, 4, result_touch_yx="[0.3, 0.3]", result_lift_yx="[0.3, 0.3]"
            ),  # click (60, 120)
            _step("E1", 1, 4, 3, result_action_text="alarm clock"),
            _step("E1", 2, 4, 7),
            _step("E1", 3, 4, 10),
        ],
        "E2": [
            _step("E2", 0, 2, 4, result_touch_yx="[0.8, 0.5]", result_lift_yx="[0.2, 0.5]"),  # finger up
            _step("E2", 1, 2, 6),
        ],
    }
    for ep, steps in eps.items():
        d = tmp_path / "general" / ep
        d.mkdir(parents=True)
        (d / f"{ep}.json").write_text(json.dumps(steps))
        for s in steps:
            Image.new("RGB", (200, 400), "white").save(d / f"{ep}_{s['step_id']}.png")
    return tmp_path


def test_reader_decodes_the_released_fields(sample):
    eps = {e.episode_id: e for e in load_aitz(sample)}
    e1 = eps["E1"]
    assert [s.gold.type for s in e1.steps] == ["click", "type", "press", "stop"]
    assert e1.steps[0].size == (200, 400)
    assert e1.steps[0].gold.point == Point(60.0, 120.0)
    assert e1.steps[0].ui_boxes[0] == Box(20, 100, 100, 140)  # [top, left, h, w] -> XYXY
    assert e1.steps[1].gold.text == "alarm clock" and e1.steps[2].gold.button == "enter"
    assert eps["E2"].steps[0].gold.direction == "up" and eps["E2"].steps[1].gold.button == "home"
    hist = coat_history(e1, 2)
    assert [s.action_result for s in hist.steps] == ["result 0", "result 1"]


def test_click_rules_box_and_distance(sample):
    st = load_aitz(sample)[0].steps[0]  # gold (60, 120) inside UI box (20,100)-(100,140)
    # Same enlarged box, far apart: matches through the box (AITW's 1.4x: x in [0, 192]).
    assert match_step(st, Prediction("click", point=Point(150, 105))) == (True, True)
    # Outside every box but within 0.14 of the screen (relative distance).
    assert match_step(st, Prediction("click", point=Point(60, 160)))[1] is True
    # Outside both: 0.25 of the screen away.
    assert match_step(st, Prediction("click", point=Point(60, 220)))[1] is False
    # Box predictions (CoAT evaluator): gold inside the 1.2x box, or IoU > 0.5 with the UI box.
    assert match_step(st, Prediction("click", box=Box(50, 112, 70, 128)))[1] is True
    assert match_step(st, Prediction("click", box=Box(22, 100, 102, 141)))[1] is True
    assert match_step(st, Prediction("click", box=Box(150, 300, 200, 340)))[1] is False
    assert match_step(st, Prediction("type", text="x")) == (False, False)


def _tap_step(tmp_path, touch, lift, boxes):
    """One click step on a 200x400 screen; ``touch``/``lift`` as relative [y, x]."""
    raw = _step("T", 0, 1, 4, result_touch_yx=json.dumps(touch), result_lift_yx=json.dumps(lift))
    raw.update(ui_positions=json.dumps(boxes), image_size=[200, 400])
    (tmp_path / "t.json").write_text(json.dumps([raw]))
    return load_aitz(tmp_path / "t.json")[0].steps[0]


def _hit(step, x, y, **kw) -> bool:
    return match_step(step, Prediction("click", point=Point(x, y)), **kw)[1]


# Where our rules and the official ones used to part (benchmarks/aitz_agreement.py measures the
# rest). Upstream: IMNearth/CoAT coat/action_utils.py at 9ab1a9f (AITW's check_actions_match
# compares the taps' touch points; _resize_annotation_bounding_boxes clamps the top-left corner
# at 0 and keeps the full 2.4x size) and coat/evaluate.py at 9ab1a9f (the [0, 0] gold point).
def test_taps_are_matched_by_the_touch_point_the_gold_states_the_lift(tmp_path):
    st = _tap_step(tmp_path, [0.9, 0.5], [0.9, 0.53], [[300, 150, 30, 60]])  # lift 0.03 away: a tap
    assert st.gold.point == Point(106, 360) and st.gold.touch == Point(100, 360)
    # (94, 306) is 0.138 of the screen from the touch point, 0.148 from the lift point
    assert _hit(st, 94, 306)
    assert not _hit(st, 88, 306)  # 0.146 from the touch point


def test_the_gold_click_is_the_official_one(tmp_path):
    """Issue 37 item 10. extract_gt_action (IMNearth/CoAT coat/action_utils.py at bddd262a)
    states a tap by its lift point in whole pixels, ``round(lift_y * h), round(lift_x * w)``.
    The official data example's click (IMNearth/CoAT data-example at 033bbe2,
    GOOGLE_APPS-523638528775825151 step 2, 270x600) touches at (163.88, 299.02) and lifts at
    (163.88, 298.02): the gold is (164, 298), the reader kept (163.9, 299.0)."""
    touch = [0.49836206436157227, 0.6069772839546204]
    lift = [0.49669790267944336, 0.6069772839546204]
    raw = _step("X", 2, 4, 4, result_touch_yx=json.dumps(touch), result_lift_yx=json.dumps(lift))
    raw.update(image_size=[270, 600])
    (tmp_path / "x.json").write_text(json.dumps([raw]))
    gold = load_aitz(tmp_path / "x.json")[0].steps[0].gold
    assert gold.point == Point(164, 298)
    assert gold.touch == Point(touch[1] * 270, touch[0] * 600)
    # the teacher-forced history shows the agent the gold it states
    from regionfocus.aitz.runner import gold_as_action

    assert gold_as_action(gold).point == Point(164, 298)


def test_box_rule_is_in_the_evaluators_whole_pixels(tmp_path):
    """Issue 32 item 7. The CoAT evaluator (coat/evaluate.py at 9ab1a9f) places a gold point at
    ``int(rel_x * w), int(rel_y * h)`` (line 86) and rounds a predicted box to whole pixels
    (lines 50-53) before enlarging it 1.2x about its centre (screen_utils.enlarge_bbox). The
    official data example's click (IMNearth/CoAT data-example at 033bbe2,
    GOOGLE_APPS-523638528775825151 step 2, a 270x600 screenshot, touch [0.49836..., 0.60697...])
    is at (163.88, 299.02) unrounded; the evaluator puts it at (163, 299)."""
    touch = [0.49836206436157227, 0.6069772839546204]
    raw = _step("X", 2, 4, 4, result_touch_yx=json.dumps(touch), result_lift_yx=json.dumps(touch))
    raw.update(ui_positions=json.dumps([[500, 10, 40, 60]]), image_size=[270, 600])
    (tmp_path / "x.json").write_text(json.dumps([raw]))
    st = load_aitz(tmp_path / "x.json")[0].steps[0]
    assert (int(st.gold.touch.x), int(st.gold.touch.y)) == (163, 299)
    # Enlarged 1.2x, (100, 280)-(158, 320) reaches x = 1.1 * 158 - 0.1 * 100 = 163.8: the
    # evaluator's gold (163) is inside, the unrounded touch (163.88) is not.
    assert match_step(st, Prediction("click", box=Box(100, 280, 158, 320))) == (True, True)
    # A box edge given off the pixel grid is rounded first, as the evaluator rounds its parse:
    # 157.6 -> 158 reaches 163.8 (unrounded it would reach 163.36, still inside); 157.4 -> 157
    # reaches 162.7, outside.
    assert match_step(st, Prediction("click", box=Box(100, 280, 157.6, 320)))[1] is True
    assert match_step(st, Prediction("click", box=Box(100, 280, 157.4, 320)))[1] is False
    # AITW's tap rule keeps relative coordinates: the point rule is unchanged.
    assert st.gold.touch.x == pytest.approx(touch[1] * 270)


def test_box_enlargement_clamped_at_the_top_and_left_keeps_its_size(tmp_path):
    # y 10-50: grown by 0.7 of 40 up (stops at 0) and to 2.4x = 96 high, so y in [0, 96];
    # centred it would end at 78.
    top = _tap_step(tmp_path, [0.075, 0.3], [0.075, 0.3], [[10, 20, 40, 80]])  # gold (60, 30)
    assert _hit(top, 60, 90)  # 0.15 of the screen away: through the box only
    assert not _hit(top, 60, 100)
    # x 10-40: x in [0, 72]; y 200-240: y in [172, 268]
    left = _tap_step(tmp_path, [0.55, 0.125], [0.55, 0.125], [[200, 10, 40, 30]])  # gold (25, 220)
    assert _hit(left, 70, 250)
    assert not _hit(left, 75, 250)


def test_click_gold_at_origin_is_the_released_evaluators_rule(sample):
    st = load_aitz(sample)[0].steps[0]  # gold (60, 120)
    assert not _hit(st, 5, 5) and _hit(st, 5, 5, click_gold_at_origin=True)
    assert _hit(st, 60, 120) and not _hit(st, 60, 120, click_gold_at_origin=True)
    corner = Prediction("click", box=Box(0, 0, 10, 10))
    assert match_step(st, corner, click_gold_at_origin=True)[1] and not match_step(st, corner)[1]
    eps = load_aitz(sample)
    preds = {("E1", 0): Prediction("click", point=Point(3, 3))}
    assert score(eps, preds).atomic["CLICK"]["exact_acc"] == 0.0
    assert score(eps, preds, click_gold_at_origin=True).atomic["CLICK"]["exact_acc"] == 1.0


def test_type_scroll_press_rules(sample):
    e1, e2 = load_aitz(sample)
    typed = e1.steps[1]
    assert match_step(typed, Prediction("type", text="alarm"))[1]  # substring
    assert match_step(typed, Prediction("type", text="alarm clocks"))[1]  # contains the gold
    assert match_step(typed, Prediction("type", text="alarn clock"))[1]  # ratio 0.91
    assert not match_step(typed, Prediction("type", text="weather"))[1]
    assert not match_step(typed, Prediction("type", text=""))[1]
    assert match_step(typed, Prediction("type", text=""), empty_text_matches=True)[1]  # the evaluator's rule
    assert levenshtein_ratio("alarn clock", "alarm clock") == pytest.approx(20 / 22)
    assert match_step(e2.steps[0], Prediction("scroll", direction="up"))[1]
    assert not match_step(e2.steps[0], Prediction("scroll", direction="down"))[1]
    assert match_step(e1.steps[2], Prediction("press", button="enter"))[1]
    assert not match_step(e1.steps[2], Prediction("press", button="back"))[1]


def test_from_action_inverts_wheel_scrolls():
    assert from_action(Action(ActionType.SCROLL, direction="down")).direction == "up"
    assert from_action(Action(ActionType.HOTKEY, keys=("enter",))).button == "enter"
    assert from_action(Action(ActionType.FINISHED, text="done")).type == "stop"
    assert from_action(None).type is None


def test_scores_atomic_and_goal_progress(sample):
    eps = load_aitz(sample)
    preds = {
        ("E1", 0): from_action(Action(ActionType.CLICK, Point(62, 118))),
        ("E1", 1): from_action(Action(ActionType.TYPE, text="alarm clock")),
        ("E1", 2): Prediction("press", button="back"),  # first miss: progress 2/4
        ("E1", 3): Prediction("stop"),
        ("E2", 0): from_action(Action(ActionType.SCROLL, direction="down")),  # = finger up
        # ("E2", 1) missing: no answer
    }
    s = score(eps, preds)
    assert s.steps == 6 and s.episodes == 2
    assert s.atomic["total"]["exact_acc"] == pytest.approx(4 / 6)
    assert s.atomic["PRESS"]["count"] == 2 and s.atomic["PRESS"]["type_acc"] == pytest.approx(0.5)
    assert s.atomic["PRESS"]["exact_acc"] == 0.0
    assert s.hit_rate == pytest.approx(5 / 6)
    assert s.goal_progress == pytest.approx((2 / 4 + 1 / 2) / 2)
    assert s.success_rate == 0.0
    assert "goal progress 0.500" in s.table()


def test_reader_errors_name_file_and_problem(tmp_path):
    with pytest.raises(AitzError, match="no AITZ episode files"):
        load_aitz(tmp_path)
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps([{"episode_id": "1", "step_id": 0, "instruction": "i"}]))
    with pytest.raises(AitzError, match="missing field 'result_action_type'"):
        load_aitz(bad)
    bad.write_text(json.dumps([_step("1", 0, 1, 4)]))  # no image to size the click
    with pytest.raises(AitzError, match="not found"):
        load_aitz(bad)


def test_the_table_gives_each_accuracy_its_interval():
    from regionfocus.aitz.scoring import AitzScores
    from regionfocus.kit.stats import wilson

    scores = AitzScores(
        atomic={"total": {"count": 40, "type_acc": 0.9, "exact_acc": 0.75}},
        hit_rate=1.0,
        success_rate=0.5,
        goal_progress=0.6,
        episodes=8,
        steps=40,
    )
    lo, hi = wilson(30, 40)
    assert f"{lo:.3f}-{hi:.3f}" in scores.table().splitlines()[1]
    lo, hi = wilson(4, 8)
    assert f"success 95 % CI {lo:.3f}-{hi:.3f}" in scores.table()
