"""Phase 1 on pop-ups that say nothing about themselves (no dialog role, no cookie words) and on
pages that look a little like one, in real Chromium: a newsletter overlay with a dimmed
backdrop is modal from its words alone, or from the temporal signal when it appears between two
snapshots whatever it says; plain pages, a sticky header, a fixed chat bubble, an inline sign-up
form and a cookie banner get no false marks. Ground truth: ``data-a11y-modal``."""

from __future__ import annotations

from dataclasses import replace

import pytest
import pytest_asyncio

from benchmarks.a11y_corpus import MARK, modal_counts
from regionfocus.a11y import APPEARED, compress
from regionfocus.webvoyager.a11y_tree import snapshot
from regionfocus.webvoyager.browser import Browser, EnvConfig

pytestmark = [pytest.mark.slow]
aio = pytest.mark.asyncio(loop_scope="module")
VIEW = (1280, 900)

_STYLE = """<style>
 body { font-family: sans-serif; margin: 0; }
 header { padding: 12px 24px; background: #fff; border-bottom: 1px solid #ccc; }
 main { padding: 24px; max-width: 760px; }
 .scrim { position: fixed; inset: 0; background: rgba(0, 0, 0, .55); z-index: 10; }
 .wrap { position: fixed; inset: 0; background: rgba(0, 0, 0, .55); z-index: 10; display: flex;
         align-items: center; justify-content: center; }
 .box { position: fixed; top: 30%; left: 50%; transform: translateX(-50%); width: 420px; background: #fff;
        padding: 24px; z-index: 11; }
 .wrap .box { position: static; transform: none; }
 .hidden { display: none; }
</style>"""
_ARTICLE = """<main><h1>Spring collection</h1>
<p>New linen shirts and leather sandals are in, cut for warm days and long walks by the sea. Free returns
within thirty days; exchanges in any of our shops.</p>
<ul><li><a href="#shirts">Linen shirts</a></li><li><a href="#sandals">Sandals</a></li><li><a href="#hats">Sun hats</a></li></ul>
<button id="more">Show more</button> <button>Save for later</button> <button>Cancel order</button>
<p>Questions? Our team answers within a day.</p></main>"""
_BOX = """<h2>{title}</h2><p>{text}</p>
<input type="email" placeholder="Email address"><button>{yes}</button><button>{no}</button>"""
NEWSLETTER = dict(
    title="Join our newsletter", text="Ten percent off your first order.", yes="Subscribe", no="No thanks"
)
# no keyword of App. B or ours: only its appearance and its backdrop say what it is
DISCOUNT = dict(
    title="Before you go", text="Ten percent off your first order.", yes="Continue", no="Maybe later"
)


def _page(body: str) -> str:
    return f"<!doctype html><html><head><title>Shop</title>{_STYLE}</head><body>{body}</body></html>"


def _overlay(words: dict, wrapped: bool = False, hidden: bool = False) -> str:
    cls = " hidden" if hidden else ""
    box = _BOX.format(**words)
    if wrapped:
        return f'<div class="wrap{cls}" id="pop"><div class="box" {MARK}>{box}</div></div>'
    return f'<div class="scrim{cls}" id="pop"></div><div class="box{cls}" id="pop-box" {MARK}>{box}</div>'


_SHOW = """() => document.querySelectorAll('.hidden').forEach(e => e.classList.remove('hidden'))"""

NO_MODAL = {
    "plain page": _ARTICLE,
    "sticky header": """<header style="position: sticky; top: 0; z-index: 5">
        <nav aria-label="Shop"><a href="#new">New in</a> <a href="#sale">Sale</a></nav>
        <button>Subscribe</button> <a href="#account">Account settings</a></header>"""
    + _ARTICLE * 3,
    "fixed chat bubble": _ARTICLE
    + """<div style="position: fixed; right: 24px; bottom: 24px; background: #246; color: #fff; padding: 12px;
        border-radius: 24px"><button>Chat with us</button> <button aria-label="Close">×</button></div>""",
    "inline sign-up form": _ARTICLE
    + """<footer><h2>Our newsletter</h2><p>One letter a month.</p>
        <input type="email" placeholder="Email address"> <button>Subscribe</button></footer>""",
    "full-page backdrop behind the content": """<div style="position: fixed; inset: 0; z-index: -1;
        background: linear-gradient(#fde, #def)"></div>"""
    + _ARTICLE,
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser():
    async with Browser() as b:
        yield b


async def _open(browser, html: str):
    env = await browser.new_env(EnvConfig(viewport=VIEW))
    await env.page.set_content(html)
    return env


def _judge(snap):
    c = compress(snap.elements, "buy sandals", viewport=snap.viewport)
    ids = {e.node_id for e in c.detection.modal}
    return c.detection, modal_counts(snap.elements, ids, snap.viewport)


@aio
@pytest.mark.parametrize("wrapped", [False, True], ids=["sibling backdrop", "backdrop around the box"])
async def test_newsletter_overlay_without_aria_is_modal_from_its_words(browser, wrapped):
    env = await _open(browser, _page(_ARTICLE + _overlay(NEWSLETTER, wrapped)))
    snap = await snapshot(env.page, mark_attribute=MARK)
    detection, (tp, fp, fn) = _judge(snap)
    assert "keyword" in detection.methods and tp >= 5 and fp == 0 and fn == 0, detection.notes
    assert any("in front of a page-covering layer" in n for n in detection.notes)
    assert not any(e.role == "dialog" or e.attributes.get("modal") for e in snap.elements)
    await env.close()


@aio
@pytest.mark.parametrize("wrapped", [False, True], ids=["sibling backdrop", "backdrop around the box"])
async def test_overlay_that_appears_is_modal_whatever_it_says(browser, wrapped):
    env = await _open(browser, _page(_ARTICLE + _overlay(DISCOUNT, wrapped, hidden=True)))
    first = await snapshot(env.page, mark_attribute=MARK)
    assert not any(e.attributes.get(APPEARED) for e in first.elements)
    alone, _ = _judge(first)
    assert alone.modal == []
    await env.page.evaluate(_SHOW)
    snap = await snapshot(env.page, mark_attribute=MARK)
    assert any(e.attributes.get(APPEARED) for e in snap.elements)
    detection, (tp, fp, fn) = _judge(snap)
    assert detection.methods == ["temporal"] and tp >= 5 and fp == 0 and fn == 0, detection.notes
    assert any("covers the page" in n for n in detection.notes)
    # Its words alone are not enough: without the difference the keyword method finds nothing.
    unmarked = [replace(e, attributes={}) for e in snap.elements]
    assert compress(unmarked, "buy sandals", viewport=snap.viewport).detection.modal == []
    await env.close()


@aio
@pytest.mark.parametrize("name", list(NO_MODAL))
async def test_no_false_marks_on_pages_without_a_pop_up(browser, name):
    env = await _open(browser, _page(NO_MODAL[name]))
    snap = await snapshot(env.page, mark_attribute=MARK)
    detection, counts = _judge(snap)
    assert detection.modal == [] and counts == (0, 0, 0), detection.notes
    # a second step on the same page after a scroll: whatever entered the screen is no pop-up
    await env.page.mouse.wheel(0, 400)
    await env.page.wait_for_timeout(100)
    again = await snapshot(env.page, mark_attribute=MARK)
    detection, counts = _judge(again)
    assert detection.modal == [] and counts == (0, 0, 0), detection.notes
    await env.close()


@aio
async def test_a_chat_bubble_that_appears_is_no_modal(browser):
    bubble = """<div id="chat" class="hidden" style="position: fixed; right: 24px; bottom: 24px; z-index: 20;
        background: #246; color: #fff; padding: 12px"><p>Need help?</p><button>Chat with us</button></div>"""
    env = await _open(browser, _page(_ARTICLE + bubble))
    await snapshot(env.page)
    await env.page.evaluate(_SHOW)
    snap = await snapshot(env.page)
    assert any(e.attributes.get(APPEARED) for e in snap.elements)
    detection, _ = _judge(snap)
    assert detection.modal == [], detection.notes
    await env.close()


@aio
async def test_a_cookie_banner_stays_the_only_modal_beside_newsletter_words(browser):
    banner = f"""<div {MARK} style="position: fixed; left: 0; right: 0; bottom: 0; background: #eee; padding: 16px">
        <p>We use cookies to keep you signed in and to count visits.</p>
        <button>Accept all</button> <button>Reject all</button> <a href="#privacy">Privacy policy</a></div>"""
    env = await _open(browser, _page(NO_MODAL["inline sign-up form"] + banner))
    snap = await snapshot(env.page, mark_attribute=MARK)
    detection, (tp, fp, fn) = _judge(snap)
    assert "keyword" in detection.methods and tp > 0 and fp == 0 and fn == 0, detection.notes
    await env.close()
