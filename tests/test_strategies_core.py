"""The test-time strategies (regionfocus/strategies/) with a scripted model that answers from
the image it is given: it finds a coloured target when the target is big enough at its
resolution, and answers a near miss when it is not (as a VLM does on a 4K screenshot). So crop
geometry, mapping back to screenshot pixels and the stopping rules are really exercised."""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from regionfocus.actions import click
from regionfocus.geometry import Box, Point
from regionfocus.model import ModelReply, Usage, Verdict
from regionfocus.proposers import A11yProposer, LayoutProposer
from regionfocus.strategies import (
    STRATEGIES,
    ChainOfGround,
    DiMoGUI,
    GuiRC,
    IterativeFocusing,
    IterativeNarrowing,
    MapChoice,
    MegaGuiZoom,
    RegionFocusStrategy,
    ReGround,
    ScreenSeekeR,
    Triggered,
    UIZoomer,
    ZoomClick,
    get_strategy,
)
from regionfocus.strategies.chain_of_ground import CIRCLE_RGB, MARK_ALPHA, MARK_RGB, SQUARE_RGB
from regionfocus.strategies.cli import strategies_command
from regionfocus.strategies.dimo import centre_distance
from regionfocus.strategies.gui_rc import region_vote
from regionfocus.strategies.mega_gui import _agree, trim_away
from regionfocus.strategies.protocol import Samples, image_tokens
from regionfocus.strategies.screenseeker import (
    CHECK_PROMPT,
    PLAN_PROMPT,
    gaussian_score,
    nms,
    parse_check,
    parse_plan,
)
from regionfocus.strategies.ui_zoomer import vote_winner

W, H = 1920, 1080
GREEN = (30, 160, 90)
ORANGE = (240, 140, 20)
TARGET = Box(1394, 294, 1406, 306)  # 12 x 12 px: 6 px on a 960 px sight of the full screen
DECOY = Box(300, 800, 312, 812)


def screen(size=(W, H), targets=((TARGET, GREEN),)) -> Image.Image:
    img = Image.new("RGB", size, (235, 236, 238))
    d = ImageDraw.Draw(img)
    for box, colour in targets:
        d.rectangle((box.left, box.top, box.right - 1, box.bottom - 1), fill=colour)
    return img


SCREEN = screen()
INSTR = "click the #1ea05a button"  # the model reads the colour from the instruction


def colour_of(text: str) -> tuple[int, int, int]:
    h = re.search(r"#([0-9a-f]{6})", text).group(1)
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


@dataclass
class Seen:
    kind: str
    size: tuple[int, int]
    instruction: str
    image: Image.Image


def blend(c, m, a):
    return tuple(round((1 - a) * x + a * y) for x, y in zip(c, m, strict=True))


def seen_through(colour):
    """The colour under a translucent mark: Chain-of-Ground's red disc, its blue box on top of
    the disc or alone, ScreenSeekeR's red square."""
    disc = blend(colour, CIRCLE_RGB, MARK_ALPHA)
    return (
        disc,
        blend(disc, SQUARE_RGB, MARK_ALPHA),
        blend(colour, SQUARE_RGB, MARK_ALPHA),
        blend(colour, MARK_RGB, 0.25),
    )


@dataclass
class TargetModel:
    """A GroundingModel that reads only the image and instruction it is sent.

    ``sight``: long side of what it sees; a target narrower than ``min_seen`` px at that scale
    is not recognised and it answers ``miss`` seen-pixels off the colour's location (a near
    miss), else the exact centre of the colour in the given image. It sees through a
    translucent mark (Chain-of-Ground). ``mute_after``: answers nothing after that many acts.
    ``alt``: instruction substring -> colour it looks for instead (a branch's other reading).
    """

    sight: int | None = 960
    min_seen: float = 8.0
    miss: float = 10.0
    mute_after: int | None = None
    alt: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    verdict: Verdict = Verdict.NO
    token_factor: int | None = None
    seen: list[Seen] = field(default_factory=list)

    def input_size(self, size):
        s = 1.0 if self.sight is None else min(1.0, self.sight / max(size))
        return max(1, round(size[0] * s)), max(1, round(size[1] * s))

    def kinds(self):
        return [s.kind for s in self.seen]

    def _usage(self, image):
        return Usage(latency_s=0.001, prompt_tokens=50, completion_tokens=7)

    def locate(self, image: Image.Image, instruction: str) -> Point | None:
        colour = next((c for k, c in self.alt.items() if k in instruction), colour_of(instruction))
        arr = np.asarray(image.convert("RGB"), dtype=np.int16)
        mask = np.zeros(arr.shape[:2], bool)
        for c in (colour, *seen_through(colour)):
            mask |= np.abs(arr - np.array(c, dtype=np.int16)).max(axis=2) <= 6
        ys, xs = np.nonzero(mask)
        if len(xs) == 0:
            return None
        x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
        centre = Point((x0 + x1) / 2, (y0 + y1) / 2)
        scale = self.input_size(image.size)[0] / image.size[0]
        if (x1 - x0) * scale >= self.min_seen:
            return centre
        return Point(centre.x + self.miss / scale, centre.y + self.miss / scale)

    async def act(self, image, query, *, zoomed=False):
        self.seen.append(Seen("act", image.size, query.instruction, image))
        n_acts = sum(1 for s in self.seen if s.kind == "act")
        if self.mute_after is not None and n_acts > self.mute_after:
            return ModelReply("I cannot find it.", usage=self._usage(image))
        p = self.locate(image, query.instruction)
        if p is None:  # not in this image: a model still answers somewhere (the middle)
            p = Point(image.width / 2, image.height / 2)
        return ModelReply(f"click({p.x:.1f},{p.y:.1f})", action=click(p.x, p.y), usage=self._usage(image))

    async def propose_point(self, image, query, avoid, *, temperature=None):
        self.seen.append(Seen("focal", image.size, query.instruction, image))
        p = self.locate(image, query.instruction)
        return ModelReply("focal", point=p, usage=self._usage(image))

    async def judge(self, image, query, point):
        self.seen.append(Seen("judge", image.size, query.instruction, image))
        return ModelReply(f"Verdict: {self.verdict.value}", verdict=self.verdict, usage=self._usage(image))

    async def choose(self, image, query, options, *, retry=0):
        """Picks the star nearest the target it sees at full resolution."""
        self.seen.append(Seen("choose", image.size, query.instruction, image))
        truth = self.locate(image, INSTR if "#" not in query.instruction else query.instruction)
        best = min(options, key=lambda o: o.action.point.distance(truth))
        return ModelReply(f"Choice: {best.number}", choice=best.number, usage=self._usage(image))

    async def propose_box(self, image, query, focal):
        self.seen.append(Seen("box", image.size, query.instruction, image))
        return ModelReply("no box", usage=self._usage(image))


@dataclass
class SamplingTargetModel(TargetModel):
    """Adds ``sample``: the exact target centre plus scripted offsets, with confidences."""

    offsets: list[tuple[float, float]] = field(default_factory=list)
    confidence: float | None = 0.9

    async def sample(self, image, query, n, temperature):
        self.seen.append(Seen(f"sample{n}", image.size, query.instruction, image))
        c = TARGET.center
        replies = [
            ModelReply("s", action=click(c.x + dx, c.y + dy), point=Point(c.x + dx, c.y + dy))
            for dx, dy in (self.offsets * n)[:n]
        ]
        return Samples(
            replies, [self.confidence] * n, Usage(latency_s=0.002, prompt_tokens=900, completion_tokens=9 * n)
        )


def near_miss(dx=40.0, dy=30.0):
    c = TARGET.center
    return click(c.x + dx, c.y + dy)


def inside(box: Box, size=(W, H), tol=1e-6) -> bool:
    return box.left >= -tol and box.top >= -tol and box.right <= size[0] + tol and box.bottom <= size[1] + tol


def crops(result, key="crop"):
    return [Box.from_list(s[key]) for s in result.steps if s.get(key) is not None]


def run(strategy, model, baseline=None, image=SCREEN, instruction=INSTR, **kw):
    return asyncio.run(strategy.run(model, image, instruction, baseline, **kw))


def exact(p: Point | None, tol=1.0) -> bool:
    return p is not None and p.distance(TARGET.center) <= tol


# ---------------------------------------------------------------- the scripted model itself
def test_model_misses_small_targets_on_the_full_screen_and_hits_them_in_a_crop():
    m = TargetModel()
    full = m.locate(SCREEN, INSTR)
    assert 10 < full.distance(TARGET.center) < 40  # a near miss, not a hit
    in_crop = m.locate(SCREEN.crop((960, 0, 1920, 540)), INSTR)
    assert exact(Point(in_crop.x + 960, in_crop.y))


# ---------------------------------------------------------------- Iterative Narrowing
def test_narrowing_default_is_the_official_k3_two_crops_after_the_full_screenshot():
    # ant-8/GUI-Grounding-via-Iterative-Shrinking eval_row: k = 3 predictions, the first full
    res = run(IterativeNarrowing(), TargetModel(), near_miss())
    assert [c.kind for c in res.calls] == ["narrow[1]", "narrow[2]"]
    assert [(round(b.width), round(b.height)) for b in crops(res)] == [(960, 540), (480, 270)]


def test_narrowing_halves_the_view_three_times_and_maps_back_within_a_pixel():
    m = TargetModel()
    res = run(IterativeNarrowing(rounds=3), m, near_miss())
    assert [c.kind for c in res.calls] == ["narrow[1]", "narrow[2]", "narrow[3]"]
    boxes = crops(res)
    assert [(round(b.width), round(b.height)) for b in boxes] == [(960, 540), (480, 270), (240, 135)]
    outer = Box(0, 0, W, H)
    for b in boxes:  # each crop inside the previous view (the reference code's shift)
        assert outer.left - 1e-6 <= b.left and b.right <= outer.right + 1e-6
        assert outer.top - 1e-6 <= b.top and b.bottom <= outer.bottom + 1e-6
        outer = b
    # the first crop is centred on the baseline point (nothing to shift here)
    assert boxes[0].center.distance(near_miss().point) < 1e-6
    # native crops: the box snapped outward to whole pixels, sent at that size
    snapped = [
        [math.ceil(b.right) - math.floor(b.left), math.ceil(b.bottom) - math.floor(b.top)] for b in boxes
    ]
    assert [c.image_size for c in res.calls] == snapped
    assert exact(res.point)


def test_narrowing_stops_when_a_crop_has_no_answer_and_keeps_the_last_point():
    m = TargetModel(mute_after=1)
    res = run(IterativeNarrowing(rounds=3), m, near_miss())
    assert [c.kind for c in res.calls] == ["narrow[1]", "narrow[2]"]
    assert exact(res.point) and any("no point" in n for n in res.notes)


def test_narrowing_portrait_uses_the_reference_codes_mobile_ratio():
    tall = screen((1080, 1920), ((Box(700, 1394, 712, 1406), GREEN),))
    res = run(IterativeNarrowing(rounds=1), TargetModel(), click(690, 1380), image=tall)
    (b,) = crops(res)
    assert (round(b.width), round(b.height)) == (900, 960)


# ---------------------------------------------------------------- Iterative Focusing
def test_focusing_takes_the_quadrant_holding_the_point():
    res = run(IterativeFocusing(), TargetModel(), near_miss())
    boxes = crops(res)
    assert [b.to_list() for b in boxes[:2]] == [[960, 0, 1920, 540], [960, 270, 1440, 540]]
    assert all(b.contains(TARGET.center) for b in boxes)
    assert exact(res.point)


# ---------------------------------------------------------------- ReGround
def test_reground_one_1024_crop_shifted_inside():
    res = run(ReGround(), TargetModel(), click(1880, 1050))  # near the corner: the crop shifts
    (b,) = crops(res)
    assert (b.width, b.height) == (1024, 1024) and inside(b)
    assert b.to_list() == [W - 1024, H - 1024, W, H]
    assert [c.kind for c in res.calls] == ["reground"]
    small = screen((800, 600), ((Box(400, 300, 412, 312), GREEN),))
    (b2,) = crops(run(ReGround(), TargetModel(), click(10, 10), image=small))
    assert b2.to_list() == [0, 0, 800, 600]


# ---------------------------------------------------------------- ZoomClick
def test_zoomclick_prezoom_adopts_a_near_tile_point_then_shrinks_to_the_floor():
    res = run(ZoomClick(depth=3), TargetModel(), near_miss(20, 20))
    kinds = [c.kind for c in res.calls]
    assert kinds[:4] == [f"tile[{i}]" for i in range(4)]
    # 960x768 clipped to 960x684, then 768x684 centred and clipped again; a third cannot shrink
    assert kinds[4:] == ["shrink[1]", "shrink[2]"]
    assert any("floor" in n for n in res.notes)
    pre = next(s for s in res.steps if s.get("stage") == "pre-zoom")
    assert [Box.from_list(t).to_list() for t in pre["tiles"]][1] == [960, 0, 1920, 540]
    assert exact(Point.from_list(next(s for s in res.steps if s.get("stage") == "pre-zoom-agree")["point"]))
    shrinks = crops(res)
    # centred on the point, then clipped (the official runs' --center_mode clip, not shifted)
    assert [b.to_list() for b in shrinks] == [[920, 0, 1880, 684], [1016, 0, 1784, 642]]
    assert all(inside(b) for b in shrinks)
    assert exact(res.point)


def test_zoomclick_defaults_are_the_official_runs():
    # Princeton-AI2-Lab/ZoomClick run_zoomclick_*.slurm: in_depth 3 = pre-zoom + 2 crops
    z = ZoomClick()
    assert (z.depth, z.shrink, z.min_side, z.agree_px) == (2, 0.5, 768.0, 50.0)
    res = run(z, TargetModel(), near_miss(20, 20))
    assert [c.kind for c in res.calls][4:] == ["shrink[1]", "shrink[2]"]
    assert not any("floor" in n for n in res.notes)  # depth reached first
    # a tile that answers nothing stands for its centre: (480, 270) is 30 px from this baseline
    muted = run(ZoomClick(depth=0), TargetModel(mute_after=0), click(500, 292))
    assert muted.point == Point(480, 270)
    # the official threshold is strict: a tile exactly 50 px away does not win
    assert run(ZoomClick(depth=0), TargetModel(mute_after=0), click(530, 270)).point == Point(530, 270)


def test_zoomclick_keeps_the_full_image_point_when_no_tile_agrees_and_clips_crops():
    far = click(1800, 60)  # 420 px from the target: no tile point is within 50 px
    res = run(ZoomClick(depth=1), TargetModel(mute_after=4), far)
    assert not any(s.get("stage") == "pre-zoom-agree" for s in res.steps)
    (b,) = crops(res)
    assert b.to_list() == [1800 - 480, 0, 1920, 60 + 384]  # clipped, not shifted
    assert res.point == far.point  # the muted crop answered nothing: last prediction stands


# ---------------------------------------------------------------- DiMo-GUI
def test_dimo_branches_stop_when_the_point_settles_and_agreeing_branches_need_no_choice():
    m = TargetModel()
    res = run(DiMoGUI(), m, None)
    kinds = [c.kind for c in res.calls]
    for b in ("text", "icon"):
        # step 0 is a near miss; crop 1 finds the target 0.098 (official relative distance) off its
        # centre, over the 0.05 threshold; crops 2 and 3 are centred on it: two centred in a row
        # end the branch
        assert [k for k in kinds if k.startswith(b)] == [f"{b}[0]", f"{b}[1]", f"{b}[2]", f"{b}[3]"]
        assert [s["centred"] for s in res.steps if s.get("branch") == b and s["step"] > 0] == [0, 1, 2]
    assert "choose" not in kinds
    for b in crops(res):
        assert inside(b)
    assert exact(res.point)


def test_dimo_sends_the_official_prompts_and_stops_on_the_official_distance():
    # vivo/DiMo-GUI osatlas7b.py: the branch prompts, max_iter 5 (4 crops), threshold 0.05
    m = TargetModel()
    d = DiMoGUI()
    assert (d.max_steps, d.settle, d.threshold) == (4, 2, 0.05)
    res = run(d, m, None)
    sent = {s.instruction for s in m.seen}
    assert (
        'In this UI screenshot, please find the TEXT element corresponding to the command "'
        + INSTR
        + '" (with bbox). Only focus on text content, ignore icons.'
    ) in sent
    assert (
        'In this UI screenshot, please find the ICON element corresponding to the command "'
        + INSTR
        + '" (with bbox). Only focus on graphical icons, ignore pure text.'
    ) in sent
    assert len(sent) == 2  # every view of a branch is asked with its prompt
    assert exact(res.point)
    # the distance: 0 at the view's centre, 1 at a corner
    view = Box(0, 0, 200, 100)
    assert centre_distance(Point(100, 50), view) == 0 and centre_distance(Point(200, 100), view) == 1
    # a centred full-screenshot point counts: one centred crop after it ends the branch
    res2 = run(
        DiMoGUI(), TargetModel(sight=None), None, image=screen(targets=((Box(954, 534, 966, 546), GREEN),))
    )
    assert [c.kind for c in res2.calls if c.kind.startswith("text")] == ["text[0]", "text[1]"]


def test_dimo_asks_the_model_to_pick_when_branches_disagree():
    img = screen(targets=((TARGET, GREEN), (DECOY, ORANGE)))
    m = TargetModel(alt={"ICON element": ORANGE})  # the official icon prompt's words
    res = run(DiMoGUI(max_steps=1), m, None, image=img)
    assert [c.kind for c in res.calls][-1] == "choose"
    choose = next(s for s in m.seen if s.kind == "choose")
    assert choose.size == (W, H) and "icon" not in choose.instruction
    assert len(res.candidates) == 2 and exact(res.point)


# ---------------------------------------------------------------- Chain-of-Ground
def test_chain_of_ground_marks_the_full_screenshot_and_uses_each_steps_model():
    a, b = TargetModel(sight=None), TargetModel(sight=None, token_factor=32)
    b.image_tokens = lambda size: 7  # a model that counts its own tokens
    grounder = TargetModel()
    res = run(ChainOfGround(models=(a, b)), grounder, near_miss())
    assert grounder.seen == [] and a.kinds() == ["act"] and b.kinds() == ["act"]
    assert [c.kind for c in res.calls] == ["circle", "square"]
    assert res.calls[1].image_tokens == 7 and res.calls[0].image_tokens == math.ceil(W / 28) * math.ceil(
        H / 28
    )
    circled = np.asarray(a.seen[0].image, dtype=int)
    # the official disc: radius 100 px of the grounder's 960 px sight = 200 screenshot px, red at
    # alpha 60/255, no outline
    r = 100 * W / 960
    p = near_miss().point
    inner, outer = circled[int(p.y), int(p.x + r) - 3], circled[int(p.y), int(p.x + r) + 3]
    assert tuple(inner) == blend((235, 236, 238), CIRCLE_RGB, MARK_ALPHA) and tuple(outer) == (235, 236, 238)
    # layer 3: the disc again on the first point, and the blue box (side 200 px) on layer 2's point
    boxed = np.asarray(b.seen[0].image, dtype=int)
    assert tuple(boxed[int(p.y), int(p.x + r) - 3]) == tuple(inner)
    q = Point.from_list(res.steps[0]["point"])
    corner = boxed[int(q.y + 100) - 2, int(q.x + 100) - 2]
    assert tuple(corner) == blend(tuple(inner), SQUARE_RGB, MARK_ALPHA)
    assert a.seen[0].size == (W, H) and b.seen[0].size == (W, H)  # no crop
    assert exact(res.point)


# ---------------------------------------------------------------- UI-Zoomer
def test_ui_zoomer_accepts_the_majority_when_samples_agree():
    # seven agree, one is off: consensus 0.68, confidence 0.9: (0.68 + 0.9) > 1.5, the official gate
    offsets = [(0, 0), (2, 1), (-1, 2), (1, -1), (0, 1), (-2, 0), (1, 1), (300, 300)]
    m = SamplingTargetModel(offsets=offsets)
    res = run(UIZoomer(n=8), m, None)
    assert [c.kind for c in res.calls] == ["sample[n=8]"] and res.calls[0].n == 8
    step = res.steps[0]
    assert step["gate"] == "accept" and exact(res.point, 3)
    # the same samples with one more outlier fall under the official 1.5 and zoom
    m2 = SamplingTargetModel(offsets=[(0, 0), (2, 1), (-1, 2), (300, 300)])
    assert run(UIZoomer(n=8), m2, None).steps[0]["gate"] == "zoom"


def test_ui_zoomer_defaults_are_the_official_run():
    # ZJU-REAL/UI-Zoomer run_uizoomer_sspro.sh: 8 samples, gate 1.5, sigma 2.5; T 0.9 in the code
    z = UIZoomer()
    assert (z.n, z.temperature, z.k_sigma, z.min_side, z.zoom) == (8, 0.9, 2.5, 512.0, "fill")
    assert z.iou_weight * 2 == 1 and z.threshold * 2 == 1.5  # the official sum > 1.5
    # the vote: boxes overlapping at IoU > 0.5 vote for each other; a tie goes to the most confident
    a, b = Box(0, 0, 10, 10), Box(100, 100, 110, 110)
    assert vote_winner([a, b], [0.2, 0.9]) == 1 and vote_winner([a, a, b], [0.1, 0.1, 0.9]) == 0


def test_ui_zoomer_zooms_a_square_sized_from_the_spread_when_uncertain():
    m = SamplingTargetModel(offsets=[(-200, -100), (200, 100), (-200, 100), (200, -100)], confidence=0.2)
    res = run(UIZoomer(n=4), m, None)
    assert [c.kind for c in res.calls] == ["sample[n=4]", "zoom"]
    step = res.steps[0]
    assert step["gate"] == "zoom"
    crop = Box.from_list(step["crop"])
    # the official density filter keeps the 3 nearest the median (all tie: the first 3); x centres
    # -200, 200, -200 around the target: Var 35555.6 plus a 50 px box's (50/4)^2
    sigma = math.sqrt(statistics.pvariance([-200, 200, -200]) + (50 / 4) ** 2)
    assert step["sigma"][0] == pytest.approx(sigma)
    assert crop.width == pytest.approx(max(512, 2 * 2.5 * sigma), abs=0.01)
    assert crop.height == pytest.approx(crop.width, abs=0.01)
    assert inside(crop) and exact(res.point)


def test_sampling_strategies_degenerate_on_a_deterministic_model():
    for strategy in (UIZoomer(), GuiRC()):
        res = run(strategy, TargetModel(), near_miss())
        assert res.calls == [] and res.point == near_miss().point
        assert any("deterministic" in n for n in res.notes)
    assert STRATEGIES["gui-rc"].needs_sampling and "one sample" in STRATEGIES["ui-zoomer"].deterministic


# ---------------------------------------------------------------- GUI-RC
def test_region_vote_answers_the_centre_of_the_most_voted_region():
    boxes = [Box(0, 0, 50, 50), Box(20, 10, 70, 60), Box(30, 0, 80, 50), Box(400, 400, 450, 450)]
    point, region, votes, centres = region_vote(boxes, (500, 500))
    assert votes == 3 and region.to_list() == [30, 10, 50, 50] and point == Point(40, 30)
    assert len(centres) == 1


def test_gui_rc_votes_over_samples():
    m = SamplingTargetModel(offsets=[(0, 0), (4, 0), (0, 4), (500, 200), (4, 4)])
    res = run(GuiRC(n=5), m, None)
    assert [c.kind for c in res.calls] == ["sample[n=5]"]
    assert (
        res.steps[0]["votes"] == 4 and res.point.distance(Point(TARGET.center.x + 2, TARGET.center.y + 2)) < 1
    )


# ---------------------------------------------------------------- ScreenSeekeR
@dataclass
class Planner:
    """A scripted planner: names the target and an area; checks by the mark's position."""

    verdicts: list[str]
    asked: list[tuple[str, tuple[int, int] | None]] = field(default_factory=list)

    async def chat(self, image, text):
        self.asked.append(("plan" if "<element>" in text else "check", image.size if image else None))
        if "<element>" in text:
            return ModelReply("1. The <element>#1ea05a button</element> in the <area>#f08c14 panel</area>.")
        v = self.verdicts.pop(0)
        return ModelReply(
            f'The marked one. {{"result": "{v}", "new_instruction": null}}', usage=Usage(0.01, 80, 20)
        )


def test_screenseeker_plans_votes_recurses_and_checks():
    img = screen(targets=((TARGET, GREEN), (Box(1500, 700, 1700, 900), ORANGE)))
    planner = Planner(["is_target"])
    grounder = TargetModel(sight=1280)  # a 1280 x 768 patch is seen at full resolution
    res = run(ScreenSeekeR(planner=planner), grounder, None, image=img)
    kinds = [c.kind for c in res.calls]
    assert kinds == ["plan[d0]", "ground[d0.0]", "ground[d0.1]", "ground[d0.2]", "leaf[d1]", "check[d1]"]
    level = res.steps[0]
    patches = [Box.from_list(b) for b in level["patches"]]
    assert all((b.width, b.height) == (1280, 768) and inside(b, img.size) for b in patches)
    assert len(patches) < len(level["votes"])  # NMS merged overlapping patches
    assert planner.asked[0] == ("plan", (W, H)) and planner.asked[1] == ("check", (1280, 768))
    assert res.calls[0].seen_size is None  # a chat-only planner: sizes it sees are unknown
    assert exact(res.point)


def test_screenseeker_backtracks_when_the_check_fails_and_falls_back_to_the_baseline():
    planner = Planner(["target_not_found", "target_not_found"])
    res = run(ScreenSeekeR(planner=planner), TargetModel(sight=1280), near_miss(), image=SCREEN)
    assert [c.kind for c in res.calls].count("check[d1]") == len(res.steps[0]["patches"])
    assert res.point == near_miss().point and any("baseline stands" in n for n in res.notes)


def test_screenseeker_without_a_planner_grounds_directly():
    res = run(ScreenSeekeR(), TargetModel(sight=1280), None)
    assert [c.kind for c in res.calls] == ["ground[d0.0]", "leaf[d1]"]
    assert any("no planner" in n for n in res.notes) and exact(res.point)


def test_screenseeker_prompts_are_the_official_texts():
    """Byte for byte the two string literals of the official code (prompts/SOURCES.md)."""
    assert hashlib.sha256(PLAN_PROMPT.encode()).hexdigest() == (
        "15f95627abaf1c350d836182e443353bdb39e0bc7fdd0146a8f0a41929b72956"
    )
    assert hashlib.sha256(CHECK_PROMPT.encode()).hexdigest() == (
        "c6733d2f69a4560dd1d4ffbeffd9d646400eb87540399f4ed783cd7d98dfc506"
    )
    assert PLAN_PROMPT.format(instruction="the OK button").endswith("**Instruction:**\nthe OK button\n")
    assert CHECK_PROMPT.format(instruction="x").startswith("\nYou are given a cropped screenshot.")


def test_regionfocus_official_round_prompts_are_byte_exact():
    """tiangeluo/RegionFocus @ f69575db (adapters/families/prompts/official/SOURCES.md)."""
    folder = Path(__file__).parent.parent / "adapters" / "families" / "prompts" / "official"
    want = {
        "rf_official_ground.txt": "b078a7a09d2ecfde",
        "rf_official_qwen25vl_focal.txt": "ef7b6479e8da7bcf",
        "rf_official_qwen25vl_judge.txt": "5d0427e734691a2e",
        "rf_official_qwen25vl_select.txt": "737ad9b78a9e8825",
        "rf_official_qwen25vl_zoom.txt": "1481177f919e2623",
        "rf_official_uitars_judge.txt": "7c1805f287ff3fe2",
        "rf_official_uitars_select.txt": "f20d557acedc2c16",
        "rf_official_uitars_zoom.txt": "110d60c1fedc9b45",
    }
    for name, digest in want.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest()[:16] == digest, name
    assert (folder / "rf_official_qwen25vl_zoom.txt").read_text().endswith('"${instruction}". ')


def test_constructor_checks_name_every_broken_rule_and_its_value():
    with pytest.raises(
        ValueError, match=r"^ui-zoomer: need n >= 1, 0 <= iou_weight <= 1; got n=0, iou_weight=2$"
    ):
        UIZoomer(n=0, iou_weight=2)
    with pytest.raises(ValueError, match=r"0 < portrait_ratio <= 1; got portrait_ratio=\(0.5, 1.5\)"):
        IterativeNarrowing(portrait_ratio=(0.5, 1.5))  # each element of a pair is checked
    with pytest.raises(ValueError, match="reground: need side > 0"):
        ReGround(side="big")  # a value that cannot be compared breaks the rule
    with pytest.raises(ValueError, match="layout: need max_boxes >= 1"):
        LayoutProposer(max_boxes=0)
    with pytest.raises(ValueError, match=r"a11y: need 0 < max_frac <= 1"):
        A11yProposer(max_frac=0)
    with pytest.raises(ValueError, match="2 refining steps"):
        ChainOfGround(models=(None,))
    assert ZoomClick(depth=0).depth == 0 and ScreenSeekeR(min_patch=[640, 480]).min_patch == (640, 480)


def test_screenseeker_helpers():
    assert gaussian_score(Box(0, 0, 100, 100), Point(50, 50)) == 1.0
    assert gaussian_score(Box(0, 0, 100, 100), Point(150, 50)) == 0.0
    assert nms([Box(0, 0, 10, 10), Box(1, 1, 11, 11), Box(50, 50, 60, 60)], 0.5) == [
        Box(0, 0, 10, 10),
        Box(50, 50, 60, 60),
    ]
    assert parse_plan("<area>a</area><element> b </element>")["element"] == ["b"]
    assert parse_check('x {"result": "target_elsewhere", "new_instruction": "the OK"}') == (
        "target_elsewhere",
        "the OK",
    )
    assert parse_check("no json") == (None, None)


# ---------------------------------------------------------------- MEGA-GUI stage 1
def test_mega_gui_trims_the_long_side_away_from_the_point_until_three_points_agree():
    res = run(MegaGuiZoom(), TargetModel(), near_miss())
    rois = crops(res, "roi")
    prev = Box(0, 0, W, H)
    for roi in rois:
        long_prev = max(prev.width, prev.height)
        assert max(prev.width, prev.height) - max(roi.width, roi.height) <= 0.1 * long_prev + 1e-6
        assert inside(roi) and roi.area < prev.area
        prev = roi
    assert rois[0].to_list() == [192, 0, W, H]  # the left end: farther from the point
    # the stopping rule: three near misses agree within 50 px (agreement is not correctness)
    assert any("agree" in n for n in res.notes)
    last3 = [Point.from_list(s["point"]) for s in res.steps[-2:]] + [res.point]
    assert all(a.distance(b) <= 50 for a in last3 for b in last3)
    assert res.point.distance(Point.from_list(res.steps[-1]["point"])) < 0.01
    # demanding 1 px agreement zooms on to the 1000 px floor, where the target is seen
    tight = run(MegaGuiZoom(agree_px=1.0), TargetModel(), near_miss())
    assert exact(tight.point) and any("1000 px" in n for n in tight.notes)


def test_mega_gui_widens_when_the_point_is_lost_and_stops_at_1000_px():
    res = run(MegaGuiZoom(agree_n=30, max_steps=30), TargetModel(mute_after=2), near_miss())
    moves = [s["move"] for s in res.steps]
    assert moves[:4] == ["trim", "trim", "trim", "widen"]  # the third crop answered nothing
    lost, wider = crops(res, "roi")[2:4]
    assert wider.width > lost.width and wider.contains(lost.center)
    res2 = run(MegaGuiZoom(agree_n=30, max_steps=60), TargetModel(), near_miss())
    last = crops(res2, "roi")[-1]
    assert max(last.width, last.height) <= 1000 and any("1000" in n for n in res2.notes)
    assert trim_away(Box(0, 0, 100, 50), Point(90, 25), 0.1) == Box(10, 0, 100, 50)


def test_mega_gui_official_zoom_out_budget_then_correction_zoom_in():
    # mega-gui notebook: max_zoom_out_count 5 (each side out by half a 10 % step), then each side
    # in by half a step until the ROI's long side is <= 1000 px; the last valid point stands
    m = MegaGuiZoom()
    assert (m.trim, m.stop_side, m.agree_n, m.agree_px, m.zoom_outs) == (0.1, 1000.0, 3, 50.0, 5)
    res = run(m, TargetModel(mute_after=0), near_miss())
    moves = [s["move"] for s in res.steps]
    assert moves[:6] == ["trim"] + ["widen"] * 5 and set(moves[6:]) == {"narrow"}
    rois = crops(res, "roi")
    assert rois[1].to_list() == pytest.approx([192 - 86.4, 0, W, H])  # out by 86.4 px a side, clipped
    assert max(rois[-1].width, rois[-1].height) <= 1000 and res.point == near_miss().point
    # convergence is measured against the newest point only (the notebook's get_search_converged)
    assert _agree([Point(0, 0), Point(80, 0), Point(40, 0)], 50) and not _agree(
        [Point(0, 0), Point(100, 0), Point(60, 0)], 50
    )


# ---------------------------------------------------------------- RegionFocus, compositions, cost
def test_regionfocus_strategy_reuses_the_baseline_and_costs_views_by_their_size():
    m = TargetModel()
    res = run(RegionFocusStrategy(), m, near_miss())
    kinds = [c.kind for c in res.calls]
    assert kinds[:2] == ["judge", "focal"] and kinds[2:6] == [f"candidate[{i}]" for i in range(4)]
    assert m.kinds()[0] == "judge"  # the supplied baseline was not asked again
    rnd = next(s for s in res.steps if "round" in s)
    for call, view in zip(res.calls[2:6], rnd["views"], strict=True):
        assert call.image_size == view["size"]
    assert res.action is not None


def test_triggered_runs_the_inner_strategy_only_on_rejection():
    ok = run(Triggered(ReGround()), TargetModel(verdict=Verdict.YES), near_miss())
    assert [c.kind for c in ok.calls] == ["judge"] and ok.point == near_miss().point
    no = run(Triggered(ReGround()), TargetModel(verdict=Verdict.NO), near_miss())
    assert [c.kind for c in no.calls] == ["judge", "reground"] and exact(no.point)
    none = run(Triggered(ReGround(), ("no-action",)), TargetModel(), None)
    assert [c.kind for c in none.calls] == ["baseline", "reground"]
    with pytest.raises(ValueError, match="triggers"):
        Triggered(ReGround(), ("sometimes",))


def test_map_choice_picks_among_a_strategys_candidates():
    big = Box(1380, 280, 1420, 320)  # large enough to stay visible around the stars
    img = screen(targets=((big, GREEN),))
    res = run(MapChoice(ZoomClick(depth=0)), TargetModel(sight=None), click(1440, 340), image=img)
    assert [c.kind for c in res.calls][-1] == "choose"
    assert res.point.distance(big.center) <= 1 and res.strategy == "zoomclick+map-choice"


def test_cost_record_counts_image_tokens_of_the_seen_size():
    m = TargetModel()
    res = run(ReGround(), m, near_miss())
    (call,) = res.calls
    assert crops(res)[0].width == 1024 and call.image_size == [960, 960]  # resampled once, to what it sees
    assert call.seen_size == [960, 960]
    assert call.image_tokens == image_tokens(m, (1024, 1024)) == math.ceil(960 / 28) ** 2
    assert call.text_tokens is None  # the scripted prompt count is below the image tokens
    d = res.to_dict()
    assert d["totals"]["requests"] == 1 and d["totals"]["image_tokens"] == call.image_tokens
    assert d["calls"][0]["image_size"] == [960, 960] and d["calls"][0]["prompt_tokens"] == 50


def test_registry_and_listing(capsys):
    assert set(STRATEGIES) >= {
        "regionfocus",
        "iterative-narrowing",
        "iterative-focusing",
        "reground",
        "zoomclick",
        "dimo-gui",
        "chain-of-ground",
        "ui-zoomer",
        "gui-rc",
        "screenseeker",
        "mega-gui",
    }
    assert isinstance(get_strategy("reground", side=512), ReGround)
    with pytest.raises(ValueError, match="unknown strategy"):
        get_strategy("nope")
    with pytest.raises(ValueError, match="bad options"):
        get_strategy("reground", sides=3)
    with pytest.raises(ValueError, match="zoom"):
        run(ReGround(zoom="big"), TargetModel(), near_miss())
    assert strategies_command([]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in STRATEGIES) and "arXiv:2411.13591" in out


def test_triggered_reads_live_effects_like_the_agent():
    from regionfocus.triggers import Effect

    t = Triggered(ReGround(), ("no-effect", "repeat"))
    quiet = run(t, TargetModel(), near_miss())
    assert quiet.calls == [] and any("not triggered" in n for n in quiet.notes)
    t.observe(near_miss(), Effect(changed=False))  # the executed click changed nothing
    fired = run(t, TargetModel(), near_miss())
    assert [c.kind for c in fired.calls] == ["reground"] and fired.steps[0]["fired"] == "no-effect"
    t.observe(near_miss(), Effect(changed=True))  # a new screen: the slate is clean
    assert run(t, TargetModel(), click(10, 10)).calls == []


def test_fill_zoom_upsamples_the_crop_toward_the_full_screen_view_and_maps_back_exactly():
    m = TargetModel()
    res = run(ReGround(side=256, zoom="fill"), m, near_miss())
    (call,) = res.calls
    # 256 px crop, scaled until one side reaches the 960 x 540 the model sees of the screen
    assert call.image_size == [540, 540] and m.seen[0].size == (540, 540)
    assert exact(res.point)
