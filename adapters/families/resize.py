"""Qwen-style ``smart_resize``: the exact size a Qwen2-VL / Qwen2.5-VL / Qwen3-VL model sees.

Sizes are (height, width) in ``smart_resize`` (the reference's argument order) and (W, H)
everywhere else (PIL's order). The adapter resizes the screenshot on the client to exactly
this size, so the server's own smart_resize is the identity on it and the answer's frame is
known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PIL import Image

MAX_ASPECT_RATIO = 200  # the reference rejects longer strips


def smart_resize(
    height: int,
    width: int,
    factor: int = 28,
    min_pixels: int = 4 * 28 * 28,
    max_pixels: int = 16384 * 28 * 28,
) -> tuple[int, int]:
    """(height, width) in pixels, both multiples of ``factor``, area within
    [``min_pixels``, ``max_pixels``], aspect ratio kept as closely as possible.

    Follows qwen-vl-utils' ``smart_resize`` (QwenLM/Qwen2.5-VL, Qwen3-VL): round each side to
    the nearest multiple of ``factor`` with Python's round() (half to even), but at least one
    factor; if the area is too large, scale both sides by 1/beta with beta = sqrt(area/max)
    and floor to the factor; if too small, scale by beta = sqrt(min/area) and ceil. One
    deliberate difference: the floored side is kept at least ``factor`` (the reference can
    return 0 for a strip near the 200:1 limit under a small ``max_pixels``, an unusable size).
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"smart_resize: image size must be positive, got height={height} width={width}")
    if factor <= 0:
        raise ValueError(f"smart_resize: factor must be positive, got {factor}")
    if min_pixels > max_pixels:
        raise ValueError(f"smart_resize: min_pixels={min_pixels} exceeds max_pixels={max_pixels}")
    ratio = max(height, width) / min(height, width)
    if ratio > MAX_ASPECT_RATIO:
        raise ValueError(
            f"smart_resize: aspect ratio {ratio:.1f} of {width}x{height} exceeds {MAX_ASPECT_RATIO}"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class ResizeSpec:
    """A family's resize rule: ``factor`` and the pixel limits (all configurable)."""

    factor: int
    min_pixels: int
    max_pixels: int

    def __post_init__(self) -> None:
        if self.factor <= 0 or self.min_pixels <= 0 or self.max_pixels <= 0:
            raise ValueError(f"resize: factor and pixel limits must be positive, got {self}")
        if self.min_pixels > self.max_pixels:
            raise ValueError(f"resize: min_pixels={self.min_pixels} exceeds max_pixels={self.max_pixels}")

    def model_size(self, size: tuple[int, int]) -> tuple[int, int]:
        """(W, H) the model sees for an image of ``size`` = (W, H)."""
        h, w = smart_resize(size[1], size[0], self.factor, self.min_pixels, self.max_pixels)
        return w, h


@dataclass(frozen=True)
class Resized:
    """``image`` at the model's size; ``scale_x``/``scale_y`` are resized pixels per original
    pixel on each axis (they differ slightly: each side is rounded on its own)."""

    image: Image.Image
    scale_x: float
    scale_y: float

    def to_original(self, x: float, y: float) -> tuple[float, float]:
        """A point in resized-image pixels -> pixels of the image before resizing."""
        return x / self.scale_x, y / self.scale_y

    def to_resized(self, x: float, y: float) -> tuple[float, float]:
        return x * self.scale_x, y * self.scale_y


def resize_for_model(
    image: Image.Image,
    factor: int = 28,
    min_pixels: int = 4 * 28 * 28,
    max_pixels: int = 16384 * 28 * 28,
) -> Resized:
    """``image`` resized (bicubic, as the Qwen processors do) to its smart_resize size, RGB,
    with the exact per-axis scale. An image already at that size is returned as is (RGB)."""
    w, h = image.size
    target = ResizeSpec(factor, min_pixels, max_pixels).model_size((w, h))
    out = image if image.mode == "RGB" else image.convert("RGB")
    if target != (w, h):
        out = _bicubic(out, target)
    return Resized(out, target[0] / w, target[1] / h)


def _bicubic(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """Bicubic resize of an RGB image. A shrink by more than 5 % on an axis goes through
    Pillow, whose filter widens with the shrink (antialiasing); anything else (the
    near-identity 3840x2160 -> 3836x2156 of a 4K screenshot, or an enlargement) through
    OpenCV's bicubic (the same a = -0.75 kernel as torch's bicubic used by the fast Qwen
    processors), ~5x less CPU than Pillow on 4K (benchmarks/overhead.py)."""
    if size[0] < 0.95 * image.width or size[1] < 0.95 * image.height:
        return image.resize(size, Image.Resampling.BICUBIC)
    import cv2
    import numpy as np

    return Image.fromarray(cv2.resize(np.asarray(image), size, interpolation=cv2.INTER_CUBIC))
