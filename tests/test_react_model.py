"""The screen-to-text agent behind the GroundingModel protocol and the CoAT wrapper: the command
queue (continued only while each command takes effect), the text-only RegionFocus requests (one
full round through the core's orchestrator on a drawn page, real OCR), CoAT parts carried
through the turns' text, and the CLI wiring. The scripted backend reads only the messages it is
sent (``ChatBackend`` shape)."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import replace

import pytest
from PIL import Image, ImageDraw, ImageFont

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.agents.react_model import ReactModel
from regionfocus.adapters.backends.base import ChatResponse
from regionfocus.adapters.cli_args import build_model, coat_from_args, text_only_config
from regionfocus.adapters.families.qwen import Qwen25Adapter
from regionfocus.adapters.reasoning.coat import CoatConfig
from regionfocus.adapters.reasoning.coat_model import CoatModel
from regionfocus.config import RegionFocusConfig
from regionfocus.geometry import Box, Point, ViewTransform
from regionfocus.loop import NO_MODEL
from regionfocus.model import Option, Query, Turn
from regionfocus.orchestrator import RegionFocus
from regionfocus.webvoyager.cli import build_parser


class Scripted:
    """A ChatBackend answering each request with ``answer(messages)``; keeps every request."""

    def __init__(self, answer):
        self.answer = answer
        self.requests: list[list[dict]] = []

    async def complete(self, messages, **options):
        self.requests.append(messages)
        return ChatResponse(self.answer(messages))

    async def aclose(self) -> None:
        pass


def _last(messages) -> str:
    m = messages[-1]["content"]
    return m if isinstance(m, str) else " ".join(p.get("text", "") for p in m if p.get("type") == "text")


def _boxes(text: str) -> dict[str, list[float]]:
    out = {}
    for line in text.rsplit("Observation ", 1)[-1].splitlines():
        m = re.match(r"^(.+): \[([-\d., ]+)\]$", line.strip())
        if m:
            out[m.group(1)] = [float(v) for v in m.group(2).split(",")]
    return out


def _centre(b):
    return [round((b[0] + b[2]) / 2), round((b[1] + b[3]) / 2)]


def _answer(cmds, **thoughts) -> str:
    return json.dumps({"thoughts": {"text": "t", **thoughts}, "commands": cmds})


def _page(size=(400, 300)) -> Image.Image:
    """An OK button and a small 'Save' label far from it."""
    im = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(im)
    d.rounded_rectangle((40, 40, 160, 90), radius=6, fill=(239, 239, 239), outline=(118, 118, 118), width=2)
    d.text((78, 52), "OK", fill="black", font=ImageFont.truetype("DejaVuSans.ttf", 22))
    d.text((260, 220), "Save", fill="black", font=ImageFont.truetype("DejaVuSans.ttf", 20))
    return im


THREE = [
    {"name": "CLICK_COORDS", "args": {"coords": [100, 65]}},
    {"name": "TYPE_TEXT", "args": {"text": "hello"}},
    {"name": "CLICK_COORDS", "args": {"coords": [280, 230]}},
]


def _turn(image, reply, outcome) -> Turn:
    return Turn(image, image.size, reply.action, reply.text, outcome)


async def test_queue_continues_only_while_each_command_takes_effect():
    backend = Scripted(lambda m: _answer(THREE))
    model = ReactModel(backend)
    shot = _page()
    q = Query("Type hello, then save", "agent", url="file:///x/miniwob/enter-text.html")
    r1 = await model.act(shot, q)
    assert len(backend.requests) == 1 and r1.action == Action(ActionType.CLICK, Point(100, 65))
    # The exemplar of the page the URL names is shown one-shot (system, user, assistant, user).
    assert [m["role"] for m in backend.requests[0]] == ["system", "user", "assistant", "user"]
    t1 = _turn(shot, r1, "changed the page")
    r2 = await model.act(shot, replace(q, turns=(t1,)))
    assert len(backend.requests) == 1, "a queued command needs no model call"
    assert r2.action.type == ActionType.TYPE and r2.action.text == "hello"
    assert r2.text.startswith("(queued")
    # The typed text had no visible effect: the rest of the answer is dropped and the LLM asked.
    t2 = _turn(shot, r2, "no visible effect")
    r3 = await model.act(shot, replace(q, turns=(t1, t2)))
    assert len(backend.requests) == 2 and r3.action.point == Point(100, 65)
    hist = _last(backend.requests[1])
    assert "1. CLICK_COORDS [100, 65] (changed the page)" in hist
    assert '2. TYPE_TEXT "hello" (no visible effect)' in hist and "Observation 3:" in hist
    # An action RegionFocus chose (equal by value, another object) ends the queue too.
    t3 = Turn(shot, shot.size, replace(r3.action), "", "changed the page")
    await model.act(shot, replace(q, turns=(t1, t2, t3)))
    assert len(backend.requests) == 3
    # Followed to its end, an answer's queue runs out and the model is asked again.
    turns = (t1,)
    r = r2
    turns += (_turn(shot, r, "changed the page"),)
    r = await model.act(shot, replace(q, turns=turns))
    assert r.action.point == Point(280, 230) and len(backend.requests) == 3
    turns += (_turn(shot, r, "changed the page"),)
    await model.act(shot, replace(q, turns=turns))
    assert len(backend.requests) == 4


async def test_queued_commands_ask_no_model_and_whole_answers_run_whatever_each_did():
    backend = Scripted(lambda m: _answer(THREE))
    model = ReactModel(backend, whole_answers=True)
    shot = _page()
    q = Query("Type hello, then save", "agent")
    r1 = await model.act(shot, q)
    assert r1.usage.endpoint != NO_MODEL
    t1 = _turn(shot, r1, "no visible effect")
    r2 = await model.act(shot, replace(q, turns=(t1,)))
    assert r2.action.type == ActionType.TYPE and r2.usage.endpoint == NO_MODEL  # no model step
    t2 = _turn(shot, r2, "error: typing failed")
    r3 = await model.act(shot, replace(q, turns=(t1, t2)))
    assert r3.action.point == Point(280, 230) and len(backend.requests) == 1


async def test_two_tasks_share_one_model_without_sharing_queues():
    backend = Scripted(lambda m: _answer(THREE))
    model = ReactModel(backend, exemplars="none")
    a, b = _page(), _page()
    qa, qb = Query("task A", "agent"), Query("task B", "agent")
    ra = await model.act(a, qa)
    rb = await model.act(b, qb)
    assert len(backend.requests) == 2 and len(backend.requests[0]) == 2  # zero-shot: system, user
    nb = await model.act(b, replace(qb, turns=(_turn(b, rb, "changed the page"),)))
    na = await model.act(a, replace(qa, turns=(_turn(a, ra, "changed the page"),)))
    assert len(backend.requests) == 2
    assert nb.action is not na.action and nb.action == na.action  # each its own answer's second


async def test_no_command_and_failed_call_are_replies_without_action():
    model = ReactModel(Scripted(lambda m: "I would click OK"))
    r = await model.act(_page(), Query("Click OK", "agent"))
    assert r.action is None and r.text == "I would click OK"

    class Down(Scripted):
        async def complete(self, messages, **options):
            raise ConnectionError("refused")

    r = await ReactModel(Down(None)).act(_page(), Query("Click OK", "agent"))
    assert r.action is None and "refused" in (r.usage.error or "")


async def test_coat_parts_travel_with_the_issued_commands():
    def answer(m):
        n = len(backend.requests)
        return _answer(
            THREE[:2],
            previous_action_result=f"By doing so, result {n}.",
            screen_description=f"screen {n}",
            action_think=f"think {n}",
            next_action_description=f"click the field {n}",
        )

    backend = Scripted(answer)
    model = ReactModel(backend, coat=CoatConfig(), exemplars="none")
    shot = _page()
    q = Query("Type hello", "agent")
    r1 = await model.act(shot, q)
    t1 = _turn(shot, r1, "changed the page")
    r2 = await model.act(shot, replace(q, turns=(t1,)))
    t2 = _turn(shot, r2, "no visible effect")
    await model.act(shot, replace(q, turns=(t1, t2)))
    system, last = backend.requests[1][0]["content"], _last(backend.requests[1])
    assert '"screen_description"' in system and '"next_action_description"' in system
    assert "Step 1: click the field 1 [CLICK_COORDS [100, 65]] (changed the page)" in last
    assert 'Step 2: click the field 1 [TYPE_TEXT "hello"] (no visible effect)' in last
    # The second answer's result part is the chain's result of the step before it.
    h = model.history((t1, t2, _turn(shot, await model.act(shot, replace(q, turns=(t1, t2))), "")))
    assert h.steps[1].action_result == "By doing so, result 3."


# ---------------------------------------------------------------------------- RegionFocus, in text


def _save_clicker(messages) -> str:
    """Clicks the 'Save' label wherever the observation names it; names it as the focal point;
    picks the candidate on 'Save' from a numbered list."""
    text = _last(messages)
    if "Candidates:" in text:
        options = re.findall(r"^(\d+)\. \S+ \[\d+, \d+\] on '([^']+)'", text, re.M)
        return json.dumps({"choice": int(next((n for n, lab in options if lab.lower() == "save"), "1"))})
    b = _boxes(text).get("'Save'")
    if '"point"' in text:
        return json.dumps({"point": _centre(b) if b else [200, 150]})
    if b is None:
        return _answer([])
    return _answer([{"name": "CLICK_COORDS", "args": {"coords": _centre(b)}}])


async def test_a_regionfocus_round_in_text_through_the_core():
    backend = Scripted(_save_clicker)
    model = ReactModel(backend, exemplars="none")
    shot = _page()
    failed = Point(100, 65)
    turns = (Turn(shot, shot.size, Action(ActionType.CLICK, failed), "", "no visible effect"),)
    cfg = text_only_config("screen-text", RegionFocusConfig())
    assert (cfg.history, cfg.aggregation) == ("text", "text")
    rnd = await RegionFocus(model, cfg).refine(
        shot, Query('Click "Save"', "agent", turns=turns), history=[failed], trigger="no-effect"
    )
    assert rnd.action is not None and rnd.focal_source == "model"
    p = rnd.action.point
    assert 255 <= p.x <= 315 and 215 <= p.y <= 250, p  # on the label, screenshot pixels
    texts = [_last(r) for r in backend.requests]
    focal = next(t for t in texts if '"point"' in t)
    assert "1. [100, 65] on 'OK' button" in focal  # the avoided point, with what it landed on
    views = [t for t in texts if "magnified part" in t]
    assert len(views) == 4 and all("Points already tried without effect" in t for t in views)
    assert all(isinstance(m["content"], str) for r in backend.requests for m in r)  # text only


async def test_choose_lists_options_in_text_and_retries_firmer():
    answers = iter(["hmm", json.dumps({"choice": 2}), "no idea at all"])
    backend = Scripted(lambda m: next(answers))
    model = ReactModel(backend, exemplars="none")
    shot = _page()
    q = Query('Click "Save"', "agent")
    opts = [
        Option(1, Action(ActionType.CLICK, Point(100, 65)), False),
        Option(2, Action(ActionType.CLICK, Point(282, 232)), True),  # starred, still listed in text
        Option(3, Action(ActionType.TYPE, text="x"), False),
    ]
    assert (await model.choose(shot, q, opts)).choice is None
    r = await model.choose(shot, q, opts, retry=1)
    assert r.choice == 2
    first, retry = _last(backend.requests[0]), _last(backend.requests[1])
    assert "1. CLICK_COORDS [100, 65] on 'OK' button" in first and "2. CLICK_COORDS [282, 232]" in first
    assert '3. TYPE_TEXT "x"' in first and "from 1\nto 3" not in first
    assert "named no candidate" in retry and "named no candidate" not in first


async def test_view_request_lists_failed_points_in_view_pixels_and_answers_in_them():
    backend = Scripted(lambda m: _answer([{"name": "CLICK_COORDS", "args": {"coords": [30, 40]}}]))
    model = ReactModel(backend, exemplars="none")
    shot = _page()
    view = ViewTransform(Box(50, 50, 250, 150), 2.0, 2.0)
    crop = shot.crop((50, 50, 250, 150)).resize((400, 200))
    turns = (
        Turn(shot, shot.size, Action(ActionType.CLICK, Point(100, 60)), "", "no visible effect"),
        Turn(shot, shot.size, Action(ActionType.CLICK, Point(300, 250)), "", "no visible effect"),
    )
    r = await model.act(crop, Query("Click OK", "agent", turns=turns, view=view), zoomed=True)
    assert r.action.point == Point(30, 40)  # view pixels: the core maps them back
    text = _last(backend.requests[0])
    assert "1. [100, 20]" in text and "2. outside this view" in text and "400x200 pixels" in text


# ---------------------------------------------------------------------------- CoAT around a VLM


async def test_coat_wrapper_adds_the_chain_and_parses_the_action_from_the_rest():
    calls = []

    def vlm(messages):
        calls.append(_last(messages))
        n = len(calls)
        return (
            f"Previous action result: By doing so, the page {n} changed.\n"
            f"Screen description: a form {n}.\n"
            f"Action think: progress {n}. Possible actions are click(...) anywhere.\n"
            f"Next action description: click on the OK button {n}\n\n"
            '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
            '"coordinate": [100, 60]}}\n</tool_call>'
        )

    inner = Qwen25Adapter(Scripted(vlm))
    model = CoatModel(inner, CoatConfig())
    shot = _page()
    q = Query("Click OK", "agent")
    r1 = await model.act(shot, q)
    assert r1.action is not None and r1.action.type == ActionType.CLICK
    assert "Next action description: click on the OK button 1" in r1.text  # kept whole for the turn
    t1 = Turn(shot, shot.size, r1.action, r1.text, "no visible effect")
    r2 = await model.act(shot, replace(q, turns=(t1,)))
    t2 = Turn(shot, shot.size, r2.action, r2.text, "changed the page")
    await model.act(shot, replace(q, turns=(t1, t2)))
    first, second, third = calls
    assert "Before your action, write these parts" in first and "Previous actions: none" in first
    assert "Step 1: click on the OK button 1" in second and "(no visible effect)" in second
    assert "Screen description: a form 1." in second and "Action think: progress 1." in second
    assert "Result: By doing so, the page 2 changed." in third  # answer 2 reported on step 1
    assert "Screen description: a form 2." in third and "a form 1." not in third  # last step in full
    # Parts switched off are neither asked for nor carried.
    calls.clear()
    model = CoatModel(inner, CoatConfig.parse("par,ad"))
    await model.act(shot, replace(q, turns=(t1, t2)))
    assert "Screen description" not in calls[0] and "Action think" not in calls[0]
    assert "Result: By doing so, the page 2 changed." in calls[0]
    # A RegionFocus view request goes to the family as it is.
    calls.clear()
    await model.act(shot, replace(q, turns=(t1,)), zoomed=True)
    assert "Before your action" not in calls[0]
    assert model.input_size((1000, 800)) == inner.input_size((1000, 800))
    assert model.image_tokens((1000, 800)) == inner.image_tokens((1000, 800))  # passed through


# ---------------------------------------------------------------------------- CLI


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["--tasks", "miniwob", "--out", "x", *argv])


def test_cli_builds_screen_text_and_coat_wrappers():
    args = _args("--agent", "screen-text", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert isinstance(build_model(args), ReactModel)
    args = _args(
        "--agent", "screen-text", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
        "--reasoning", "coat", "--coat-parts", "sd,ad",
    )  # fmt: skip
    coat = coat_from_args(args)
    assert coat.spec() == "sd,ad"
    assert build_model(args, coat=coat).coat == coat
    args = _args("--agent", "qwen2.5-vl", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert isinstance(build_model(args, coat=CoatConfig()), CoatModel)
    with pytest.raises(ValueError, match="--coat-parts needs --reasoning coat"):
        coat_from_args(_args("--coat-parts", "sd"))
    with pytest.raises(ValueError, match="unknown CoAT part"):
        coat_from_args(_args("--reasoning", "coat", "--coat-parts", "sd,xx"))
    with pytest.raises(ValueError, match="needs an LLM or VLM"):
        build_model(_args("--agent", "ocr"), coat=CoatConfig())
    with pytest.raises(ValueError, match="--base-url"):
        build_model(_args("--agent", "screen-text"))
    assert text_only_config("qwen2.5-vl", RegionFocusConfig()).history == "image"
    assert "forces --history text and --aggregation text" in " ".join(build_parser().format_help().split())
