"""The WebVoyager harness in real Chromium on local pages served by a local HTTP server.

One browser and one server for the whole module (session-scoped); the agent is a scripted
GroundingModel that finds a green target by colour, so every coordinate path (screenshot,
true-zoom view, back to page pixels, mouse) is the real one.
"""

from __future__ import annotations

import asyncio
import functools
import http.server
import json
import re
import threading
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio
from PIL import Image

from regionfocus import RegionFocusAgent, RegionFocusConfig
from regionfocus.actions import Action, ActionType, click
from regionfocus.geometry import Box, Point
from regionfocus.model import ModelReply, Verdict
from regionfocus.webvoyager import miniwob
from regionfocus.webvoyager.browser import Browser, EnvConfig
from regionfocus.webvoyager.report import write_report
from regionfocus.webvoyager.rundir import RunDir
from regionfocus.webvoyager.runner import RunSettings, run_tasks
from regionfocus.webvoyager.tasks import load_tasks

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]

PAGES = Path(__file__).parent / "pages"
GREEN = (0, 200, 0)


@pytest.fixture(scope="session")
def site():
    """A real HTTP server for tests/pages on a free loopback port."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(PAGES)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser():
    async with Browser(private_hosts=("127.0.0.1",)) as b:  # the local test site
        yield b


def green_centroid(image: Image.Image) -> Point | None:
    """Centre (px of ``image``) of the pure green target, or None when it is not visible."""
    a = np.asarray(image.convert("RGB"), dtype=np.int16)
    mask = np.abs(a - np.array(GREEN)).max(axis=2) <= 12
    if mask.sum() < 4:
        return None
    ys, xs = np.nonzero(mask)
    return Point(float(xs.mean()) + 0.5, float(ys.mean()) + 0.5)


class ScriptedModel:
    """A GroundingModel driven by a plan: ``plan(image, query, zoomed, n)`` returns the action
    for the n-th (1-based) non-zoomed call; zoomed views are answered by finding the green
    target. Focal points come from ``focal``; choices always take option 1."""

    def __init__(self, plan, focal: Point | None = None):
        self.plan = plan
        self.focal = focal
        self.full_calls: list[str] = []
        self.queries: list = []
        self.zoomed_calls = 0

    def input_size(self, size):
        return size

    async def act(self, image, query, *, zoomed=False):
        if zoomed:
            self.zoomed_calls += 1
            p = green_centroid(image)
            return ModelReply(f"green at {p}", action=click(p.x, p.y) if p else None, point=p)
        self.full_calls.append(query.instruction)
        self.queries.append(query)
        action = await self.plan(image, query, len(self.full_calls))
        return ModelReply(f"plan step {len(self.full_calls)}", action=action)

    async def propose_point(self, image, query, avoid, *, temperature=None):
        return ModelReply("focal", point=self.focal)

    async def judge(self, image, query, point):
        return ModelReply("yes", verdict=Verdict.YES)

    async def choose(self, image, query, options, *, retry=0):
        return ModelReply("1", choice=1)

    async def propose_box(self, image, query, focal):
        return ModelReply("no box")


async def _rect(env, selector: str) -> Box:
    r = await env.page.evaluate(
        "(s) => { const r = document.querySelector(s).getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }",
        selector,
    )
    return Box(*r)


# --------------------------------------------------------------------------- effects


async def test_effect_detection_true_false_and_hover(browser, site):
    env = await browser.new_env(EnvConfig(viewport=(800, 800)))
    try:
        assert await env.goto(site + "effects.html") is None
        await env.observe()
        blank = await env.act(click(200, 600))
        assert blank.error is None and not blank.effect.changed

        # The hover box turns orange under the mouse. Parking the mouse at the same spot for both
        # screenshots keeps that style out of the comparison: a click on it changes nothing.
        hb = await _rect(env, "#hoverbox")
        on_box = await env.act(click(hb.center.x, hb.center.y))
        assert not on_box.effect.changed, on_box.effect
        # ...whereas a hover, which leaves the mouse there, does show the style: the check above
        # would have been fooled without parking.
        hover = await env.act(Action(ActionType.HOVER, hb.center))
        assert hover.effect.changed and hover.effect.pixel_diff > 0
        assert hover.screenshot.getpixel((int(hb.center.x), int(hb.center.y)))[:3] == (255, 102, 0)

        btn = await _rect(env, "#change")
        change = await env.act(click(btn.center.x, btn.center.y))
        assert change.effect.changed and change.effect.dom_mutations > 0 and change.effect.pixel_diff > 0
        assert await env.page.inner_text("#change") == "Changed!"

        al = await _rect(env, "#alert")
        alert = await env.act(click(al.center.x, al.center.y))
        assert alert.effect.dialog == "hello from the page"
        assert {
            "type": "dialog",
            "kind": "alert",
            "message": "hello from the page",
            "handled": "accept",
        } in alert.events

        pop = await _rect(env, "#popup")
        popup = await env.act(click(pop.center.x, pop.center.y))
        assert popup.effect.new_page and popup.effect.changed
        assert env.page.url.endswith("/page2.html") and popup.url.endswith("/page2.html")

        bad_key = await env.act(Action(ActionType.HOTKEY, keys=("ctrl", "warp")))
        assert bad_key.error == "invalid action: unknown key 'warp'" and not bad_key.effect.changed
    finally:
        await env.close()


async def test_navigation_outside_allow_list_is_blocked_and_recorded(browser, site):
    env = await browser.new_env(EnvConfig(viewport=(800, 800), allow_domains=("example.org",)))
    try:
        err = await env.goto(site + "effects.html")
        assert err is not None and "not in the allow-list" in err
        assert "scheme 'file'" in await env.goto((PAGES / "effects.html").as_uri())
    finally:
        await env.close()


# --------------------------------------------------------------------------- true zoom


async def test_true_zoom_point_maps_back_to_the_element(browser, site):
    env = await browser.new_env(EnvConfig(viewport=(800, 800)))
    try:
        await env.goto(site + "effects.html")
        await env.observe()
        # scroll so the target sits mid-screen: the CDP clip must add the scroll offset
        scrolled = await env.act(Action(ActionType.SCROLL, Point(400, 400), direction="down", amount=1200))
        assert scrolled.effect.changed
        far = await _rect(env, "#far")  # 24 x 12 px, in viewport px
        assert 0 < far.top < 800
        region = Box(far.left - 60, far.top - 40, far.left + 140, far.top + 60)  # 200 x 100 px
        view = await env.zoom.view(region, (800, 800))
        assert view.transform.scale_x == pytest.approx(4.0)  # capped by max_zoom
        assert view.image.size == (800, 400)
        # a true re-render: the 24 x 12 px target covers about 16x as many view pixels
        green = (np.abs(np.asarray(view.image, dtype=np.int16) - np.array(GREEN)).max(axis=2) <= 12).sum()
        assert 0.8 * 24 * 12 * 16 < green < 1.2 * 24 * 12 * 16
        in_view = green_centroid(view.image)
        back = view.transform.view_to_screen(in_view)
        assert far.contains(back)
        hit = await env.act(click(back.x, back.y))
        assert hit.effect.error is None
        assert await env.page.title() == "far clicked"
    finally:
        await env.close()


# --------------------------------------------------------------------------- MiniWoB++


async def _buttons(env):
    return await env.page.evaluate(
        """() => [...document.querySelectorAll('#area button')].map(b => {
             const r = b.getBoundingClientRect();
             return [b.textContent, (r.left + r.right) / 2, (r.top + r.bottom) / 2]; })"""
    )


async def test_miniwob_episode_rewards_right_and_wrong_clicks(browser):
    task = miniwob.miniwob_tasks("miniwob:click-button", episodes=1, seed=0)[0]
    for right in (True, False):
        env = await browser.new_env(EnvConfig(viewport=(800, 600), file_root=miniwob.file_root()))
        try:
            instruction = await miniwob.start_episode(env, task, zoom=2.0)
            target = re.fullmatch(r'Click on the "(.+)" button\.', instruction).group(1)
            buttons = await _buttons(env)
            pick = [b for b in buttons if (b[0] == target) == right]
            assert pick, (instruction, buttons)  # seed 0 has the target and other buttons
            await env.observe()
            assert not (await miniwob.episode_status(env)).done
            result = await env.act(click(pick[0][1], pick[0][2]))
            status = await miniwob.episode_status(env)
            assert status.done and result.effect.changed
            assert status.raw_reward == (1.0 if right else -1.0)
            assert status.success == right
            if right:
                assert 0.5 < status.reward <= 1.0  # time-discounted over the raised episode time
        finally:
            await env.close()


# --------------------------------------------------------------------------- runner


def _write_tasks(path: Path, site: str) -> Path:
    lines = [
        {"web_name": "Local", "id": "Local--0", "ques": "Crash me.", "web": site + "effects.html?crash"},
        {
            "web_name": "Local",
            "id": "Local--1",
            "ques": "Open page 2 <b>and</b> read the answer — in words.",
            "web": site + "effects.html",
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


async def test_runner_crash_is_recorded_official_files_and_resume(browser, site, tmp_path):
    tasks = load_tasks(_write_tasks(tmp_path / "tasks.jsonl", site))

    async def plan(image, query, n):
        if query.instruction.startswith("Crash"):
            # n counts the calls of both tasks, which run concurrently: count this task's own.
            own = sum(q.startswith("Crash") for q in model.full_calls)
            if own >= 2:  # fault injection from outside: kill this task's renderer
                crashed = asyncio.Event()
                for ctx in browser.playwright_browser.contexts:
                    for page in ctx.pages:
                        if page.url.endswith("?crash"):
                            page.once("crash", lambda _page: crashed.set())
                            cdp = await ctx.new_cdp_session(page)
                            asyncio.ensure_future(cdp.send("Page.crash"))
                await asyncio.wait_for(crashed.wait(), 60)  # the renderer is gone before we answer
            return click(200, 600)
        if "page 2" in query.instruction:
            if len([q for q in model.full_calls if "page 2" in q]) == 1:
                return click(60, 228)  # the "to page 2" link
            return Action(ActionType.FINISHED, text="forty-two")
        raise AssertionError(query.instruction)

    model = ScriptedModel(plan)
    settings = RunSettings(max_steps=5, viewport=(800, 800), concurrency=2, progress=False)
    run = RunDir(tmp_path / "run")
    run.open({"agent": "scripted", "regionfocus_enabled": False})
    records = await run_tasks(tasks, lambda: RegionFocusAgent(model, enabled=False), run, browser, settings)
    run.close()  # one writer per folder: the resume below opens it again

    crashed, answered = records
    assert crashed["error"] == "page crashed at step 2" and crashed["steps"] == 2
    assert answered["error"] is None and answered["answer"] == "forty-two" and answered["steps"] == 2
    folder = tmp_path / "run" / "taskLocal--1"
    assert {p.name for p in folder.glob("screenshot*.png")} == {"screenshot1.png", "screenshot2.png"}
    traj = json.loads((folder / "trajectory.json").read_text())
    assert traj["steps"][0]["effect"]["url_changed"] and traj["steps"][0]["url_after"].endswith("page2.html")
    shipped = (folder / "interact_messages.json").read_bytes()
    assert shipped.isascii() and b"\\u2014" in shipped  # as the official runner writes it: ASCII escapes
    msgs = json.loads(shipped)
    first = msgs[1]["content"][0]["text"]
    task = re.search(r"Now given a task:(.+?)Please interact with", first).group(1).strip()
    assert task == "Open page 2 <b>and</b> read the answer — in words."
    assert re.search(r"ANSWER[; ]+\[?(.[^\]]*)\]?", msgs[-1]["content"]).group(1).strip() == "forty-two"
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [r["id"] for r in saved] and {r["id"] for r in saved} == {"Local--0", "Local--1"}

    # resume with --retry-errors: the finished task is skipped, the errored one runs again
    model.full_calls.clear()
    run2 = RunDir(tmp_path / "run", retry_errors=True)
    run2.open({"agent": "scripted", "regionfocus_enabled": False})
    records2 = await run_tasks(tasks, lambda: RegionFocusAgent(model, enabled=False), run2, browser, settings)
    run2.close()
    assert model.full_calls and all(q.startswith("Crash") for q in model.full_calls)
    assert records2[1] == answered
    assert "crash" in records2[0]["error"]


async def test_runner_no_effect_triggers_true_zoom_round(browser, site, tmp_path):
    tasks = [t for t in load_tasks(_write_tasks(tmp_path / "tasks.jsonl", site)) if t.id == "Local--1"]

    async def plan(image, query, n):
        # first a click on blank space (no effect), then done
        return click(200, 600) if n == 1 else Action(ActionType.FINISHED, text="done")

    model = ScriptedModel(plan, focal=Point(600, 420))
    settings = RunSettings(max_steps=4, viewport=(800, 800), progress=False)
    run = RunDir(tmp_path / "run")
    run.open({"agent": "scripted", "regionfocus_enabled": True})
    (rec,) = await run_tasks(
        tasks, lambda: RegionFocusAgent(model, RegionFocusConfig()), run, browser, settings
    )

    assert rec["error"] is None and rec["answer"] == "done"
    assert rec["triggers"] == {"no-effect": 1} and rec["regionfocus_rounds"] == 1
    traj = json.loads((tmp_path / "run" / "taskLocal--1" / "trajectory.json").read_text())
    s1, s2, s3 = traj["steps"]
    assert not s1["effect"]["changed"]
    assert s2["source"] == "regionfocus" and s2["trigger"] == "no-effect"
    assert s2["effect"]["changed"]  # the tiny button, found in a true-zoom view, was clicked
    tiny = Box(612, 402, 642, 416)
    assert tiny.contains(Point(*s2["action"]["point"]))
    views = s2["decision"]["round"]["views"]
    assert len(views) == 4 and all(v["scale_x"] > 1 for v in views)
    assert all((tmp_path / "run" / "taskLocal--1" / f).is_file() for f in s2["views"])
    # The paper's stars record failed RegionFocus choices only: the agent's own miss is not one.
    assert s2["decision"]["round"]["history"] == []
    assert s3["action"]["type"] == "finished" and rec["ended"] == "finished"
    # The agent's history: its own first answer, then the RegionFocus choice (no text of its
    # own), each with the screenshot it was made on and what it did; the page's URL is passed.
    last = model.queries[-1]
    assert [t.text for t in last.turns] == ["plan step 1", ""]
    assert [t.outcome for t in last.turns] == ["no visible effect", "changed the page"]
    assert all(t.image is not None and t.size == (800, 800) for t in last.turns)
    assert last.url.endswith(".html") and last.mode == "agent"
    # The report draws the round over the step's screenshot: four boxes, the chosen star.
    run.write_results()
    html = write_report(tmp_path / "run").read_text()
    assert html.count("<svg viewBox=") == 3 and html.count("<rect ") >= 4 and 'stroke="#000"' in html


async def test_cli_killed_mid_run_then_resumed_runs_each_episode_once(tmp_path):
    """SIGKILL in the middle of a MiniWoB++ run (the OCR agent, real pages and rewards), then the
    same command again: every episode ends up in the log exactly once."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from regionfocus.kit.runlog import read_records

    out = tmp_path / "run"
    argv = ["webvoyager", "--tasks", "miniwob:click-button", "--episodes-per-task", "4", "--agent", "ocr",
            "--no-regionfocus", "--viewport", "600x500", "--out", str(out), "--no-progress"]  # fmt: skip
    cmd = [
        sys.executable,
        "-c",
        "import sys; from regionfocus.cli import main; sys.exit(main(sys.argv[1:]))",
        *argv,
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / "records.jsonl"
    deadline = time.monotonic() + 300  # a wait on the log's own progress; the bound only stops a hang
    while not (log.exists() and len(read_records(log)) >= 2):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert len(read_records(log)) < 4

    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    ids = [json.loads(line)["id"] for line in log.read_text().splitlines()]
    assert sorted(ids) == [f"click-button--{k}" for k in range(4)]
    results = json.loads((out / "results.json").read_text())
    assert len(results) == 4 and all(r["raw_reward"] in (-1, 1) for r in results)


async def test_a_round_that_lost_view_calls_makes_the_task_partial_until_retried(browser, site, tmp_path):
    tasks = [t for t in load_tasks(_write_tasks(tmp_path / "tasks.jsonl", site)) if t.id == "Local--1"]

    async def plan(image, query, n):
        return click(200, 600) if n == 1 else Action(ActionType.FINISHED, text="done")

    class LosesViews(ScriptedModel):
        """A server that fails the first ``lose`` zoomed-view calls (a 500 once retries ran out)."""

        lose = 2

        async def act(self, image, query, *, zoomed=False):
            if zoomed and self.lose > 0:
                self.lose -= 1
                raise RuntimeError("HTTP 500: scripted server error")
            return await super().act(image, query, zoomed=zoomed)

    settings = RunSettings(max_steps=4, viewport=(800, 800), progress=False)
    cfg = {"agent": "scripted", "regionfocus_enabled": True}
    run = RunDir(tmp_path / "run")
    run.open(cfg)
    flaky = LosesViews(plan, focal=Point(600, 420))
    (rec,) = await run_tasks(
        tasks, lambda: RegionFocusAgent(flaky, RegionFocusConfig()), run, browser, settings
    )
    run.close()
    # The two views left still found the button: the task ran to its end, but not on every call.
    assert rec["error"] is None and rec["answer"] == "done"
    assert (
        rec["status"] == "partial" and "2 model call(s) failed" in rec["lost"] and "candidate" in rec["lost"]
    )
    write_report(tmp_path / "run")
    overall = next(
        ln for ln in (tmp_path / "run" / "summary.md").read_text().splitlines() if "**overall**" in ln
    )
    cells = [c.strip() for c in overall.strip("|").split("|")]
    assert (cells[6], cells[7]) == ("0", "1")  # errors, partial (after the 95 % CI column)
    assert 'data-status="partial"' in (tmp_path / "run" / "report.html").read_text()

    again = RunDir(tmp_path / "run", retry_errors=True)
    again.open(cfg)
    assert not again.finished("Local--1")  # partial: rerun by --retry-errors
    healthy = ScriptedModel(plan, focal=Point(600, 420))
    (rec2,) = await run_tasks(
        tasks, lambda: RegionFocusAgent(healthy, RegionFocusConfig()), again, browser, settings
    )
    again.close()
    assert rec2.get("status", "ok") == "ok" and rec2["answer"] == "done" and healthy.zoomed_calls == 4
