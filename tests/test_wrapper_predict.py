"""What ``RegionFocusAgent.predict`` counts as a grounding answer, and what it does when the
provider is down (issue 37 items 7, 11 and 15).

Item 11: a grounding answer is a click. Each family that can answer otherwise at a point is read
by its own reader from the answer its model writes (Claude's ``computer`` scroll, OpenAI's
``computer_call`` scroll, Gemini's ``scroll_at`` and ``type_text_at``, Qwen's ``scroll`` and
``mouse_move``, UI-TARS's ``scroll`` and ``hover``), aimed at the middle of the target; the sample
record scores it wrong and says what it was.

Items 7 and 15: a sample whose baseline call failed spends nothing more and says why.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from regionfocus import ModelReply, RegionFocusAgent, RegionFocusConfig, Verdict
from regionfocus.actions import ActionType, click
from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.base import ToolCall
from regionfocus.adapters.families.hosted import Answer, ClaudeAdapter, GeminiAdapter, OpenAIAdapter
from regionfocus.geometry import Point
from regionfocus.kit.records import check_record
from regionfocus.screenspot_pro.dataset import Sample
from regionfocus.screenspot_pro.record_fields import RECORD_FIELDS
from regionfocus.screenspot_pro.runner import action_point, make_record

from .scripted import ScriptedModel

SIZE = (1120, 840)
BOX = (700.0, 400.0, 760.0, 440.0)
TARGET = Point(730, 420)
SHOT = Image.new("RGB", SIZE, (240, 240, 240))
SAMPLE = Sample(
    "s1",
    "app_windows",
    "s1.png",
    Path("s1.png"),
    BOX,
    SIZE,
    "scroll the list",
    "en",
    "app",
    "windows",
    "App",
    "icon",
)


def _model_xy(adapter, tool: bool) -> tuple[int, int]:
    """The target in the frame the family writes (its tool's frame for a tool call)."""
    if tool:
        scale = adapter.tool_scale
        if scale is None:
            w, h = adapter.input_size(SIZE)
            return round(TARGET.x * w / SIZE[0]), round(TARGET.y * h / SIZE[1])
        return round(TARGET.x * scale / SIZE[0]), round(TARGET.y * scale / SIZE[1])
    x, y = adapter.to_model(TARGET, SIZE)
    return round(x), round(y)


def _claude_scroll():
    a = ClaudeAdapter(model="claude-sonnet-4-5")
    x, y = _model_xy(a, tool=True)
    args = {"action": "scroll", "coordinate": [x, y], "scroll_direction": "down", "scroll_amount": 5}
    return a, Answer("I'll scroll the list.", [ToolCall("computer", args)])


def _openai_scroll():
    a = OpenAIAdapter(model="gpt-5.4")
    x, y = _model_xy(a, tool=True)
    args = {"type": "scroll", "x": x, "y": y, "scroll_x": 0, "scroll_y": 400}
    return a, Answer("", [ToolCall("computer_call", args)])


def _gemini(name: str, **extra):
    def case():
        a = GeminiAdapter(model="gemini-2.5-computer-use-preview-10-2025")
        x, y = _model_xy(a, tool=True)
        return a, Answer("", [ToolCall(name, {"x": x, "y": y, **extra})])

    return case


def _qwen(action: str, **extra):
    def case():
        a = get_adapter("qwen2.5-vl")
        x, y = _model_xy(a, tool=False)
        call = {"name": "computer_use", "arguments": {"action": action, "coordinate": [x, y], **extra}}
        return a, f"<tool_call>\n{json.dumps(call)}\n</tool_call>"

    return case


def _uitars(version: str, call: str):
    def case():
        a = get_adapter(version)
        x, y = _model_xy(a, tool=False)
        point = (
            f"start_box='<|box_start|>({x},{y})<|box_end|>'"
            if version == "uitars-1.0"
            else (f"point='<point>{x} {y}</point>'")
        )
        return a, f"Thought: The list is below.\nAction: {call.format(point=point)}"

    return case


CASES = {
    "claude-computer-scroll": (_claude_scroll, ActionType.SCROLL),
    "openai-computer_call-scroll": (_openai_scroll, ActionType.SCROLL),
    "gemini-scroll_at": (_gemini("scroll_at", direction="down", magnitude=800), ActionType.SCROLL),
    "gemini-type_text_at": (_gemini("type_text_at", text="report", press_enter=True), ActionType.TYPE),
    "qwen-scroll": (_qwen("scroll", pixels=-300), ActionType.SCROLL),
    "qwen-mouse_move": (_qwen("mouse_move"), ActionType.HOVER),
    "uitars-1.0-scroll": (_uitars("uitars-1.0", "scroll({point}, direction='down')"), ActionType.SCROLL),
    "uitars-1.5-scroll": (_uitars("uitars-1.5", "scroll({point}, direction='down')"), ActionType.SCROLL),
    "uitars-1.5-hover": (_uitars("uitars-1.5", "hover({point})"), ActionType.HOVER),
}


def _answering(action, judge=Verdict.NO) -> ScriptedModel:
    """A model whose every answer on the screen (and on every zoomed view) is ``action``."""
    return ScriptedModel(
        on_act=lambda image, query, zoomed: ModelReply("answer", action=action),
        on_focal=lambda image, query, **k: ModelReply("p", point=TARGET),
        on_judge=lambda image, query, point: ModelReply(judge.value, verdict=judge),
        on_choose=lambda image, query, **k: ModelReply("1", choice=1),
    )


@pytest.mark.parametrize("name", list(CASES))
def test_an_action_at_the_target_that_is_not_a_click_is_no_correct_click(name):
    build, kind = CASES[name]
    adapter, answer = build()
    action = adapter.parse_action(answer, *SIZE)
    # The family's reader places it on the target: only its kind makes it no grounding answer.
    assert action is not None and action.type == kind, action
    assert BOX[0] <= action.point.x <= BOX[2] and BOX[1] <= action.point.y <= BOX[3], action
    assert action_point(action) is None
    for enabled in (False, True):  # the plain run and the RegionFocus run alike
        pred = asyncio.run(RegionFocusAgent(_answering(action), enabled=enabled).predict(SHOT, "x"))
        assert pred.baseline is None and pred.baseline_non_point == action
        assert pred.final is None or pred.final.type == kind  # the views answered the same
        record = make_record(SAMPLE, pred, None, 0.1)
        for row in ("baseline", "final"):
            r = record[row]
            assert r["correctness"] == "wrong" and r["point"] is None and r["non_click"] is True, (row, r)
            assert r["action"]["type"] == kind.value  # recorded as what it was
        assert record["baseline"]["action"]["point"] == [action.point.x, action.point.y]
        assert check_record(record, RECORD_FIELDS) is None  # the record contract knows the field


def test_every_click_button_is_a_grounding_answer():
    for kind in (ActionType.CLICK, ActionType.DOUBLE_CLICK, ActionType.RIGHT_CLICK, ActionType.MIDDLE_CLICK):
        from regionfocus.actions import Action

        action = Action(kind, TARGET)
        pred = asyncio.run(RegionFocusAgent(_answering(action, Verdict.YES)).predict(SHOT, "x"))
        assert pred.baseline == action and pred.trigger is None
        record = make_record(SAMPLE, pred, None, 0.1)
        assert record["baseline"]["correctness"] == "correct" and "non_click" not in record["baseline"]


def _boom(*a, **k):
    raise ConnectionError("Connection refused: 127.0.0.1:9")


def test_a_failed_baseline_call_is_an_error_with_no_round():
    """Old code: the failed call read as "no action" and a round ran against the dead provider
    (focal, four views: five more failed calls per sample)."""
    model = ScriptedModel(on_act=_boom, on_focal=_boom, on_judge=_boom, on_choose=_boom)
    pred = asyncio.run(RegionFocusAgent(model, RegionFocusConfig()).predict(SHOT, "x"))
    assert model.kinds() == ["act"] and pred.rounds == [] and pred.trigger is None
    assert pred.failed and pred.error == "act call failed: ConnectionError: Connection refused: 127.0.0.1:9"
    assert pred.to_dict()["failed"] is True and pred.to_dict()["error"] == pred.error
    record = make_record(SAMPLE, pred, None, 0.1)
    assert record["status"] == "error" and record["n_calls"] == 1 and "Connection refused" in record["error"]
    assert record["baseline"]["correctness"] == record["final"]["correctness"] == "wrong"


def test_an_unparseable_answer_is_no_failure_and_a_failed_judge_is_partial():
    model = _answering(None)
    model.on_act = lambda image, query, zoomed: (
        ModelReply("view", action=click(image.width / 2, image.height / 2)) if zoomed else ModelReply("???")
    )
    pred = asyncio.run(RegionFocusAgent(model).predict(SHOT, "x"))
    assert not pred.failed and pred.error is None and pred.trigger == "no-action" and pred.rounds
    model = _answering(click(1, 1))
    model.on_judge = _boom
    pred = asyncio.run(RegionFocusAgent(model).predict(SHOT, "x"))
    assert not pred.failed and pred.rounds and [c.kind for c in pred.lost_calls] == ["judge"]


def test_the_summary_counts_the_answers_that_were_not_clicks():
    from regionfocus.screenspot_pro.summary import summary_markdown

    build, _ = CASES["qwen-scroll"]
    adapter, answer = build()
    scroll = adapter.parse_action(answer, *SIZE)
    records = []
    for i, action in enumerate((scroll, click(730, 420), scroll)):
        pred = asyncio.run(
            RegionFocusAgent(_answering(action, Verdict.YES), enabled=False).predict(SHOT, "x")
        )
        records.append(make_record(replace(SAMPLE, id=f"s{i}"), pred, None, 0.1))
    bad = {**records[0], "baseline": {**records[0]["baseline"], "non_click": "yes"}}
    assert check_record(bad, RECORD_FIELDS)[0] == "baseline.non_click"
    text = summary_markdown(records, {"identity": {"regionfocus_enabled": False}})
    assert "Not clicks (a scroll, hover or typing at a point; counted wrong): baseline 2, final 2." in text
    assert "Not clicks" not in summary_markdown(records[1:2], {"identity": {"regionfocus_enabled": False}})


def test_a_grounding_round_drops_the_views_that_answer_no_click():
    """Old code: a view's scroll at a point was a candidate and could be the round's choice."""
    from regionfocus.actions import Action

    kinds = iter([ActionType.SCROLL, ActionType.HOVER, ActionType.CLICK, ActionType.CLICK])
    model = _answering(click(10, 10))  # the baseline misses; the judge says no

    def act(image, query, zoomed):
        if not zoomed:
            return ModelReply("miss", action=click(10, 10))
        kind = next(kinds)
        direction = "down" if kind == ActionType.SCROLL else None
        return ModelReply(
            "view", action=Action(kind, Point(image.width / 2, image.height / 2), direction=direction)
        )

    model.on_act = act
    pred = asyncio.run(RegionFocusAgent(model).predict(SHOT, "x"))
    (rnd,) = pred.rounds
    assert sorted(c.action.type.value for c in rnd.dropped) == ["hover", "scroll"]
    assert [c.action.type for c in rnd.candidates] == [ActionType.CLICK, ActionType.CLICK]
    assert pred.final.type == ActionType.CLICK
