"""The OSWorld-style wrapper (plugins/osworld.py).

Slow: a real X server (Xvfb) with a real application (tests/xvfb_app.py, Tk buttons), the actions
executed and the screenshots taken as OSWorld's server does (tests/xvfb_desktop.py). The inner
agent is a demo (it reads the app's button boxes and clicks beside the target, where nothing
happens); the grounding model is the offline OCR stand-in, which reads the button labels.

Fast: what passes through untouched, bad input, the pointer it follows, the step log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from PIL import Image

from regionfocus.plugins import Focus
from regionfocus.plugins.osworld import LOG_NAME, OSWorldFocus

from .test_plugin_osworld_code import HOSTILE, watching
from .xvfb_desktop import SCREEN, SIDES, Beside, DesktopError, application, episode, png_bytes, xvfb


@dataclass
class Scripted:
    """An OSWorld-style agent that answers from a script, one (response, actions) a step."""

    answers: list
    seen: list = field(default_factory=list)
    resets: list = field(default_factory=list)
    model: str = "scripted-1"

    def predict(self, instruction, obs):
        self.seen.append(instruction)
        return self.answers[min(len(self.seen), len(self.answers)) - 1]

    def reset(self, *args, **kwargs):
        self.resets.append((args, kwargs))


# ------------------------------------------------------------------ fast
@pytest.fixture
def no_code_run(tmp_path, monkeypatch):
    """What was executed, spawned or written while the test ran, in a fresh working folder."""
    monkeypatch.chdir(tmp_path)
    with watching() as seen:
        yield seen


@pytest.fixture(scope="module")
def focus():
    with Focus("ocr") as f:
        yield f


@pytest.fixture(scope="module")
def blank_obs():
    return {"screenshot": png_bytes(Image.new("RGB", (320, 200), "white")), "accessibility_tree": None}


PASSING = [
    ["WAIT"],
    ["DONE"],
    ["FAIL"],
    ["pyautogui.typewrite('hello')"],
    ["pyautogui.hotkey('ctrl', 's')", "pyautogui.click(10, 20)"],
    [{"action_type": "CLICK", "x": 10, "y": 20}],
    [{"action_type": "EXEC", "command": "import os; os.system('touch PWNED')"}],
    *[[code] for code in HOSTILE],
]


@pytest.mark.parametrize("actions", PASSING, ids=range(len(PASSING)))
def test_what_cannot_be_refined_passes_through_untouched(actions, focus, blank_obs, no_code_run):
    """Twice the same answer (a repeat) on the same screen: nothing is rewritten or run."""
    response = {"thought": "as the agent wrote it"}
    agent = Scripted([(response, actions)])
    wrapped = OSWorldFocus(agent, focus)
    for _ in range(2):
        got_response, got = wrapped.predict("Click Save", blank_obs)
        assert got_response is response
        assert got == actions and all(a is b for a, b in zip(got, actions, strict=True))
    assert focus.rounds == 0 and wrapped.stats["rf_calls"] == 0
    assert no_code_run == [] and not any(Path.cwd().iterdir())
    focus.reset()


@pytest.mark.parametrize("actions", [None, [], "pyautogui.click(1, 2)"])
def test_no_action_list_is_handed_back_as_is(actions, focus, blank_obs):
    wrapped = OSWorldFocus(Scripted([("r", actions)]), focus)
    assert wrapped.predict("Click Save", blank_obs) == ("r", actions)
    assert wrapped.steps[-1]["reason"].startswith("no action to execute")
    focus.reset()


def test_the_agent_is_reset_and_reachable_through_the_wrapper(focus, blank_obs):
    agent = Scripted([("r", ["pyautogui.click(100, 50)"])])
    wrapped = OSWorldFocus(agent, focus, cursor=(5, 5))
    assert wrapped.model == "scripted-1"
    assert wrapped.pointer is not None and (wrapped.pointer.x, wrapped.pointer.y) == (5, 5)
    wrapped.predict("Click Save", blank_obs)
    assert (wrapped.pointer.x, wrapped.pointer.y) == (100, 50)
    wrapped.reset("runtime_logger", vm_ip="10.0.0.1", cursor=(7, 8))
    assert agent.resets == [(("runtime_logger",), {"vm_ip": "10.0.0.1"})]
    assert (wrapped.pointer.x, wrapped.pointer.y) == (7, 8) and wrapped.steps == []


@pytest.mark.parametrize(
    "actions, pointer",
    [
        (["pyautogui.moveTo(30, 40)", "pyautogui.typewrite('x')"], (30, 40)),
        (["pyautogui.click(1, 2); pyautogui.moveTo(30, 40); pyautogui.click()"], (30, 40)),
        (["pyautogui.moveTo(30, 40); pyautogui.dragTo(60, 70)"], (60, 70)),
        (["pyautogui.click(30, 40)", "import os; os.system('x')"], None),
        (["pyautogui.click(30, 40)", "pyautogui.moveRel(5, 5)"], None),
        (["pyautogui.click(30, 40)", "WAIT"], (30, 40)),
        (["pyautogui.click(-20, 900)"], (0, 199)),  # the blank screen is 320 x 200
    ],
)
def test_the_pointer_is_where_the_returned_code_leaves_it(actions, pointer, focus, blank_obs):
    wrapped = OSWorldFocus(Scripted([("r", actions)]), focus, cursor=(1, 1))
    wrapped.predict("Click Save", blank_obs)
    got = (wrapped.pointer.x, wrapped.pointer.y) if wrapped.pointer else None
    assert got == pointer
    focus.reset()


def test_each_step_goes_to_the_log(focus, blank_obs, tmp_path):
    agent = Scripted([("r", ["pyautogui.click(10, 20)"]), ("r", ["import os"])])
    wrapped = OSWorldFocus(agent, focus, log_dir=tmp_path / "run")
    wrapped.predict("Click Save", blank_obs)
    wrapped.predict("Click Save", blank_obs)
    lines = [json.loads(line) for line in (tmp_path / "run" / LOG_NAME).read_text().splitlines()]
    assert [r["step"] for r in lines] == [1, 2]
    assert lines[0]["refinable"] is True and lines[0]["refined"] is False and lines[0]["trigger"] is None
    assert lines[1]["refinable"] is False and "imports os" in lines[1]["reason"]
    assert set(lines[0]["stats"]) >= {"rf_triggered", "rf_calls", "rf_prompt_tokens", "rf_completion_tokens"}
    focus.reset()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"screen_size": (0, 768)}, ValueError, "screen_size must be positive"),
        ({"screen_size": "1024x768"}, ValueError, "screen_size must be"),
        ({"cursor_box": (10, 0, 5, 30)}, ValueError, "cursor_box must have right > left"),
        ({"cursor_box": (1, 2)}, ValueError, "cursor_box must be"),
        ({"base_url": "http://127.0.0.1:1/v1"}, TypeError, "need a family name"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, error, match, focus):
    with pytest.raises(error, match=match):
        OSWorldFocus(Scripted([]), focus, **kwargs)


def test_bad_agent_and_observation_are_one_line_errors(focus):
    with pytest.raises(TypeError, match="agent must have predict"):
        OSWorldFocus(object(), focus)
    wrapped = OSWorldFocus(Scripted([("r", ["WAIT"])]), focus)
    with pytest.raises(ValueError, match="'screenshot' PNG bytes"):
        wrapped.predict("Click Save", {"accessibility_tree": None})
    with pytest.raises(ValueError, match="no readable image"):
        wrapped.predict("Click Save", {"screenshot": b"not a png"})


# ------------------------------------------------------------------ slow: a real window
@pytest.fixture(scope="session")
def desktop():
    try:
        with xvfb(SCREEN) as d:
            yield d
    except DesktopError as e:
        pytest.fail(str(e))


@pytest.fixture
def app(desktop, tmp_path):
    """The test application, fresh for each test: its output file and its buttons' boxes."""
    try:
        with application(desktop, tmp_path) as started:
            yield started
    except DesktopError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def grounder():
    with Focus("ocr") as f:
        yield f


@pytest.mark.slow
@pytest.mark.parametrize(
    "label, side", [(lab, SIDES[i % 4]) for i, lab in enumerate(("Save", "Print", "Help"))]
)
def test_a_click_beside_the_button_is_refined_onto_it(desktop, app, grounder, label, side):
    """Step 1: the agent's click lands beside the button; the window does not change (only the
    drawn cursor moved, which does not count). Step 2: the no-effect trigger runs a round, the
    refined code clicks the button, and the app says so."""
    out, layout = app
    desktop.move(5, 700)
    inner = Beside(layout[label], side)
    grounder.reset()
    wrapped = OSWorldFocus(inner, grounder, cursor=(5, 700))
    clicked = episode(desktop, wrapped, f"Click the {label} button", out)
    assert clicked == [label]
    first, second = wrapped.steps[:2]
    assert first["refined"] is False and first["trigger"] is None
    assert second["trigger"] == "no-effect" and second["refined"] is True
    assert second["code"] == f"pyautogui.click({inner.point[0]}, {inner.point[1]})"
    left, top, right, bottom = layout[label]
    x, y = (int(v) for v in second["refined_code"][len("pyautogui.click(") : -1].split(", "))
    assert left <= x < right and top <= y < bottom
    assert wrapped.stats["rf_triggered"] == 1 and wrapped.stats["rf_refined"] == 1


@pytest.mark.slow
def test_the_drawn_cursor_does_not_hide_a_click_that_changed_nothing(desktop, tmp_path, grounder):
    """An agent that misses a little further out each try (so no try repeats the last): with the
    cursor box, its first miss is seen (only the drawn cursor moved) and step 2 is refined; with a
    box too small for the cursor, every miss looks like a change and no round ever runs."""
    runs = {}
    for name, box in (("default", None), ("too small", (0, 0, 1, 1))):
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        with application(desktop, folder) as (out, layout):
            desktop.move(5, 700)
            grounder.reset()
            options = {"cursor_box": box} if box else {}
            inner = Beside(layout["Open"], "right", drift=25)
            wrapped = OSWorldFocus(inner, grounder, cursor=(5, 700), **options)
            runs[name] = (episode(desktop, wrapped, "Click the Open button", out), wrapped.steps)
    clicked, steps = runs["default"]
    assert clicked == ["Open"] and [s["trigger"] for s in steps] == [None, "no-effect"]
    clicked, steps = runs["too small"]
    assert clicked == [] and [s["trigger"] for s in steps] == [None, None, None]


@pytest.mark.slow
def test_a_hidpi_screenshot_is_scaled_both_ways(desktop, app, grounder):
    """The screenshot has twice the screen's pixels: the round works in screenshot pixels, the
    code keeps pyautogui's logical ones."""
    out, layout = app
    desktop.move(5, 700)
    grounder.reset()
    wrapped = OSWorldFocus(Beside(layout["Undo"], "below"), grounder, cursor=(5, 700), screen_size=SCREEN)
    clicked = episode(desktop, wrapped, "Click the Undo button", out, scale=2)
    assert clicked == ["Undo"]
    trace_point = wrapped.steps[1]["trace"]["action"]["point"]
    left, top, right, bottom = layout["Undo"]
    assert 2 * left <= trace_point[0] < 2 * right and 2 * top <= trace_point[1] < 2 * bottom
