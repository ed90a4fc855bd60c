"""Layout proposer on synthetic multi-pane screenshots whose panels are known.

The screen is drawn with PIL like an IDE: a title bar, a sidebar, a main area split into two
panes, a status bar; separated by thin rules or by a change of background; text and widgets
inside. Separators are drawn at `scale` x the 4K positions so the same layout can be checked
at several resolutions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from regionfocus import Box, FixedRatioProposer, Point, Query, RegionFocusConfig
from regionfocus.proposers import build_proposer
from regionfocus.proposers.base import ProposalContext
from regionfocus.proposers.layout import LayoutProposer


@dataclass
class Screen:
    image: Image.Image
    panels: dict[str, Box]


def draw_screen(scale: float = 1.0) -> Screen:
    def s(v: float) -> int:
        return round(v * scale)

    W, H = s(3840), s(2160)
    img = Image.new("RGB", (W, H), (255, 255, 255))
    d = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=max(8, s(26)))
    small = ImageFont.load_default(size=max(8, s(22)))
    title_b, status_t, side_r, split_x = s(72), s(2096), s(640), s(2240)

    # Title bar: a different background, text in the middle and window buttons on the right.
    d.rectangle((0, 0, W - 1, title_b - 1), fill=(45, 45, 52))
    d.text((W // 2 - s(200), s(20)), "main.py - regionfocus - Editor", fill=(220, 220, 220), font=font)
    for i in range(3):
        d.ellipse((W - s(60) * (i + 1), s(22), W - s(60) * (i + 1) + s(28), s(50)), fill=(200, 90, 80))

    # Sidebar: light grey, a 2 px rule on its right, a list with one highlighted row.
    d.rectangle((0, title_b, side_r - 1, status_t - 1), fill=(243, 243, 243))
    d.rectangle((side_r, title_b, side_r + s(2) - 1, status_t - 1), fill=(200, 200, 200))
    for i, name in enumerate(
        ["src", "regionfocus", "geometry.py", "layout.py", "sam.py", "tests", "README.md"]
    ):
        y = title_b + s(30) + i * s(44)
        if name == "layout.py":
            d.rectangle((0, y - s(6), side_r - 1, y + s(34)), fill=(214, 228, 248))
        d.text((s(40) + (s(24) if "." in name else 0), y), name, fill=(30, 30, 30), font=font)
    d.text((s(40), status_t - s(300)), "OUTLINE", fill=(90, 90, 90), font=small)
    d.text((s(40), status_t - s(250)), "TIMELINE", fill=(90, 90, 90), font=small)

    # Left pane: white, code lines; a 1 px rule separates it from the right pane.
    left_l = side_r + s(2)
    for i in range(40):
        if i % 7 == 6:
            continue
        y = title_b + s(30) + i * s(46)
        d.text((left_l + s(20), y), f"{i + 1:>3}", fill=(150, 150, 150), font=font)
        code = "    def propose(self, ctx: ProposalContext) -> list[Box]:"[: 20 + (i * 7) % 38]
        d.text((left_l + s(110), y), code, fill=(20, 60, 140), font=font)
    d.line((split_x, title_b, split_x, status_t - 1), fill=(210, 210, 210), width=1)

    # Right pane: off-white, a toolbar strip, a form with labelled inputs and buttons.
    right_l = split_x + 1
    d.rectangle((right_l, title_b, W - 1, status_t - 1), fill=(250, 250, 252))
    d.rectangle((right_l, title_b, W - 1, title_b + s(68)), fill=(235, 235, 240))
    for i in range(6):
        x = right_l + s(24) + i * s(110)
        d.rounded_rectangle(
            (x, title_b + s(12), x + s(90), title_b + s(56)), radius=s(8), outline=(120, 120, 130)
        )
        d.text((x + s(14), title_b + s(20)), f"B{i}", fill=(40, 40, 40), font=small)
    for i, label in enumerate(["Name", "Email", "Project", "Notes"]):
        y = title_b + s(180) + i * s(150)
        d.text((right_l + s(80), y), label, fill=(40, 40, 40), font=font)
        d.rectangle(
            (right_l + s(300), y - s(10), right_l + s(1100), y + s(50)), outline=(160, 160, 170), width=s(2)
        )
    d.rounded_rectangle(
        (right_l + s(300), title_b + s(820), right_l + s(560), title_b + s(890)),
        radius=s(10),
        fill=(0, 110, 220),
    )
    d.text((right_l + s(360), title_b + s(838)), "Submit", fill=(255, 255, 255), font=font)
    for i in range(10):
        d.text(
            (right_l + s(80), title_b + s(1000) + i * s(48)),
            "Lorem ipsum dolor sit amet " * 2,
            fill=(90, 90, 90),
            font=small,
        )

    # Status bar: blue, white text.
    d.rectangle((0, status_t, W - 1, H - 1), fill=(0, 122, 204))
    d.text(
        (s(30), status_t + s(18)), "main  Ln 42, Col 7  UTF-8  Python 3.11", fill=(255, 255, 255), font=small
    )

    panels = {
        "title": Box(0, 0, W, title_b),
        "sidebar": Box(0, title_b, side_r, status_t),
        "left": Box(left_l, title_b, split_x, status_t),
        "right": Box(right_l, title_b, W, status_t),
        "status": Box(0, status_t, W, H),
    }
    return Screen(img, panels)


@pytest.fixture(scope="module")
def screen4k() -> Screen:
    return draw_screen(1.0)


def ctx(image: Image.Image, focal: Point) -> ProposalContext:
    return ProposalContext(screenshot=image, focal=focal, query=Query(instruction="click Submit"))


def assert_well_formed(boxes: list[Box], size: tuple[int, int], min_size: float) -> None:
    assert boxes
    for b in boxes:
        assert 0 <= b.left and 0 <= b.top and b.right <= size[0] and b.bottom <= size[1], b
        assert b.width >= min_size - 1e-6 and b.height >= min_size - 1e-6, b
    assert [b.area for b in boxes] == sorted(b.area for b in boxes)


def best_iou(boxes: list[Box], target: Box) -> float:
    return max(b.iou(target) for b in boxes)


async def test_point_in_right_pane_finds_the_right_pane(screen4k):
    proposer = LayoutProposer(min_size=64)
    focal = Point(2241 + 430, 72 + 855)  # on the Submit button
    boxes = await proposer.propose(ctx(screen4k.image, focal))
    assert_well_formed(boxes, screen4k.image.size, 64)
    right = screen4k.panels["right"]
    hits = [b for b in boxes if b.iou(right) > 0.8]
    assert hits and all(b.contains(focal) for b in hits)
    assert all(b.contains(focal) for b in boxes)
    # The innermost box is strictly inside the pane: the view zooms further than the pane.
    assert boxes[0].area < 0.5 * right.area


@pytest.mark.parametrize(
    "panel, focal",
    [
        ("sidebar", Point(160, 1000)),
        ("sidebar", Point(120, 72 + 30 + 3 * 44 + 10)),  # on the highlighted row
        ("left", Point(1200, 700)),
        ("right", Point(3600, 2000)),  # empty corner of the right pane
        ("title", Point(1900, 36)),
        ("status", Point(600, 2130)),
    ],
)
async def test_points_in_each_panel_find_that_panel(screen4k, panel, focal):
    boxes = await LayoutProposer(min_size=64).propose(ctx(screen4k.image, focal))
    assert_well_formed(boxes, screen4k.image.size, 64)
    target = screen4k.panels[panel]
    assert best_iou(boxes, target) > 0.8, (panel, boxes)
    assert all(b.contains(focal) for b in boxes)


def test_panel_chain_is_nested_and_starts_at_the_screen(screen4k):
    focal = Point(2241 + 700, 72 + 330)  # inside the "Email" input
    chain = LayoutProposer().panel_chain(screen4k.image, focal)
    assert chain[0] == Box(0, 0, 3840, 2160)
    for outer, inner in zip(chain[:-1], chain[1:], strict=True):
        assert outer.left <= inner.left and outer.top <= inner.top
        assert inner.right <= outer.right and inner.bottom <= outer.bottom
        assert inner.area < outer.area
        assert inner.contains(focal)
    assert best_iou(chain, screen4k.panels["right"]) > 0.9


@pytest.mark.parametrize("scale", [0.5, 2 / 3])
async def test_other_resolutions(scale):
    screen = draw_screen(scale)
    focal = Point(round(3000 * scale), round(1300 * scale))
    boxes = await LayoutProposer(min_size=64).propose(ctx(screen.image, focal))
    assert_well_formed(boxes, screen.image.size, 64)
    assert best_iou(boxes, screen.panels["right"]) > 0.8


@pytest.mark.parametrize("kind", ["blank", "noise", "gradient", "tiny"])
async def test_structureless_images_fall_back_to_fixed_ratios(kind):
    rng = np.random.default_rng(1)
    if kind == "blank":
        image = Image.new("RGB", (1920, 1080), (240, 240, 240))
    elif kind == "noise":
        image = Image.fromarray(rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8))
    elif kind == "gradient":
        ramp = np.linspace(0, 255, 1920, dtype=np.uint8)
        image = Image.fromarray(np.repeat(np.tile(ramp, (1080, 1))[..., None], 3, axis=2))
    else:
        image = Image.new("RGB", (3, 2), (0, 0, 0))
    focal = Point(image.width / 3, image.height / 2)
    boxes = await LayoutProposer(min_size=64).propose(ctx(image, focal))
    assert boxes == await FixedRatioProposer().propose(ctx(image, focal))


async def test_small_panels_get_a_fixed_ratio_box_for_context():
    # A 4K screen whose only structure is a small framed dialog.
    image = Image.new("RGB", (3840, 2160), (250, 250, 250))
    d = ImageDraw.Draw(image)
    dialog = Box(1800, 1000, 2100, 1150)
    d.rectangle((1799, 999, 2100, 1150), outline=(90, 90, 90), width=1)
    d.text((1830, 1050), "Delete file?", fill=(0, 0, 0), font=ImageFont.load_default(size=26))
    focal = Point(1900, 1060)
    boxes = await LayoutProposer(min_size=64).propose(ctx(image, focal))
    assert_well_formed(boxes, image.size, 64)
    assert best_iou(boxes, dialog) > 0.8
    fixed = await FixedRatioProposer().propose(ctx(image, focal))
    assert min(fixed, key=lambda b: b.area) == boxes[-1]


@pytest.mark.parametrize("mode", ["RGBA", "L"])
async def test_other_image_modes_and_focal_outside_the_image(screen4k, mode):
    image = screen4k.image.convert(mode)
    boxes = await LayoutProposer(min_size=64).propose(ctx(image, Point(4000, 1200)))
    assert_well_formed(boxes, image.size, 64)
    assert best_iou(boxes, screen4k.panels["right"]) > 0.8


async def test_build_proposer_makes_a_layout_proposer(screen4k):
    proposer = build_proposer(RegionFocusConfig(proposer="layout", min_box_size=300))
    assert isinstance(proposer, LayoutProposer) and proposer.name == "layout"
    boxes = await proposer.propose(ctx(screen4k.image, Point(2700, 930)))
    assert_well_formed(boxes, screen4k.image.size, 300)
