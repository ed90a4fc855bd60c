"""Stars: pink, numbered, about the released code's size, legible at 4K, never hiding the point
nor each other's numbers, and never touching the input image."""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw, ImageFont

from regionfocus import Box, Point, draw_boxes, draw_stars
from regionfocus.stars import STAR_FILL, label_layout, label_px, star_extent, star_radius

UHD = (3840, 2160)
WHITE = (255, 255, 255)


def pink_mask(img: Image.Image) -> np.ndarray:
    """Pixels of exactly the star colour."""
    a = np.asarray(img.convert("RGB"))
    return (a == np.array(STAR_FILL, dtype=np.uint8)).all(-1)


def busy(size: tuple[int, int], seed: int = 0) -> Image.Image:
    """A cluttered screen: coloured rectangles with words, some pinkish."""
    rng = random.Random(seed)
    img = Image.new("RGB", size, (245, 245, 245))
    d = ImageDraw.Draw(img)
    font = ImageFont.truetype("DejaVuSans.ttf", max(10, size[0] // 160))
    for _ in range(size[0] * size[1] // 20000):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        colour = tuple(rng.randrange(256) for _ in range(3))
        d.rectangle((x, y, x + rng.randint(20, 200), y + rng.randint(10, 60)), fill=colour)
        d.text(
            (x + 3, y + 3), rng.choice(["File", "Edit", "Save", "OK", "Cancel", "12", "3"]), fill=0, font=font
        )
    return img


def overlaps(a: Box, b: Box) -> bool:
    """Interiors intersect (sharing an edge is not an overlap)."""
    return a.left < b.right and b.left < a.right and a.top < b.bottom and b.top < a.bottom


def star_square(p: Point, size: tuple[int, int], scale: float = 1.0) -> Box:
    r = star_radius(size, scale)
    return Box(p.x - r, p.y - r, p.x + r, p.y + r)


def assert_clean_layout(size, points, labels=None, scale=1.0):
    tags = label_layout(size, points, labels, scale)
    assert len(tags) == len(points)
    boxes = [t for t in tags if t is not None]
    for i, t in enumerate(boxes):
        assert 0 <= t.left and 0 <= t.top and t.right <= size[0] and t.bottom <= size[1], t
        for u in boxes[i + 1 :]:
            assert not overlaps(t, u), (t, u)
        for p in points:
            assert not overlaps(t, star_square(p, size, scale)), (t, p)
    return tags


# -- sizes ------------------------------------------------------------------------------------


def test_default_size_close_to_the_released_code_at_4k():
    """The released code draws 15-20 px radius stars whatever the image; here 20 px at 4K."""
    assert star_radius(UHD) == 20
    assert star_radius((3840, 1080)) == 20  # the long side decides
    # Label glyphs, measured on the drawn image: the white pixels inside the tag.
    img = Image.new("RGB", UHD, (40, 40, 40))
    out = draw_stars(img, [Point(1000, 1000)], ["8"])
    (tag,) = label_layout(UHD, [Point(1000, 1000)], ["8"])
    a = np.asarray(out)[int(tag.top) : int(tag.bottom), int(tag.left) : int(tag.right)]
    inner = a[4:-4, 4:-4]  # inside the tag's white rim: the digit alone
    rows = np.nonzero((inner.min(-1) > 200).any(1))[0]
    assert rows.max() - rows.min() + 1 >= 16
    assert (a == np.array(STAR_FILL)).all(-1).mean() > 0.5  # an opaque pink tag


def test_sizes_scale_with_the_long_side_with_a_floor():
    assert star_radius((7680, 4320)) == 40
    assert star_radius((1920, 1080)) == 10
    assert star_radius((1280, 720)) == star_radius((500, 400)) == 10  # the floor
    assert label_px((7680, 4320)) == 2 * label_px(UHD)
    assert label_px((500, 400)) == label_px((1920, 1080)) >= 14
    radii = [star_radius((w, w // 2)) for w in range(200, 8000, 97)]
    assert radii == sorted(radii)


def test_scale_multiplies_star_and_label():
    assert star_radius(UHD, 2.0) == 40 and star_radius(UHD, 0.5) == 10
    assert label_px(UHD, 2.0) == 2 * label_px(UHD)
    assert star_radius((500, 400), 0.5) == 5  # the floor applies before the scale
    img = Image.new("RGB", (3840, 400), "white")  # the long side sets the size
    spans = []
    for s in (0.5, 1.0, 2.0):
        ys, xs = np.nonzero(pink_mask(draw_stars(img, [Point(1500, 200)], [""], scale=s)))
        spans.append(xs.max() - xs.min())
    assert spans[0] < spans[1] < spans[2]
    assert abs(spans[1] - 40) <= 3 and abs(spans[2] - 80) <= 4
    (t1,) = label_layout(UHD, [Point(1500, 1000)], ["7"])
    (t2,) = label_layout(UHD, [Point(1500, 1000)], ["7"], scale=2.0)
    assert t2.height > 1.8 * t1.height


# -- the mark itself --------------------------------------------------------------------------


def test_input_untouched_and_copy_returned():
    img = Image.new("RGB", (800, 600), (240, 240, 240))
    before = img.tobytes()
    out = draw_stars(img, [Point(100, 100), Point(110, 105)])
    assert img.tobytes() == before and out is not img
    assert pink_mask(out).sum() > 50
    rgba = Image.new("RGBA", (300, 200), (10, 20, 30, 255))
    before = rgba.tobytes()
    out = draw_stars(rgba, [Point(100, 100)])
    assert rgba.tobytes() == before and out.mode == "RGB"


@pytest.mark.parametrize("size", [UHD, (500, 400)])
def test_the_pixel_at_each_point_is_a_white_dot_ringed_in_pink(size):
    cx, cy = size[0] // 3, size[1] // 3
    pts = [Point(cx + dx, cy + dy) for dx, dy in [(0, 0), (7, 3), (14, -5), (20, 12), (3, 18), (25, 25)]]
    pts += [Point(0, 0), Point(size[0] - 1, size[1] - 1), Point(cx + 40.6, cy + 60.4)]
    out = np.asarray(draw_stars(busy(size), pts))
    m = pink_mask(Image.fromarray(out))
    for p in pts:
        x, y = int(p.x), int(p.y)
        assert tuple(out[y, x]) == WHITE, p
        patch = m[max(0, y - 4) : y + 5, max(0, x - 4) : x + 5]
        assert patch.any(), p  # exact pink within 4 px: colour search finds the point


def test_star_is_an_opaque_outline_over_a_translucent_body():
    """What is under the star stays visible; the outline is opaque pink, 2 px at 4K."""
    img = Image.new("RGB", UHD, "white")
    ImageDraw.Draw(img).rectangle((1000, 980, 1100, 1020), fill=(0, 0, 0))  # a dark element
    p = Point(1000, 1000)
    out = np.asarray(draw_stars(img, [p], [""])).astype(int)
    r = star_radius(UHD)
    # Along the vertical through the top tip: an opaque pink outline at least 2 px thick.
    column = out[1000 - r - 2 : 1000, 1000]
    assert ((column == STAR_FILL).all(-1)).sum() >= 2
    # Inside the body (6 px from the point: off the outline and the bullseye), tinted, not
    # painted over: white stays light, the dark element stays dark, the edge between them shows.
    white_under, black_under = out[1000, 994], out[1000, 1006]
    assert tuple(white_under) != STAR_FILL and white_under.min() > 150
    assert black_under.max() < 120
    assert white_under.sum() - black_under.sum() > 300


def test_labels_default_to_numbers_and_length_checked():
    img = Image.new("RGB", (400, 300), "white")
    a = draw_stars(img, [Point(50, 50), Point(300, 200)])
    b = draw_stars(img, [Point(50, 50), Point(300, 200)], ["1", "2"])
    assert a.tobytes() == b.tobytes()
    with pytest.raises(ValueError, match="labels"):
        draw_stars(img, [Point(1, 1)], ["1", "2"])
    with pytest.raises(ValueError, match="labels"):
        label_layout(img.size, [Point(1, 1)], [])
    assert draw_stars(img, []).tobytes() == img.tobytes()


def test_empty_label_draws_no_tag():
    img = Image.new("RGB", (3840, 1200), "white")
    assert label_layout(img.size, [Point(900, 900)], [""]) == [None]
    m = pink_mask(draw_stars(img, [Point(900, 900)], [""]))
    ys, xs = np.nonzero(m)
    r = star_radius(UHD)
    assert xs.min() >= 900 - r - 1 and xs.max() <= 900 + r + 1 and ys.max() <= 900 + r + 1


def test_tag_background_is_the_star_colour():
    img = Image.new("RGB", UHD, "white")
    pts = [Point(500, 500), Point(2000, 1200)]
    out = np.asarray(draw_stars(img, pts, ["1", "12"]))
    for t in label_layout(UHD, pts, ["1", "12"]):
        a = out[int(t.top) : int(t.bottom), int(t.left) : int(t.right)]
        assert (a == np.array(STAR_FILL)).all(-1).mean() > 0.5


# -- layout -----------------------------------------------------------------------------------


def test_first_choice_is_upper_right_next_to_the_star():
    p = Point(1000, 1000)
    (t,) = label_layout(UHD, [p], ["3"])
    r = star_radius(UHD)
    assert t.left > p.x + r and t.bottom < p.y - r
    assert t.left - (p.x + r) < r and (p.y - r) - t.bottom < r  # close to it


@pytest.mark.parametrize("size", [UHD, (1920, 1080), (500, 400)])
def test_dense_cluster_tags_never_overlap(size):
    """8 stars within 60 px: every number still gets its own free place."""
    cx, cy = size[0] / 2, size[1] / 2
    rng = random.Random(3)
    pts = [Point(cx + rng.uniform(0, 60), cy + rng.uniform(0, 60)) for _ in range(8)]
    assert_clean_layout(size, pts)
    assert_clean_layout(size, pts, scale=1.7)


@pytest.mark.parametrize("size", [UHD, (500, 400), (260, 140)])
def test_corners_and_edges(size):
    w, h = size
    pts = [Point(0, 0), Point(w - 1, 0), Point(0, h - 1), Point(w - 1, h - 1)]
    pts += [Point(w / 2, 0), Point(w - 1, h / 2), Point(w / 2, h - 1), Point(0, h / 2)]
    pts += [Point(w - 1.5, 2.5), Point(3, 4)]  # two more in the crowded corners
    tags = assert_clean_layout(size, pts, [str(i + 10) for i in range(len(pts))])
    assert all(t is not None for t in tags)


def test_far_tags_get_a_leader_line():
    """A star boxed in by others on a page too small for an inset (see
    test_stars_crowds.py for the inset at 4K): its number goes to a farther ring, joined by a
    pink line."""
    size = (640, 400)
    c = Point(320, 200)
    r = star_radius(size)
    ring = [Point(c.x + 2.2 * r * dx, c.y + 2.2 * r * dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)]
    ring.remove(c)
    pts = ring + [c]
    tags = assert_clean_layout(size, pts)
    t = tags[-1]
    far = Point(min(max(c.x, t.left), t.right), min(max(c.y, t.top), t.bottom))
    assert far.distance(c) > 3 * r
    out = np.asarray(draw_stars(Image.new("RGB", size, "white"), pts)).astype(int)
    # Between the outer stars and the tag, the line is the only pink there.
    u = (far.x - c.x) / far.distance(c), (far.y - c.y) / far.distance(c)
    d = far.distance(c) - 4
    x, y = round(c.x + u[0] * d), round(c.y + u[1] * d)
    assert (np.abs(out[y - 2 : y + 3, x - 2 : x + 3] - STAR_FILL).sum(-1) < 60).any()


def test_no_room_nearby_goes_to_the_nearest_free_place_anywhere():
    """Stars everywhere but a band at the bottom: the one number goes there, with a line."""
    size = (400, 300)
    r = star_radius(size)
    grid = [Point(x, y) for y in range(0, 230, 2 * r + 2) for x in range(0, 400, 2 * r + 2)]
    c = grid[len(grid) // 2]
    labels = ["" if p != c else "5" for p in grid]
    tags = assert_clean_layout(size, grid, labels)
    (t,) = [t for t in tags if t is not None]
    assert t.top > max(p.y for p in grid) + r
    out = np.asarray(draw_stars(Image.new("RGB", size, "white"), grid, labels))
    x = int(c.x)
    assert pink_mask(Image.fromarray(out[int(c.y) + r + 2 : int(t.top), x - 3 : x + 4])).any(0).any()


def test_no_room_at_all_still_draws_inside_the_image():
    size = (120, 80)
    pts = [Point(x, y) for y in range(0, 80, 16) for x in range(0, 120, 16)]
    tags = label_layout(size, pts)
    assert all(0 <= t.left and t.right <= 120 and 0 <= t.top and t.bottom <= 80 for t in tags)
    draw_stars(Image.new("RGB", (12, 10)), [Point(5, 5)], ["123"])  # tag larger than image


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([UHD, (1920, 1080), (1280, 800), (500, 400), (320, 240)]),
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=12),
    st.floats(0, 0.3),
    st.sampled_from([0.6, 1.0, 1.5]),
)
def test_layout_property_random_points(size, rel, spread, scale):
    """Random point sets, from spread out to tightly clustered: tags inside the image, clear of
    every star and of each other."""
    w, h = size
    cx, cy = rel[0]
    pts = [
        Point(
            min(w - 1, max(0, (cx + (x - 0.5) * spread * 2) * (w - 1))),
            min(h - 1, max(0, (cy + (y - 0.5) * spread * 2) * (h - 1))),
        )
        for x, y in rel
    ]
    labels = [str(i + 1) for i in range(len(pts))]
    assert_clean_layout(size, pts, labels, scale)


@pytest.mark.parametrize("size", [UHD, (500, 400)])
def test_every_changed_pixel_lies_in_the_extents(size):
    """``star_extent`` bounds the drawing, leader lines and far tags included."""
    img = busy(size, 2)
    r = star_radius(size)
    c = Point(size[0] / 2, size[1] / 2)
    ring = [Point(c.x + 2.2 * r * dx, c.y + 2.2 * r * dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)]
    pts = [p for p in ring if p != c] + [c, Point(0, 0), Point(size[0] - 0.5, 3.2)]
    labels = [str(i + 1) for i in range(len(pts) - 1)] + [""]
    changed = np.asarray(draw_stars(img, pts, labels)) != np.asarray(img)
    inside = np.zeros(changed.shape[:2], bool)
    for b in star_extent(size, pts, labels):
        inside[max(0, int(b.top)) : int(b.bottom) + 1, max(0, int(b.left)) : int(b.right) + 1] = True
    assert changed.any() and not (changed.any(-1) & ~inside).any()


def test_layout_is_what_gets_drawn():
    img = Image.new("RGB", (900, 700), "white")
    pts = [Point(400 + 9 * i, 300 + 5 * (i % 3)) for i in range(6)]
    out = np.asarray(draw_stars(img, pts))
    for t in label_layout(img.size, pts):
        a = out[int(t.top) : int(t.bottom), int(t.left) : int(t.right)]
        assert (a == np.array(STAR_FILL)).all(-1).mean() > 0.5
        assert (a.min(-1) > 230).any()  # the white number


# -- legibility -------------------------------------------------------------------------------


@pytest.mark.slow  # a real model or engine end to end: seconds of CPU
def test_labels_legible_at_4k_to_the_real_ocr_engine():
    """The reference code's labels were a ~8 px bitmap font; these must be read back by the
    project's OCR engine (rapidocr, models from its wheel) from a crop around each tag."""
    from regionfocus.adapters.perception.ocr_engine import EnginePool

    img = busy(UHD, seed=9)
    rng = random.Random(9)
    pts = [Point(rng.randrange(100, 3700), rng.randrange(100, 2000)) for _ in range(5)]
    pts += [Point(2000 + dx, 1000 + dy) for dx, dy in [(0, 0), (25, 10), (10, 35), (40, 40)]]
    labels = [str(i + 1) for i in range(9)]
    out = draw_stars(img, pts, labels)
    tags = label_layout(UHD, pts, labels)
    # One OCR pass over a 3x3 sheet of the crops (one pass per crop costs ~10x the CPU).
    margin, cw, ch = 2, 120, 90
    sheet = Image.new("RGB", (3 * cw, 3 * ch), WHITE)
    for i, t in enumerate(tags):
        crop = out.crop(
            (int(t.left) - margin, int(t.top) - margin, int(t.right) + margin, int(t.bottom) + margin)
        )
        sheet.paste(crop, ((i % 3) * cw + (cw - crop.width) // 2, (i // 3) * ch + (ch - crop.height) // 2))
    read: dict[int, list[str]] = {}
    for line in EnginePool.get(1, 1).read(np.asarray(sheet)):
        c = line.box.center
        read.setdefault(int(c.y // ch) * 3 + int(c.x // cw), []).append(line.text)
    assert [" ".join(read.get(i, [])) for i in range(9)] == labels


# -- boxes ------------------------------------------------------------------------------------


def test_draw_boxes_outlines():
    img = Image.new("RGB", (300, 200), "white")
    out = draw_boxes(img, [Box(10, 10, 100, 100)])
    assert np.asarray(out)[10, 50].tolist() != [255, 255, 255]
    assert np.asarray(out)[50, 50].tolist() == [255, 255, 255]
