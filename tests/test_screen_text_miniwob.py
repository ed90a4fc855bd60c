"""The screen-to-text agent end to end: real Chromium, real MiniWoB++ pages and rewards, real OCR,
a real HTTP chat server. The scripted model reads only the text it is sent (the last user
message: the task and the observation) and answers in the ReAct JSON format; it knows no task
names, no DOM and no screenshot. One browser and one server for the module."""

from __future__ import annotations

import json
import re

import pytest
import pytest_asyncio

from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.webvoyager.browser import Browser
from regionfocus.webvoyager.screen_text_eval import (
    EvalConfig,
    measure_recall,
    recall_table,
    run_episode,
    success_table,
)
from tests.chat_server import ChatServer

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

_ENTRY = re.compile(r"^(?P<label>.+): \[(?P<b>[-\d., ]+)\]$")


def _observation(body: dict) -> tuple[str, list[tuple[str, list[float]]], str]:
    """(instruction, [(label, box)], history text) from the last user message only."""
    text = body["messages"][-1]["content"]
    task = text.split("Task:\n", 1)[1].split("\n", 1)[0]
    obs = text.rsplit("\nObservation ", 1)[1]
    entries = []
    for line in obs.splitlines():
        m = _ENTRY.match(line.strip())
        if m:
            entries.append((m.group("label"), [float(v) for v in m.group("b").split(",")]))
    history = text.split("Observation ", 1)[0]
    return task, entries, history


def _centre(b: list[float]) -> list[int]:
    return [round((b[0] + b[2]) / 2), round((b[1] + b[3]) / 2)]


def _find(entries, pred):
    return next((b for label, b in entries if pred(label.lower())), None)


def _answer(commands: list[dict], why: str) -> str:
    thoughts = {"text": why, "reasoning": why, "plan": "-", "criticism": "-", "speak": why}
    return json.dumps({"thoughts": thoughts, "commands": commands})


def _click(b) -> dict:
    return {"name": "CLICK_COORDS", "args": {"coords": _centre(b)}}


def reader_model(body: dict) -> str:
    """A model that solves click, type and expand-then-click tasks by reading the observation."""
    task, entries, history = _observation(body)
    quoted = re.findall(r'"([^"]+)"', task)
    low = task.lower()
    if low.startswith("click on the") and "button" in low:
        b = _find(entries, lambda s: s == f"'{quoted[0].lower()}' button")
        return _answer([_click(b)] if b else [], f"the {quoted[0]} button")
    if low.startswith("click on the link"):
        word = quoted[0].strip(".,").lower()
        b = _find(entries, lambda s: s == f"'{word}' link")
        return _answer([_click(b)] if b else [], f"the link {word}")
    if low.startswith("enter") and "text field" in low and "username" not in low:
        field = _find(entries, lambda s: s.startswith("text field"))
        submit = _find(entries, lambda s: s == "'submit' button")
        cmds = [_click(field), {"name": "TYPE_TEXT", "args": {"text": quoted[0]}}, _click(submit)]
        return _answer(cmds, "fill the field, then submit")
    if low.startswith("expand the section"):
        if "Executed actions" not in history:  # first look: open the section, then look again
            header = _find(entries, lambda s: s.endswith("button") and "submit" not in s)
            return _answer([_click(header)], "open the section first")
        submit = _find(entries, lambda s: s == "'submit' button")
        return _answer([_click(submit)], "now submit")
    return _answer([], "no idea")


def prose_model(body: dict) -> str:
    return "I think I should click something, maybe the button?"


def blank_clicker(body: dict) -> str:
    """Clicks empty space below the task, every time (view requests included)."""
    return json.dumps(
        {"thoughts": {"text": "x"}, "commands": [{"name": "CLICK_COORDS", "args": {"coords": [400, 520]}}]}
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser():
    async with Browser() as b:
        yield b


@pytest.fixture(scope="module")
def server():
    with ChatServer(responder=reader_model) as srv:
        yield srv


async def test_reader_model_solves_click_type_and_multistep_tasks(browser, server):
    server.set_responder(reader_model)
    backend = OpenAIBackend([server.base_url], model="reader", max_retries=0)
    cfg = EvalConfig(max_steps=4)
    records = []
    for task in ("click-button", "click-link", "enter-text", "click-collapsible"):
        rec = await run_episode(browser, backend, task, 3, cfg)
        records.append(rec)
        assert rec.success, (task, rec.error, rec.steps)
        assert rec.raw_reward == 1.0
    # The multi-step task needed two looks: the second observation is what located Submit.
    multi = records[-1]
    assert multi.llm_steps == 2
    assert "Executed actions" not in multi.steps[0]["observation"]
    assert multi.steps[0]["executed"][0]["outcome"] == "changed the screen"
    # The server saw text only: no image part in any request.
    for body in server.stats.bodies:
        for m in body["messages"]:
            assert isinstance(m["content"], str)
    table = success_table(records, label="reader", n_step=frozenset({"click-collapsible"}))
    assert "1.000" in table and "tasks" in table
    await backend.aclose()


async def test_bad_models_end_in_recorded_failures(browser, server):
    backend = OpenAIBackend([server.base_url], model="bad", max_retries=0)
    server.set_responder(prose_model)
    rec = await run_episode(browser, backend, "click-button", 5, EvalConfig(max_steps=3))
    assert not rec.success and rec.llm_steps == 1
    assert rec.error.startswith("no next action"), rec.error
    # Clicks that change nothing, with the text RegionFocus round after each: still a failure,
    # recorded with every executed command and its outcome.
    server.set_responder(blank_clicker)
    rec2 = await run_episode(browser, backend, "enter-text", 5, EvalConfig(max_steps=2, regionfocus=True))
    assert not rec2.success and rec2.error == "no reward within 2 model steps"
    executed = [e for s in rec2.steps for e in s["executed"]]
    assert executed[0] == {"command": "CLICK_COORDS [400, 520]", "outcome": "no visible effect"}
    assert any(e["command"].startswith("RegionFocus: CLICK_COORDS") for e in executed)
    trace = rec2.steps[0]["regionfocus"][0]
    assert len(trace["views"]) == 4 and trace["failed"] == [[400.0, 520.0]]
    # An empty answer ends the episode too.
    server.set_responder(lambda body: "")
    rec3 = await run_episode(browser, backend, "click-link", 5, EvalConfig(max_steps=2))
    assert not rec3.success and rec3.error.startswith("no next action")
    table = success_table([rec, rec2, rec3], label="bad", n_step=frozenset())
    assert "0.000" in table and "  3  " in table
    await backend.aclose()


async def test_element_recall_against_the_dom(browser):
    rows = await measure_recall(["click-button", "enter-text", "click-checkboxes"], [7], browser=browser)
    assert all(r.total > 0 for r in rows)
    recall = sum(r.named for r in rows) / sum(r.total for r in rows)
    assert recall >= 0.8, rows
    assert "ALL" in recall_table(rows)


async def test_the_eval_command_keeps_a_resumable_run_folder(server, tmp_path, capsys):
    """`regionfocus screen-text-eval` writes the shared run log: a rerun of the same command
    runs nothing again and prints the same table; another setting stops with the diff."""
    import asyncio
    import json

    from regionfocus.webvoyager.screen_text_eval import main

    server.set_responder(reader_model)
    out = tmp_path / "run"
    argv = ["--tasks", "click-button,click-link", "--seeds", "3", "--base-url", server.base_url, "--model", "reader",
            "--max-steps", "3", "--out", str(out)]  # fmt: skip
    assert await asyncio.to_thread(main, argv) == 0
    first = capsys.readouterr().out
    recs = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in recs) == ["click-button--3", "click-link--3"]
    assert all(r["success"] and r["status"] == "ok" for r in recs)
    asked = server.stats.chat_requests
    assert await asyncio.to_thread(main, argv) == 0
    assert server.stats.chat_requests == asked and capsys.readouterr().out == first
    with pytest.raises(SystemExit):
        await asyncio.to_thread(main, [*argv[:-2], "--max-steps", "5", "--out", str(out)])
    assert "max_steps: 3 in the folder, 5 now" in capsys.readouterr().err
