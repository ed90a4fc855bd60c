"""Accessibility observations on real Chromium: extraction boxes, each A11y-Compressor phase on
real pages, the a11y proposer, the no-target trigger, the a11y grounder on MiniWoB++ pages
(rewarded by the page itself), Debian documentation pages, the command and the benchmark.
One browser for the module; pages served over real HTTP."""

from __future__ import annotations

import re

import pytest
import pytest_asyncio

from benchmarks import a11y_compression
from benchmarks.a11y_corpus import (
    DOC_ROOT,
    MARK,
    OWN_PAGES,
    PAGES_DIR,
    StaticServer,
    doc_pages,
    measure,
    snapshot_page,
)
from regionfocus.a11y import compress, hits_interactive, in_viewport, linearize
from regionfocus.actions import Action, ActionType
from regionfocus.adapters.agents.a11y_agent import A11yAgent
from regionfocus.geometry import Point
from regionfocus.model import Query
from regionfocus.proposers.a11y import A11yProposer
from regionfocus.proposers.base import ProposalContext
from regionfocus.triggers import NoTarget, TriggerState
from regionfocus.webvoyager import miniwob
from regionfocus.webvoyager.a11y_cli import a11y_command
from regionfocus.webvoyager.a11y_tree import snapshot
from regionfocus.webvoyager.browser import Browser, EnvConfig
from regionfocus.webvoyager.tokens import count_tokens

pytestmark = [pytest.mark.slow]
aio = pytest.mark.asyncio(loop_scope="module")
VIEW = (1280, 900)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser():
    async with Browser(private_hosts=("127.0.0.1",)) as b:  # the pages' local server
        yield b


@pytest.fixture(scope="module")
def own():
    with StaticServer(PAGES_DIR) as s:
        yield s


def page_spec(name: str):
    return next(p for p in OWN_PAGES if p.name == name)


async def open_env(browser, url: str | None = None, file_root: str | None = None):
    env = await browser.new_env(EnvConfig(viewport=VIEW, file_root=file_root))
    if url:
        assert await env.goto(url) is None
        await env.observe()
    return env


def find(elements, role, name):
    return next(e for e in elements if e.role == role and e.name == name)


_RECORD_CLICKS = """() => { window.__hits = [];
  document.addEventListener('click', e => {
    const t = e.target.closest('a, button, input'); window.__hits.push(t ? (t.textContent.trim() || t.getAttribute('aria-label') || t.type) : e.target.tagName);
    e.preventDefault(); }, true); }"""


@aio
async def test_extracted_boxes_are_where_a_click_lands(browser, own):
    env = await open_env(browser, own.url("cookie-banner.html"))
    page = env.page
    await page.set_viewport_size({"width": 900, "height": 420})  # short: the page scrolls
    await page.evaluate("window.scrollTo(0, 180)")
    await page.evaluate(_RECORD_CLICKS)
    snap = await snapshot(page)
    assert snap.viewport == (900, 420) and snap.scale == 1.0
    targets = [
        find(snap.elements, "button", "Save for later"),  # scrolled with the page
        find(snap.elements, "button", "Accept all"),  # position: fixed
        find(snap.elements, "link", "Fish market opens on Sundays"),
    ]
    for t in targets:
        assert in_viewport(t.box, snap.viewport), t
        await page.mouse.click(t.box.center.x, t.box.center.y)
    assert await page.evaluate("window.__hits") == [t.name for t in targets]
    assert find(snap.elements, "button", "Accept all").fixed
    assert not find(snap.elements, "button", "Save for later").fixed
    await env.close()


@aio
async def test_boxes_follow_css_zoom_on_miniwob(browser):
    env = await open_env(browser, file_root=miniwob.file_root())
    task = miniwob.miniwob_tasks("miniwob:click-button")[0]
    await miniwob.start_episode(env, task, zoom=2.0)
    snap = await snapshot(env.page)
    buttons = [e for e in snap.elements if e.role == "button"]
    assert buttons
    for b in buttons:
        x, y = b.box.center.x, b.box.center.y
        name = await env.page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).closest('button')?.textContent", [x, y]
        )
        assert name is not None and name.strip() == b.name
    await env.close()


# ------------------------------------------------------------------ phases on real pages
@aio
@pytest.mark.parametrize(
    "name, method",
    [
        ("cookie-banner", "keyword"),
        ("consent-center", "keyword"),
        ("modal-dialog", "attribute"),
        ("newsletter-popup", "temporal"),
    ],
)
async def test_modal_detection_on_real_pages(browser, own, name, method):
    snap, prev, instruction = await snapshot_page(browser, page_spec(name), own, VIEW)
    r = measure(snap, instruction, prev, True, name, "own", count=len)
    assert method in r.methods
    assert r.tp > 0 and r.fp == 0 and r.fn == 0, r
    assert any(e.marked for e in snap.elements)


@aio
async def test_no_modal_on_a_page_full_of_modal_words(browser, own):
    snap, prev, instruction = await snapshot_page(browser, page_spec("no-modal"), own, VIEW)
    c = compress(snap.elements, instruction, viewport=snap.viewport)
    assert c.detection.modal == [] and not c.text.startswith("MODAL:")
    assert any("rejected" in n for n in c.detection.notes)  # the footer's cookie-settings links


_NOISY = """<!doctype html><html><head><title>noise</title></head><body>
<main><h1>Orders</h1>
<p>Your order of three notebooks and a fountain pen left the warehouse this morning and should arrive
before the weekend; the courier will text you a delivery window on the day itself, so keep your phone near.</p>
<button>Track parcel</button>
<button style="opacity:0">Ghost button</button>
<div style="position:absolute; top:3000px"><button>Far below</button></div>
<a href="#r"><span>Return an item</span></a>
</main></body></html>"""


@aio
async def test_reduction_on_a_real_page(browser):
    env = await open_env(browser)
    await env.page.set_content(_NOISY)
    snap = await snapshot(env.page)
    lin = linearize(snap.elements)
    assert "Ghost button" in lin and "Far below" in lin
    assert lin.count("Return an item") == 2  # the link and its text run
    c = compress(snap.elements, "when will the courier deliver", viewport=snap.viewport)
    assert "Ghost button" not in c.text and "Far below" not in c.text
    assert c.text.count("Return an item") == 1
    assert re.search(r'\[paragraph\] "\.\.\..*courier.*\.\.\."', c.text)  # context around a keyword
    for line in c.text.splitlines():
        m = re.search(r"@ \((\d+), (\d+)\)$", line)
        if m:
            assert 0 <= int(m.group(1)) < VIEW[0] and 0 <= int(m.group(2)) < VIEW[1]
    await env.close()


@aio
async def test_structure_on_a_real_page(browser, own):
    snap, _, instruction = await snapshot_page(browser, page_spec("cookie-banner"), own, VIEW)
    c = compress(snap.elements, instruction, viewport=snap.viewport)
    headers = [ln for ln in c.text.splitlines() if re.fullmatch(r"[A-Z_]+:", ln)]
    assert headers == ["MODAL:", "HEADER:", "NAVIGATION:", "SEARCH:", "CONTENT:", "FOOTER:"]
    nav = next(r for r in c.regions if r.name == "NAVIGATION")
    assert [e.name for e in nav.elements] == ["News", "Sport", "Weather", "Opinion"]
    content = next(r for r in c.regions if r.name == "CONTENT")
    ys = [e.box.center.y for e in content.elements]
    assert ys == sorted(ys) or all(b - a > -15 for a, b in zip(ys, ys[1:], strict=False))


# ------------------------------------------------------------------ proposer and trigger
@aio
async def test_proposer_boxes_contain_the_target(browser, own):
    env = await open_env(browser, own.url("cookie-banner.html"))
    shot = await env.observe()
    snap = await snapshot(env.page)
    target = find(snap.elements, "button", "Save for later")
    ctx = ProposalContext(shot, target.box.center, Query("save the story for later"), elements=snap.elements)
    prop = A11yProposer()
    boxes = await prop.propose(ctx)
    assert "modal" in prop.last_note.split(";")[0]
    banner = find(snap.elements, "button", "Accept all")
    assert boxes[0].contains(banner.box.center)
    holding = [
        b
        for b in boxes
        if b.left <= target.box.left
        and b.right >= target.box.right
        and b.top <= target.box.top
        and b.bottom >= target.box.bottom
    ]
    assert holding and min(b.area for b in holding) < 0.5 * shot.size[0] * shot.size[1]
    await env.close()


@aio
async def test_no_target_trigger_on_real_pages(browser, own):
    env = await open_env(browser, own.url("no-modal.html"))
    snap = await snapshot(env.page)
    t = NoTarget()
    save = find(snap.elements, "button", "Save changes")
    click = lambda p: Action(ActionType.CLICK, p)  # noqa: E731
    assert not t.fires(TriggerState(click(save.box.center), elements=snap.elements))
    blank = Point(VIEW[0] - 40, 400)
    assert await env.page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).tagName", [blank.x, blank.y]
    ) in ("BODY", "HTML", "MAIN")
    assert t.fires(TriggerState(click(blank), elements=snap.elements))
    await env.close()
    # behind an open modal, a background button is no target, and the page agrees: the shade
    # is what a click there would hit
    env = await open_env(browser, own.url("consent-center.html"))
    snap = await snapshot(env.page, mark_attribute=MARK)
    c = compress(snap.elements, viewport=snap.viewport)
    add = next(e for e in snap.elements if e.role == "button" and e.name == "Add to cart")
    assert hits_interactive(snap.elements, add.box.center) is not None
    assert t.fires(TriggerState(click(add.box.center), elements=snap.elements, modal=c.detection.modal))
    under = await env.page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).className", [add.box.center.x, add.box.center.y]
    )
    assert under == "shade"
    await env.close()


# ------------------------------------------------------------------ grounder on MiniWoB++
@aio
@pytest.mark.parametrize(
    "task, seed",
    [("click-button", 0), ("click-button", 3), ("click-link", 1), ("click-dialog", 0), ("click-dialog-2", 2)],
)
async def test_a11y_grounder_solves_miniwob(browser, task, seed):
    env = await open_env(browser, file_root=miniwob.file_root())
    wt = miniwob.miniwob_tasks(f"miniwob:{task}", seed=seed)[0]
    instruction = await miniwob.start_episode(env, wt)
    shot = await env.observe()
    snap = await snapshot(env.page)
    agent = A11yAgent()
    agent.set_elements(snap.elements, snap.viewport)
    reply = await agent.act(shot, Query(instruction, mode="agent"))
    assert reply.action is not None, reply.text
    await env.act(reply.action)
    status = await miniwob.episode_status(env)
    assert status.done and status.raw_reward == 1.0, (instruction, reply.text, status)
    await env.close()


# ------------------------------------------------------------------ docs, command, benchmark
@aio
async def test_debian_doc_pages_compress(browser):
    found, missing = doc_pages()
    if not found:
        pytest.skip("; ".join(missing))
    page = found[0]
    with StaticServer(DOC_ROOT) as docs:
        snap, prev, instruction = await snapshot_page(browser, page, docs, VIEW)
    r = measure(snap, instruction, prev, False, page.name, "doc")
    assert r.compressed[1] < r.linear_view[1] < r.linear[1]
    assert r.compressed[1] == count_tokens(compress(snap.elements, instruction, viewport=snap.viewport).text)


def test_a11y_command_prints_observation_and_size(capsys):
    assert a11y_command([str(PAGES_DIR / "modal-dialog.html"), "--instruction", "share the note"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("MODAL:")
    assert re.search(r"\[compressed-a11y\] \d+ characters, \d+ tokens \(o200k_base\)$", out.strip())
    assert a11y_command([str(PAGES_DIR / "modal-dialog.html"), "--format", "a11y"]) == 0
    assert capsys.readouterr().out.startswith("role\tname\ttext")
    assert a11y_command([str(PAGES_DIR / "missing.html")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert a11y_command(["x.html", "--phases", "modal,zoom"]) == 2  # one line, no usage dump
    err = capsys.readouterr().err
    assert err.startswith("regionfocus a11y: error: --phases: unknown") and len(err.strip().splitlines()) == 1


def test_benchmark_table_on_own_pages(capsys):
    assert a11y_compression.main(["--kinds", "own"]) == 0
    out, phases = capsys.readouterr().out.split("### Phases alone")
    rows = [ln for ln in out.splitlines() if ln.startswith("| ")][1:]
    assert [r.split("|")[1].strip() for r in rows] == [p.name for p in OWN_PAGES] + ["**total**"]
    total = [c.strip() for c in rows[-1].split("|")]
    assert total[10] == "1.00" and total[11] == "1.00"  # modal precision and recall
    assert "| reduce only |" in phases and "| full pipeline |" in phases
