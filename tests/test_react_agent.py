"""The screen-to-text ReAct agent: its answer parser (never eval), its prompt, a step over real
HTTP, CoAT in its context, and the core's RegionFocus round in text (ReactModel) on a static
screenshot with real OCR (the scripted model reads only the text it is sent)."""

from __future__ import annotations

import json
import re

import pytest
from PIL import Image, ImageDraw, ImageFont

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.agents.react_agent import (
    ReactAgent,
    exemplar_tasks,
    format_command,
    load_exemplar,
    parse_answer,
)
from regionfocus.adapters.agents.react_model import ReactModel
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.adapters.perception.screen_text import ScreenElement, ScreenText
from regionfocus.adapters.reasoning.coat import CoatConfig, CoatHistory
from regionfocus.config import RegionFocusConfig
from regionfocus.geometry import Box, Point
from regionfocus.model import Query, Turn
from regionfocus.orchestrator import RegionFocus
from regionfocus.views import StaticViews
from tests.chat_server import ChatServer

# The paper's Table 5 answer, as printed: the commands list lacks the braces of its object.
PAPER_ANSWER = """"thoughts": {
    "text": "I need to click on the 'Ok' button.",
    "reasoning": "Based on the Observation 1, the 'Ok' button is represented by ''Ok' button: [4, 46, 69, 90]'.",
    "plan": "- Click on the center of the 'Ok' button.",
    "criticism": "I must click on the center of the object.",
    "speak": "I will click on the center of the 'Ok' button."
  },
  "commands": [
      "name": "CLICK_COORDS",
      "args": {
        "coords": [36, 68]
    }
  ]
}"""


def _screen() -> ScreenText:
    return ScreenText(
        (300, 300),
        [
            ScreenElement("button", "Ok", Box(4, 46, 69, 90)),
            ScreenElement("text_field", "", Box(4, 120, 200, 150)),
        ],
    )


def test_parses_the_papers_own_example():
    p = parse_answer(PAPER_ANSWER, screen=_screen())
    assert not p.found_json  # not valid JSON; read field by field
    assert p.actions == [Action(ActionType.CLICK, Point(36, 68))]
    assert p.commands == ["CLICK_COORDS [36, 68]"]
    assert p.thoughts["text"] == "I need to click on the 'Ok' button."


def test_parses_a_command_list_in_order_with_every_command_kind():
    answer = {
        "thoughts": {"text": "t"},
        "commands": [
            {"name": "CLICK_ELEMENT", "args": {"element": "text field"}},
            {"name": "TYPE_TEXT", "args": {"text": "it's \"quoted\"; __import__('os')"}},
            {"name": "PRESS_KEY", "args": {"key": "<Enter>"}},
            {"name": "PRESS_KEY", "args": {"key": "C-a"}},
            {"name": "DBLCLICK_COORDS", "args": {"coords": [10, 11]}},
            {"name": "MOVE_COORDS", "args": {"coords": [12, 13]}},
            {"name": "MOUSEDOWN_COORDS", "args": {"coords": [20, 20]}},
            {"name": "MOUSEUP_COORDS", "args": {"coords": [80, 90]}},
            {"name": "SCROLL_DOWN_COORDS", "args": {"coords": [150, 150]}},
            {"name": "DONE", "args": {"answer": "42"}},
        ],
    }
    text = "Sure! ```json\n" + json.dumps(answer) + "\n``` trailing words"
    p = parse_answer(text, screen=_screen())
    assert p.errors == []
    types = [a.type for a in p.actions]
    assert types == [
        ActionType.CLICK,
        ActionType.TYPE,
        ActionType.HOTKEY,
        ActionType.HOTKEY,
        ActionType.DOUBLE_CLICK,
        ActionType.HOVER,
        ActionType.DRAG,
        ActionType.SCROLL,
        ActionType.FINISHED,
    ]
    assert p.actions[0].point == Point(102, 135)  # the text field's centre
    assert p.actions[1].text == "it's \"quoted\"; __import__('os')"  # typed as text, never run
    assert p.actions[2].keys == ("enter",) and p.actions[3].keys == ("ctrl", "a")
    assert p.actions[6].point == Point(20, 20) and p.actions[6].end_point == Point(80, 90)
    assert p.actions[7].direction == "down" and p.actions[8].text == "42"
    assert p.commands[6] == "MOUSEDOWN_COORDS [20, 20], MOUSEUP_COORDS [80, 90]"
    assert p.commands[2] == "PRESS_KEY <Enter>"


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("I would click the OK button.", "no commands"),
        ('{"commands": [{"name": "CLICK_COORDS", "args": {"coords": [9000, 5]}}]}', "outside"),
        ('{"commands": [{"name": "CLICK_COORDS", "args": {"coords": ["a", 5]}}]}', "numbers"),
        ('{"commands": [{"name": "PRESS_KEY", "args": {"key": "F5"}}]}', "key must be one of"),
        ('{"commands": [{"name": "RUN_SHELL", "args": {"cmd": "rm -rf /"}}]}', "unknown command"),
        ('{"commands": [{"name": "CLICK_ELEMENT", "args": {"element": "Cancel"}}]}', "no element"),
        ('{"commands": [{"name": "MOUSEUP_COORDS", "args": {"coords": [5, 5]}}]}', "without a MOUSEDOWN"),
        ('{"commands": [{"name": "TYPE_TEXT", "args": {}}]}', "non-empty text"),
        ('{"commands": "CLICK"}', "must be a list"),
    ],
)
def test_bad_commands_are_reported_not_raised(answer, error):
    p = parse_answer(answer, screen=_screen())
    assert p.actions == []
    assert any(error in e for e in p.errors), p.errors


def test_good_commands_survive_a_bad_neighbour():
    answer = (
        '{"commands": [{"name": "NOPE", "args": {}}, {"name": "CLICK_COORDS", "args": {"coords": [36, 68]}}]}'
    )
    p = parse_answer(answer, screen=_screen())
    assert [a.point for a in p.actions] == [Point(36, 68)]
    assert len(p.errors) == 1


def test_format_command_round_trips_through_the_parser():
    for a in (
        Action(ActionType.CLICK, Point(3, 4)),
        Action(ActionType.TYPE, text='a "b"'),
        Action(ActionType.HOTKEY, keys=("ctrl", "v")),
    ):
        line = format_command(a)
        name, _, rest = line.partition(" ")
        if name == "PRESS_KEY":
            args = {"key": rest}
        else:
            args = {"coords" if name == "CLICK_COORDS" else "text": json.loads(rest)}
        p = parse_answer(json.dumps({"commands": [{"name": name, "args": args}]}))
        assert p.actions == [a]


def test_exemplars_ship_for_the_test_tasks_and_load():
    tasks = exemplar_tasks()
    for t in ("click-button", "click-link", "enter-text", "click-collapsible", "login-user"):
        assert t in tasks
    ex = load_exemplar("enter-text")
    assert ex.prompt.startswith("Task:\nEnter ") and "Observation 1:\nOCR:" in ex.prompt
    answer = json.loads(ex.answer)
    assert [c["name"] for c in answer["commands"]] == ["CLICK_COORDS", "TYPE_TEXT", "CLICK_COORDS"]
    assert load_exemplar("no-such-task") is None


# ---------------------------------------------------------------------------- over HTTP


def _last_user(body: dict) -> str:
    return body["messages"][-1]["content"]


def _boxes(text: str) -> dict[str, list[float]]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(.+): \[([-\d., ]+)\]$", line.strip())
        if m:
            out[m.group(1)] = [float(v) for v in m.group(2).split(",")]
    return out


def _page(size=(400, 300)) -> Image.Image:
    """A form drawn with PIL: an OK button and a small 'Save' label far from it."""
    im = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(im)
    font = ImageFont.truetype("DejaVuSans.ttf", 22)
    d.rounded_rectangle((40, 40, 160, 90), radius=6, fill=(239, 239, 239), outline=(118, 118, 118), width=2)
    d.text((78, 52), "OK", fill="black", font=font)
    d.text((260, 220), "Save", fill="black", font=ImageFont.truetype("DejaVuSans.ttf", 20))
    return im


async def test_step_over_http_with_exemplar_history_and_coat():
    seen: list[dict] = []

    def model(body: dict) -> str:
        seen.append(body)
        boxes = _boxes(_last_user(body))
        b = boxes.get("'OK' button")
        thoughts = {
            "text": "ok",
            "previous_action_result": "By doing so, nothing changed.",
            "action_think": "t",
        }
        cmds = (
            [{"name": "CLICK_COORDS", "args": {"coords": [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2]}}]
            if b
            else []
        )
        return json.dumps({"thoughts": thoughts, "commands": cmds})

    with ChatServer(responder=model) as srv:
        backend = OpenAIBackend([srv.base_url], model="m", max_retries=0)
        agent = ReactAgent(backend, task="click-button", coat=CoatConfig.parse("par,at,ad"))
        history = CoatHistory()
        step = await agent.next_actions(_page(), 'Click on the "OK" button.', history)
        assert step.errors == [] and len(step.actions) == 1
        p = step.actions[0].point
        assert 40 <= p.x <= 160 and 40 <= p.y <= 90
        history.append(agent.history_step(step, step.commands[0], "no visible effect"))
        step2 = await agent.next_actions(_page(), 'Click on the "OK" button.', history)
        assert history.steps[0].action_result == "By doing so, nothing changed."
        body = seen[-1]
        msgs = body["messages"]
        # system, exemplar (user, assistant), then the real request, all plain text
        assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
        assert all(isinstance(m["content"], str) for m in msgs)
        assert '"action_think"' in msgs[0]["content"]
        last = msgs[-1]["content"]
        assert last.startswith('Task:\nClick on the "OK" button.')
        assert "Step 1:" in last and "(no visible effect)" in last and "Observation 2:" in last
        assert step2.coat is not None and step2.coat.action_think == "t"
        await backend.aclose()


async def test_failed_call_and_garbage_are_empty_steps_not_exceptions():
    with ChatServer(responder="no json here") as srv:
        backend = OpenAIBackend([srv.base_url], model="m", max_retries=0)
        agent = ReactAgent(backend)
        step = await agent.next_actions(_page(), "Click OK", None)
        assert step.actions == [] and step.errors
        await backend.aclose()
    backend = OpenAIBackend(["http://127.0.0.1:9/v1"], model="m", max_retries=0, timeout=5)
    step = await ReactAgent(backend).next_actions(_page(), "Click OK", None)
    assert step.actions == [] and step.usage.error and "failed" in step.errors[0]
    await backend.aclose()


# ---------------------------------------------------------------------------- text RegionFocus


async def test_regionfocus_round_in_text_maps_view_answers_back_and_keeps_history_in_text():
    """A model that clicks the "Save" label when the observation names it. The first (full)
    click missed; in the core's round (ReactModel, aggregation and history in text) each zoomed
    view is described anew, the model answers in view pixels, the candidates come back as a
    numbered text list, and the chosen point lands on the label in screenshot pixels."""
    requests: list[str] = []

    def model(body: dict) -> str:
        text = _last_user(body)
        requests.append(text)
        if "Candidates:" in text:
            options = re.findall(r"^(\d+)\. CLICK_COORDS \[(\d+), (\d+)\] on '([^']+)'", text, re.M)
            pick = next((n for n, _, _, label in options if label.lower() == "save"), "1")
            return json.dumps({"choice": int(pick)})
        obs = text.rsplit("Observation ", 1)[1]
        boxes = _boxes(obs)
        b = boxes.get("'Save'")
        if b is None:
            return json.dumps({"thoughts": {"text": "not here"}, "commands": []})
        c = [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2]
        return json.dumps(
            {"thoughts": {"text": "save"}, "commands": [{"name": "CLICK_COORDS", "args": {"coords": c}}]}
        )

    image = _page()
    failed = [Point(200, 200)]
    turns = (Turn(image, image.size, Action(ActionType.CLICK, failed[0]), "", "no visible effect"),)
    query = Query('Click "Save"', "agent", turns=turns)
    cfg = RegionFocusConfig(history="text", aggregation="text")
    with ChatServer(responder=model) as srv:
        backend = OpenAIBackend([srv.base_url], model="m", max_retries=0)
        rf = RegionFocus(ReactModel(backend, exemplars="none"), cfg)
        res = await rf.refine(image, query, history=failed, views=StaticViews(image), trigger="no-effect")
        await backend.aclose()
    assert res.action is not None and res.action.type == ActionType.CLICK
    p = res.action.point
    assert 255 <= p.x <= 315 and 215 <= p.y <= 250, p  # on the label, in screenshot pixels
    views = res.views
    assert len(views) == 4 and all(v["scale_x"] >= 1.0 for v in views)
    # Every view request states the failed point in that view's own pixels (or outside it).
    view_reqs = [r for r in requests if "magnified part" in r]
    assert len(view_reqs) == 4
    assert all("Points already tried without effect" in r for r in view_reqs)
    assert any(re.search(r"1\. \[\d+, \d+\]", r) for r in view_reqs)
    assert res.choice_method in ("model", "single")


def test_click_element_on_a_phrase_inside_a_longer_line_clicks_the_phrase():
    # "See the urldefrag() function." read as one OCR line, with its word boxes.
    words = (Box(10, 50, 40, 66), Box(46, 50, 76, 66), Box(82, 50, 182, 66), Box(188, 50, 400, 66))
    line = ScreenElement("text", "See the urldefrag() function.", Box(8, 48, 402, 68), words=words)
    screen = ScreenText((500, 300), [line])
    p = parse_answer(
        json.dumps({"commands": [{"name": "CLICK_ELEMENT", "args": {"element": "'urldefrag()'"}}]}),
        screen=screen,
    )
    assert p.errors == []
    [action] = p.actions
    assert words[2].contains(action.point) and not words[2].contains(line.center)
