"""End to end, per model family, over real HTTP: RegionFocus recovers a near miss.

The server is the local chat-completions server answering through :mod:`tests.model_like`, a
responder that looks at each image it is sent and answers like the family's model: in its own
syntax and frame, after its own pre-fill, with natural prose to our judge and choice questions.
It misses a target that looks small (the full screenshot, downscaled to a small pixel budget)
by a little and hits it when it looks large (a zoomed view), as real grounding models do on
high-resolution screens. The agent runs unchanged: the real adapter, the real OpenAI backend,
the real orchestrator; only the model behind the HTTP port is a stand-in.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from regionfocus import RegionFocusConfig
from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.agent import RegionFocusAgent, StaticPrediction
from regionfocus.geometry import Box, Point
from regionfocus.model import Verdict

from .chat_server import ChatServer, request_images, request_text
from .model_like import FAMILIES, Seen, find_stars, model_like, request_kind

SCREEN = (2560, 1440)
TARGET_COLOUR = (0, 160, 80)
TARGET = Box(1700, 900, 1712, 912)  # 12 x 12 px: about 5.5 px once the screenshot is downscaled
INSTRUCTION = "Click the green sync-status square next to the Remote label"
# A small budget so the whole screenshot shrinks to ~46 % and the target looks tiny, while a
# 0.3-wide view is enlarged and shows it large. Same pixel budget for the 32-factor family.
MAX_PIXELS = {"uitars-1.0": 1024 * 28 * 28, "uitars-1.5": 1024 * 28 * 28, "qwen2.5-vl": 1024 * 28 * 28}
MAX_PIXELS["qwen3-vl"] = 784 * 32 * 32


def _font(px: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.truetype("DejaVuSans.ttf", px)
    except OSError:
        return ImageFont.load_default(size=px)


def build_screen() -> Image.Image:
    """A light desktop-application screenshot: title bar, menu, sidebar, panels of text and
    coloured icons, and one small green square (the target) with empty space to its right."""
    img = Image.new("RGB", SCREEN, (246, 247, 249))
    d = ImageDraw.Draw(img)
    d.rectangle((0, 0, SCREEN[0], 44), fill=(52, 58, 70))
    d.text((24, 10), "Workbench — project.rf", fill=(235, 235, 235), font=_font(20))
    d.rectangle((0, 44, SCREEN[0], 84), fill=(228, 231, 236))
    for i, word in enumerate(["File", "Edit", "View", "Branch", "Tools", "Window", "Help"]):
        d.text((24 + i * 110, 54), word, fill=(40, 40, 40), font=_font(18))
    d.rectangle((0, 84, 360, SCREEN[1]), fill=(236, 238, 242))
    for i, word in enumerate(["Explorer", "Search", "Source control", "Run", "Extensions", "Settings"]):
        y = 120 + i * 56
        d.rectangle((24, y, 40, y + 16), fill=[(40, 90, 220), (240, 150, 20), (220, 50, 50)][i % 3])
        d.text((56, y - 2), word, fill=(50, 50, 50), font=_font(18))
    for k, (x0, y0) in enumerate([(420, 140), (1320, 140), (420, 760), (1320, 760)]):
        d.rectangle((x0, y0, x0 + 820, y0 + 560), outline=(200, 204, 210), width=2, fill=(252, 252, 253))
        d.text((x0 + 20, y0 + 16), f"Panel {k + 1}", fill=(30, 30, 30), font=_font(22))
        for j in range(8):
            y = y0 + 70 + j * 56
            icon = [(120, 60, 200), (40, 90, 220), (220, 50, 50), (240, 150, 20)][(j + k) % 4]
            d.rectangle((x0 + 24, y, x0 + 36, y + 12), fill=icon)
            d.text(
                (x0 + 52, y - 4),
                f"Item {k * 8 + j + 1}: settings and details",
                fill=(70, 70, 70),
                font=_font(16),
            )
    # The target row: a label, then the target, then nothing for a while.
    d.rectangle((1540, 880, 2000, 932), fill=(252, 252, 253))
    d.text((1560, 896), "Remote", fill=(40, 40, 40), font=_font(16))
    d.rectangle((TARGET.left, TARGET.top, TARGET.right - 1, TARGET.bottom - 1), fill=TARGET_COLOUR)
    return img


SCREENSHOT = build_screen()


@pytest.fixture(scope="module")
def server():
    with ChatServer(model="m") as srv:
        yield srv


async def _predict(server: ChatServer, family: str, config: RegionFocusConfig, **seeing):
    responder = model_like(family, TARGET_COLOUR, **seeing)
    server.set_responder(responder)
    server.reset_stats()
    backend = OpenAIBackend([server.base_url], model="m")
    try:
        adapter = get_adapter(family, backend=backend, max_pixels=MAX_PIXELS[family])
        prediction = await RegionFocusAgent(adapter, config).predict(SCREENSHOT, INSTRUCTION)
    finally:
        await backend.aclose()
    return prediction, responder, list(server.stats.bodies)


def _inside(p: Point | None) -> bool:
    return p is not None and TARGET.left <= p.x <= TARGET.right and TARGET.top <= p.y <= TARGET.bottom


def _story(prediction: StaticPrediction, log: list[tuple[str, str]]) -> str:
    """What happened, for assertion messages."""
    lines = [f"baseline={prediction.baseline} verdict={prediction.verdict} final={prediction.final}"]
    for r in prediction.rounds:
        pts = [c.action.point for c in r.merged]
        lines.append(f"round: focal={r.focal} merged={pts} choice={r.choice} method={r.choice_method}")
    lines += [f"  {kind}: {answer!r}" for kind, answer in log]
    return "\n".join(lines)


def _check_template(family: str, body: dict) -> None:
    """The baseline request is the family's own grounding template."""
    messages = body["messages"]
    (image,) = request_images(body)
    if family.startswith("qwen"):
        system = messages[0]
        assert system["role"] == "system"
        text = (
            " ".join(p["text"] for p in system["content"])
            if isinstance(system["content"], list)
            else system["content"]
        )
        assert '"name": "computer_use"' in text
        w, h = (1000, 1000) if family == "qwen3-vl" else image.size
        assert f"The screen's resolution is {w}x{h}." in text
        last = messages[-1]
        assert last["role"] == "assistant", "no assistant pre-fill"
        assert last["content"].startswith("<tool_call>") and last["content"].rstrip().endswith(
            '"coordinate": ['
        )
        assert body.get("continue_final_message") is True and body.get("add_generation_prompt") is False
        return
    (user,) = messages
    kinds = [p["type"] for p in user["content"]]
    text = next(p["text"] for p in user["content"] if p["type"] == "text")
    if family == "uitars-1.0":
        assert kinds == ["image_url", "text"]  # the v1 README: image before text
        assert text == (
            "Output only the coordinate of one point in your response. "
            f"What element matches the following task: {INSTRUCTION}"
        )
    else:
        from ui_tars.prompt import GROUNDING_DOUBAO

        assert kinds == ["text", "image_url"]
        assert text == GROUNDING_DOUBAO.format(instruction=INSTRUCTION)


@pytest.mark.parametrize("family", list(FAMILIES))
async def test_regionfocus_recovers_the_near_miss(server, family):
    prediction, responder, bodies = await _predict(server, family, RegionFocusConfig())
    assert not responder.errors, responder.errors[0]
    story = _story(prediction, responder.log)

    _check_template(family, bodies[0])
    base = prediction.baseline.point if prediction.baseline else None
    assert base is not None and not _inside(base), story
    assert base.distance(TARGET.center) < 60, story  # a near miss, not a wild guess
    assert prediction.verdict == Verdict.NO, story  # the judge's prose was read as a rejection
    assert prediction.trigger == "self-judge", story
    (rnd,) = prediction.rounds
    if len(rnd.merged) >= 2:
        assert any(kind == "choose" for kind, _ in responder.log), story
        assert rnd.choice_method == "model", story
    assert prediction.final is not None and _inside(prediction.final.point), story


@pytest.mark.parametrize("family", list(FAMILIES))
async def test_a_hit_is_confirmed_and_kept(server, family):
    """A model that sees the target well enough (here: one that calls 5 px large) hits it;
    the judge's natural "yes" is read and no round is spent."""
    prediction, responder, _ = await _predict(server, family, RegionFocusConfig(), small_side=4)
    assert not responder.errors, responder.errors[0]
    story = _story(prediction, responder.log)
    assert _inside(prediction.baseline.point if prediction.baseline else None), story
    assert prediction.verdict == Verdict.YES, story
    assert prediction.rounds == [] and prediction.final == prediction.baseline, story


async def test_text_aggregation_picks_the_listed_candidate(server):
    family = "uitars-1.0"
    config = RegionFocusConfig(aggregation="text", history="text")
    prediction, responder, bodies = await _predict(server, family, config)
    assert not responder.errors, responder.errors[0]
    story = _story(prediction, responder.log)

    assert prediction.verdict == Verdict.NO, story
    (rnd,) = prediction.rounds
    assert len(rnd.merged) >= 2, story
    choose = [b for b in bodies if request_kind(request_text(b)) == "choose"]
    assert choose, story
    # No stars on the choice image: the candidates travel as coordinates in the text.
    (image,) = request_images(choose[0])
    assert find_stars(np.asarray(image.convert("RGB"), dtype=np.int16)) == []
    assert "Candidate 2:" in request_text(choose[0]), request_text(choose[0])
    assert rnd.choice_method == "model", story
    assert prediction.final is not None and _inside(prediction.final.point), story


# ------------------------------------------------------------------ the responder itself
def _image_body(image: Image.Image, text: str) -> dict:
    from regionfocus.adapters.backends.encoding import encode_data_url

    content = [
        {"type": "image_url", "image_url": {"url": encode_data_url(image)}},
        {"type": "text", "text": text},
    ]
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


@pytest.mark.parametrize("on_target", ["1", "3"])
def test_responder_reads_the_number_of_the_star_on_the_target(on_target):
    """The double's choice comes from seeing: stars drawn by the product, the image shrunk as
    the adapter shrinks it, the on-target star's tag read by OCR, whatever its number."""
    from regionfocus.adapters.families.resize import resize_for_model
    from regionfocus.stars import draw_stars

    c = TARGET.center
    points = [Point(c.x + 18, c.y), Point(c.x, c.y), Point(c.x + 14, c.y - 16)]
    labels = [n for n in "123" if n != on_target]
    labels.insert(1, on_target)
    shown = resize_for_model(draw_stars(SCREENSHOT, points, labels), 28, 3136, MAX_PIXELS["qwen2.5-vl"])
    answer = model_like("uitars-1.0", TARGET_COLOUR)(_image_body(shown.image, "Selected point: N")).content
    assert answer.endswith(f"Selected point: {on_target}"), answer


def _grounding_body(prefill: bool, cont: bool) -> dict:
    from regionfocus.adapters.backends.encoding import encode_data_url

    img = Image.new("RGB", (560, 336), (246, 247, 249))
    ImageDraw.Draw(img).rectangle((100, 100, 139, 139), fill=TARGET_COLOUR)  # large: hit at the centre
    messages: list[dict] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": encode_data_url(img)}},
                {"type": "text", "text": INSTRUCTION},
            ],
        },
    ]
    body: dict = {"model": "m", "messages": messages}
    if prefill:
        pre = '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": ['
        messages.append({"role": "assistant", "content": pre})
    if cont:
        body.update(continue_final_message=True, add_generation_prompt=False)
    return body


def test_responder_continues_a_prefill_only_when_asked():
    qwen = model_like("qwen2.5-vl", TARGET_COLOUR)
    assert qwen(_grounding_body(True, True)).content == "120, 120]}}\n</tool_call>"
    whole = qwen(_grounding_body(True, False)).content
    assert whole.startswith("<tool_call>\n") and '"coordinate": [120, 120]' in whole
    rel = model_like("qwen3-vl", TARGET_COLOUR)(_grounding_body(False, False)).content
    assert '"coordinate": [214, 357]' in rel  # 0-1000 of the 560 x 336 image
    tars = model_like("uitars-1.0", TARGET_COLOUR)(_grounding_body(False, False)).content
    assert tars.startswith("Thought: ") and "click(start_box='<|box_start|>(214,357)<|box_end|>')" in tars


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('Provide your final answer in this format: "Selected point: #"', "choose"),
        ("Reply with one line: Choice: N", "choose"),
        ('end with a final line that is exactly "Verdict: YES" or "Verdict: NO"', "judge"),
        ("I highlighted a pink star on the image, Is this pink star position correct and precise?", "judge"),
        ("Numbered pink stars mark points already tried. Give the most relevant point.", "focal"),
        ("Give one rectangle as a bbox [x1, y1, x2, y2].", "region"),
        (INSTRUCTION, "ground"),
    ],
)
def test_request_kinds(text, kind):
    assert request_kind(text) == kind


def test_seen_near_miss_and_centre():
    small = Seen((1000, 600), (100.0, 100.0, 106.0, 106.0))
    assert small.small and not small.contains(small.aim())
    large = Seen((1000, 600), (100.0, 100.0, 120.0, 120.0))
    assert not large.small and large.aim() == (110.0, 110.0)
    assert Seen((1000, 600), None).aim() is None
