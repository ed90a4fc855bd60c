"""The compiled Lanczos kernel gives Pillow's bytes, and falls back to Pillow where it must."""

from __future__ import annotations

import logging
import random
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from regionfocus import resample


def _image(size: tuple[int, int], seed: int, flat: bool = False) -> Image.Image:
    """Random pixels, or a screen-like image of flat blocks with hard edges (where Lanczos
    rings past 0 and 255, so the clipping is exercised)."""
    rng = random.Random(seed)
    if not flat:
        return Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3))
    cells = Image.frombytes("RGB", (8, 6), bytes(rng.choice((0, 255, 30, 220)) for _ in range(8 * 6 * 3)))
    return cells.resize(size, Image.Resampling.NEAREST)


def _pillow(image: Image.Image, size: tuple[int, int]) -> bytes:
    return image.resize(size, Image.Resampling.LANCZOS).tobytes()


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_kernel_is_built_and_matches_this_pillow():
    # The install builds it wherever there is a compiler; a silent fallback would only cost CPU,
    # so this is where a broken build shows.
    assert resample._lanczos is not None
    assert resample.kernel_available()


@settings(max_examples=60, deadline=None)
@given(
    sw=st.integers(1, 90),
    sh=st.integers(1, 70),
    dw=st.integers(1, 260),
    dh=st.integers(1, 200),
    seed=st.integers(0, 2**16),
    flat=st.booleans(),
)
def test_same_bytes_as_pillow_for_any_geometry(sw, sh, dw, dh, seed, flat):
    image = _image((sw, sh), seed, flat)
    out = resample.lanczos(image, (dw, dh))
    assert out.mode == "RGB" and out.size == (dw, dh)
    assert out.tobytes() == _pillow(image, (dw, dh))


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ((1920, 1080), (3836, 2156)),  # a half-screen box zoomed to a 4K model size
        ((3840, 2160), (3836, 2156)),  # the whole screen, smart_resize's slight shrink
        ((700, 394), (2800, 1576)),  # max_zoom
        ((1001, 563), (3836, 2156)),  # a non-integer zoom
    ],
)
def test_same_bytes_as_pillow_at_view_sizes(src, dst):
    image = _image(src, 7, flat=True)
    assert resample.covered(src, dst)
    assert resample.lanczos(image, dst).tobytes() == _pillow(image, dst)


def test_height_shrinking_most_goes_to_pillow():
    # Pillow 13 runs the vertical pass first here; the kernel never does, so Pillow resizes.
    src, dst = (300, 200), (299, 120)
    assert not resample.covered(src, dst)
    image = _image(src, 3)
    assert resample.lanczos(image, dst).tobytes() == _pillow(image, dst)


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


def test_a_kernel_that_disagrees_with_pillow_is_turned_off(monkeypatch, caplog):
    class Wrong:
        @staticmethod
        def resample_rgb(data, w, h, ow, oh):
            return bytes(ow * oh * 3)

    monkeypatch.setattr(resample, "_lanczos", Wrong)
    monkeypatch.setattr(resample, "_checked", None)
    image = _image((50, 40), 9)
    with caplog.at_level(logging.WARNING, logger="regionfocus.resample"):
        out = resample.lanczos(image, (120, 90))
    assert out.tobytes() == _pillow(image, (120, 90))
    assert not resample.kernel_available()
    assert "does not match this Pillow" in caplog.text


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


def test_a_kernel_whose_check_raises_is_turned_off_not_every_resize(monkeypatch, caplog):
    class Broken:
        @staticmethod
        def resample_rgb(data, w, h, ow, oh):
            raise MemoryError("no room")

    monkeypatch.setattr(resample, "_lanczos", Broken)
    monkeypatch.setattr(resample, "_checked", None)
    image = _image((50, 40), 9)
    with caplog.at_level(logging.WARNING, logger="regionfocus.resample"):
        first = resample.lanczos(image, (120, 90))
        second = resample.lanczos(image, (100, 80))
    assert first.tobytes() == _pillow(image, (120, 90))
    assert second.tobytes() == _pillow(image, (100, 80))
    assert not resample.kernel_available()
    assert caplog.text.count("failed its check") == 1 and "MemoryError: no room" in caplog.text
