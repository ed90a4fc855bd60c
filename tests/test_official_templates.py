"""Each family's grounding request is its official template, byte for byte.

Hashes are of the upstream texts, taken from the sources named in
adapters/families/prompts/official/SOURCES.md (repository, path, commit); rendering our copy with the
upstream's own placeholders must give the same bytes.
"""

from __future__ import annotations

import hashlib

import pytest
from PIL import Image

from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.base import ChatResponse
from regionfocus.adapters.families.prompting import render
from regionfocus.model import Query

# likaixin2000/ScreenSpot-Pro-GUI-Grounding, models/qwen2_5vl.py @ 588f1f25a59318d49cf2a657e8dc18529c723713:
# the second system text part of get_qwen2_5vl_prompt_msg (with its {{screen_width}} placeholders)
# and guide_text, the assistant pre-fill of ground_only_positive.
QWEN25_SYSTEM_2_SHA256 = "e8bc6d79927d9a1f39477f804981f022b7fd0d004433504c6c11ce0897d296ba"
QWEN25_PREFILL_SHA256 = "9cc8cc77a25303b71f5eb52929c544be82e89b156f3f6018d29f088242f7ea8b"
INSTRUCTION = "open the Layers panel"


class Capture:
    def __init__(self):
        self.requests = []

    async def complete(self, messages, **options):
        self.requests.append({"messages": messages, **options})
        return ChatResponse("")

    async def aclose(self):
        return None


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def _grounding_request(family: str, size=(1920, 1080)) -> dict:
    backend = Capture()
    await get_adapter(family, backend=backend).act(Image.new("RGB", size), Query(INSTRUCTION))
    return backend.requests[0]


def test_our_copies_are_the_upstream_bytes():
    upstream = render(
        "official/qwen25vl_screenspot_system_2.txt",
        screen_width="{{screen_width}}",
        screen_height="{{screen_height}}",
    )
    assert sha(upstream) == QWEN25_SYSTEM_2_SHA256
    assert sha(render("official/qwen25vl_screenspot_prefill.txt")) == QWEN25_PREFILL_SHA256


async def test_qwen25_grounding_is_the_official_screenspot_pro_request():
    req = await _grounding_request("qwen2.5-vl")
    system, user, prefill = req["messages"]
    parts = [p["text"] for p in system["content"]]
    assert parts[0] == "You are a helpful assistant."
    official = render(
        "official/qwen25vl_screenspot_system_2.txt",
        screen_width="{{screen_width}}",
        screen_height="{{screen_height}}",
    )
    assert parts[1] == official.replace("{{screen_width}}", "1932").replace("{{screen_height}}", "1092")
    assert [p["type"] for p in user["content"]] == ["image", "text"]  # image first, as the official eval
    assert user["content"][1]["text"] == INSTRUCTION
    assert prefill == {"role": "assistant", "content": render("official/qwen25vl_screenspot_prefill.txt")}
    assert req["continue_final_message"] is True and req["add_generation_prompt"] is False
    assert req["temperature"] == 0.0


async def test_uitars15_grounding_is_the_ui_tars_package_prompt():
    from ui_tars.prompt import GROUNDING_DOUBAO

    req = await _grounding_request("uitars-1.5")
    (user,) = req["messages"]
    assert user["content"][0] == {"type": "text", "text": GROUNDING_DOUBAO.format(instruction=INSTRUCTION)}
    assert user["content"][1]["type"] == "image"


async def test_uitars15_agent_step_is_the_ui_tars_computer_use_prompt():
    from ui_tars.prompt import COMPUTER_USE_DOUBAO

    backend = Capture()
    adapter = get_adapter("uitars-1.5", backend=backend)
    await adapter.act(Image.new("RGB", (1440, 1440)), Query(INSTRUCTION, "agent"))
    first = backend.requests[0]["messages"][0]
    assert first["content"][0]["text"] == COMPUTER_USE_DOUBAO.format(
        language="English", instruction=INSTRUCTION
    )


async def test_uitars10_grounding_is_the_v1_readme_prompt_with_the_image_first():
    req = await _grounding_request("uitars-1.0")
    (user,) = req["messages"]
    assert user["content"][0]["type"] == "image"
    # bytedance/UI-TARS README_v1.md @ 582f3a7ea5d285ee8ed9e2e84048d1ab01453c49: prompt + instruction
    want = (
        "Output only the coordinate of one point in your response. What element matches the following task: "
    )
    assert user["content"][1] == {"type": "text", "text": want + INSTRUCTION}


@pytest.mark.parametrize("family", ["uitars-1.0", "uitars-1.5", "qwen2.5-vl", "qwen3-vl"])
async def test_a_zoomed_view_gets_the_same_template(family):
    """A candidate request on a view is the grounding request on a smaller screenshot: the
    official template unchanged (no note about magnification), at the view's own size."""
    backend = Capture()
    adapter = get_adapter(family, backend=backend)
    full = Image.new("RGB", (1920, 1080))
    await adapter.act(full, Query(INSTRUCTION))
    await adapter.act(full.crop((0, 0, 960, 540)), Query(INSTRUCTION), zoomed=True)

    def texts(req):
        return [
            p.get("text")
            for m in req["messages"]
            for p in (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}])
        ]

    a, b = (texts(r) for r in backend.requests)
    if family.startswith("qwen"):  # only the stated screen size differs
        a, b = (
            [t for t in a if "resolution" not in (t or "")],
            [t for t in b if "resolution" not in (t or "")],
        )
    assert a == b


async def test_qwen25_request_laid_out_by_the_chat_template_is_the_official_vllm_prompt():
    """The evaluation's vLLM path sends the same request pre-rendered with Qwen's chat template
    (GUIDED_PROMPT): our system parts, instruction and pre-fill, laid out that way, are it."""
    req = await _grounding_request("qwen2.5-vl")
    system, user, prefill = req["messages"]
    rendered = (
        "<|im_start|>system\n"
        + "".join(p["text"] for p in system["content"])
        + "<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
        + user["content"][1]["text"]
        + "<|im_end|>\n<|im_start|>assistant\n"
        + prefill["content"]
    )
    official = render(
        "official/qwen25vl_screenspot_vllm_guided_prompt.txt",
        screen_width="1932",
        screen_height="1092",
        instruction=INSTRUCTION,
    )
    assert rendered == official


async def test_qwen3_grounding_declares_the_cookbook_tool_on_a_1000_screen():
    req = await _grounding_request("qwen3-vl", size=(3840, 2160))
    system, user, prefill = req["messages"]
    parts = [p["text"] for p in system["content"]]
    assert parts[0] == "You are a helpful assistant."
    assert parts[1].startswith("\n\n# Tools\n")
    assert "The screen's resolution is 1000x1000." in parts[1]
    # qwen-agent's current rendering: no name_for_human / args_format keys (SOURCES.md)
    assert (
        '"name_for_human"' not in parts[1]
        and '{"type": "function", "function": {"name": "computer_use"' in parts[1]
    )
    assert prefill["content"].endswith('"coordinate": [')
