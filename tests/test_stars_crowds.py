"""Crowded candidates (issue 25): every tag nearer its own star than any other, stars that
shrink apart, crowds that cannot be told apart shown in a magnified inset, and every drawing
path (whole image, crop of it, model-size copy) drawing the same map inside its extents."""

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw

from regionfocus import Box, Point, draw_stars
from regionfocus.star_layout import Style
from regionfocus.stars import STAR_FILL, label_layout, star_extent, star_map, star_radius
from tests.map_reader import SHAPES, UHD, crowd, crowded_screen
from tests.test_core_stars import overlaps, pink_mask, star_square


def gap(p: Point, b: Box) -> float:
    return math.hypot(max(0.0, b.left - p.x, p.x - b.right), max(0.0, b.top - p.y, p.y - b.bottom))


def assert_legible(size, points, labels=None, scale=1.0):
    """Tags inside the image, clear of each other, of every star and of every inset they are
    not in; each nearer its own star (by ``Style.tie``) than any other mark; insets inside the
    image, clear of every star, of each other, and showing every point of their region."""
    labels = labels or [str(i + 1) for i in range(len(points))]
    m = star_map(size, points, labels, scale)
    tie = Style.of(size, scale).tie
    marks = [(i, k.point) for i, k in enumerate(m.marks)] + [
        (i, k.at) for i, k in enumerate(m.marks) if k.inset is not None
    ]
    W, H = size
    for ins in m.insets:
        b = ins.box
        assert 0 <= b.left and 0 <= b.top and b.right <= W and b.bottom <= H, ins
        assert not any(overlaps(b, star_square(p, size, scale)) for p in points), ins
        assert not overlaps(b, ins.source), ins
        assert [i for i, p in enumerate(points) if ins.source.contains(p)] == [
            i for i, k in enumerate(m.marks) if k.inset is not None and m.insets[k.inset] is ins
        ]
    for a, ins in enumerate(m.insets):
        for other in m.insets[a + 1 :]:
            assert not overlaps(ins.box, other.box) and not overlaps(ins.box, other.source)
    tags = [(i, k.tag) for i, k in enumerate(m.marks) if k.tag is not None]
    for i, t in tags:
        assert 0 <= t.left and 0 <= t.top and t.right <= W and t.bottom <= H, t
        assert not any(overlaps(t, u) for j, u in tags if j != i), t
        assert not any(overlaps(t, star_square(p, size, scale)) for p in points), t
        for a, ins in enumerate(m.insets):
            if m.marks[i].inset == a:
                assert ins.box.left <= t.left and t.right <= ins.box.right
                assert ins.box.top <= t.top and t.bottom <= ins.box.bottom
            else:
                assert not overlaps(t, ins.box) and not overlaps(t, ins.source)
        own = min(gap(p, t) for j, p in marks if j == i)
        assert all(gap(p, t) >= own + tie for j, p in marks if j != i), (i, t)
    return m


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("place", ["light text", "top-left corner", "right edge, dark", "bottom edge, pink"])
def test_crowds_of_the_issue_are_legible(shape, place):
    pts = crowd(shape, place)
    assert_legible(UHD, pts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([UHD, (2560, 1440), (1920, 1080)]),
    st.integers(2, 6),
    st.floats(10, 60),
    st.tuples(st.floats(0, 1), st.floats(0, 1)),
    st.integers(0, 10_000),
)
def test_random_crowds_are_legible(size, n, spacing, where, seed):
    """2-6 candidates each within 10-60 px of another, anywhere (edges included)."""
    rng = random.Random(seed)
    pts = [Point(where[0] * (size[0] - 1), where[1] * (size[1] - 1))]
    while len(pts) < n:
        a = rng.uniform(0, 2 * math.pi)
        q = rng.choice(pts)
        p = Point(q.x + spacing * math.cos(a), q.y + spacing * math.sin(a))
        p = Point(min(size[0] - 1, max(0, p.x)), min(size[1] - 1, max(0, p.y)))
        if all(p.distance(o) >= 8 for o in pts):  # closer ones are merged as one candidate
            pts.append(p)
    assert_legible(size, pts)


def test_stars_shrink_apart_in_a_crowd():
    """30 px apart at 4K: 15 px stars that do not cover each other, not 20 px ones."""
    img = Image.new("RGB", UHD, "white")
    pts = [Point(1000, 1000), Point(1030, 1000)]
    out = draw_stars(img, pts, ["", ""])
    m = star_map(UHD, pts, ["", ""])
    assert [k.r for k in m.marks] == [15, 15] and not m.insets
    ys, xs = np.nonzero(pink_mask(out))
    assert xs.min() >= 1000 - 16 and xs.max() <= 1030 + 16
    # A lone star keeps its size.
    assert star_map(UHD, [Point(1000, 1000)]).marks[0].r == star_radius(UHD)


def test_a_crowd_that_shrinking_cannot_separate_is_shown_magnified():
    """Two candidates 18 px apart on adjacent lines: an inset shows their region enlarged,
    with their numbered stars there; the points keep their dots, inside a pink frame."""
    img = Image.new("RGB", UHD, (246, 246, 246))
    ImageDraw.Draw(img).rectangle((1005, 992, 1010, 997), fill=(0, 90, 200))  # a small blue icon
    pts = [Point(1000, 1000), Point(1000, 1018)]
    m = assert_legible(UHD, pts)
    (ins,) = m.insets
    assert ins.zoom >= 2 and ins.source.contains(pts[0]) and ins.source.contains(pts[1])
    out = np.asarray(draw_stars(img, pts)).astype(int)
    # The icon, enlarged, where the zoom puts it in the inset (its centre: 1008, 995).
    x = ins.box.left + (1008 - ins.source.left) * ins.zoom
    y = ins.box.top + (995 - ins.source.top) * ins.zoom
    assert np.abs(out[int(y), int(x)] - (0, 90, 200)).max() < 40
    # Each number's star in the inset: a white dot in a pink disc at its enlarged point.
    for k in m.marks:
        assert tuple(out[int(k.at.y), int(k.at.x)]) == (255, 255, 255)
        assert (
            (out[int(k.at.y) - 4 : int(k.at.y) + 5, int(k.at.x) - 4 : int(k.at.x) + 5] == STAR_FILL)
            .all(-1)
            .any()
        )
        assert tuple(out[int(k.point.y), int(k.point.x)]) == (255, 255, 255)
    # The frame round the crowd's region.
    s = ins.source
    assert (out[int(s.top), int(s.left) : int(s.right)] == STAR_FILL).all(-1).mean() > 0.9


def test_labels_stay_in_order_of_the_points_in_an_inset():
    pts = crowd("5 @ 12 px, a row", "light text")
    labels = ["4", "1", "5", "2", "3"]
    m = assert_legible(UHD, pts, labels)
    assert label_layout(UHD, pts, labels) == [k.tag for k in m.marks]


@pytest.mark.parametrize("shape", ["6 within 60 px", "3 @ 18 px, a column"])
def test_a_crop_draws_what_the_whole_image_draws(shape):
    """The crop path (the adapter's starred patch): laid out for the whole frame, pixel for
    pixel the whole drawing inside the crop, insets included."""
    shot = crowded_screen()
    pts = crowd(shape, "dark UI")
    whole = np.asarray(draw_stars(shot, pts))
    ext = star_extent(UHD, pts)
    left, top = int(min(b.left for b in ext)) - 7, int(min(b.top for b in ext)) - 5
    right, bottom = int(max(b.right for b in ext)) + 9, int(max(b.bottom for b in ext)) + 3
    crop = shot.crop((left, top, right, bottom))
    drawn = np.asarray(draw_stars(crop, pts, origin=(left, top), frame=UHD)).astype(int)
    diff = np.abs(drawn - whole[top:bottom, left:right]).max(-1)
    # Exact, but inside an inset, whose enlargement (bicubic from the crop's pixels) rounds a
    # level or two differently when the image around the source differs.
    pictures = np.zeros(diff.shape, bool)
    for ins in star_map(UHD, pts).insets:
        b = ins.box
        pictures[int(b.top) - top : int(b.bottom) - top, int(b.left) - left : int(b.right) - left] = True
    assert pictures.any() and diff[~pictures].max() == 0 and diff.max() <= 2


@pytest.mark.parametrize("scale", [1.0, 0.999, 0.5])
def test_a_model_size_copy_draws_inside_the_screenshots_extents(scale):
    """Drawn on a resized copy (``reference``): the layout is the screenshot's, so every pixel
    drawn lies in the extents :func:`star_extent` gives for the screenshot, scaled (what the
    adapter promises the transport when it re-sends only the rows stars touched)."""
    shot = crowded_screen()
    pts = crowd("4 @ 12-20 px, a grid", "pink UI") + crowd("2 @ 10 px", "right edge, dark")
    size = (round(UHD[0] * scale), round(UHD[1] * scale))
    base = shot.resize(size, Image.Resampling.BICUBIC)
    kx, ky = size[0] / UHD[0], size[1] / UHD[1]
    mapped = [Point(p.x * kx, p.y * ky) for p in pts]
    out = np.asarray(draw_stars(base, mapped, reference=UHD))
    changed = (out != np.asarray(base)).any(-1)
    inside = np.zeros(changed.shape, bool)
    for b in star_extent(UHD, pts):
        inside[
            max(0, math.floor(b.top * ky) - 1) : math.ceil(b.bottom * ky) + 2,
            max(0, math.floor(b.left * kx) - 1) : math.ceil(b.right * kx) + 2,
        ] = True
    assert changed.any() and not (changed & ~inside).any()
    assert len(star_map(UHD, pts).insets) == 2  # both crowds magnified, whatever the copy's size


async def test_no_inset_for_an_image_answered_with_a_point():
    """``magnify=False`` (history stars on the focal request: the model answers with a point,
    and a point on an inset's copy of the screen is not where it seems): crowds stay in place,
    stars shrunk, tags clear of every star; a map without a crowd still goes to the model's
    own model-size copy."""
    from regionfocus.adapters.registry import get_adapter
    from regionfocus.stars import mark_for_model

    pts = crowd("3 @ 18 px, a column", "light text")
    assert star_map(UHD, pts).insets
    m = star_map(UHD, pts, magnify=False)
    assert not m.insets and all(k.at == k.point for k in m.marks)
    assert [k.r for k in m.marks] == [10, 10, 10]
    for t in label_layout(UHD, pts, magnify=False):
        assert not any(overlaps(t, star_square(p, UHD)) for p in pts)
    adapter = get_adapter("qwen2.5-vl", max_pixels=1003520)
    shot = crowded_screen()
    out = await mark_for_model(adapter, shot, pts, magnify=False)
    assert out.size == shot.size  # drawn at full resolution: the adapter's annotate magnifies
    changed = (np.asarray(out) != np.asarray(shot)).any(-1)
    inside = np.zeros(changed.shape, bool)
    for b in star_extent(UHD, pts, magnify=False):
        inside[int(b.top) : int(b.bottom) + 1, int(b.left) : int(b.right) + 1] = True
    assert changed.any() and not (changed & ~inside).any()
    lone = await mark_for_model(adapter, shot, [Point(900, 900)], magnify=False)
    assert lone.size == adapter.input_size(shot.size)
