"""Resizing for views and the model-size copy: bicubic, from OpenCV unless an axis shrinks.

OpenCV's bicubic (a = -0.75, as torch's, which the fast Qwen processors use) is a fixed 4x4
kernel: exact enough for enlargements and near-identities (3840x2160 -> 3836x2156), but it
aliases on a real shrink, where Pillow's filter widens with the scale. A 4K view comes out
within 40 dB PSNR of Pillow's Lanczos (47 dB on screens; tests/test_resample.py) for a third of
the CPU of the C Lanczos kernel this replaced (BENCHMARKS.md, "Library or ours").
"""

from __future__ import annotations

import cv2
import numpy as np
from PIL import Image

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


def resize(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """``image`` at ``size`` (W, H), bicubic; a new image even when the size is unchanged.
    Both release the GIL while they resample."""
    size = check_size(size)
    if image.size == size:
        return image.copy()
    if image.mode not in ("RGB", "L") or size[0] < 0.95 * image.width or size[1] < 0.95 * image.height:
        return image.resize(size, Image.Resampling.BICUBIC)
    return Image.fromarray(cv2.resize(np.asarray(image), size, interpolation=cv2.INTER_CUBIC))
