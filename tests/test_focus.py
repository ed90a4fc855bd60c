"""Focus, the synchronous plug-in face (issue 36 items 1-2): the caller's own loop, any screenshot
form, a grounding model named by family.

Against the real offline OCR stand-in on a rendered screen, and against a served family over
real HTTP (the local chat server answering as Qwen2.5-VL does, from what it sees in each image:
:mod:`tests.model_like`), called from inside a running event loop as BrowserGym calls an agent.
"""

from __future__ import annotations

import asyncio
import io
import json
import threading

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from regionfocus import ModelReply, Point
from regionfocus.actions import Action, ActionType, click
from regionfocus.plugins import Decision, Focus, as_image
from regionfocus.stars import STAR_FILL

from .chat_server import ChatServer
from .model_like import model_like
from .scripted import ScriptedModel
from .test_e2e_families import MAX_PIXELS, SCREENSHOT, TARGET, TARGET_COLOUR

FOCUS_THREAD = "regionfocus-focus"


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == FOCUS_THREAD]


def test_screenshots_in_every_form_the_hosts_use():
    rgba = Image.new("RGBA", (40, 30), (10, 20, 30, 255))
    arr = np.zeros((30, 40, 3), np.uint8)
    arr[5, 7] = (200, 100, 50)
    png = io.BytesIO()
    Image.fromarray(arr).save(png, "PNG")
    for given in (rgba, arr, png.getvalue(), bytearray(png.getvalue())):
        image = as_image(given)
        assert image.mode == "RGB" and image.size == (40, 30)
    assert as_image(arr).getpixel((7, 5)) == (200, 100, 50) == as_image(png.getvalue()).getpixel((7, 5))
    with pytest.raises(ValueError, match=r"H x W x 3 uint8, got shape \(30, 40\) float64"):
        as_image(np.zeros((30, 40)))
    with pytest.raises(ValueError, match="12 bytes that are no readable image"):
        as_image(b"not an image")
    with pytest.raises(TypeError, match="PNG bytes, got str"):
        as_image("screen.png")


def test_an_unknown_family_is_one_line_and_leaves_no_thread():
    with pytest.raises(ValueError, match="unknown adapter 'qwen9'"):
        Focus("qwen9")
    with pytest.raises(ValueError, match="needs --base-url"):
        Focus("qwen2.5-vl")
    assert _threads() == []


def _spread_grounder() -> ScriptedModel:
    """Each view answers a different point, so the round asks the model to choose among stars."""
    views = iter(range(100))

    def act(image, query, zoomed):
        k = next(views)
        return ModelReply("v", action=click(image.width * (0.2 + 0.15 * k), image.height / 2))

    return ScriptedModel(
        on_act=act,
        on_focal=lambda image, query, **k: ModelReply("p", point=Point(600, 400)),
        on_choose=lambda image, query, **k: ModelReply("2", choice=2),
    )


def test_a_round_returns_its_trace_stats_and_the_star_map_it_chose_on():
    screen = Image.new("RGB", (1200, 800), (245, 245, 245))
    with Focus(_spread_grounder()) as focus:
        first = focus.step(screen, click(100, 100), instruction="open the menu", text="I open the menu")
        assert (first.action, first.refined, first.trigger) == (click(100, 100), False, None)
        assert first.stats == {
            "rf_triggered": 0,
            "rf_calls": 0,
            "rf_prompt_tokens": 0,
            "rf_completion_tokens": 0,
        }
        d = focus.step(np.asarray(screen), click(100, 100), instruction="open the menu")
        assert isinstance(d, Decision) and d.refined and d.trigger == "no-effect"
        rnd = d.trace["round"]
        assert rnd["choice_method"] == "model" and rnd["choice"] == 2 and len(rnd["merged"]) >= 2
        assert d.action.to_dict() == rnd["merged"][1]["action"]
        assert d.stats["rf_triggered"] == 1 and d.stats["rf_calls"] == len(rnd["calls"])
        json.dumps(d.trace)  # JSON-able as it is
        # The map: a pink star at each candidate, the screen elsewhere.
        img = d.choice_image
        assert img is not None and img.size == screen.size
        for c in rnd["merged"]:
            x, y = c["action"]["point"]
            assert img.getpixel((round(x), round(y) - 6)) != screen.getpixel((round(x), round(y) - 6))
        arr = np.asarray(img)
        for c in rnd["merged"]:
            x, y = (round(v) for v in c["action"]["point"])
            near = arr[max(0, y - 10) : y + 10, max(0, x - 10) : x + 10].reshape(-1, 3)
            assert (near == STAR_FILL).all(axis=1).any(), c
        assert focus.rounds == 1
        focus.reset()
        assert focus.rounds == 0
    assert _threads() == []


def test_disabled_focus_passes_everything_through():
    model = _spread_grounder()
    with Focus(model, enabled=False) as focus:
        for _ in range(3):
            d = focus.step(SCREENSHOT, None, instruction="x")
            assert d.action is None and not d.refined and d.stats["rf_calls"] == 0
    assert model.calls == []


def _font(px: int) -> ImageFont.ImageFont:
    return ImageFont.truetype("DejaVuSans.ttf", px)


@pytest.mark.slow
def test_ocr_stand_in_refines_a_click_that_changed_nothing():
    """The offline stand-in (real OCR, no weights) grounds the instruction in the round."""
    screen = Image.new("RGB", (800, 500), "white")
    d = ImageDraw.Draw(screen)
    for i, word in enumerate(["Home", "Settings", "Profile", "Logout"]):
        d.text((40 + i * 180, 40), word, fill="black", font=_font(20))
    d.rectangle((560, 380, 700, 420), outline="black", width=2)
    d.text((590, 388), "Submit", fill="black", font=_font(20))
    png = io.BytesIO()
    screen.save(png, "PNG")
    miss = click(300, 250)
    with Focus("ocr") as focus:
        first = focus.step(png.getvalue(), miss, instruction="click Submit")
        assert first.action == miss and not first.refined
        d = focus.step(np.asarray(screen), miss, instruction="click Submit")
    assert d.refined and d.trigger == "no-effect", d.trace
    p = d.action.point
    assert d.action.type == ActionType.CLICK and 560 <= p.x <= 700 and 380 <= p.y <= 420, d.trace
    assert _threads() == []


def _inside(p: Point | None) -> bool:
    return p is not None and TARGET.left <= p.x <= TARGET.right and TARGET.top <= p.y <= TARGET.bottom


@pytest.mark.slow
def test_a_served_family_from_inside_a_running_loop(capfd):
    """Qwen2.5-VL's answers (``<tool_call>`` in its own pixels) over real HTTP: the caller's
    click beside the target changed nothing, the round lands on it; the OpenAI client is made
    and closed on Focus's loop thread, and nothing is left behind."""
    miss = Action(ActionType.CLICK, Point(TARGET.right + 16, TARGET.center.y))
    responder = model_like("qwen2.5-vl", TARGET_COLOUR)
    with ChatServer(responder, model="m") as srv:
        focus = Focus("qwen2.5-vl", base_url=srv.base_url, model="m", max_pixels=MAX_PIXELS["qwen2.5-vl"])

        async def host():  # a framework's loop, calling the agent synchronously
            asyncio.get_running_loop()
            first = focus.step(SCREENSHOT, miss, instruction="Click the green sync-status square")
            asked = srv.stats.chat_requests
            second = focus.step(SCREENSHOT, miss, instruction="Click the green sync-status square")
            return first, asked, second, focus.model.backend

        first, asked, second, backend = asyncio.run(host())
        assert not responder.errors, responder.errors[0]
        assert first.action == miss and asked == 0  # no call without a trigger
        assert second.refined and second.trigger == "no-effect" and _inside(second.action.point), second.trace
        assert second.stats["rf_calls"] == srv.stats.chat_requests >= 5  # focal, 4 views (+ choice)
        assert second.stats["rf_prompt_tokens"] > 0 and second.stats["rf_completion_tokens"] > 0
        asked = second.trace["round"]["choice_method"] == "model"
        assert (second.choice_image is not None) == asked
        assert backend._loop is focus._loop.loop
        focus.close()
        focus.close()
        assert all(e.client is None for e in backend._endpoints) and focus._loop.loop.is_closed()
    assert _threads() == []
    err = capfd.readouterr().err
    assert "Event loop is closed" not in err and "Exception ignored" not in err, err
