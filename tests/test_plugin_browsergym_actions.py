"""The BrowserGym plug-in's reading of action strings (plugins/_bgym_actions.py): the pointer
actions it reads, in screenshot pixels; everything else, hostile or merely unknown, left unread
(the plug-in then passes it on untouched) and never executed: hostile strings are read under the
audit hook of tests/test_plugin_osworld_code.py, which records any code run, file written or
process spawned. Fast: no browser, no BrowserGym install needed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionfocus.actions import Action, ActionType
from regionfocus.geometry import Point
from regionfocus.plugins._bgym_actions import MAX_READ_CHARS, read_action, write_action
from tests.test_plugin_osworld_code import audited  # noqa: F401  (the fixture)

SIZE = (498, 321)  # a MiniWoB++ screenshot: 332 x 214 CSS px at BrowserGym's scale factor 1.5
# extra_element_properties as BrowserGym gives them: bbox x, y, w, h already in screenshot pixels
ELEMENTS = {
    "13": {"visibility": 1.0, "bbox": [3.0, 94.5, 46.2, 31.5], "clickable": True},
    "14": {"visibility": 0.0, "bbox": None, "clickable": False},
    "15": {"visibility": 1.0, "bbox": [3.0, 126.0, 0.0, 16.5], "clickable": False},
}


@pytest.mark.parametrize(
    ("text", "kind", "point"),
    [
        ("mouse_click(120.5, 88)", ActionType.CLICK, (120.5, 88)),
        ("  mouse_click(x=10, y=20)\n", ActionType.CLICK, (10, 20)),
        ("mouse_click(10, 20, 'right')", ActionType.RIGHT_CLICK, (10, 20)),
        ('mouse_click(10, 20, button="middle")', ActionType.MIDDLE_CLICK, (10, 20)),
        ("mouse_click(-0.0, 321)", ActionType.CLICK, (0, 321)),  # edges are on the screenshot
        ("mouse_dblclick(5, 236)", ActionType.DOUBLE_CLICK, (5, 236)),
        # click(bid): the element's box centre, already in screenshot pixels (no scale factor again)
        ("click('13')", ActionType.CLICK, (3.0 + 46.2 / 2, 94.5 + 31.5 / 2)),
        ('click("13", button="right")', ActionType.RIGHT_CLICK, (26.1, 110.25)),
        ("click('13', modifiers=[])", ActionType.CLICK, (26.1, 110.25)),
    ],
)
def test_pointer_actions_are_read_in_screenshot_pixels(text, kind, point):
    reading = read_action(text, ELEMENTS, SIZE)
    assert reading.action is not None, reading.why
    assert reading.action.type is kind
    assert reading.action.point.x == pytest.approx(point[0]) and reading.action.point.y == pytest.approx(
        point[1]
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("fill('12', 'hello')", "not a pointer action we read"),
        ("scroll(0, 200)", "not a pointer action we read"),
        ("noop()", "not a pointer action we read"),
        ("click('99')", "element without a box on screen"),  # no such element
        ("click('14')", "element without a box on screen"),  # invisible, no box
        ("click('15')", "element without a box on screen"),  # zero width
        ("click(13)", "element without a box on screen"),  # a number is not a bid
        ("click('13', modifiers=['Shift'])", "click with modifier keys"),
        ("mouse_click(10, 20, button='back')", "unknown button"),
        ("mouse_dblclick(10, 20, 'right')", "double click with another button"),
        ("mouse_click(600, 20)", "point outside the screenshot"),
        ("mouse_click(10, -1)", "point outside the screenshot"),
        ("mouse_click(True, 20)", "coordinates are not finite numbers"),
        ("mouse_click('10', 20)", "coordinates are not finite numbers"),
        ("mouse_click(1e999, 20)", "coordinates are not finite numbers"),  # inf as a literal
        ("mouse_click(10)", "arguments are not plain literals of its signature"),
        ("mouse_click(10, 20, 'left', 4)", "arguments are not plain literals of its signature"),
        ("mouse_click(10, 20, x=3)", "arguments are not plain literals of its signature"),
        ("mouse_click(10, 20, clicks=2)", "arguments are not plain literals of its signature"),
        ("mouse_click(*[10, 20])", "arguments are not plain literals of its signature"),
        ("mouse_click(**{'x': 10, 'y': 20})", "arguments are not plain literals of its signature"),
        ("mouse_click(10 ** 100, 20)", "arguments are not plain literals of its signature"),
        ("mouse_click(float('nan'), 20)", "arguments are not plain literals of its signature"),
        ("mouse_click(mouse_click(1, 2), 3)", "arguments are not plain literals of its signature"),
        ("mouse_click(x, y)", "arguments are not plain literals of its signature"),
        ("mouse_click(10, 20)\nclick('13')", "not a single call"),
        ("mouse_click(10, 20); import os", "not a single call"),
        ("x = mouse_click(10, 20)", "not a single call"),
        ("page.mouse.click(10, 20)", "not a pointer action we read"),
        ("mouse_click", "not a single call"),
        ("mouse_click(10, 20", "not Python"),
        ("", "not a single call"),
        (None, "not a string (NoneType)"),
        (b"mouse_click(1, 2)", "not a string (bytes)"),
    ],
)
def test_anything_else_is_left_unread_with_the_reason(text, why):
    reading = read_action(text, ELEMENTS, SIZE)
    assert reading.action is None
    assert reading.why == why


HOSTILE = [
    "__import__('os').system('touch pwned')",
    "mouse_click(__import__('os').system('touch pwned'), 5)",
    "mouse_click(10, 20, button=open('pwned', 'w').write('x'))",
    "click(exec(\"open('pwned', 'w')\"))",
    "mouse_click(*__import__('subprocess').Popen(['touch', 'pwned']).args)",
    "(lambda: __import__('os').system('touch pwned'))()",
    "mouse_click(10, 20) if open('pwned', 'w') else None",
    "mouse_click(10, 20)\n__import__('os').system('touch pwned')",
    "mouse_click(" + "(" * 300 + "1" + ")" * 300 + ", 2)",  # past the parser's nesting limit
    "mouse_click(" + "9" * 5000 + ", 2)",  # past Python's int-to-str digit limit
    "mouse_click(1, 2)" + " " * MAX_READ_CHARS,  # too long to parse at all
    "mouse_click(" + "[" * 100_000 + "]" * 100_000 + ", 1)",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_strings_are_never_run(text, audited):  # noqa: F811
    reading = read_action(text, ELEMENTS, SIZE)
    assert reading.action is None
    assert audited == []  # nothing executed, written or spawned while reading
    import os

    assert not os.path.exists("pwned")


def test_writing_a_refined_action():
    p = Point(12.345, 67.89)
    assert write_action(Action(ActionType.CLICK, p)) == "mouse_click(12.3, 67.9)"
    assert write_action(Action(ActionType.DOUBLE_CLICK, p)) == "mouse_dblclick(12.3, 67.9)"
    assert write_action(Action(ActionType.RIGHT_CLICK, p)) == "mouse_click(12.3, 67.9, button='right')"
    assert write_action(Action(ActionType.HOVER, p)) == "mouse_move(12.3, 67.9)"
    typed = write_action(Action(ActionType.TYPE, p, text='it\'s "x"\n'))
    assert typed == "mouse_click(12.3, 67.9)\nkeyboard_type('it\\'s \"x\"\\n')"
    # Nothing it could honestly write: the caller keeps its agent's own string.
    assert write_action(None) is None
    assert write_action(Action(ActionType.WAIT)) is None
    assert write_action(Action(ActionType.DRAG, p, end_point=Point(1, 1))) is None
    assert write_action(Action(ActionType.SCROLL, p, direction="down")) is None


@settings(max_examples=200, deadline=None)
@given(st.floats(0, SIZE[0]), st.floats(0, SIZE[1]))
def test_a_written_click_reads_back_at_the_same_point(x, y):
    written = write_action(Action(ActionType.CLICK, Point(x, y)))
    back = read_action(written, {}, SIZE).action
    assert back is not None and back.type is ActionType.CLICK
    assert abs(back.point.x - x) <= 0.05 + 1e-9 and abs(back.point.y - y) <= 0.05 + 1e-9
