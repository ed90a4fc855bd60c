"""MVP's requests as its official code sends them (ZJUSCL/MVP @ 988ff3c61b9f7632d780ae27c83260de75b3c95f,
``mvp_sspro.py``): its ``SYSTEM_PROMPT`` with the size of the image sent, the image, the
instruction; at most 4096 x 2160 pixels (3136 at least); 32 new tokens; the answer's first
"(x, y)". Through every family's adapter, the answer format the request asks for holds the
token the attention pass reads (","), as Qwen's tokenizer splits it; UI-TARS-1.5's own
grounding prompt, which MVP used to send it, asks for ``<point>x y</point>`` and holds none."""

from __future__ import annotations

import asyncio

import pytest
import regex
from PIL import Image

from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.transformers_local import SEPARATOR
from regionfocus.adapters.families.resize import smart_resize
from regionfocus.adapters.registry import families
from regionfocus.geometry import Point
from regionfocus.model import Query
from regionfocus.strategies.mvp import MVP_PROMPT, read_xy
from regionfocus.strategies.protocol import PromptableModel

# mvp_sspro.py lines 22-29, SYSTEM_PROMPT.strip(), as the code formats it.
OFFICIAL = (
    "You are an expert UI element locator. Given a GUI image and a user's element description, "
    "provide the coordinates of the specified element as a single (x,y) point. The image "
    "resolution is height {height} and width {width}. For elements with area, return the center "
    "point.\n\nOutput the coordinate pair exactly:\n(x,y)"
)
# Qwen2/2.5-VL's pre-tokenisation split (tokenizer.json's Split regex): a BPE token never
# crosses it, so a piece of its own is a token of its own.
QWEN_SPLIT = regex.compile(
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
    r"""\s*[\r\n]+|\s+(?!\S)|\s+"""
)
HOSTED = {"claude": "claude-opus-4-7", "openai": "gpt-5.5", "gemini": "gemini-2.5-flash"}
SHOT = Image.new("RGB", (1280, 720), (228, 228, 228))


def adapter_of(family: str):
    return get_adapter(family, **({"model": HOSTED[family]} if family in HOSTED else {}))


def request(adapter, image: Image.Image):
    resized = asyncio.run(adapter.model_image(image))
    prompt = asyncio.run(
        adapter.task_prompt_async("grounding", resized, image.size, Query("the save button"), False)
    )
    return resized, prompt


@pytest.mark.parametrize("family", families())
def test_every_family_sends_mvps_own_request_whose_answer_holds_the_separator(family):
    adapter = adapter_of(family)
    assert isinstance(adapter, PromptableModel)
    mvp = adapter.prompted(MVP_PROMPT)
    resized, prompt = request(mvp, SHOT)
    system, user = prompt.messages
    text = system["content"][0]["text"]
    assert system["role"] == "system" and text == OFFICIAL.format(height=resized.height, width=resized.width)
    assert [p["type"] for p in user["content"]] == ["image", "text"] and user["content"][1][
        "text"
    ] == "the save button"
    assert not prompt.prefill and mvp.max_tokens == 32
    # the answer format it asks for, and the token the attention pass reads in it
    asked = text.rsplit("\n", 1)[1]
    assert asked == "(x,y)" and SEPARATOR in asked
    answer = "(1203,301)"
    assert SEPARATOR in QWEN_SPLIT.findall(answer)  # a token of its own
    # read in the family's frame, back to screenshot pixels
    action = mvp._parse_answer(answer, answer, SHOT.size)
    assert action is not None and action.point == mvp.from_model(1203, 301, SHOT.size)
    # the family's own requests stay its own (GTA1's own is this very text: MVP took it from there)
    assert adapter.own_prompt is None
    assert (request(adapter, SHOT)[1].messages[0] == system) == (family == "gta1")


def test_uitars_15s_own_grounding_prompt_has_no_separator_in_its_answer_format():
    """Why MVP on UI-TARS-1.5 used to run the grid: its own prompt asks for
    ``click(point='<point>x1 y1</point>')``, whose coordinates hold no ","."""
    _, prompt = request(get_adapter("uitars-1.5"), SHOT)
    own = prompt.messages[0]["content"][0]["text"]
    assert "<point>x1 y1</point>" in own and "(x,y)" not in own
    assert SEPARATOR not in QWEN_SPLIT.findall("click(point='<point>1203 301</point>')")


@pytest.mark.parametrize(
    ("family", "size", "sent"),
    [
        ("uitars-1.5", (3840, 2160), (3836, 2156)),  # under the cap: as the family's own resize
        ("uitars-1.5", (5120, 2880), (3948, 2212)),  # the official 4096 x 2160 cap (ours: 16384 x 28^2)
        ("qwen3-vl", (5120, 2880), (3936, 2208)),  # the family's factor 32 in the same bounds
    ],
)
def test_images_are_resized_within_the_official_bounds(family, size, sent):
    mvp = adapter_of(family).prompted(MVP_PROMPT)
    factor = 32 if family == "qwen3-vl" else 28
    h, w = smart_resize(size[1], size[0], factor, 3136, 4096 * 2160)
    assert (w, h) == sent == mvp.input_size(size) and w * h <= 4096 * 2160
    own = adapter_of(family).input_size(size)
    assert (own == sent) == (size == (3840, 2160))  # the family's own cap lets 5K through larger
    resized = Image.new("RGB", mvp.input_size(size))  # as model_image resizes it (no 5K resample here)
    prompt = asyncio.run(mvp.task_prompt_async("grounding", resized, size, Query("the save button"), False))
    assert (
        resized.size == sent
        and f"height {sent[1]} and width {sent[0]}" in prompt.messages[0]["content"][0]["text"]
    )


def test_the_answer_is_read_as_the_code_reads_it():
    assert read_xy("(1203,301)") == (1203.0, 301.0)
    assert read_xy("The point is (12.5, 7) or (1, 2)") == (12.5, 7.0)  # the first pair
    assert read_xy("<point>1203 301</point>") is None and read_xy("[1203, 301]") is None
    mvp = get_adapter("qwen3-vl").prompted(MVP_PROMPT)  # a 0-1000 family: its own frame
    assert mvp._parse_answer("(500,250)", "(500,250)", (3840, 2160)).point == Point(1920, 540)
    assert mvp._parse_answer("no idea", "no idea", (3840, 2160)) is None


def test_a_max_pixels_the_caller_gave_stays_a_bound_and_the_familys_default_does_not():
    small = get_adapter("gta1", max_pixels=256 * 28 * 28).prompted(MVP_PROMPT)  # a tiny model's budget
    w, h = small.input_size((3840, 2160))
    assert w * h <= 256 * 28 * 28
    mai = get_adapter("mai-ui")  # its own default, 6,553,600 px, is not the caller's: MVP's bound rules
    assert mai.resize.max_pixels < 4096 * 2160
    w, h = mai.prompted(MVP_PROMPT).input_size((5120, 2880))
    assert mai.resize.max_pixels < w * h <= 4096 * 2160
