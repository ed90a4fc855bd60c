"""Pages that misbehave, in a real Chromium, served by a real HTTP server (tests/hostile_pages.py):
a document that never ends, one that trickles, one over the size limit, a download a click
starts, an endless alert() loop, a page that refreshes itself for ever, a renderer that hangs.
Each ends its task with an error that names the page and the cause (issue 30, items 4 and 6),
and what the browser's own fetch kept (cookies both ways, encodings, form posts) still holds."""

from __future__ import annotations

import asyncio
import json

import pytest
import pytest_asyncio

from regionfocus import RegionFocusAgent
from regionfocus.actions import Action, ActionType, click
from regionfocus.model import ModelReply
from regionfocus.webvoyager.browser import Browser, EnvConfig
from regionfocus.webvoyager.page_fetch import PageFetcher, PageRefused
from regionfocus.webvoyager.rundir import RunDir
from regionfocus.webvoyager.runner import RunSettings, run_tasks
from regionfocus.webvoyager.tasks import load_tasks
from tests.hostile_pages import LINKS, HostilePages
from tests.scripted import ScriptedModel

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]

LIMIT = 2**20  # --max-page-bytes of these tests: 1 MiB


@pytest.fixture(scope="session")
def pages():
    site = HostilePages()
    yield site
    site.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser():
    async with Browser(private_hosts=("127.0.0.1",)) as b:  # the hostile site is on loopback
        yield b


async def _env(browser, **config):
    return await browser.new_env(EnvConfig(viewport=(600, 400), max_page_bytes=LIMIT, **config))


async def test_documents_over_the_limit_or_still_arriving_are_cut_off_naming_the_page(browser, pages):
    limit = f"over the limit of {LIMIT} bytes (--max-page-bytes)"
    # A document that never ends: refused once past the limit, the task's page stopped.
    env = await _env(browser)
    try:
        err = await env.goto(pages.url + "endless")
        assert err is not None and f"page {pages.url}endless is {limit}" in err, err
        assert env.stopped is not None and "endless" in env.stopped
    finally:
        await env.close()
    # The connection was dropped: the server wrote the limit and what the socket buffers took,
    # not the gigabytes a whole-body fetch reads before its timeout.
    assert LIMIT < pages.sent["endless"] < 32 * LIMIT, pages.sent

    # A finished page over the limit is refused by its declared length, before its body is read;
    # one under it loads.
    env = await _env(browser)
    try:
        err = await env.goto(pages.url + f"big?bytes={LIMIT + 1}")
        assert err is not None and f"is {LIMIT + 1} bytes, {limit}" in err, err
    finally:
        await env.close()
    env = await _env(browser)
    try:
        assert await env.goto(pages.url + f"big?bytes={LIMIT // 2}") is None
        assert await env.page.evaluate("document.body.innerText.length") > LIMIT // 4
    finally:
        await env.close()

    # A document that trickles in: refused when the navigation timeout comes, and said so.
    env = await _env(browser, nav_timeout_s=1.5)
    try:
        err = await env.goto(pages.url + "endless?rate=2000")
        assert err is not None and "endless?rate=2000 was still arriving after 1.5 s" in err, err
    finally:
        await env.close()

    # A frame that never ends is refused on its own; the page around it goes on.
    env = await _env(browser)
    try:
        assert await env.goto(pages.url + "framed") is None
        shot = await env.observe()
        assert shot.size == (600, 400) and env.stopped is None
        blocked = [e for e in env.events if e["type"] == "blocked"]
        assert [e["url"] for e in blocked] == [pages.url + "endless"] and limit in blocked[0]["reason"]
    finally:
        await env.close()

    # A download a click starts is a document like any other: cut off at the limit, and the
    # step ends with no screen, naming it.
    env = await _env(browser)
    try:
        assert await env.goto(pages.url + "links") is None
        await env.observe()
        y = 20 + 40 * LINKS.index("download") + 10
        result = await env.act(click(40, y))
        assert result.screenshot is None
        assert result.error is not None and f"page {pages.url}download is {limit}" in result.error
    finally:
        await env.close()
    # One started without a navigation (<a download>) never reaches our fetch: the context
    # accepts no downloads, and it is recorded as refused.
    env = await _env(browser)
    try:
        assert await env.goto(pages.url + "links") is None
        await env.page.evaluate(
            """u => { const a = document.createElement('a'); a.href = u; a.download = 'x.bin';
            a.textContent = 'save'; a.style = 'position:absolute;left:300px;top:300px;font:30px sans-serif';
            document.body.appendChild(a); }""",
            pages.url + "download?rate=200000",
        )
        await env.observe()
        async with env.page.expect_download():
            result = await env.act(click(320, 315))
        assert result.screenshot is not None and env.stopped is None
        while not any(e["type"] == "download" for e in env.events):  # its handler runs on its own
            await asyncio.sleep(0.05)
        downloads = [e["url"] for e in env.events if e["type"] == "download"]
        assert downloads == [pages.url + "download?rate=200000"]
    finally:
        await env.close()


async def test_what_the_browser_fetch_did_still_holds(browser, pages):
    """Documents are fetched outside the browser now: its cookies go out with them and come
    back into its own jar, encodings are undone, a form's POST keeps its body."""
    env = await _env(browser)
    try:
        assert await env.goto(pages.url + "cookie") is None
        cookies = {c["name"]: c for c in await env.context.cookies()}
        assert cookies["plain"]["value"] == "1" and cookies["secret"]["httpOnly"] is True
        assert await env.goto(pages.url + "echo") is None
        echo = await env.page.inner_text("#echo")
        assert echo.startswith("GET cookie=[") and "plain=1" in echo and "secret=2" in echo
        assert await env.goto(pages.url + "gzip") is None
        assert (await env.page.inner_text("body")).count("unzipped fine") == 50
        assert await env.goto(pages.url + "form") is None
        await env.observe()
        result = await env.act(click(80, 80))  # the Send button
        assert result.error is None and result.effect.url_changed
        echo = await env.page.inner_text("#echo")
        assert echo.startswith("POST ") and "body=[q=caf%C3%A9+%26+tea]" in echo
    finally:
        await env.close()


async def test_a_page_is_measured_after_decompression(pages):
    """48 KB on the wire, 48 MiB decoded: the limit counts what the browser would hold."""
    fetcher = PageFetcher(max_bytes=LIMIT, timeout_s=30)
    try:
        with pytest.raises(PageRefused) as info:
            await fetcher.fetch("GET", pages.url + "bomb", {}, None)
        assert (
            str(info.value) == f"page {pages.url}bomb is over the limit of {LIMIT} bytes (--max-page-bytes)"
        )
        ok = await fetcher.fetch("GET", pages.url + "gzip", {}, None)
        assert ok.status == 200 and ok.body.count(b"unzipped fine") == 50
        assert "content-encoding" not in ok.headers and "content-length" not in ok.headers  # decoded now
    finally:
        await fetcher.aclose()


def _clicks_then_finishes() -> ScriptedModel:
    """A GroundingModel for any page: one click in the middle, then the answer."""
    model = ScriptedModel()

    def act(image, query, zoomed=False):
        n = model.kinds().count("act")  # this call included
        action = click(300, 200) if n % 2 else Action(ActionType.FINISHED, text="done")
        return ModelReply("scripted", action=action)

    model.on_act = act
    return model


async def test_each_hostile_page_ends_its_task_with_a_record_that_names_page_and_cause(
    browser, pages, tmp_path
):
    names = ("endless", "alerts", "refresh", "busy")
    lines = [
        {"web_name": "Hostile", "id": f"Hostile--{k}", "ques": "Look.", "web": pages.url + n}
        for k, n in enumerate(names)
    ]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    tasks = load_tasks(tmp_path / "tasks.jsonl")
    settings = RunSettings(
        max_steps=3,
        viewport=(600, 400),
        concurrency=2,
        progress=False,
        allow_domains=("127.0.0.1",),
        # the hung renderer's screenshot gives up sooner than a real run's 20 s
        env_overrides={"max_page_bytes": LIMIT, "action_timeout_s": 3.0},
    )
    run = RunDir(tmp_path / "run")
    run.open({"agent": "scripted", "regionfocus_enabled": False})
    records = await run_tasks(
        tasks, lambda: RegionFocusAgent(_clicks_then_finishes(), enabled=False), run, browser, settings
    )
    run.close()
    errors = {name: rec["error"] or "" for name, rec in zip(names, records, strict=True)}
    assert all(rec["ended"] == "error" for rec in records), errors
    assert f"{pages.url}endless is over the limit of {LIMIT} bytes (--max-page-bytes)" in errors["endless"]
    assert f"{pages.url}alerts showed more than 20 JavaScript dialogs" in errors["alerts"]
    assert "a dialog loop" in errors["alerts"]
    assert "a refresh or redirect loop" in errors["refresh"] and f"{pages.url}refresh" in errors["refresh"]
    assert f"could not take a screenshot of {pages.url}busy" in errors["busy"], errors["busy"]
    # The run log keeps them in the denominator, as errors.
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert len(saved) == 4 and all(r["error"] for r in saved)
