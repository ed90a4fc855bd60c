"""Every request of every VLM family, rendered and answered through a scripted ChatBackend
(the transport only: a small class here implementing ``complete``). Checks what the model
receives (image at exactly the smart_resize size, text in its frame) and that answers come
back in pixels of the image the adapter was given. Also the judge and choice parsers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image, ImageDraw

from regionfocus.actions import Action, ActionType
from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.base import ChatResponse
from regionfocus.adapters.families.answers import parse_choice, parse_verdict
from regionfocus.adapters.families.resize import smart_resize
from regionfocus.geometry import Point
from regionfocus.model import Avoid, GroundingModel, Option, Query, Turn, Usage, Verdict

FAMILIES = ["uitars-1.0", "uitars-1.5", "qwen2.5-vl", "qwen3-vl"]


class ScriptedBackend:
    """Records each request and answers with ``reply(messages)``."""

    def __init__(self, reply: Callable[[list], str]):
        self.reply = reply
        self.requests: list[dict] = []

    async def complete(self, messages, *, max_tokens=512, temperature=0.0, **sampling):
        self.requests.append(
            {"messages": messages, "max_tokens": max_tokens, "temperature": temperature, **sampling}
        )
        return ChatResponse(
            self.reply(messages),
            Usage(latency_s=0.25, prompt_tokens=321, completion_tokens=9, endpoint="scripted"),
        )

    async def aclose(self) -> None:
        return None


def images_in(messages) -> list[Image.Image]:
    """The images of a chat request's messages, in order."""
    return [
        p["image"]
        for m in messages
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") == "image"
    ]


def _text(messages) -> str:
    parts = []
    for m in messages:
        if isinstance(m["content"], str):
            parts.append(m["content"])
        else:
            parts += [p["text"] for p in m["content"] if p["type"] == "text"]
    return "\n".join(parts)


def _answer(family: str, x: float, y: float, w: int, h: int) -> str:
    """What a perfect model of ``family`` writes for a click at (x, y) of the w x h image it
    received."""
    rel = (round(x / w * 1000), round(y / h * 1000))
    ab = (round(x), round(y))
    if family == "uitars-1.0":
        return (
            f"Thought: There it is.\nAction: click(start_box='<|box_start|>({rel[0]},{rel[1]})<|box_end|>')"
        )
    if family == "uitars-1.5":
        return f"Thought: There it is.\nAction: click(start_box='({ab[0]},{ab[1]})')"
    xy = rel if family == "qwen3-vl" else ab
    return f'<tool_call>\n{{"name": "computer_use", "arguments": {{"action": "left_click", "coordinate": [{xy[0]}, {xy[1]}]}}}}\n</tool_call>'


def _red_centre(img: Image.Image) -> tuple[float, float]:
    a = np.asarray(img.convert("RGB")).astype(int)
    mask = (a[..., 0] > 180) & (a[..., 1] < 80) & (a[..., 2] < 80)
    ys, xs = np.nonzero(mask)
    return float(xs.mean()) + 0.5, float(ys.mean()) + 0.5


def _red_width(img: Image.Image) -> int:
    a = np.asarray(img.convert("RGB")).astype(int)
    xs = np.nonzero(((a[..., 0] > 180) & (a[..., 1] < 80) & (a[..., 2] < 80)).any(axis=0))[0]
    return int(xs.max() - xs.min() + 1) if len(xs) else 0


def _screenshot(size, target) -> Image.Image:
    img = Image.new("RGB", size, (235, 235, 235))
    d = ImageDraw.Draw(img)
    for x in range(0, size[0], 97):  # some structure, so resizing is not trivial
        d.line([(x, 0), (x, size[1])], fill=(200, 200, 210))
    r = max(8, size[0] // 100)
    d.rectangle([target[0] - r, target[1] - r, target[0] + r - 1, target[1] + r - 1], fill=(230, 0, 0))
    return img


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    ("size", "target"), [((3840, 2160), (3001, 411)), ((2001, 1125), (157, 1040)), ((700, 500), (350, 260))]
)
async def test_model_sees_smart_resize_size_and_answers_map_back(family, size, target):
    """A scripted "perfect model" finds the red square in the image it RECEIVED and answers
    in its family's frame; the adapter must return the square's centre in given pixels."""

    def perfect(messages):
        (img,) = images_in(messages)
        x, y = _red_centre(img)
        return _answer(family, x, y, *img.size)

    backend = ScriptedBackend(perfect)
    adapter = get_adapter(family, backend=backend)
    assert isinstance(adapter, GroundingModel)
    reply = await adapter.act(_screenshot(size, target), Query("click the red square"))
    (seen,) = images_in(backend.requests[0]["messages"])
    r = adapter.resize
    h, w = smart_resize(size[1], size[0], r.factor, r.min_pixels, r.max_pixels)
    assert seen.size == (w, h) == adapter.input_size(size)
    # One model unit, in given pixels, plus resampling blur.
    unit = size[0] / 1000 if adapter.frame == "relative" else size[0] / w
    assert reply.action is not None and reply.action.type == ActionType.CLICK
    assert abs(reply.point.x - target[0]) <= unit + 1.5
    assert abs(reply.point.y - target[1]) <= unit * size[1] / size[0] + 1.5
    assert reply.usage.prompt_tokens == 321 and reply.usage.endpoint == "scripted"
    assert backend.requests[0]["temperature"] == 0.0


def _adapter(family, answer="Verdict: YES"):
    backend = ScriptedBackend(lambda m: answer if isinstance(answer, str) else answer(m))
    return get_adapter(family, backend=backend), backend


def _check_request(backend, adapter, size):
    messages = backend.requests[-1]["messages"]
    (img,) = images_in(messages)
    assert img.size == adapter.input_size(size)
    text = _text(messages)
    assert not re.search(r"\$\{?[a-z_]+", text), "an unfilled template placeholder"
    return text


def _turns(img):
    own = "Thought: The Reservations link is at the top.\nAction: click(start_box='(10,10)')"
    return (
        Turn(img, img.size, Action(ActionType.CLICK, Point(96, 54)), own, "changed the page"),
        Turn(img, img.size, Action(ActionType.TYPE, text="two", submit=True), "", "no visible effect"),
    )


@pytest.mark.parametrize("family", FAMILIES)
async def test_every_request_renders(family):
    size = (1920, 1080)
    img = Image.new("RGB", size, "white")
    adapter, backend = _adapter(family)
    q = Query("open the Settings menu")
    qa = Query("book a table for two", mode="agent", url="https://example.org/", turns=_turns(img))

    await adapter.act(img, q)
    t = _check_request(backend, adapter, size)
    assert "open the Settings menu" in t and "magnified" not in t and "Reservations" not in t

    await adapter.act(img, qa)
    messages = backend.requests[-1]["messages"]
    t = _text(messages)
    assert not re.search(r"\$\{?[a-z_]+", t)
    assert "book a table for two" in t
    if family.startswith("uitars"):
        assert "Thought: ..." in t and "Action: ..." in t and "finished(" in t
        # UI-TARS reads its history as chat turns: its own answer, then the RegionFocus-chosen
        # action written as it would write it; screenshots before each answer, current one last.
        roles = [m["role"] for m in messages]
        assert roles == ["user", "user", "assistant", "user", "assistant", "user"]
        assert messages[2]["content"].startswith("Thought: The Reservations link")
        assert messages[4]["content"] == "Action: type(content='two\\n')"
        assert len(images_in(messages)) == 3
    else:
        assert "The user query:  book a table for two" in t
        assert "Task progress (You have done the following operation on the current device): Step 1: " in t
        assert '"action": "left_click"' in t and '"action": "type", "text": "two\\n"' in t

    await adapter.act(img.crop((0, 0, 800, 600)), q, zoomed=True)
    t = _check_request(backend, adapter, (800, 600))
    assert "magnified" not in t  # a view is a screenshot to the model, as in the official templates
    noted = get_adapter(family, backend=backend, zoom_note=True)
    await noted.act(img.crop((0, 0, 800, 600)), q, zoomed=True)
    assert "magnified" in _check_request(backend, adapter, (800, 600))

    await adapter.propose_point(img, q, Avoid([Point(100, 100)]))
    t = _check_request(backend, adapter, size)
    assert "pink star" in t and "already tried" in t and "most relevant point" in t

    # Our judge text where the authors' code has none (a live task); theirs in grounding mode.
    await adapter.judge(img, qa, Point(960, 540))
    t = _check_request(backend, adapter, size)
    assert "Verdict: YES" in t and "Verdict: NO" in t and "under the star" not in t
    await adapter.judge(img, q, Point(960, 540))
    t = _check_request(backend, adapter, size)
    official = adapter.round_prompts.get("judge")
    assert ("I highlighted a pink star" in t) == bool(official) and ("Verdict: YES" in t) != bool(official)

    opts = [
        Option(1, Action(ActionType.CLICK, Point(10, 10)), True),
        Option(2, Action(ActionType.TYPE, text="hello", submit=True), False),
    ]
    await adapter.choose(img, q, opts)
    t = _check_request(backend, adapter, size)
    assert (
        "Selected point: N" in t and "Candidate 1: click at star 1" in t and "Candidate 2: type 'hello'" in t
    )
    await adapter.choose(img, q, opts, retry=1)
    t2 = _check_request(backend, adapter, size)
    assert t2 != t and "Selected point: N" in t2 and "from 1 to 2" in t2

    await adapter.propose_box(img, q, Point(960, 540))
    t = _check_request(backend, adapter, size)
    assert "x1, y1, x2, y2" in t


@pytest.mark.parametrize("family", FAMILIES)
async def test_history_in_a_view_is_written_in_the_views_own_frame(family):
    """On a zoomed view, an earlier step's point is where it lies in the view, in the model's
    frame of the view image; outside the view it keeps its out-of-frame coordinates."""
    from regionfocus.geometry import Box, ViewTransform

    shot = Image.new("RGB", (1920, 1080))
    turn = Turn(shot, shot.size, Action(ActionType.CLICK, Point(600, 400)), "", "no visible effect")
    view = ViewTransform(Box(400, 300, 880, 570), 2.0, 2.0)  # 480x270 of the screen, 2x
    view_image = Image.new("RGB", (960, 540))
    adapter, backend = _adapter(family)
    q = Query("x", "agent", turns=(turn,), view=view)
    await adapter.act(view_image, q, zoomed=True)
    text = _text(backend.requests[-1]["messages"])
    if family.startswith("uitars"):
        # UI-TARS sees the earlier screenshot itself: its step stays in that screenshot's frame.
        x, y = (round(v) for v in adapter.to_model(Point(600, 400), shot.size))
        want = f"<point>{x} {y}</point>" if family == "uitars-1.5" else f"<|box_start|>({x},{y})<|box_end|>"
    else:
        x, y = (round(v) for v in adapter.to_model(Point(400, 200), view_image.size))  # (600-400)*2, ...
        want = f'"coordinate": [{x}, {y}]'
    assert want in text


@pytest.mark.parametrize(("family", "screen"), [("qwen2.5-vl", "1932x1092"), ("qwen3-vl", "1000x1000")])
async def test_qwen_tool_states_the_screen_the_model_sees(family, screen):
    adapter, backend = _adapter(family, "x")
    await adapter.act(Image.new("RGB", (1920, 1080)), Query("click OK"))
    system = backend.requests[0]["messages"][0]
    assert system["role"] == "system"
    content = "".join(p["text"] for p in system["content"])
    tools = re.search(r"<tools>\n(.*)\n</tools>", content, re.S).group(1)
    tool = json.loads(tools, strict=False)  # the official text has raw newlines inside strings
    assert tool["function"]["name"] == "computer_use"
    assert f"The screen's resolution is {screen}." in tool["function"]["description"]
    assert "left_click" in tool["function"]["parameters"]["properties"]["action"]["enum"]
    assert "<tool_call>" in content


def _listed_points(text: str, family: str) -> list[tuple[float, float]]:
    pat = r"\((-?\d+),(-?\d+)\)" if family.startswith("uitars") else r"\[(-?\d+), (-?\d+)\]"
    return [(float(a), float(b)) for a, b in re.findall(pat, text)]


@pytest.mark.parametrize("family", FAMILIES)
async def test_text_history_points_are_in_the_model_frame(family):
    """Avoided points listed in text are in the model frame: mapped back through the family's
    frame they land within half a model unit of where they were."""
    size = (3840, 2160)
    avoid = [Point(100.4, 2000.2), Point(3001.0, 411.0), Point(1919.5, 1079.5)]
    adapter, backend = _adapter(family, "Action: click(start_box='(1,1)')")
    await adapter.propose_point(Image.new("RGB", size), Query("click Save"), Avoid(avoid, on_image=False))
    text = _text(backend.requests[0]["messages"])
    assert "pink star" not in text
    block = text[text.index("already tried") :]
    listed = _listed_points(block.split("\n")[0], family)
    assert len(listed) == len(avoid)
    mw, mh = adapter.input_size(size)
    ux, uy = (size[0] / 1000, size[1] / 1000) if adapter.frame == "relative" else (size[0] / mw, size[1] / mh)
    for (x, y), p in zip(listed, avoid, strict=True):
        back = adapter.from_model(x, y, size)
        assert abs(back.x - p.x) <= ux / 2 + 1e-9 and abs(back.y - p.y) <= uy / 2 + 1e-9
    if adapter.frame == "absolute":
        assert listed[1] == (round(3001 * mw / 3840), round(411 * mh / 2160))
    else:
        assert listed[1] == (round(3001 / 3.84), round(411 / 2.16))


@pytest.mark.parametrize("family", FAMILIES)
async def test_text_options_and_judge_point_are_in_the_model_frame(family):
    size = (2560, 1440)
    adapter, backend = _adapter(family, "Choice: 2")
    opts = [
        Option(1, Action(ActionType.CLICK, Point(500, 700)), False),
        Option(2, Action(ActionType.DRAG, Point(10, 20), Point(2000, 1300)), False),
    ]
    reply = await adapter.choose(Image.new("RGB", size), Query("select the range"), opts)
    assert reply.choice == 2
    text = _text(backend.requests[0]["messages"])
    listed = _listed_points(text[text.index("Candidate 1:") :], family)
    for (x, y), p in zip(listed, [Point(500, 700), Point(10, 20), Point(2000, 1300)], strict=True):
        back = adapter.from_model(x, y, size)
        assert back.distance(p) <= 2.6  # half a unit on each axis: <= 1.28 * sqrt(2) * ...
    # A live task's judge (our text, which writes the point; the authors' text does not).
    await adapter.judge(Image.new("RGB", size), Query("x", mode="agent"), Point(1280, 720))
    text = _text(backend.requests[1]["messages"])
    (jx, jy) = _listed_points(text, family)[0]
    assert adapter.from_model(jx, jy, size).distance(Point(1280, 720)) <= 2.6


@pytest.mark.parametrize("family", FAMILIES)
async def test_focal_point_and_box_map_to_given_pixels(family):
    size = (1000, 800)
    adapter, _ = _adapter(family)
    mw, mh = adapter.input_size(size)
    rel = adapter.frame == "relative"
    ex, ey = (1000, 1000) if rel else (mw, mh)
    # Focal: the family's own action format at the model-frame centre.
    adapter.backend.reply = lambda m: _answer(family, mw / 2, mh / 2, mw, mh)
    reply = await adapter.propose_point(Image.new("RGB", size), Query("q"), Avoid())
    assert reply.point.distance(Point(500, 400)) <= 1.0
    # Region: a box from a quarter to three quarters of the model frame.
    box_text = f"Region: [{ex / 4:.0f}, {ey / 4:.0f}, {3 * ex / 4:.0f}, {3 * ey / 4:.0f}]"
    if family.startswith("qwen"):
        box_text = f'{{"bbox_2d": [{ex / 4:.0f}, {ey / 4:.0f}, {3 * ex / 4:.0f}, {3 * ey / 4:.0f}]}}'
    adapter.backend.reply = lambda m: box_text
    reply = await adapter.propose_box(Image.new("RGB", size), Query("q"), None)
    assert reply.box is not None
    for got, want in zip(reply.box.to_list(), [250, 200, 750, 600], strict=True):
        assert abs(got - want) <= 1.5
    adapter.backend.reply = lambda m: "I cannot tell."
    assert (await adapter.propose_box(Image.new("RGB", size), Query("q"), None)).box is None
    assert (await adapter.propose_point(Image.new("RGB", size), Query("q"), Avoid())).point is None


async def test_resized_screenshot_is_reused_within_a_round():
    adapter, backend = _adapter("qwen2.5-vl", "Verdict: YES")
    shot = Image.new("RGB", (1920, 1080), "white")
    await adapter.act(shot, Query("x"))
    await adapter.judge(shot, Query("x"), Point(3, 3))
    other = shot.copy()
    await adapter.act(other, Query("x"))
    first, second, third = (images_in(r["messages"])[0] for r in backend.requests)
    assert first is second and third is not first and third.size == first.size


async def test_missing_backend_is_a_clear_error():
    adapter = get_adapter("qwen2.5-vl")
    with pytest.raises(ValueError, match="backend"):
        await adapter.act(Image.new("RGB", (100, 100)), Query("x"))


async def test_sampling_options_reach_the_backend():
    backend = ScriptedBackend(lambda m: "Verdict: NO")
    adapter = get_adapter("uitars-1.5", backend=backend, temperature=0.7, max_tokens=99, sampling={"seed": 3})
    reply = await adapter.judge(Image.new("RGB", (640, 480)), Query("x"), Point(1, 1))
    assert reply.verdict == Verdict.NO
    assert backend.requests[0]["temperature"] == 0.7
    assert backend.requests[0]["max_tokens"] == 99 and backend.requests[0]["seed"] == 3


# ------------------------------------------------------------------ judge and choice parsers
@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("The star is on the Save button.\nVerdict: YES", Verdict.YES),
        ("The star covers the Save icon itself, so it is precise. Answer YES.", Verdict.YES),
        ("It sits beside the label, not on it.\n\nAnswer NO", Verdict.NO),
        ("Answer YES if it is right; here I cannot tell.", Verdict.UNKNOWN),
        ("Verdict: NO", Verdict.NO),
        ("I do not know.", Verdict.UNKNOWN),
        ("The point is not precise.", Verdict.UNKNOWN),
        ("The click would be INCORRECT, I think, but maybe CORRECT.", Verdict.UNKNOWN),
        ("INCORRECT", Verdict.NO),
        ("Verdict: INCORRECT", Verdict.NO),
        ("Verdict: CORRECT", Verdict.YES),
        ("Verdict: NOT SURE", Verdict.UNKNOWN),
        ("Verdict: YES or NO", Verdict.UNKNOWN),
        ("Verdict: I do not know", Verdict.UNKNOWN),
        ("**Verdict:** No.", Verdict.NO),
        ("Verdict: yes\nOn reflection the star is on the label.\nVerdict: NO", Verdict.NO),
        ("Verdict: No, the star is on the label.", Verdict.NO),
        ("NOTE: the star sits on the icon. Verdict: Yes", Verdict.YES),
        ("No verdict can be given.", Verdict.UNKNOWN),
        ("Nothing is under the star. Now, the answer is not clear.", Verdict.UNKNOWN),
        ("yes", Verdict.YES),
        ("No.", Verdict.NO),
        ("", Verdict.UNKNOWN),
        ("Verdict:", Verdict.UNKNOWN),
        ("Verdict: NO\nVerdict: maybe", Verdict.UNKNOWN),
    ],
)
def test_parse_verdict(text, want):
    assert parse_verdict(text) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Star 2 is on the button.\nChoice: 2", 2),
        ("Choice: 3", None),  # not an offered option
        ("Choice: unclear", None),
        ("I think 1 or 2.\nChoice: unclear", None),  # never silently 1
        ("2", 2),
        ("**2**", 2),
        ("Star 2.", 2),
        ("Option #1", 1),
        ("Candidates 1 and 2 both look fine.", None),
        ("Choice: 1\nOn second thought, Choice: 2", 2),
        ("Choice: Candidate 2", 2),
        ("**Choice:** 1", 1),
        ("Choice: 2, because it is closer to the label", 2),
        ("Choice: 1 or 2", None),
        ("", None),
        ("0", None),
        ("Final answer: 1", 1),
    ],
)
def test_parse_choice(text, want):
    assert parse_choice(text, [1, 2]) == want


@pytest.mark.parametrize("family", FAMILIES)
async def test_unreadable_choice_and_verdict_are_reported_not_guessed(family):
    adapter, backend = _adapter(family, "Both candidates look plausible; I cannot decide.")
    opts = [
        Option(1, Action(ActionType.CLICK, Point(1, 1)), True),
        Option(2, Action(ActionType.CLICK, Point(50, 50)), True),
    ]
    reply = await adapter.choose(Image.new("RGB", (300, 200)), Query("x"), opts)
    assert reply.choice is None and reply.text.startswith("Both")
    reply = await adapter.judge(Image.new("RGB", (300, 200)), Query("x"), Point(5, 5))
    assert reply.verdict == Verdict.UNKNOWN


@pytest.mark.parametrize("family", FAMILIES)
async def test_whole_static_round_through_the_core(family):
    """The real RegionFocusAgent over each adapter: the first answer misses the target by
    300 px, the judge (reading the star from the image it got) rejects it, the zoomed views
    find the target, and the final point lands on it in screenshot pixels."""
    from regionfocus.agent import RegionFocusAgent

    size, target = (2000, 1200), (1561, 233)  # above UI-TARS 1.0's pixel cap: it downsizes
    kinds = []
    seen_full: dict[str, int] = {}

    def model(messages):
        (img,) = images_in(messages)
        text = _text(messages)
        w, h = img.size
        x, y = _red_centre(img)
        # Our texts and the authors' (UI-TARS, Qwen2.5-VL) are told apart by their own words.
        if "Verdict: YES" in text or "pink star position" in text:  # judge: the star on the square?
            a = np.asarray(img).astype(int)
            ys, xs = np.nonzero((a[..., 0] > 200) & (a[..., 1] < 60) & (a[..., 2] > 120))
            kinds.append("judge")
            near = abs(xs.mean() - x) < 0.01 * w and abs(ys.mean() - y) < 0.01 * h
            return "The star is on the red square.\nVerdict: YES" if near else "Verdict: NO"
        if "most relevant" in text:
            kinds.append("focal")
            return _answer(family, x + 0.02 * w, y, w, h)
        if "Selected point: N" in text or 'Selected point: #"' in text:
            kinds.append("choose")
            return "Selected point: 1"
        # A view is just a screenshot to the model: it sees the square large and hits it; on
        # the whole screen it sees the square small and misses by 300 px.
        if _red_width(img) > 1.5 * seen_full.setdefault("w", _red_width(img)):
            kinds.append("zoom")
            return _answer(family, x, y, w, h)
        kinds.append("act")
        return _answer(family, x - 300 * w / size[0], y, w, h)

    adapter = get_adapter(family, backend=ScriptedBackend(model))
    agent = RegionFocusAgent(adapter)
    pred = await agent.predict(_screenshot(size, target), "click the red square")
    assert kinds[:3] == ["act", "judge", "focal"] and "zoom" in kinds
    assert pred.baseline.point.distance(Point(*target)) > 250
    assert pred.trigger == "self-judge"
    assert pred.final.point.distance(Point(*target)) < 12, pred.final


def test_a_choice_answered_with_an_inset_stars_coordinates_picks_that_candidate():
    """In a crowd the numbered stars stand in a magnified inset, away from their points: a model
    that answers with the coordinates of the star it means still picks that candidate."""
    from regionfocus.actions import click
    from regionfocus.stars import star_map

    adapter = get_adapter("qwen3-vl")  # 0-1000 on each axis
    size = (3840, 2160)
    pts = [Point(1900, 1000), Point(1912, 1000), Point(1900, 1012)]
    options = [Option(i, click(p.x, p.y), True) for i, p in enumerate(pts, start=1)]
    marks = star_map(size, pts, ["1", "2", "3"]).marks
    assert all(m.at.distance(m.point) > 100 for m in marks)  # the stars stand in an inset
    for n, m in enumerate(marks, start=1):
        answer = f"Star {n}'s centre is at ({m.at.x / size[0] * 1000:.0f}, {m.at.y / size[1] * 1000:.0f})."
        assert adapter._choice_by_point(answer, options, size) == n
