"""Reading and rewriting OSWorld-style pyautogui code (plugins/pyautogui_code.py), fast.

The forms are the ones real agents write: OSWorld's prompt agent (``pyautogui.click(x, y)``), Agent
S's grounding actions (``import pyautogui; pyautogui.click(x, y, clicks=1, button='left'); ``
with held keys, click-then-type, a trailing ``print``), the ``ui-tars`` package's own code
generator (run here, not copied), and pyautogui's documented call shapes (keywords, a tuple for x,
``clicks=2``, ``button='right'``). Hostile strings are read under an audit hook that fails the
test if anything is compiled to run, executed, opened or spawned.
"""

from __future__ import annotations

import contextlib
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionfocus.actions import ActionType
from regionfocus.geometry import Point
from regionfocus.plugins.pyautogui_code import SPECIAL, read_code

NEW = Point(7, 9)

# (code, point read, action type, the code after with_point(NEW))
REFINED = [
    ("pyautogui.click(100, 200)", (100, 200), ActionType.CLICK, "pyautogui.click(7, 9)"),
    (
        "import pyautogui\npyautogui.click(x=100, y=200)",
        (100, 200),
        ActionType.CLICK,
        "import pyautogui\npyautogui.click(x=7, y=9)",
    ),
    ("pyautogui.click((100, 200))", (100, 200), ActionType.CLICK, "pyautogui.click((7, 9))"),
    ("pyautogui.click(x=(100, 200))", (100, 200), ActionType.CLICK, "pyautogui.click(x=(7, 9))"),
    (
        "pyautogui.doubleClick([100, 200])",
        (100, 200),
        ActionType.DOUBLE_CLICK,
        "pyautogui.doubleClick([7, 9])",
    ),
    (
        "pyautogui.rightClick(x=100, y=200)",
        (100, 200),
        ActionType.RIGHT_CLICK,
        "pyautogui.rightClick(x=7, y=9)",
    ),
    ("pyautogui.middleClick(100, 200)", (100, 200), ActionType.MIDDLE_CLICK, "pyautogui.middleClick(7, 9)"),
    ("pyautogui.tripleClick(100, 200)", (100, 200), ActionType.CLICK, "pyautogui.tripleClick(7, 9)"),
    ("pyautogui.leftClick(100, 200)", (100, 200), ActionType.CLICK, "pyautogui.leftClick(7, 9)"),
    (
        "pyautogui.click(100, 200, button='right')",
        (100, 200),
        ActionType.RIGHT_CLICK,
        "pyautogui.click(7, 9, button='right')",
    ),
    (
        "pyautogui.click(100, 200, button=pyautogui.MIDDLE)",
        (100, 200),
        ActionType.MIDDLE_CLICK,
        "pyautogui.click(7, 9, button=pyautogui.MIDDLE)",
    ),
    (
        "pyautogui.click(100, 200, clicks=2)",
        (100, 200),
        ActionType.DOUBLE_CLICK,
        "pyautogui.click(7, 9, clicks=2)",
    ),
    ("pyautogui.click(100, 200, 2)", (100, 200), ActionType.DOUBLE_CLICK, "pyautogui.click(7, 9, 2)"),
    ("pyautogui.click(100.5, -3.25)", (100.5, -3.25), ActionType.CLICK, "pyautogui.click(7.0, 9.0)"),
    (
        "pyautogui.click(\n    100,\n    200,\n)",
        (100, 200),
        ActionType.CLICK,
        "pyautogui.click(\n    7,\n    9,\n)",
    ),
    (
        "import pyautogui as pg\npg.click(1, 2)",
        (1, 2),
        ActionType.CLICK,
        "import pyautogui as pg\npg.click(7, 9)",
    ),
    # a click without coordinates clicks where the move before it went
    (
        "pyautogui.moveTo(100, 200, duration=0.5)\npyautogui.click()",
        (100, 200),
        ActionType.CLICK,
        "pyautogui.moveTo(7, 9, duration=0.5)\npyautogui.click()",
    ),
    # the first click is refined, a later one kept as written
    (
        "pyautogui.click(100, 200); pyautogui.click(300, 400)",
        (100, 200),
        ActionType.CLICK,
        "pyautogui.click(7, 9); pyautogui.click(300, 400)",
    ),
    # Agent S: a click with its clicks and button, held keys, click-then-type, print
    (
        "import pyautogui; import pyautogui; pyautogui.click(960, 540, clicks=1, button='left'); ",
        (960, 540),
        ActionType.CLICK,
        "import pyautogui; import pyautogui; pyautogui.click(7, 9, clicks=1, button='left'); ",
    ),
    (
        "import pyautogui; pyautogui.keyDown('ctrl'); import pyautogui; "
        "pyautogui.click(960, 540, clicks=2, button='left'); pyautogui.keyUp('ctrl'); ",
        (960, 540),
        ActionType.DOUBLE_CLICK,
        "import pyautogui; pyautogui.keyDown('ctrl'); import pyautogui; "
        "pyautogui.click(7, 9, clicks=2, button='left'); pyautogui.keyUp('ctrl'); ",
    ),
    (
        "import pyautogui; pyautogui.click(300, 400); pyautogui.hotkey('ctrl', 'a'); "
        "pyautogui.press('backspace'); pyautogui.write('héllo'); pyautogui.press('enter'); ",
        (300, 400),
        ActionType.CLICK,
        "import pyautogui; pyautogui.click(7, 9); pyautogui.hotkey('ctrl', 'a'); "
        "pyautogui.press('backspace'); pyautogui.write('héllo'); pyautogui.press('enter'); ",
    ),
    (
        "pyautogui.click(960, 540, clicks=1, button='left'); print(\"Click Success\")",
        (960, 540),
        ActionType.CLICK,
        "pyautogui.click(7, 9, clicks=1, button='left'); print(\"Click Success\")",
    ),
    # characters of several UTF-8 lengths before the literals on the same line, CRLF lines
    (
        "pyautogui.keyDown('é'); pyautogui.keyUp('€'); pyautogui.click(10, 20)  # 🖱 ok",
        (10, 20),
        ActionType.CLICK,
        "pyautogui.keyDown('é'); pyautogui.keyUp('€'); pyautogui.click(7, 9)  # 🖱 ok",
    ),
    (
        "'''Thought: 🖱 the é button'''\r\npyautogui.click(10,\r\n 20)\r\npyautogui.write('€')",
        (10, 20),
        ActionType.CLICK,
        "'''Thought: 🖱 the é button'''\r\npyautogui.click(7,\r\n 9)\r\npyautogui.write('€')",
    ),
]


@pytest.mark.parametrize("code, point, kind, rewritten", REFINED, ids=range(len(REFINED)))
def test_real_click_forms_are_read_and_only_their_literals_rewritten(code, point, kind, rewritten):
    r = read_code(code)
    assert r.target is not None, r.reason
    assert r.point == Point(*point)
    assert r.action().type == kind and r.action().point == Point(*point)
    out = r.with_point(NEW)
    assert out == rewritten
    assert read_code(out).point == NEW


def _uitars_code(action: str) -> str:
    ap = pytest.importorskip("ui_tars.action_parser")
    parsed = ap.parse_action_to_structure_output(
        f"Thought: the button.\nAction: {action}",
        factor=1000,
        origin_resized_height=1080,
        origin_resized_width=1920,
        model_type="qwen25vl",
    )
    return ap.parsing_response_to_pyautogui_code(parsed, 1080, 1920, input_swap=False, scale_factor=1)


@pytest.mark.parametrize(
    "action, kind",
    [
        ("click(start_box='(812,394)')", ActionType.CLICK),
        ("left_double(start_box='(812,394)')", ActionType.DOUBLE_CLICK),
        ("right_single(start_box='(812,394)')", ActionType.RIGHT_CLICK),
    ],
)
def test_code_from_the_ui_tars_generator_is_read(action, kind):
    """The ui-tars package writes its thought as a bare string and its imports above the click."""
    code = _uitars_code(action)
    r = read_code(code)
    assert r.target is not None, (r.reason, code)
    assert r.action().type == kind
    out = r.with_point(NEW)
    assert read_code(out).point == NEW
    head = code.index("pyautogui.", code.index("'''\n\n"))
    assert out[:head] == code[:head]  # the thought and imports are untouched


@pytest.mark.parametrize(
    "action, kind",
    [
        ("hover(start_box='(812,394)')", ActionType.HOVER),
        ("scroll(start_box='(812,394)', direction='down')", ActionType.SCROLL),
        ("hotkey(key='ctrl c')", ActionType.HOTKEY),
        ("drag(start_box='(812,394)', end_box='(900,500)')", ActionType.DRAG),
    ],
)
def test_ui_tars_code_that_is_not_a_click_has_no_target(action, kind):
    r = read_code(_uitars_code(action))
    assert r.target is None and r.plain
    assert (r.action().type if r.action() else None) == kind


# (code, what the reading says it is, or None for opaque)
NOT_REFINED = [
    ("pyautogui.typewrite('hello')", ActionType.TYPE),
    ("pyautogui.write('x'); pyautogui.click(1, 2)", ActionType.TYPE),  # the click follows typing
    ("pyautogui.hotkey('ctrl', 'c')", ActionType.HOTKEY),
    ("pyautogui.press('enter')", ActionType.HOTKEY),
    ("pyautogui.press(['tab', 'tab'])", ActionType.HOTKEY),
    ("pyautogui.scroll(-5, x=10, y=20)", ActionType.SCROLL),
    ("pyautogui.moveTo(100, 200)", ActionType.HOVER),
    ("pyautogui.moveTo(100, 200); pyautogui.dragTo(300, 400, duration=1.0, button='left')", ActionType.DRAG),
    ("pyautogui.dragTo(300, 400)", ActionType.DRAG),
    ("time.sleep(1.0)", ActionType.WAIT),
    ("pyautogui.click()", None),  # where the pointer already is: no point to refine
    ("pyautogui.click('button.png')", None),  # pyautogui would search the screen for an image
    ("pyautogui.click(100)", None),  # y is the pointer's current one
    ("pyautogui.click(1e999, 2)", None),
    ("pyautogui.moveRel(5, 0); pyautogui.click()", None),
    ("pyautogui.click(100, 200, x=5)", None),  # x twice: pyautogui raises TypeError
]


@pytest.mark.parametrize("code, kind", NOT_REFINED, ids=range(len(NOT_REFINED)))
def test_plain_code_without_a_refinable_click(code, kind):
    r = read_code(code)
    assert r.plain and r.target is None and r.reason
    assert (r.action().type if r.action() else None) == kind
    with pytest.raises(ValueError, match="no refinable click"):
        r.with_point(NEW)


@pytest.mark.parametrize("word", sorted(SPECIAL))
def test_control_strings_are_not_code(word):
    for s in (word, f"  {word}\n"):
        r = read_code(s)
        assert not r.plain and r.target is None and r.action() is None and "control" in r.reason


# Each would leave a trace or stop the interpreter if anything ran it.
HOSTILE = [
    "import os; os.system('touch PWNED')",
    "import os\npyautogui.click(1, 2)",
    "__import__('os').system('touch PWNED')",
    "pyautogui.click(__import__('os').system('touch PWNED'), 2)",
    "pyautogui.click(x+5, y)",
    "pyautogui.click(*[1, 2])",
    "pyautogui.click(**{'x': 1, 'y': 2})",
    "exec('import os')",
    "eval('1')",
    "open('PWNED', 'w').write('x')",
    "for i in range(3): pyautogui.click(1, 2)",
    "if True: pyautogui.click(1, 2)",
    "def f():\n    pyautogui.click(1, 2)\nf()",
    "pyautogui.click(1, 2) if True else 0",
    "getattr(pyautogui, 'click')(1, 2)",
    "pyautogui.FAILSAFE = False\npyautogui.click(1, 2)",
    "pyautogui.click(1, 2); import subprocess; subprocess.run(['touch', 'PWNED'])",
    "pyautogui.click(1, 2); pyautogui.screenshot('PWNED.png')",
    "pyautogui.click(1, 2).__class__.__bases__",
    "pyautogui.click(10**10**10, 2)",
    "pyautogui.write('a' * 10**10)",
    "import sys; sys.exit(3)",
    "raise SystemExit(3)",
    "pyautogui.click(lambda: 1, 2)",
    "x, y = 1, 2\npyautogui.click(x, y)",
    "tag_1=(100, 200)\npyautogui.click(tag_1)",  # OSWorld's set-of-marks code: a name
    "pyautogui.click(1, 2",  # syntax errors
    "  pyautogui.click(1, 2)",
    "pyautogui.click(1, 2)\x00",
    "(" * 300 + ")" * 300,
    "pyautogui.click(" + "9" * 5000 + ", 2)",
    "pyautogui.click(" + "[" * 200 + "1" + "]" * 200 + ", 2)",
    "",
]

_WATCHING = []
_HOOKED = False


def _audit(event: str, args: tuple) -> None:
    if not _WATCHING:
        return
    # Reading is allowed (a SyntaxError looks for its source line in a file named "<unknown>").
    writes = event == "open" and isinstance(args[1], str) and set(args[1]) & set("wax+")
    if writes or event in ("exec", "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.fork"):
        _WATCHING[0].append((event, repr(args)[:150]))


@contextlib.contextmanager
def watching():
    """Records every execution, spawn or file written inside the block (a hook cannot be
    removed, so one is added per process and only listens while a block holds it)."""
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    seen: list[tuple[str, str]] = []
    _WATCHING.append(seen)
    try:
        yield seen
    finally:
        _WATCHING.clear()


@pytest.fixture
def audited(tmp_path, monkeypatch):
    """:func:`watching` over the test, in a fresh working folder."""
    monkeypatch.chdir(tmp_path)
    with watching() as seen:
        yield seen


@pytest.mark.parametrize("code", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_or_computed_code_is_opaque_and_never_run(code, audited, tmp_path):
    r = read_code(code)
    assert r.target is None and r.action() is None and r.reason
    assert r.code == code
    assert audited == []
    assert not any(tmp_path.iterdir())


def test_non_strings_are_opaque():
    for thing in (None, 3, {"action_type": "CLICK"}, b"pyautogui.click(1, 2)"):
        assert read_code(thing).target is None


_SAFE_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    before=st.lists(_SAFE_TEXT, max_size=2),
    after=st.lists(_SAFE_TEXT, max_size=2),
    xy=st.tuples(st.integers(-5000, 5000), st.integers(-5000, 5000)),
    new=st.tuples(st.integers(0, 4000), st.integers(0, 4000)),
    keyword=st.booleans(),
    sep=st.sampled_from(["\n", "; ", "\r\n"]),
)
def test_rewriting_changes_the_two_literals_and_nothing_else(before, after, xy, new, keyword, sep):
    held = [f"pyautogui.keyDown({t!r})" for t in before]
    typed = [f"pyautogui.write({t!r})" for t in after]
    form = "pyautogui.click(x={}, y={})" if keyword else "pyautogui.click({}, {})"
    code = sep.join([*held, form.format(*xy), *typed])
    r = read_code(code)
    assert r.point == Point(*xy), r.reason
    assert r.with_point(Point(*new)) == sep.join([*held, form.format(*new), *typed])


def test_the_audit_hook_would_see_code_run(audited):
    """The hostile test's witness works: running code or writing a file is recorded."""
    exec("1")  # noqa: S102 (a constant of the test's own, to prove the hook listens)
    with open("written", "w") as f:
        f.write("x")
    assert [e for e, _ in audited] == ["exec", "open"]
