"""The browsing loop with the page's accessibility tree (real Chromium, MiniWoB++ pages and their
own rewards): the a11y agent reads the tree the loop hands it; the OCR agent's RegionFocus round
takes its boxes from the tree (--proposer a11y); the no-target trigger refines a click on blank
space before it is executed."""

from __future__ import annotations

import pytest
import pytest_asyncio

from regionfocus import ModelReply, RegionFocusAgent, RegionFocusConfig
from regionfocus.actions import click
from regionfocus.adapters import get_adapter
from regionfocus.geometry import Box, Point
from regionfocus.webvoyager import miniwob
from regionfocus.webvoyager.browser import Browser
from regionfocus.webvoyager.rundir import RunDir
from regionfocus.webvoyager.runner import RunSettings, run_tasks

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser():
    async with Browser() as b:
        yield b


def _run_dir(path, name) -> RunDir:
    rd = RunDir(path / name)
    rd.open({"agent": name})
    return rd


async def _a11y_alone(browser, folder, names: str, seed: int, max_steps: int) -> list[dict]:
    """One episode of each MiniWoB++ task ``names`` with the a11y agent alone, reading the tree."""
    tasks = miniwob.miniwob_tasks(f"miniwob:{names}", episodes=1, seed=seed)
    settings = RunSettings(max_steps=max_steps, viewport=(800, 600), progress=False, read_tree=True)

    def agent() -> RegionFocusAgent:
        return RegionFocusAgent(get_adapter("a11y"), enabled=False)

    return await run_tasks(tasks, agent, _run_dir(folder.parent, folder.name), browser, settings)


async def test_the_a11y_agent_reads_the_tree_the_loop_hands_it(browser, tmp_path):
    records = await _a11y_alone(browser, tmp_path / "a11y", "click-button,click-dialog", seed=3, max_steps=3)
    assert [(r["id"], r["success"], r["steps"]) for r in records] == [
        ("click-button--0", True, 1),
        ("click-dialog--0", True, 1),
    ]


async def test_the_a11y_agent_finishes_multi_step_tasks_and_declines_what_it_cannot_see(browser, tmp_path):
    # One episode of each kind of multi-step instruction, scored by the pages' own reward.
    names = (
        "choose-list,click-checkboxes-transfer,enter-password,enter-time,focus-text-2,click-menu,"
        "click-button-sequence,click-color"
    )
    records = await _a11y_alone(browser, tmp_path / "a11y-plans", names, seed=7, max_steps=10)
    by_task = {r["web_name"]: r for r in records}
    assert {n: by_task[n]["success"] for n in names.split(",")} == {
        **dict.fromkeys(names.split(","), True),
        "click-color": False,
    }
    assert by_task["click-color"]["ended"] == "call_user" and by_task["click-color"]["steps"] == 1
    assert by_task["enter-password"]["steps"] == 3  # two fields, then Submit


class BlankThenTree:
    """A model double: its own answer clicks blank space; asked about a view (RegionFocus), it
    clicks the element the instruction names, found through the tree the query carries."""

    def __init__(self):
        self.a11y = get_adapter("a11y")
        self.executed_first: list[Point] = []

    def input_size(self, size):
        return size

    async def act(self, image, query, *, zoomed=False):
        if zoomed:
            return await self.a11y.act(image, query, zoomed=True)
        return ModelReply("click(5, 590)", action=click(5, 590))

    async def propose_point(self, image, query, avoid, *, temperature=None):
        reply = await self.a11y.act(image, query)
        return ModelReply(reply.text, point=reply.action.point if reply.action else None)

    async def judge(self, image, query, point):
        return ModelReply("(not asked in live mode)")

    async def choose(self, image, query, options, *, retry=0):
        return ModelReply("Selected point: 1", choice=1)

    async def propose_box(self, image, query, focal):
        return ModelReply("(no box)")


async def test_no_target_refines_before_the_wasted_click_with_boxes_from_the_tree(browser, tmp_path):
    tasks = miniwob.miniwob_tasks("miniwob:click-button", episodes=1, seed=5)
    settings = RunSettings(max_steps=3, viewport=(800, 600), progress=False, read_tree=True)
    config = RegionFocusConfig(proposer="a11y", no_target_trigger=True)
    (rec,) = await run_tasks(
        tasks, lambda: RegionFocusAgent(BlankThenTree(), config), _run_dir(tmp_path, "nt"), browser, settings
    )
    assert rec["success"] and rec["steps"] == 1  # the blank click was never executed
    assert rec["triggers"] == {"no-target": 1}
    import json

    traj = json.loads((tmp_path / "nt" / "taskclick-button--0" / "trajectory.json").read_text())
    rnd = traj["steps"][0]["decision"]["round"]
    boxes = [Box(*b) for b in rnd["boxes"]]
    assert 1 <= len(boxes) <= 4
    # the tree's groups lie in the task's 160x210 CSS px area (zoomed 1.25), not fixed screen ratios
    assert all(b.right <= 0.5 * 800 and b.bottom <= 0.6 * 600 for b in boxes)
