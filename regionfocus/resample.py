"""Resizing: Lanczos for views, from a compiled kernel when there is one; bicubic for the
model-size copy.

A view at a 4K model size is a ~3836x2156 Lanczos upsample, four per RegionFocus round: ~70 ms
of CPU each in Pillow or in OpenCV's Lanczos-4, ~25 ms in ``regionfocus._lanczos`` (built from
``_lanczos.c`` at install; optional: without it Pillow resizes). OpenCV's bicubic would take a
third of the kernel's CPU, but on dense text at 2-4x zoom it falls below 40 dB PSNR of Pillow's
Lanczos, the bar views are held to (BENCHMARKS.md, "Library or ours"). The kernel does Pillow's
arithmetic, horizontal pass first, so it gives Pillow's bytes wherever Pillow takes that order
too; the other resizes (see :func:`covered`) go to Pillow.
"""

from __future__ import annotations

import cv2
import numpy as np
from PIL import Image

try:
    from . import _lanczos
except ImportError:  # not built (no compiler at install): Pillow does the work
    _lanczos = None

# Far beyond any screen (16K is 15360x8640, 133 M pixels), and small enough that a hostile size
# is an error naming it rather than an allocation of tens of gigabytes or a library's overflow.
MAX_SIDE = 1 << 16
MAX_PIXELS = 1 << 27


def check_size(size: tuple[int, int]) -> tuple[int, int]:
    """``size`` (W, H) as ints; ValueError unless both are positive and within the caps."""
    w, h = int(size[0]), int(size[1])
    if w < 1 or h < 1:
        raise ValueError(f"resize: target size must be positive, got {w}x{h}")
    if w > MAX_SIDE or h > MAX_SIDE or w * h > MAX_PIXELS:
        raise ValueError(f"resize: {w}x{h} is too large (at most {MAX_SIDE} a side, {MAX_PIXELS} pixels)")
    return w, h


def covered(src: tuple[int, int], dst: tuple[int, int]) -> bool:
    """Whether every Pillow version resamples ``src`` -> ``dst`` (W, H) horizontal pass first.
    Pillow 13 runs the vertical pass first when the height shrinks by more than twice what the
    width does, and the two orders clip the first pass's overshoot differently."""
    shrink_h, shrink_w = src[1] - dst[1], src[0] - dst[0]
    return not (shrink_h > 0 and shrink_h > 2 * shrink_w)


def lanczos(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """``image`` at ``size`` (W, H), Lanczos; a new image even when the size is unchanged."""
    size = check_size(size)
    if image.size == size:
        return image.copy()
    if image.mode != "RGB" or _lanczos is None or not covered(image.size, size):
        return image.resize(size, Image.Resampling.LANCZOS)
    data = _lanczos.resample_rgb(image.tobytes(), image.width, image.height, size[0], size[1])
    return Image.frombuffer("RGB", size, data, "raw", "RGB", 0, 1)


def bicubic(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """``image`` at ``size`` (W, H), bicubic as the Qwen processors resize (a = -0.75, torch's):
    OpenCV's, ~5x less CPU than Pillow on 4K, unless an axis shrinks by more than 5 %, where
    OpenCV's fixed 4x4 kernel aliases and Pillow's widens with the scale."""
    size = check_size(size)
    if image.size == size:
        return image.copy()
    if image.mode not in ("RGB", "L") or size[0] < 0.95 * image.width or size[1] < 0.95 * image.height:
        return image.resize(size, Image.Resampling.BICUBIC)
    return Image.fromarray(cv2.resize(np.asarray(image), size, interpolation=cv2.INTER_CUBIC))
