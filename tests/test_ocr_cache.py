"""The OCR agent reads each image once: a screenshot shared by several targets, a view cut twice
from the same box, reads asked for at the same moment. Counted with the engine pool's and the
cache's own counters (real rapidocr engine, no timers)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from PIL import Image, ImageDraw

from regionfocus.actions import click
from regionfocus.adapters.agents.ocr import OcrAgent
from regionfocus.adapters.agents.ocr_seen import BudgetArrays, Seen, SeenCache
from regionfocus.adapters.perception.ocr_engine import EnginePool
from regionfocus.geometry import Box
from regionfocus.model import Avoid, Query
from regionfocus.stars import draw_stars
from regionfocus.views import crop_view
from tests.test_ocr_agent import SCREEN, font, render_app


@pytest.fixture(scope="module")
def screen():
    return render_app(seed=5, tiny_px=8, panel_at=(2600, 1400))


def engine_calls(agent: OcrAgent) -> int:
    return EnginePool.get(agent.threads, agent.engines).calls


def test_targets_sharing_a_screenshot_read_it_once(screen):
    agent = OcrAgent()
    targets = ["Analytics", "Format", "Billing", screen.tiny[3]]
    before = engine_calls(agent)

    async def one(label: str):
        q = Query(f'click "{label}"')
        reply = await agent.act(screen.image, q)
        point = screen.labels[label].center
        await agent.judge(draw_stars(screen.image, [point], [""]), q, point)
        await agent.propose_point(screen.image, q, Avoid())
        return reply

    async def all_at_once():  # the samples of one screenshot in flight together, as the runner has them
        return await asyncio.gather(*(one(t) for t in targets))

    replies = asyncio.run(all_at_once())
    assert engine_calls(agent) - before == 1
    # act and focal ask the cache; a judge finds the clean copy among what was read, asking nothing
    assert (agent.cache.reads, agent.cache.hits) == (1, 2 * len(targets) - 1)
    for label, reply in zip(targets[:3], replies, strict=False):
        assert reply.action is not None and screen.labels[label].contains(reply.action.point), reply.text


def test_identical_views_are_read_once(screen):
    agent = OcrAgent()
    box = Box(2400, 1200, 2400 + 0.3 * SCREEN[0], 1200 + 0.3 * SCREEN[1])
    target = agent.input_size(SCREEN)
    # Two samples whose focal points coincide cut the same view, each its own image object.
    views = [crop_view(screen.image, box, target, fit=agent.input_size) for _ in range(2)]
    assert views[0].image is not views[1].image
    before = engine_calls(agent)

    async def both():
        return await asyncio.gather(
            *(
                agent.act(v.image, Query(f'click "{w}"'), zoomed=True)
                for v, w in zip(views, screen.tiny, strict=False)
            )
        )

    a, b = asyncio.run(both())
    assert engine_calls(agent) - before == 1
    assert agent.cache.reads == 1 and agent.cache.hits == 1
    # The same view read again later, and one of another box, as a third and fourth sample would.
    asyncio.run(agent.act(crop_view(screen.image, box, target, fit=agent.input_size).image, Query("click x")))
    other = crop_view(screen.image, Box(0, 0, 0.3 * SCREEN[0], 0.3 * SCREEN[1]), target, fit=agent.input_size)
    asyncio.run(agent.act(other.image, Query("click x")))
    assert engine_calls(agent) - before == 2


def _word_image(word: str) -> Image.Image:
    img = Image.new("RGB", (420, 80), "white")
    ImageDraw.Draw(img).text((20, 20), word, fill="black", font=font(30))
    return img


@pytest.mark.slow  # a real model or engine end to end: seconds of CPU
def test_the_cache_is_bounded():
    agent = OcrAgent(cache_size=2)
    images = [_word_image(w) for w in ("Quarterly", "Reconcile", "Shipment")]
    before = engine_calls(agent)
    for im in images:
        asyncio.run(agent._look(im))
    assert len(agent.cache) == 2 and engine_calls(agent) - before == 3
    asyncio.run(agent._look(images[2]))  # kept
    assert engine_calls(agent) - before == 3
    first = asyncio.run(agent._look(images[0]))  # the least recently used went out: read again
    assert engine_calls(agent) - before == 4 and len(agent.cache) == 2
    assert [ln.text for ln in first.lines] == ["Quarterly"]


def _seen() -> Seen:
    return Seen((4, 4), None, [])


def test_cache_waits_for_a_read_under_way_and_retries_a_failed_one():
    cache = SeenCache(4)
    started, release = threading.Event(), threading.Event()
    made: list[Seen] = []

    def slow_read() -> Seen:
        started.set()
        release.wait()
        made.append(_seen())
        return made[-1]

    got: list[Seen] = []
    first = threading.Thread(target=lambda: got.append(cache.get("k", slow_read)))
    first.start()
    started.wait()
    second = threading.Thread(target=lambda: got.append(cache.get("k", slow_read)))
    second.start()
    release.set()
    first.join()
    second.join()
    assert len(made) == 1 and got[0] is got[1] is made[0]
    assert (cache.reads, cache.hits) == (1, 1)

    def broken() -> Seen:
        raise RuntimeError("engine failed")

    with pytest.raises(RuntimeError):
        cache.get("j", broken)
    assert cache.get("j", _seen) is not None and cache.reads == 3  # not remembered as read


def test_a_crowded_choice_map_is_read_through_the_clean_copy(screen):
    """Candidates that crowd are drawn with a magnified inset far from their points: the agent
    still recognises the map as the screen it read, since it compares only outside what the
    stars drew (stars.star_extent), and asks the engine nothing more."""
    from regionfocus.model import Option
    from regionfocus.stars import star_map

    agent = OcrAgent()
    q = Query('click "Analytics"')
    asyncio.run(agent.act(screen.image, q))
    p = screen.labels["Analytics"].center
    crowd = [p, type(p)(p.x + 9, p.y), type(p)(p.x, p.y + 9)]
    labels = ["1", "2", "3"]
    assert star_map(screen.image.size, crowd, labels).insets  # this map has an inset
    before = engine_calls(agent)
    options = [Option(i + 1, click(c.x, c.y), True) for i, c in enumerate(crowd)]
    reply = asyncio.run(agent.choose(draw_stars(screen.image, crowd, labels), q, options))
    assert engine_calls(agent) == before
    assert reply.choice in (1, 2, 3)


def test_an_image_object_is_resized_to_the_budget_once_while_it_lives():
    import gc

    made: list[int] = []

    def make(image):
        made.append(id(image))
        return np.asarray(image.resize((8, 6)))

    arrays = BudgetArrays()
    shot = Image.new("RGB", (80, 60), "white")
    first = arrays.get(shot, make)
    assert arrays.get(shot, make) is first and len(made) == 1
    assert not first.flags.writeable  # shared between requests: nobody may draw on it
    # The same pixels in another object are another image (a starred copy, a view).
    twin = shot.copy()
    assert arrays.get(twin, make) is not first and len(made) == 2
    del shot, twin, first
    gc.collect()
    assert arrays._arrays == {}
