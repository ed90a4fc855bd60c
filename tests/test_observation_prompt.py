"""A text observation reaches the model in its own frame: the accessibility tree after the
agent request's text, the screenshot kept only when the observation includes it, and the
A11y-Compressor phases switchable for the ablation."""

from __future__ import annotations

import re

from PIL import Image

from regionfocus.a11y import A11yElement
from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.base import ChatResponse
from regionfocus.geometry import Box
from regionfocus.model import Query

SIZE = (1920, 1080)
ELEMENTS = (
    A11yElement("RootWebArea", "Shop", box=Box(0, 0, 1920, 1080), node_id="1"),
    A11yElement("navigation", "", box=Box(0, 0, 1920, 80), node_id="2", parent="1"),
    A11yElement("link", "Home", box=Box(20, 20, 120, 60), interactive=True, node_id="3", parent="2"),
    A11yElement("main", "", box=Box(0, 80, 1920, 1080), node_id="4", parent="1"),
    A11yElement(
        "button", "Add to cart", box=Box(900, 500, 1100, 560), interactive=True, node_id="5", parent="4"
    ),
)


class Capture:
    def __init__(self):
        self.requests = []

    async def complete(self, messages, **options):
        self.requests.append(messages)
        return ChatResponse("")


async def _request(family: str, observation: str, **query) -> list[dict]:
    backend = Capture()
    adapter = get_adapter(family, backend=backend)
    q = Query("add the item to the cart", "agent", elements=ELEMENTS, observation=observation, **query)
    await adapter.act(Image.new("RGB", SIZE), q)
    return backend.requests[0]


def _last_user(messages):
    return [m for m in messages if m["role"] == "user"][-1]["content"]


async def test_the_tree_is_written_in_the_models_frame_after_its_request():
    content = _last_user(await _request("qwen3-vl", "screenshot+compressed-a11y"))
    assert any(p["type"] == "image" for p in content)
    text = content[-1]["text"]
    assert "accessibility tree (screenshot+compressed-a11y)" in text
    # Qwen3-VL reads 0-1000 relative coordinates: the button's centre (1000, 530) px is (521, 491)
    (x, y) = map(int, re.search(r'"Add to cart" @ \((\d+), (\d+)\)', text).groups())
    assert (x, y) == (521, 491)


async def test_a_text_only_observation_sends_no_screenshot_and_phases_switch():
    full = _last_user(await _request("qwen2.5-vl", "compressed-a11y"))
    assert not any(p["type"] == "image" for p in full)
    reduced = _last_user(
        await _request("qwen2.5-vl", "compressed-a11y", observation_phases=("modal", "reduce"))
    )
    # without semantic structuring there are no region blocks
    assert "CONTENT:" in full[-1]["text"] or "NAVIGATION:" in full[-1]["text"]
    assert "CONTENT:" not in reduced[-1]["text"] and "NAVIGATION:" not in reduced[-1]["text"]
    linear = _last_user(await _request("qwen2.5-vl", "a11y"))
    assert "role\tname" in linear[-1]["text"]
