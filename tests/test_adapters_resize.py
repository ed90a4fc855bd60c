"""smart_resize against an independent re-statement of the reference math, the ``ui-tars``
package's copy of the qwen-vl-utils function, and hand-computed sizes; resize_for_model."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from regionfocus.adapters import get_adapter
from regionfocus.adapters.families.resize import ResizeSpec, resize_for_model, smart_resize

F28 = (28, 4 * 28 * 28, 16384 * 28 * 28)


def restated(h: int, w: int, factor: int, lo: int, hi: int) -> tuple[int, int]:
    """The reference written out plainly: nearest multiple (round half to even, at least one
    factor), then if the area is off limits rescale both sides by the same sqrt factor,
    flooring when shrinking and ceiling when growing. The shrink divides by beta =
    sqrt(area / max) exactly as the reference does: multiplying by 1/beta instead can land
    on the other side of a multiple (20000x20000 gives 3583.99999... / 28 there)."""
    hb = max(factor, factor * round(h / factor))
    wb = max(factor, factor * round(w / factor))
    area = hb * wb
    if area > hi:
        beta = math.sqrt(h * w / hi)
        return factor * math.floor(h / beta / factor), factor * math.floor(w / beta / factor)
    if area < lo:
        s = math.sqrt(lo / (h * w))
        return factor * math.ceil(h * s / factor), factor * math.ceil(w * s / factor)
    return hb, wb


ODD_SIZES = [
    (14, 14),  # 0.5 factor: rounds to 0, kept at one factor, then grown to min
    (42, 42),  # 1.5 -> 2 (half to even)
    (70, 70),  # 2.5 -> 2 (half to even), exactly min_pixels after rounding
    (98, 126),  # 3.5 -> 4, 4.5 -> 4
    (1, 1),
    (1, 200),  # aspect exactly 200
    (27, 29),
    (1079, 1921),
    (1080, 1920),
    (2160, 3840),
    (1440, 2560),
    (1800, 2880),
    (4320, 7680),  # 8K: shrunk
    (20000, 20000),
    (3, 599),
    (600, 3),
    (3584, 3584),  # exactly max_pixels
    (56, 56),  # exactly min_pixels
]


@pytest.mark.parametrize(("h", "w"), ODD_SIZES)
@pytest.mark.parametrize(
    "limits", [F28, (28, 100 * 28 * 28, 16384 * 28 * 28), (28, 3136, 2700 * 28 * 28), (32, 65536, 16777216)]
)
def test_smart_resize_matches_restated_reference(h, w, limits):
    assert smart_resize(h, w, *limits) == restated(h, w, *limits)


@pytest.mark.parametrize(("h", "w"), ODD_SIZES)
def test_smart_resize_matches_ui_tars_package(h, w):
    ap = pytest.importorskip("ui_tars.action_parser")
    for lo, hi in ((100 * 28 * 28, 16384 * 28 * 28), (3136, 12845056), (3136, 2700 * 28 * 28)):
        assert smart_resize(h, w, 28, lo, hi) == ap.smart_resize(h, w, 28, lo, hi)


def test_known_sizes_by_hand():
    # 3840x2160, factor 28: 2160/28 = 77.14 -> 2156, 3840/28 = 137.14 -> 3836; 8.27 Mpx fits.
    assert get_adapter("qwen2.5-vl").input_size((3840, 2160)) == (3836, 2156)
    assert get_adapter("uitars-1.5").input_size((3840, 2160)) == (3836, 2156)
    # UI-TARS 1.0 caps at 2700*28^2 = 2,116,800 px: beta = sqrt(8,294,400 / 2,116,800) = 1.9795;
    # 2160/1.9795/28 = 38.97 -> 38*28 = 1064; 3840/1.9795/28 = 69.28 -> 69*28 = 1932.
    assert get_adapter("uitars-1.0").input_size((3840, 2160)) == (1932, 1064)
    # Qwen3-VL, factor 32: 3840/32 = 120 exactly; 2160/32 = 67.5 -> 68 (half to even) = 2176.
    assert get_adapter("qwen3-vl").input_size((3840, 2160)) == (3840, 2176)
    # 2560x1440: 1440/28 = 51.43 -> 1428, 2560/28 = 91.43 -> 2548.
    assert get_adapter("qwen2.5-vl").input_size((2560, 1440)) == (2548, 1428)
    # 1920x1080: 38.57 -> 39*28 = 1092, 68.57 -> 69*28 = 1932.
    assert get_adapter("uitars-1.5").input_size((1920, 1080)) == (1932, 1092)
    # Half to even: 70/28 = 2.5 -> 2 (56), 98/28 = 3.5 -> 4 (112).
    assert smart_resize(70, 98) == (56, 112)
    # A 10x10 icon: 28x28 is below 3136 px; grown by sqrt(3136/100) = 5.6 -> 56x56.
    assert smart_resize(10, 10) == (56, 56)
    # 20000^2: in exact arithmetic 3584^2 is the cap, but 20000 / beta is 3583.99999... in
    # floating point and the reference floors it to 127*28 = 3556. We match the reference.
    assert smart_resize(20000, 20000) == (3556, 3556)
    assert smart_resize(3584, 3584) == (3584, 3584)
    # UI-TARS 1.5's min 100*28^2 = 78,400 px: 200x200 (40,000 px) grows to 280x280.
    assert get_adapter("uitars-1.5").input_size((200, 200)) == (280, 280)


def test_extreme_aspect_ratio_raises_like_the_reference():
    assert smart_resize(28, 5600) == (28, 5600)  # exactly 200:1 is allowed
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 2010)
    with pytest.raises(ValueError, match="aspect ratio"):
        get_adapter("qwen2.5-vl").input_size((5000, 20))


def test_bad_inputs_name_themselves():
    with pytest.raises(ValueError, match="height=0"):
        smart_resize(0, 100)
    with pytest.raises(ValueError, match="factor"):
        smart_resize(100, 100, factor=0)
    with pytest.raises(ValueError, match="min_pixels"):
        smart_resize(100, 100, 28, 5000, 4000)


def test_floor_never_reaches_zero_where_the_reference_would():
    """Our one deliberate difference: a 200:1 strip under a tiny cap keeps one factor."""
    h, w, lo, hi = 30, 6000, 784, 3136
    assert restated(h, w, 28, lo, hi)[0] == 0
    beta = math.sqrt(h * w / hi)
    assert smart_resize(h, w, 28, lo, hi) == (28, 28 * math.floor(w / beta / 28))


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 12000), st.integers(1, 12000), st.sampled_from([F28, (32, 65536, 16777216)]))
def test_smart_resize_properties(h, w, limits):
    """Multiples of the factor, within the limits, and a fixed point: the server's own
    smart_resize leaves the adapter's image alone."""
    if max(h, w) / min(h, w) > 100:
        return
    factor, lo, hi = limits
    rh, rw = smart_resize(h, w, *limits)
    assert rh % factor == 0 and rw % factor == 0 and rh > 0 and rw > 0
    assert lo <= rh * rw <= hi
    assert smart_resize(rh, rw, *limits) == (rh, rw)
    if min(h, w) >= 2 * factor:
        assert abs(math.log((rw / rh) / (w / h))) < 0.45  # aspect kept up to rounding


def test_resize_for_model_exact_size_and_scale():
    img = Image.new("RGBA", (3840, 2160), (10, 20, 30, 255))
    r = resize_for_model(img, *F28)
    assert r.image.size == (3836, 2156) and r.image.mode == "RGB"
    assert r.scale_x == 3836 / 3840 and r.scale_y == 2156 / 2160
    x, y = r.to_original(*r.to_resized(1234.5, 987.25))
    assert (x, y) == pytest.approx((1234.5, 987.25))


def test_resize_for_model_keeps_an_image_already_at_size():
    img = Image.new("RGB", (1932, 1092))
    img.putpixel((5, 7), (255, 0, 0))
    r = resize_for_model(img, *F28)
    assert r.image is img and (r.scale_x, r.scale_y) == (1.0, 1.0)


def test_resize_spec_validates():
    with pytest.raises(ValueError, match="positive"):
        ResizeSpec(28, 0, 100)
    assert ResizeSpec(*F28).model_size((1920, 1080)) == (1932, 1092)
