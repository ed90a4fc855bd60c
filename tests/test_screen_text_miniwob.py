"""The screen-to-text suite end to end through the one runner (`regionfocus webvoyager --tasks
screen-to-text`, and its `screen-text-eval` preset): real Chromium, real MiniWoB++ pages and
rewards, real OCR, a real HTTP chat server. The scripted model reads only the text it is sent
(the last user message: the task and the observation) and answers in the ReAct JSON format; it
knows no task names, no DOM and no screenshot. One server for the module."""

from __future__ import annotations

import json
import re

import pytest
import pytest_asyncio

from benchmarks.screen_text_recall import measure_recall, recall_table
from regionfocus.webvoyager.browser import Browser
from regionfocus.webvoyager.cli import main as webvoyager_main
from regionfocus.webvoyager.rundir import read_results
from regionfocus.webvoyager.screen_text_eval import main as eval_main
from regionfocus.webvoyager.screen_text_suite import success_table
from tests.chat_server import ChatServer

pytestmark = pytest.mark.slow

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


@pytest.fixture(scope="module")
def server():
    with ChatServer(responder=reader_model) as srv:
        yield srv


def _suite_run(server, out, tasks: str, seed: int, *flags: str) -> list[dict]:
    """One `regionfocus webvoyager --tasks screen-to-text:...` run; its records by task order."""
    argv = ["--tasks", f"screen-to-text:{tasks}", "--agent", "screen-text", "--seed", str(seed),
            "--base-url", server.base_url, "--model", "scripted", "--no-progress", "--out", str(out),
            "--no-preflight", *flags]  # fmt: skip  # the scripted server answers any model name
    assert webvoyager_main(argv) == 0
    return read_results(out)


def _last_user(body: dict) -> str:
    return body["messages"][-1]["content"]


def test_reader_model_solves_click_type_and_multistep_tasks(server, tmp_path):
    server.set_responder(reader_model)
    start = len(server.stats.bodies)
    tasks = ("click-button", "click-link", "enter-text", "click-collapsible")
    out = tmp_path / "reader"
    records = _suite_run(server, out, ",".join(tasks), 3, "--max-model-steps", "4", "--no-regionfocus")
    by_task = {r["web_name"]: r for r in records}
    for task in tasks:
        rec = by_task[task]
        assert rec["success"], (task, rec["error"], rec["ended"])
        assert rec["raw_reward"] == 1.0
    # The multi-step task needed two looks: the second observation is what located Submit.
    multi = by_task["click-collapsible"]
    assert multi["model_steps"] == 2
    asked = [_last_user(b) for b in server.stats.bodies[start:] if "Expand the section" in _last_user(b)]
    assert len(asked) == 2 and "Executed actions" not in asked[0] and "Executed actions" in asked[1]
    traj = json.loads((out / multi["folder"] / "trajectory.json").read_text())
    assert traj["steps"][0]["effect"]["changed"]
    # The server saw text only: no image part in any request.
    for body in server.stats.bodies[start:]:
        for m in body["messages"]:
            assert isinstance(m["content"], str)
    # The suite's tables come from the run folder, the paper's reported numbers beside ours.
    table = (out / "screen_to_text.md").read_text()
    assert "1.000" in table and "tasks" in table and "gpt-4 (paper)" in table
    assert table.strip() == success_table(records, label="scripted")


def test_bad_models_end_in_recorded_failures(server, tmp_path):
    server.set_responder(prose_model)
    (rec,) = _suite_run(
        server, tmp_path / "prose", "click-button", 5, "--max-model-steps", "3", "--no-regionfocus"
    )
    assert not rec["success"] and rec["model_steps"] == 1
    assert rec["ended"] == "no-action" and rec["status"] == "ok", rec  # a result, not an error
    # Clicks that change nothing, with RegionFocus (in text) after each: still a failure,
    # recorded with every executed command and its outcome.
    server.set_responder(blank_clicker)
    start = len(server.stats.bodies)
    (rec2,) = _suite_run(server, tmp_path / "blank", "enter-text", 5, "--max-model-steps", "2")
    assert not rec2["success"] and rec2["ended"] == "max-model-steps"
    steps = json.loads((tmp_path / "blank" / rec2["folder"] / "trajectory.json").read_text())["steps"]
    assert steps[0]["action"]["point"] == [400, 520] and steps[0]["effect"]["changed"] is False
    chosen = [s for s in steps if s["source"] == "regionfocus" and s.get("effect")]
    assert chosen and chosen[0]["action"]["type"] == "click"
    trace = steps[1]["decision"]["round"]
    assert len(trace["views"]) == 4 and trace["focal"] == [400, 520]
    views = [_last_user(b) for b in server.stats.bodies[start:] if "magnified part" in _last_user(b)]
    assert views and all("Points already tried without effect" in v for v in views)
    # An empty answer ends the episode too.
    server.set_responder(lambda body: "")
    (rec3,) = _suite_run(
        server, tmp_path / "empty", "click-link", 5, "--max-model-steps", "2", "--no-regionfocus"
    )
    assert not rec3["success"] and rec3["ended"] == "no-action"
    table = success_table([rec, rec2, rec3], label="bad", n_step=frozenset())
    assert "0.000" in table and "  3  " in table


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser():
    async with Browser() as b:
        yield b


@pytest.mark.asyncio(loop_scope="module")
async def test_element_recall_against_the_dom(browser):
    rows = await measure_recall(["click-button", "enter-text", "click-checkboxes"], [7], browser=browser)
    assert all(r.total > 0 for r in rows)
    recall = sum(r.named for r in rows) / sum(r.total for r in rows)
    assert recall >= 0.8, rows
    assert "ALL" in recall_table(rows)


def test_the_eval_command_keeps_a_resumable_run_folder(server, tmp_path, capsys):
    """`regionfocus screen-text-eval` is `regionfocus webvoyager` on the suite: the shared run
    folder, so a rerun of the same command runs nothing again and prints the same table (its
    deprecated --regionfocus changes nothing); another setting stops with the diff; `webvoyager
    report` rebuilds the tables from the folder."""
    server.set_responder(reader_model)
    out = tmp_path / "run"
    argv = ["--tasks", "click-button,click-link", "--seeds", "3", "--base-url", server.base_url, "--model", "reader",
            "--max-steps", "3", "--no-progress", "--no-preflight", "--out", str(out)]  # fmt: skip
    assert eval_main(argv) == 0
    first = capsys.readouterr().out
    recs = read_results(out)
    assert sorted((r["id"], r["seed"]) for r in recs) == [("click-button--0", 3), ("click-link--0", 3)]
    assert all(r["success"] and r["status"] == "ok" for r in recs)
    asked = server.stats.chat_requests
    assert eval_main([*argv, "--regionfocus"]) == 0
    assert server.stats.chat_requests == asked and capsys.readouterr().out == first
    assert eval_main([*argv[:-2], "--max-steps", "5", "--out", str(out)]) == 2
    assert "max_model_steps: 3 in the folder, 5 now" in capsys.readouterr().err
    assert webvoyager_main(["report", str(out)]) == 0
    assert "Table 3 layout" in capsys.readouterr().out
