"""Each family's grounding request is its official template, byte for byte.

Hashes are of the upstream texts, taken from the sources named in
adapters/families/prompts/official/SOURCES.md (repository, path, commit); rendering our copy with the
upstream's own placeholders must give the same bytes.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from PIL import Image

from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.base import ChatResponse
from regionfocus.adapters.families.prompting import render
from regionfocus.geometry import Point
from regionfocus.model import Query

# likaixin2000/ScreenSpot-Pro-GUI-Grounding, models/qwen2_5vl.py @ 588f1f25a59318d49cf2a657e8dc18529c723713:
# the second system text part of get_qwen2_5vl_prompt_msg (with its {{screen_width}} placeholders)
# and guide_text, the assistant pre-fill of ground_only_positive.
QWEN25_SYSTEM_2_SHA256 = "e8bc6d79927d9a1f39477f804981f022b7fd0d004433504c6c11ce0897d296ba"
QWEN25_PREFILL_SHA256 = "9cc8cc77a25303b71f5eb52929c544be82e89b156f3f6018d29f088242f7ea8b"
INSTRUCTION = "open the Layers panel"


class Capture:
    def __init__(self, answer: str = ""):
        self.requests = []
        self.answer = answer

    async def complete(self, messages, **options):
        self.requests.append({"messages": messages, **options})
        return ChatResponse(self.answer)

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


# ------------------------------------------------------------------ RegionFocus round requests
# tiangeluo/RegionFocus @ f69575db (SOURCES.md): the authors' texts for each family and request.
ROUND_FILES = {
    "qwen2.5-vl": {
        "focal": "official/rf_official_qwen25vl_focal.txt",
        "judge": "official/rf_official_qwen25vl_judge.txt",
        "zoom": "official/rf_official_qwen25vl_zoom.txt",
        "select": "official/rf_official_qwen25vl_select.txt",
    },
    # models/uitars_RegionFocus.py serves UI-TARS-72B-DPO / 7B-DPO (1.0); 1.5 gets the same texts.
    **{
        family: {
            "focal": "official/rf_official_ground.txt",
            "judge": "official/rf_official_uitars_judge.txt",
            "zoom": "official/rf_official_uitars_zoom.txt",
            "select": "official/rf_official_uitars_select.txt",
        }
        for family in ("uitars-1.0", "uitars-1.5")
    },
}


def _round_request(req: dict) -> tuple[list[dict], dict]:
    """(system parts, user turn) of a one-question request; no pre-fill."""
    assert "continue_final_message" not in req
    *system, user = req["messages"]
    assert user["role"] == "user" and [p["type"] for p in user["content"]] == ["image", "text"]
    return (system[0]["content"] if system else []), user


@pytest.mark.parametrize("family", sorted(ROUND_FILES))
async def test_regionfocus_round_requests_are_the_authors_texts(family):
    """Focal, judge and selection in the static setting: the authors' text with the instruction
    (and the number of stars) filled in, after the image, in one user turn; Qwen2.5-VL's focal
    and selection after the grounding request's computer_use system prompt, its judge alone."""
    from regionfocus.actions import Action, ActionType
    from regionfocus.geometry import Point
    from regionfocus.model import Avoid, Option

    backend = Capture()
    adapter = get_adapter(family, backend=backend)
    shot = Image.new("RGB", (1920, 1080))
    query = Query(INSTRUCTION)
    await adapter.act(shot, query)
    grounding_system = backend.requests[0]["messages"][0]["content"] if family.startswith("qwen") else []
    files = ROUND_FILES[family]
    assert adapter.round_prompts == files

    await adapter.propose_point(shot, query, Avoid())
    await adapter.judge(shot, query, Point(100, 100))
    stars = [Option(i, Action(ActionType.CLICK, Point(100 * i, 100)), True) for i in (1, 2, 3)]
    await adapter.choose(shot, query, stars)
    focal, judge, select = (_round_request(r) for r in backend.requests[1:])
    assert focal[1]["content"][1]["text"] == render(files["focal"], instruction=INSTRUCTION)
    assert judge[1]["content"][1]["text"] == render(files["judge"], instruction=INSTRUCTION)
    assert select[1]["content"][1]["text"] == render(files["select"], instruction=INSTRUCTION, n=3)
    assert "potential points (numbered 1-3)" in select[1]["content"][1]["text"]
    assert focal[0] == select[0] == grounding_system and judge[0] == []

    # Where the authors' code has no text: ours (stars to avoid, a retry, a text option, a live task).
    await adapter.propose_point(shot, query, Avoid([Point(5, 5)]))
    await adapter.choose(shot, query, stars, retry=1)
    await adapter.choose(shot, query, [*stars, Option(4, Action(ActionType.TYPE, text="x"), False)])
    await adapter.judge(shot, Query(INSTRUCTION, "agent"), Point(100, 100))
    for req in backend.requests[4:]:
        text = req["messages"][-1]["content"][-1]["text"]
        assert not any(text == render(f, instruction=INSTRUCTION, n=3) for f in files.values())
        assert "already tried" in text or "Selected point: N" in text or "Verdict: YES" in text


async def test_qwen3_rounds_keep_our_texts():
    assert get_adapter("qwen3-vl").round_prompts == {}


def _answer_at(family: str, image: Image.Image, fx: float, fy: float) -> str:
    """A ``family`` answer at (fx, fy) of the image it received, in its own frame and in the
    format the authors' code parses (Qwen: a computer_use tool call; UI-TARS: bare "(x,y)")."""
    if family == "uitars-1.0":
        return f"({round(fx * 1000)},{round(fy * 1000)})"
    x, y = round(fx * image.width), round(fy * image.height)
    if family == "uitars-1.5":
        return f"({x},{y})"
    call = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [x, y]}}
    return "<tool_call>\n" + json.dumps(call) + "\n</tool_call>"


@pytest.mark.parametrize("family", sorted(ROUND_FILES))
async def test_static_prediction_over_http_sends_the_authors_texts_and_reads_their_answers(family):
    """A whole static prediction through the HTTP backend: the bodies the server receives carry
    the authors' judge, focal and selection texts, and answers in their formats are read (a
    rejection in prose containing "not", a focal point, "Selected point: 2")."""
    from regionfocus.adapters.backends.openai_http import OpenAIBackend
    from regionfocus.agent import RegionFocusAgent
    from tests.chat_server import ChatServer, request_images, request_text

    files = ROUND_FILES[family]
    seen = []

    def respond(body):
        text = request_text(body).split("\n")[-1] if family.startswith("qwen") else request_text(body)
        (image,) = request_images(body)
        if text == render(files["judge"], instruction=INSTRUCTION):
            seen.append("judge")
            return "NO, the pink star is on the menu bar, not on the Layers panel button."
        if text == render(files["focal"], instruction=INSTRUCTION):
            seen.append("focal")
            return _answer_at(family, image, 0.5, 0.5)
        if text.startswith("In the image, I've identified 4 potential points (numbered 1-4)"):
            assert text == render(files["select"], instruction=INSTRUCTION, n=4)
            seen.append("select")
            return 'Point 1 is on the title bar.\nPoint 2 sits on the "Layers" button.\nSelected point: 2'
        seen.append("act")  # the baseline, then one request per view: a quarter into the image
        return _answer_at(family, image, 0.25, 0.25)

    with ChatServer(respond) as srv:
        backend = OpenAIBackend([srv.base_url], model="m", max_retries=0)
        pred = await RegionFocusAgent(get_adapter(family, backend=backend)).predict(
            Image.new("RGB", (1920, 1080), "white"), INSTRUCTION
        )
        await backend.aclose()
    assert seen[:3] == ["act", "judge", "focal"] and seen[-1] == "select" and seen.count("act") == 5
    assert pred.verdict.value == "no" and pred.trigger == "self-judge"
    (rnd,) = pred.rounds
    assert rnd.focal_source == "model" and abs(rnd.focal.x - 960) < 2 and abs(rnd.focal.y - 540) < 2
    assert len(rnd.merged) == 4 and rnd.choice == 2 and rnd.choice_method == "model"
    assert pred.final == rnd.merged[1].action


@pytest.mark.parametrize("family", sorted(ROUND_FILES))
async def test_view_request_is_the_authors_zoom_text_and_reads_their_bare_coordinates(family):
    """``locate_in_view``: the authors' zoom text after the view (Qwen2.5-VL: after a
    computer_use system prompt stating the view's own size, no pre-fill); UI-TARS answers
    "x,y" as the zoom text asks, read as a click in the view's pixels."""
    view = Image.new("RGB", (1280, 720))
    backend = Capture()
    adapter = get_adapter(family, backend=backend)
    shown = (await adapter.model_image(view)).size
    x, y = (400, 300) if family == "uitars-1.0" else (shown[0] * 4 // 10, shown[1] * 3 // 10)
    # Qwen2.5-VL: a tool call; UI-TARS: "x,y" (its frame), as the zoom text asks.
    backend.answer = (
        _answer_at(family, Image.new("RGB", shown), 0.4, 0.3) if family.startswith("qwen") else f"{x},{y}"
    )
    reply = await adapter.locate_in_view(view, Query(INSTRUCTION))
    system, user = _round_request(backend.requests[0])
    assert user["content"][1]["text"] == render(ROUND_FILES[family]["zoom"], instruction=INSTRUCTION)
    if family.startswith("qwen"):
        assert system == adapter.system_parts(*shown)
        assert f"{shown[0]}x{shown[1]}" in system[1]["text"]
    else:
        assert system == []
    assert reply.point.distance(Point(512, 216)) < 2.5 and reply.action.type.value == "click"
    # A live task's view: the family's own request.
    await adapter.locate_in_view(view, Query(INSTRUCTION, "agent"))
    assert render(ROUND_FILES[family]["zoom"], instruction=INSTRUCTION) not in str(backend.requests[1])
