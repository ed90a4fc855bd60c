"""A text-only model browses from the compressed accessibility tree alone (real Chromium,
MiniWoB++ rewards, the real Qwen2.5-VL adapter and HTTP client against a scripted server).

The server is sent no image: it reads the task and the tree's lines (`[role] "name" @ (x, y)`,
coordinates in the model's own frame) and answers with a computer_use tool call, as a text model
prompted with the same tool would.
"""

from __future__ import annotations

import json
import re

import pytest
import pytest_asyncio

from regionfocus import RegionFocusAgent
from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.webvoyager import miniwob
from regionfocus.webvoyager.browser import Browser
from regionfocus.webvoyager.rundir import RunDir
from regionfocus.webvoyager.runner import RunSettings, run_tasks

from .chat_server import ChatServer, Reply, request_text

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

LINE = re.compile(r'^\[(\w[\w ]*)\] "([^"]*)" @ \((\d+), (\d+)\)', re.M)


def text_model(body: dict) -> Reply:
    images = [
        p
        for m in body["messages"]
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]
    if images:
        return Reply.client_error(400, "this text model takes no images")
    text = request_text(body)
    task = re.search(r"The user query:\s+(.*)", text).group(1)
    target = re.search(r'"([^"]+)"', task).group(1)
    named = [
        (role, x, y) for role, name, x, y in LINE.findall(text) if name.strip().lower() == target.lower()
    ]
    # A control first; MiniWoB++'s "links" are script-driven spans the tree calls text.
    named.sort(key=lambda r: r[0] not in ("button", "link"))
    for _role, x, y in named[:1]:
        call = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [int(x), int(y)]}}
        return Reply.text(f"<tool_call>\n{json.dumps(call)}\n</tool_call>")
    return Reply.text(f"I cannot find {target!r} in the tree.")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser():
    async with Browser() as b:
        yield b


async def test_a_text_only_model_clicks_from_the_compressed_tree(browser, tmp_path):
    tasks = miniwob.miniwob_tasks("miniwob:click-button,click-link", episodes=2, seed=11)
    settings = RunSettings(
        max_steps=3, viewport=(800, 600), progress=False, observation="compressed-a11y", read_tree=True
    )
    with ChatServer(responder=text_model, model="text-llm", keep_bodies=True) as srv:
        backend = OpenAIBackend([srv.base_url], "text-llm", timeout=60)
        adapter = get_adapter("qwen2.5-vl", backend=backend)
        run = RunDir(tmp_path / "run")
        run.open({"agent": "qwen2.5-vl", "observation": "compressed-a11y"})
        records = await run_tasks(
            tasks, lambda: RegionFocusAgent(adapter, enabled=False), run, browser, settings
        )
        await backend.aclose()
        bodies = list(srv.stats.bodies)
    assert [r["success"] for r in records] == [True] * 4, [(r["id"], r["error"], r["steps"]) for r in records]
    assert bodies and all("accessibility tree (compressed-a11y)" in request_text(b) for b in bodies)
