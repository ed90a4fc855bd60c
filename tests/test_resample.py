"""Views and the model-size copy: within 40 dB PSNR of Pillow's Lanczos on screens, Pillow's
own bicubic where an axis shrinks, and a clear error for a size no screen has."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from benchmarks._common import synthetic_screen
from regionfocus import Box, crop_view, resample

MIN_PSNR_DB = 40.0
SCREEN = synthetic_screen(3, (1920, 1080))


def _image(size: tuple[int, int], seed: int, flat: bool = False) -> Image.Image:
    """Random pixels, or a screen-like image of flat blocks with hard edges (where Lanczos
    rings past 0 and 255, so the clipping is exercised)."""
    rng = random.Random(seed)
    if not flat:
        return Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3))
    cells = Image.frombytes("RGB", (8, 6), bytes(rng.choice((0, 255, 30, 220)) for _ in range(8 * 6 * 3)))
    return cells.resize(size, Image.Resampling.NEAREST)


def _pillow(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    return image.resize(size, Image.Resampling.LANCZOS)


def _psnr(a: Image.Image, b: Image.Image) -> float:
    mse = float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


@settings(max_examples=60, deadline=None)
@given(
    sw=st.integers(1, 90),
    sh=st.integers(1, 70),
    dw=st.integers(1, 260),
    dh=st.integers(1, 200),
    seed=st.integers(0, 2**16),
    flat=st.booleans(),
)
def test_any_geometry_gives_an_rgb_image_of_the_size_asked(sw, sh, dw, dh, seed, flat):
    image = _image((sw, sh), seed, flat)
    out = resample.resize(image, (dw, dh))
    assert out.mode == "RGB" and out.size == (dw, dh)


@settings(max_examples=30, deadline=None)
@given(
    left=st.integers(0, 1500),
    top=st.integers(0, 800),
    width=st.integers(240, 1920),
    height=st.integers(140, 1080),
    target=st.sampled_from([(1920, 1080), (1316, 728), (1288, 728), (924, 1036), (3836, 2156)]),
)
def test_views_of_a_screen_match_pillows_lanczos_within_40_db(left, top, width, height, target):
    # Whatever box a proposer picks and whichever model size it is fitted to: enlarged, about
    # the same size, or shrunk.
    box = Box(left, top, min(1920, left + width), min(1080, top + height))
    view = crop_view(SCREEN, box, target, max_zoom=4.0)
    b = view.transform.box
    crop = SCREEN.crop((int(b.left), int(b.top), int(b.right), int(b.bottom)))
    assert _psnr(view.image, _pillow(crop, view.image.size)) >= MIN_PSNR_DB


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ((1920, 1080), (3836, 2156)),  # a half-screen box zoomed to a 4K model size
        ((3840, 2160), (3836, 2156)),  # the whole screen, smart_resize's slight shrink
        ((700, 394), (2800, 1576)),  # max_zoom
        ((1001, 563), (3836, 2156)),  # a non-integer zoom
    ],
)
def test_within_40_db_of_pillows_lanczos_at_view_sizes(src, dst):
    image = synthetic_screen(7, (3840, 2160)).crop((100, 50, 100 + src[0], 50 + src[1]))
    assert _psnr(resample.resize(image, dst), _pillow(image, dst)) >= MIN_PSNR_DB


def test_a_shrink_goes_to_pillows_antialiasing_bicubic():
    # OpenCV's bicubic keeps its 4-tap kernel on a shrink and aliases; Pillow's widens.
    src, dst = (300, 200), (299, 120)
    image = _image(src, 3, flat=True)
    out = resample.resize(image, dst)
    assert out.tobytes() == image.resize(dst, Image.Resampling.BICUBIC).tobytes()
    assert _psnr(out, _pillow(image, dst)) >= MIN_PSNR_DB


def test_other_modes_and_same_size():
    rgba = _image((40, 30), 5).convert("RGBA")
    assert (
        resample.resize(rgba, (90, 70)).tobytes() == rgba.resize((90, 70), Image.Resampling.BICUBIC).tobytes()
    )
    image = _image((40, 30), 6)
    same = resample.resize(image, (40, 30))
    assert same is not image and same.tobytes() == image.tobytes()
    with pytest.raises(ValueError, match="target size must be positive, got 0x5"):
        resample.resize(image, (0, 5))


@pytest.mark.parametrize(
    "size",
    [
        (2**31 - 1, 2**31 - 1),  # width x height x 3 wraps a 64-bit length negative
        (2**21, 2),  # one side past any screen, however few pixels in all
        (40_000, 40_000),  # each side plausible, the product not
    ],
)
def test_refuses_sizes_whose_byte_count_would_overflow(size):
    image = _image((4, 3), 1)
    with pytest.raises(ValueError, match="is too large"):
        resample.resize(image, size)
    with pytest.raises(ValueError, match="is too large"):  # a claimed input size, checked alike
        resample.check_size(size)
