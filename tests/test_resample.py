"""Views within 40 dB PSNR of Pillow's Lanczos (the compiled kernel, or Pillow where it is not
built); the model-size copy's bicubic is Pillow's where an axis shrinks; a size no screen has is
a clear error."""

from __future__ import annotations

import random
import shutil

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


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_kernel_is_built_and_matches_this_pillow():
    # The install builds it wherever there is a compiler; a silent fallback would only cost CPU,
    # so this is where a broken build shows.
    assert resample._lanczos is not None
    image = _image((61, 37), 20261123)
    out = resample.lanczos(image, (183, 111))
    assert _psnr(out, _pillow(image, (183, 111))) >= MIN_PSNR_DB


@settings(max_examples=60, deadline=None)
@given(
    sw=st.integers(1, 90),
    sh=st.integers(1, 70),
    dw=st.integers(1, 260),
    dh=st.integers(1, 200),
    seed=st.integers(0, 2**16),
    flat=st.booleans(),
)
def test_within_40_db_of_pillow_for_any_geometry(sw, sh, dw, dh, seed, flat):
    # Random pixels too: the kernel is Pillow's arithmetic, the rest is Pillow.
    image = _image((sw, sh), seed, flat)
    out = resample.lanczos(image, (dw, dh))
    assert out.mode == "RGB" and out.size == (dw, dh)
    assert _psnr(out, _pillow(image, (dw, dh))) >= MIN_PSNR_DB


@settings(max_examples=30, deadline=None)
@given(
    left=st.integers(0, 1500),
    top=st.integers(0, 800),
    width=st.integers(240, 1920),
    height=st.integers(140, 1080),
    target=st.sampled_from([(1920, 1080), (1316, 728), (1288, 728), (924, 1036), (3836, 2156)]),
)
@pytest.mark.slow  # a real model or engine end to end: seconds of CPU
def test_views_of_a_screen_match_pillows_lanczos_within_40_db(left, top, width, height, target):
    # Whatever box a proposer picks and whichever model size it is fitted to: enlarged up to
    # max_zoom, about the same size, or shrunk.
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
def test_within_40_db_of_pillow_at_view_sizes(src, dst):
    image = _image(src, 7, flat=True)
    assert resample.covered(src, dst)
    assert _psnr(resample.lanczos(image, dst), _pillow(image, dst)) >= MIN_PSNR_DB


def test_height_shrinking_most_goes_to_pillow():
    # Pillow 13 runs the vertical pass first here; the kernel never does, so Pillow resizes.
    src, dst = (300, 200), (299, 120)
    assert not resample.covered(src, dst)
    image = _image(src, 3)
    assert resample.lanczos(image, dst).tobytes() == _pillow(image, dst).tobytes()


def test_other_modes_and_same_size():
    rgba = _image((40, 30), 5).convert("RGBA")
    assert (
        resample.lanczos(rgba, (90, 70)).tobytes()
        == rgba.resize((90, 70), Image.Resampling.LANCZOS).tobytes()
    )
    image = _image((40, 30), 6)
    same = resample.lanczos(image, (40, 30))
    assert same is not image and same.tobytes() == image.tobytes()
    with pytest.raises(ValueError, match="target size must be positive, got 0x5"):
        resample.lanczos(image, (0, 5))


@pytest.mark.skipif(resample._lanczos is None, reason="kernel not built")
def test_kernel_rejects_a_buffer_of_the_wrong_size():
    with pytest.raises(ValueError, match=r"a 4x3 RGB image has 36 bytes, got 35"):
        resample._lanczos.resample_rgb(bytes(35), 4, 3, 8, 6)


@pytest.mark.skipif(resample._lanczos is None, reason="kernel not built")
@pytest.mark.parametrize(
    "sizes",
    [
        (1, 1, 2**31 - 1, 2**31 - 1),  # width x height x 3 wraps a 64-bit length negative
        (1, 1, 2**21, 2),  # one side past what the filter counts hold
        (2**31 - 1, 2**31 - 1, 4, 4),  # the input's claimed length wraps too
    ],
)
def test_kernel_refuses_sizes_whose_byte_count_would_overflow(sizes):
    with pytest.raises(ValueError, match="is too large"):
        resample._lanczos.resample_rgb(bytes(3), *sizes)


@pytest.mark.parametrize("resize", [resample.lanczos, resample.bicubic])
@pytest.mark.parametrize(
    "size",
    [
        (2**31 - 1, 2**31 - 1),  # width x height x 3 wraps a 64-bit length negative
        (2**21, 2),  # one side past any screen, however few pixels in all
        (40_000, 40_000),  # each side plausible, the product not
    ],
)
def test_a_huge_requested_size_is_a_clear_error_on_every_path(resize, size):
    # Pillow (no kernel, or another mode) and OpenCV are guarded too, before they allocate.
    with pytest.raises(ValueError, match="is too large"):
        resize(_image((4, 3), 1), size)
    with pytest.raises(ValueError, match="is too large"):
        resize(_image((4, 3), 1).convert("RGBA"), size)


def test_bicubic_shrinks_with_pillows_antialiasing_and_enlarges_with_opencv():
    # OpenCV's bicubic keeps its 4-tap kernel on a shrink and aliases; Pillow's widens.
    image = _image((300, 200), 3, flat=True)
    shrunk = resample.bicubic(image, (299, 120))
    assert shrunk.tobytes() == image.resize((299, 120), Image.Resampling.BICUBIC).tobytes()
    grown = resample.bicubic(image, (600, 400))
    assert grown.size == (600, 400) and _psnr(grown, image.resize((600, 400), Image.Resampling.BICUBIC)) >= 30
    same = resample.bicubic(image, (300, 200))
    assert same is not image and same.tobytes() == image.tobytes()
