"""Replies a server under load or a model off its rails sends: hundreds of KB, numbers no
screen has (nan, Infinity, 1e999, a 400-digit coordinate), lone surrogates. Every parser reads
the first 32 KB only, turns a non-finite number into a parse failure (the answer is unusable,
like any other), and hands out text that encodes; none raises.

Each family is driven the way its model writes (a thought, then the call, in its own frame)."""

from __future__ import annotations

import json
import math

import pytest

from regionfocus.actions import ActionType
from regionfocus.adapters import get_adapter
from regionfocus.adapters.agents.react_agent import parse_answer
from regionfocus.adapters.agents.react_model import read_choice
from regionfocus.adapters.families.answers import find_coordinates, parse_choice, parse_verdict
from regionfocus.adapters.families.qwen import parse_qwen
from regionfocus.adapters.families.uitars import parse_uitars
from regionfocus.adapters.model_text import MAX_REPLY_CHARS
from regionfocus.adapters.reasoning.coat import parse_coat
from regionfocus.model import Verdict

SIZE = (1920, 1080)
# What an endless generation looks like: a fragment that opens something and never closes it.
JUNK = {
    "bbox": "<bbox>12 40 ",
    "box_start": "<|box_start|>(1,",
    "call": "click(start_box='(1,",
    "tool_call": '<tool_call>{"name": "computer_use", "arguments": {',
    "thought": "Thought: the button may be the one on the left, or not. ",
}

UITARS = "Thought: The Save button sits in the toolbar, top left.\nAction: click(start_box='(96,40)')"
QWEN = (
    "I will click the Save button.\n<tool_call>\n"
    '{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [96, 40]}}\n</tool_call>'
)


def junk(kind: str, n: int = 224 * 1024) -> str:
    frag = JUNK[kind]
    return (frag * (n // len(frag) + 1))[:n]


def encodes(s: str) -> bool:
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


# ------------------------------------------------------------------------------ size
@pytest.mark.parametrize("kind", sorted(JUNK))
@pytest.mark.parametrize(("family", "reply"), [("uitars-1.5", UITARS), ("qwen2.5-vl", QWEN)])
def test_an_action_before_a_flood_still_parses(family, reply, kind):
    adapter = get_adapter(family)
    want = adapter.parse_action(reply, *SIZE)
    got = adapter.parse_action(reply + "\n" + junk(kind), *SIZE)
    assert got is not None and got.type == ActionType.CLICK
    assert got.point == want.point


@pytest.mark.parametrize("kind", sorted(JUNK))
@pytest.mark.parametrize(("family", "reply"), [("uitars-1.5", UITARS), ("qwen2.5-vl", QWEN)])
def test_an_action_past_the_first_32_kb_is_not_read(family, reply, kind):
    adapter = get_adapter(family)
    filler = "The page is long. " * (MAX_REPLY_CHARS // 18 + 1)  # plain prose, nothing to parse
    assert adapter.parse_action(filler[: MAX_REPLY_CHARS - 20] + reply, *SIZE) is None  # cut mid-call
    assert adapter.parse_action(junk(kind) + reply, *SIZE) is None


def test_every_parser_gives_its_nothing_on_a_flood_without_an_answer():
    for kind in JUNK:
        text = junk(kind, 300 * 1024)
        assert find_coordinates(text) is None or kind in ("bbox",)  # "<bbox>12 40 " has 2 numbers
        assert parse_verdict(text) == Verdict.UNKNOWN
        assert parse_choice(text, [1, 2, 3]) in (None, 1)  # "(1," junk names candidate 1 at most
        assert parse_coat(text).rest.startswith(JUNK[kind].strip()[:5])
        assert parse_answer(text).actions == []


def test_the_bbox_flood_reads_only_what_its_first_32_kb_say():
    # "<bbox>12 40 <bbox>..." never closes a box; the bare "[x, y]" forms are all that count.
    text = junk("bbox") + " [5, 6]"
    assert find_coordinates(text) is None


# ----------------------------------------------------------------------- non-finite numbers
@pytest.mark.parametrize(
    "time_value", ['"nan"', '"NaN"', '"inf"', '"-inf"', '"Infinity"', "NaN", "Infinity", "-Infinity", "1e999"]
)
def test_qwen_wait_with_a_non_finite_time_is_no_action(time_value):
    text = f'<tool_call>\n{{"name": "computer_use", "arguments": {{"action": "wait", "time": {time_value}}}}}\n</tool_call>'
    assert parse_qwen(text) is None
    ok = parse_qwen(
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait", "time": 2}}\n</tool_call>'
    )
    assert ok is not None and ok.type == ActionType.WAIT and ok.amount == 2


@pytest.mark.parametrize("x", ["NaN", "Infinity", "-Infinity", "1e999", '"nan"', "1" + "0" * 400])
def test_qwen_coordinates_that_are_not_finite_are_no_click(x):
    text = f'<tool_call>\n{{"name": "computer_use", "arguments": {{"action": "left_click", "coordinate": [{x}, 40]}}}}\n</tool_call>'
    assert get_adapter("qwen2.5-vl").parse_action(text, *SIZE) is None
    # and never a click at the numbers found elsewhere in the broken call
    assert parse_qwen(text) is None


@pytest.mark.parametrize("pixels", ['"nan"', "Infinity", "1e999"])
def test_qwen_scroll_by_a_non_finite_amount_is_no_action(pixels):
    text = f'<tool_call>{{"name": "computer_use", "arguments": {{"action": "scroll", "coordinate": [5, 5], "pixels": {pixels}}}}}</tool_call>'
    assert parse_qwen(text) is None


def test_qwen_small_floats_keep_their_value():
    text = '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1e-05, 2.5e2]}}</tool_call>'
    action = parse_qwen(text)
    assert action is not None and action.point.x == pytest.approx(1e-05) and action.point.y == 250


@pytest.mark.parametrize("family", ["uitars-1.0", "uitars-1.5"])
def test_uitars_coordinates_too_long_for_a_float_are_no_click(family):
    huge = "9" * 400  # float("999...") is inf
    text = f"Thought: It is far right.\nAction: click(start_box='({huge},40)')"
    assert parse_uitars(text) is None
    assert get_adapter(family).parse_action(text, *SIZE) is None
    assert find_coordinates(f"({huge}, 40)") is None
    assert get_adapter(family).parse_point(f"The point is ({huge}, 40).", *SIZE) is None


def test_choice_numbers_past_what_int_reads_are_no_choice():
    long = "9" * 5000  # int() refuses more than 4300 digits
    assert parse_choice(f"Selected point: {long}", [1, 2]) is None
    assert parse_choice(f"I choose star {long}", [1, 2]) is None
    assert parse_choice(long, [1, 2]) is None
    assert parse_choice("Selected point: 2", [1, 2]) == 2


@pytest.mark.parametrize("choice", ["NaN", "Infinity", "1e999"])
def test_text_agent_choice_that_is_not_finite_falls_back_to_the_prose(choice):
    assert read_choice(f'{{"choice": {choice}}} so star 2 it is', [1, 2, 3]) == 2
    assert read_choice(f'{{"choice": {choice}}}', [1, 2, 3]) is None


@pytest.mark.parametrize("x", ["NaN", "Infinity", "1e999"])
def test_text_agent_commands_with_non_finite_coords_are_errors(x):
    text = json.dumps({"thoughts": {"text": "click it"}, "commands": []})[:-3] + (
        f'[{{"name": "CLICK_COORDS", "args": {{"coords": [{x}, 40]}}}}]}}'
    )
    parsed = parse_answer(text)
    assert parsed.actions == []
    assert all(math.isfinite(v) for a in parsed.actions for p in a.points for v in (p.x, p.y))


# ------------------------------------------------------------------------------- text
LONE = "\ud800"


def test_typed_text_with_a_lone_surrogate_is_replaced_in_every_family():
    uitars = parse_uitars(f"Thought: type the name.\nAction: type(content='Ren{LONE}e')")
    qwen = parse_qwen(
        '<tool_call>{"name": "computer_use", "arguments": {"action": "type", "text": "Ren\\ud800e"}}</tool_call>'
    )
    react = parse_answer(
        '{"thoughts": {"text": "x"}, "commands": [{"name": "TYPE_TEXT", "args": {"text": "Ren\\ud800e"}}]}'
    )
    for action in (uitars, qwen, react.actions[0]):
        assert action.type == ActionType.TYPE and action.text == "Ren\ufffde" and encodes(action.text)


def test_a_final_answer_and_its_thought_with_lone_surrogates_encode():
    action = parse_uitars(f"Thought: done{LONE}.\nAction: finished(content='forty{LONE}two')")
    assert action.type == ActionType.FINISHED and encodes(action.text) and encodes(action.extras["thought"])
    adapter_action = get_adapter("uitars-1.5").parse_action(
        f"Thought: x{LONE}\nAction: click(start_box='(5,5)')", *SIZE
    )
    assert adapter_action is not None and encodes(adapter_action.extras["thought"])


def test_coat_parts_with_lone_surrogates_encode():
    parts = parse_coat(
        f"Screen description: a form{LONE}\nAction think: type the name\nAction: type(content='x')"
    )
    assert encodes(parts.screen_description) and encodes(parts.rest)
