"""The screen-to-text agent and CoAT in the browsing harness: real Chromium, MiniWoB++ pages and
their own rewards, real OCR, a real HTTP chat server. The scripted models read only what they
are sent: the ReAct reader the observation text of the last user message, the VLM responder the
text parts of its request."""

from __future__ import annotations

import json
import re

import pytest
import pytest_asyncio

from regionfocus import RegionFocusAgent
from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.config import RegionFocusConfig
from regionfocus.webvoyager import miniwob
from regionfocus.webvoyager.browser import Browser
from regionfocus.webvoyager.cli import main as webvoyager_main
from regionfocus.webvoyager.rundir import RunDir, run_config
from regionfocus.webvoyager.runner import RunSettings, run_tasks
from tests.chat_server import ChatServer

pytestmark = pytest.mark.slow
_ENTRY = re.compile(r"^(?P<label>.+): \[(?P<b>[-\d., ]+)\]$")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser():
    async with Browser() as b:
        yield b


def _entries(text: str) -> list[tuple[str, list[float]]]:
    out = []
    for line in text.rsplit("\nObservation ", 1)[1].splitlines():
        m = _ENTRY.match(line.strip())
        if m:
            out.append((m.group("label").lower(), [float(v) for v in m.group("b").split(",")]))
    return out


def _click(b) -> dict:
    return {"name": "CLICK_COORDS", "args": {"coords": [round((b[0] + b[2]) / 2), round((b[1] + b[3]) / 2)]}}


def form_filler(body: dict) -> str:
    """Fills the text field the task names and submits, all in one answer, from the observation."""
    text = body["messages"][-1]["content"]
    task = text.split("Task:\n", 1)[1].split("\n", 1)[0]
    entries = _entries(text)
    field = next((b for label, b in entries if label.startswith("text field")), None)
    submit = next((b for label, b in entries if label == "'submit' button"), None)
    words = re.findall(r'"([^"]+)"', task)
    if field is None or submit is None or not words:
        return json.dumps({"thoughts": {"text": "cannot see the form"}, "commands": []})
    cmds = [_click(field), {"name": "TYPE_TEXT", "args": {"text": words[0]}}, _click(submit)]
    return json.dumps({"thoughts": {"text": "fill, then submit"}, "commands": cmds})


@pytest.mark.asyncio(loop_scope="module")
async def test_screen_text_agent_runs_a_multi_command_answer_in_the_loop(browser, tmp_path):
    with ChatServer(responder=form_filler) as srv:
        backend = OpenAIBackend([srv.base_url], model="reader", max_retries=0)
        model = get_adapter("screen-text", backend=backend)
        run_dir = RunDir(tmp_path / "st")
        run_dir.open({"agent": "screen-text"})
        cfg = RegionFocusConfig(history="text", aggregation="text")
        tasks = miniwob.miniwob_tasks("miniwob:enter-text", episodes=1, seed=3)
        settings = RunSettings(max_steps=6, viewport=(500, 560), task_zoom=2.0, progress=False)
        records = await run_tasks(tasks, lambda: RegionFocusAgent(model, cfg), run_dir, browser, settings)
        await backend.aclose()
        bodies = list(srv.stats.bodies)
    (rec,) = records
    assert rec["success"] and rec["raw_reward"] == 1.0, rec  # the page's own reward
    traj = json.loads((tmp_path / "st" / rec["folder"] / "trajectory.json").read_text())
    kinds = [s["action"]["type"] for s in traj["steps"]]
    assert kinds[-3:] == ["click", "type", "click"], kinds
    # Three commands, one answer: the later two came from the queue, each after an effect.
    queued = [s for s in traj["steps"] if s["text"].startswith("(queued")]
    assert len(queued) == 2 and [s["step"] for s in queued] == [len(kinds) - 1, len(kinds)]
    assert all(s["effect"]["changed"] for s in traj["steps"][:-1])
    assert len(bodies) == len(kinds) - 2  # one chat request per answer, none for queued commands
    assert all(isinstance(m["content"], str) for b in bodies for m in b["messages"])  # text only


def coat_vlm(body: dict) -> str:
    """A Qwen2.5-VL stand-in: writes the four CoAT parts (numbered by the steps it has seen in
    the chain) and clicks blank space below the task."""
    text = " ".join(
        p["text"] for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]
        if p.get("type") == "text"
    )  # fmt: skip
    n = len(re.findall(r"^Step \d+:", text, re.M)) + 1
    return (
        f"Previous action result: By doing so, nothing changed after step {n - 1}.\n"
        f"Screen description: a MiniWoB++ page with one button, seen at step {n}.\n"
        f"Action think: step {n}. Possible actions are clicking the button.\n"
        f"Next action description: click below the task at step {n}\n\n"
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
        f'"coordinate": [{240 + 10 * n}, 500]}}}}\n</tool_call>'
    )


def test_coat_over_a_vlm_carries_the_parts_in_the_next_requests(tmp_path):
    with ChatServer(responder=coat_vlm, model="q") as srv:
        argv = [
            "--tasks", "miniwob:click-button", "--agent", "qwen2.5-vl", "--base-url", srv.base_url,
            "--model", "q", "--reasoning", "coat", "--no-regionfocus", "--max-steps", "3",
            "--viewport", "500x560", "--no-progress", "--out", str(tmp_path / "coat"),
        ]  # fmt: skip
        assert webvoyager_main(argv) == 0
        texts = [
            " ".join(p["text"] for m in b["messages"] if isinstance(m["content"], list) for p in m["content"]
                     if p.get("type") == "text")
            for b in srv.stats.bodies
        ]  # fmt: skip
    config = run_config(tmp_path / "coat")
    assert config["reasoning"] == "coat" and config["coat_parts"] == "par,sd,at,ad"  # writing order
    assert len(texts) == 3
    assert "Previous actions: none" in texts[0] and "Before your action, write these parts" in texts[0]
    second, third = texts[1], texts[2]
    # Step 1 as the chain carries it: its next-action description, action and outcome; in full
    # (screen description, think) as the previous step; its result comes from answer 2.
    assert "Step 1: click below the task at step 1" in second and "(no visible effect)" in second
    assert "Screen description: a MiniWoB++ page with one button, seen at step 1." in second
    assert "Action think: step 1." in second
    assert "Result: By doing so, nothing changed after step 1." in third
    assert "Step 2: click below the task at step 2" in third
