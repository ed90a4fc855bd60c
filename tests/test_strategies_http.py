"""A strategy through the real adapter and HTTP path: Qwen2.5-VL's adapter over the OpenAI
backend against a local chat-completions server that answers in Qwen2.5-VL's format from the
image it receives. Proves that the server's token counts and the measured latency land in the
strategy's cost record, that image tokens are the smart_resized image's 28 px cells, and that
sampling goes out as one request with ``n`` and ``logprobs``."""

from __future__ import annotations

import asyncio
import json
import math

import numpy as np
import pytest
from PIL import Image, ImageDraw

from regionfocus.actions import click
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.adapters.families.qwen import Qwen3Adapter, Qwen25Adapter
from regionfocus.adapters.families.resize import smart_resize
from regionfocus.geometry import Box, Point
from regionfocus.strategies import GuiRC, MapChoice, ReGround, ScreenSeekeR, UIZoomer, ZoomClick
from tests.chat_server import ChatServer, Reply, request_images, request_text

pytestmark = pytest.mark.slow

GREEN = (30, 160, 90)
TARGET = Box(2790, 590, 2830, 630)
INSTR = "the green save button"


def screenshot() -> Image.Image:
    img = Image.new("RGB", (3840, 2160), (240, 241, 243))
    ImageDraw.Draw(img).rectangle((2790, 590, 2829, 629), fill=GREEN)
    return img


def image_tokens_of(img: Image.Image) -> int:
    return (img.width // 28) * (img.height // 28)


def find(img: Image.Image) -> tuple[int, int]:
    arr = np.asarray(img.convert("RGB"), dtype=np.int16)
    ys, xs = np.nonzero(np.abs(arr - np.array(GREEN, dtype=np.int16)).max(axis=2) <= 30)
    if len(xs) == 0:
        return img.width // 2, img.height // 2
    return round((xs.min() + xs.max() + 1) / 2), round((ys.min() + ys.max() + 1) / 2)


def qwen_responder(body: dict) -> Reply:
    """Answers a grounding request in the resized image's pixels, continuing the pre-fill when
    asked to; prompt tokens = the image's 28 px cells + the words (as a real server counts,
    near enough); ``n`` choices with log-probabilities when asked for them."""
    (img,) = request_images(body)
    x, y = find(img)
    words = len(request_text(body).split())
    prompt_tokens = image_tokens_of(img) + words
    if "<element>" in request_text(body):
        plan = "The <element>green save button</element> in the <area>top toolbar</area>."
        return Reply.text(plan, prompt_tokens=prompt_tokens)
    if "Selected point" in request_text(body):  # a choice among numbered stars
        return Reply.text("Selected point: 2", prompt_tokens=prompt_tokens)
    if '"result"' in request_text(body):
        check = 'It is the marked one. {"result": "is_target", "new_instruction": null}'
        return Reply.text(check, prompt_tokens=prompt_tokens)
    cont = f"{x}, {y}]}}}}\n</tool_call>"
    if not body.get("continue_final_message"):
        cont = (
            '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": ['
            + cont
        )
    n = int(body.get("n") or 1)
    choices = []
    for i in range(n):
        dx = (i % 3) - 1  # a little spread among samples
        text = cont.replace(f"{x}, {y}", f"{x + dx}, {y}", 1)
        lp = {
            "content": [
                {"token": t, "logprob": -0.05, "bytes": None, "top_logprobs": []} for t in text.split()
            ]
        }
        choices.append(
            {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": lp if body.get("logprobs") else None,
            }
        )
    return Reply(
        content=cont,
        choices=choices if n > 1 or body.get("logprobs") else None,
        prompt_tokens=prompt_tokens,
        completion_tokens=len(cont.split()) * n,
    )


@pytest.fixture(scope="module")
def server():
    with ChatServer(qwen_responder) as srv:
        yield srv


def adapter(server, cls=Qwen25Adapter, **kw):
    return cls(OpenAIBackend([server.base_url], model="m", max_retries=0), **kw)


def test_reground_over_http_records_server_tokens_latency_and_image_tokens(server):
    shot = screenshot()
    model = adapter(server, max_pixels=1280 * 28 * 28)  # a reduced budget: the crop magnifies
    baseline = click(2850, 650)
    res = asyncio.run(ReGround().run(model, shot, INSTR, baseline))
    (call,) = res.calls
    crop = Box.from_list(res.steps[0]["crop"])
    assert (crop.width, crop.height) == (1024, 1024)
    h, w = smart_resize(1024, 1024, 28, 3136, 1280 * 28 * 28)
    assert call.seen_size == [w, h] and call.image_size == [w, h]
    assert call.image_tokens == (w // 28) * (h // 28) == model.image_tokens((1024, 1024))
    body = server.stats.bodies[-1]
    words = len(request_text(body).split())
    assert call.prompt_tokens == call.image_tokens + words and call.text_tokens == words
    assert call.completion_tokens > 0 and call.latency_s > 0 and call.endpoint == server.base_url
    assert res.point.distance(TARGET.center) <= 2  # within a pixel of the crop's resize grid
    d = res.to_dict()
    assert d["totals"]["prompt_tokens"] == call.prompt_tokens
    json.dumps(d)  # the record is plain JSON


def test_qwen3_counts_32_px_cells():
    m = Qwen3Adapter()
    w, h = m.input_size((3840, 2160))
    assert m.image_tokens((3840, 2160)) == math.ceil(w / 32) * math.ceil(h / 32)


def test_ui_zoomer_samples_in_one_request_with_n_and_logprobs(server):
    server.reset_stats()
    model = adapter(server)
    res = asyncio.run(UIZoomer(n=5).run(model, screenshot(), INSTR, None))
    (body,) = server.stats.bodies
    assert body["n"] == 5 and body["logprobs"] is True and body["temperature"] == 0.9
    (call,) = res.calls
    assert call.kind == "sample[n=5]" and call.n == 5 and call.prompt_tokens > call.image_tokens
    step = res.steps[0]
    assert step["confidence"] == pytest.approx(math.exp(-0.05), abs=1e-3)
    assert step["gate"] == "accept" and res.point.distance(TARGET.center) <= 3


def test_gui_rc_and_screenseeker_over_http(server):
    model = adapter(server)
    res = asyncio.run(GuiRC(n=8).run(model, screenshot(), INSTR, None))
    assert res.steps[0]["votes"] >= 2 and res.point.distance(TARGET.center) <= 3
    seek = asyncio.run(ScreenSeekeR().run(model, screenshot(), INSTR, None))  # the adapter plans too
    kinds = [c.kind for c in seek.calls]
    assert (
        kinds[0] == "plan[d0]" and kinds[-1].startswith("check") and seek.point.distance(TARGET.center) <= 3
    )
    assert seek.calls[0].image_tokens == model.image_tokens((3840, 2160))
    # our count of each image's tokens matches the server's (which counts the image it received):
    # what is left of the prompt is the words alone, not thousands of unexplained tokens
    assert all(c.text_tokens is not None and 0 < c.text_tokens < 1000 for c in seek.calls)


def test_map_choice_sends_the_stars_drawn_on_the_model_size_copy(server):
    """A strategy's choice goes through the core's one merge-and-choose: the stars are drawn on
    the adapter's own model-size copy (what RegionFocus's rounds send), and the call is costed
    as the screenshot that copy stands for."""
    shot, model = screenshot(), adapter(server)
    res = asyncio.run(MapChoice(ZoomClick(depth=0)).run(model, shot, INSTR, click(400, 300)))
    step = next(s for s in res.steps if s.get("stage") == "choose")
    stars = res.candidates  # ZoomClick's own point first, so the numbering is theirs (the trace rounds)
    assert all(p.distance(Point.from_list(q)) < 1e-3 for p, q in zip(stars, step["candidates"], strict=True))
    assert len(stars) > 2 and step["choice"] == 2 and res.point == stars[1]
    (sent,) = request_images(server.stats.bodies[-1])
    drawn = asyncio.run(model.annotate(shot, stars, [str(n) for n in range(1, len(stars) + 1)]))
    assert sent.size == model.input_size(shot.size)
    assert np.array_equal(np.asarray(sent.convert("RGB")), np.asarray(drawn))
    call = res.calls[-1]
    assert call.kind == "choose" and call.image_size == [3840, 2160]
    assert call.seen_size == list(model.input_size(shot.size))
