"""Boxes, shifting, and view transforms (property tests where a rule must hold everywhere)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from regionfocus import DEFAULT_RATIOS, Box, Point, crop_view, fixed_ratio_boxes
from regionfocus.geometry import ViewTransform, clamp_point, shift_box_inside

sizes = st.tuples(st.integers(40, 4000), st.integers(40, 3000))


def test_box_basics_and_inclusive_edges():
    b = Box(10, 20, 30, 60)
    assert (b.width, b.height, b.center) == (20, 40, Point(20, 40))
    assert b.contains(Point(10, 20)) and b.contains(Point(30, 60)) and b.contains(Point(10, 60))
    assert not b.contains(Point(9.99, 30)) and not b.contains(Point(20, 60.01))
    with pytest.raises(ValueError, match="out of order"):
        Box(5, 0, 1, 1)


def test_default_ratios_are_the_papers():
    assert DEFAULT_RATIOS == ((0.5, 0.5), (0.3, 0.3), (0.4, 0.8), (0.8, 0.4))


def test_fixed_boxes_centred_when_room():
    boxes = fixed_ratio_boxes(Point(1920, 1080), (3840, 2160))
    assert [(b.width, b.height) for b in boxes] == [(1920, 1080), (1152, 648), (1536, 1728), (3072, 864)]
    assert all(b.center == Point(1920, 1080) for b in boxes)


def test_fixed_boxes_shift_at_corner_not_shrink():
    (b,) = fixed_ratio_boxes(Point(5, 3), (1000, 800), [(0.5, 0.5)])
    assert b == Box(0, 0, 500, 400)
    (b,) = fixed_ratio_boxes(Point(999, 799), (1000, 800), [(0.3, 0.3)])
    assert b == Box(700, 560, 1000, 800)


@settings(max_examples=200, deadline=None)
@given(size=sizes, fx=st.floats(0, 1), fy=st.floats(0, 1), rw=st.floats(0.05, 1), rh=st.floats(0.05, 1))
def test_fixed_boxes_property(size, fx, fy, rw, rh):
    w, h = size
    focal = Point(fx * (w - 1), fy * (h - 1))
    (b,) = fixed_ratio_boxes(focal, size, [(rw, rh)])
    assert b.left >= 0 and b.top >= 0 and b.right <= w + 1e-6 and b.bottom <= h + 1e-6
    assert b.width == pytest.approx(rw * w) and b.height == pytest.approx(rh * h)  # shifted, never shrunk
    assert b.contains(focal)
    # Centred whenever the centred box already fits.
    if rw * w / 2 <= focal.x <= w - rw * w / 2 and rh * h / 2 <= focal.y <= h - rh * h / 2:
        assert b.center.x == pytest.approx(focal.x) and b.center.y == pytest.approx(focal.y)


@settings(max_examples=100, deadline=None)
@given(size=sizes, data=st.data())
def test_shift_box_inside_keeps_size_when_it_fits(size, data):
    w, h = size
    bw, bh = data.draw(st.floats(1, w)), data.draw(st.floats(1, h))
    x, y = data.draw(st.floats(-2 * w, 2 * w)), data.draw(st.floats(-2 * h, 2 * h))
    b = shift_box_inside(Box(x, y, x + bw, y + bh), size)
    assert b.width == pytest.approx(bw) and b.height == pytest.approx(bh)
    assert b.left >= -1e-6 and b.right <= w + 1e-6 and b.top >= -1e-6 and b.bottom <= h + 1e-6


@settings(max_examples=200, deadline=None)
@given(
    left=st.floats(0, 3000),
    top=st.floats(0, 2000),
    bw=st.floats(1, 2000),
    bh=st.floats(1, 2000),
    sx=st.floats(0.2, 8),
    sy=st.floats(0.2, 8),
    u=st.floats(0, 1),
    v=st.floats(0, 1),
)
def test_view_transform_round_trip(left, top, bw, bh, sx, sy, u, v):
    t = ViewTransform(Box(left, top, left + bw, top + bh), sx, sy)
    p = Point(left + u * bw, top + v * bh)
    back = t.view_to_screen(t.screen_to_view(p))
    assert back.distance(p) < 1e-6


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_crop_view_maps_pixels_back(data):
    """A point found in a view lands, mapped back, within a pixel of the same content."""
    w, h = data.draw(st.integers(200, 1200)), data.draw(st.integers(200, 900))
    xs, ys = np.meshgrid(np.arange(w), np.arange(h))
    # Smooth colour ramps encode the coordinates themselves in the pixels.
    img = Image.fromarray(np.stack([xs * 255 // w, ys * 255 // h, np.zeros_like(xs)], -1).astype(np.uint8))
    bw, bh = data.draw(st.integers(20, w)), data.draw(st.integers(20, h))
    left, top = data.draw(st.integers(0, w - bw)), data.draw(st.integers(0, h - bh))
    box = Box(left, top, left + bw, top + bh)
    view = crop_view(img, box, (1000, 800), max_zoom=4)
    assert view.image.size[0] <= 1000 * 1.01 + 1 or view.transform.scale_x == 1.0
    vx, vy = data.draw(st.floats(0, view.image.width - 1)), data.draw(st.floats(0, view.image.height - 1))
    p = view.transform.view_to_screen(Point(vx, vy))
    assert box.left - 1 <= p.x <= box.right + 1 and box.top - 1 <= p.y <= box.bottom + 1
    # Round trip within a pixel.
    q = view.transform.screen_to_view(p)
    assert abs(q.x - vx) < 1e-6 and abs(q.y - vy) < 1e-6
    # Content agrees: the red channel encodes x, green encodes y (ramp step = w/255 px).
    r, g, _ = view.image.getpixel((int(vx), int(vy)))
    assert abs(r * w / 255 - p.x) <= w / 255 * 2 + 2
    assert abs(g * h / 255 - p.y) <= h / 255 * 2 + 2


def test_crop_view_upsamples_toward_target_and_caps_zoom():
    img = Image.new("RGB", (3840, 2160), "white")
    v = crop_view(img, Box(0, 0, 1152, 648), (1920, 1080))
    assert v.image.size == (1920, 1080)
    assert v.transform.scale_x == pytest.approx(1920 / 1152)
    tiny = crop_view(img, Box(100, 100, 110, 105), (1920, 1080), max_zoom=4)
    assert tiny.image.size == (40, 20)  # capped at 4x, not blown up 190x


def test_clamp_point():
    assert clamp_point(Point(-3, 5000), (100, 200)) == Point(0, 199)
