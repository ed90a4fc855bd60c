"""Comparing two screenshots: a cheap signature to tell "the same screen" from a new one, and the
pixels an action changed (regions the caller names, such as a drawn mouse cursor, left out)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageChops

from .geometry import Box

_SIDE = 48


def screen_signature(image: Image.Image) -> np.ndarray:
    """A 48x48 grey thumbnail (uint8). Small enough to compare in microseconds, large enough
    that opening a menu or a new page changes it."""
    return np.asarray(image.convert("L").resize((_SIDE, _SIDE), Image.Resampling.BOX), dtype=np.uint8)


def same_screen(a: np.ndarray | None, b: np.ndarray | None, tolerance: float = 1.5) -> bool:
    """True when the mean absolute grey difference is within ``tolerance`` (0-255 scale): a
    blinking caret or a hover tint stays "the same screen", a new page does not."""
    if a is None or b is None:
        return False
    return float(np.mean(np.abs(a.astype(np.int16) - b.astype(np.int16)))) <= tolerance


def _rgb(image: Image.Image) -> Image.Image:
    return image if image.mode == "RGB" else image.convert("RGB")


def pixel_change(
    before: Image.Image,
    after: Image.Image,
    channel_delta: int = 16,
    ignore: Sequence[Box] = (),
) -> tuple[int, float]:
    """(changed pixel count, changed fraction) between two screenshots: a pixel changed when a
    channel moved by more than ``channel_delta`` (0-255; below it, compression noise). Pixels
    inside the ``ignore`` boxes (screenshot pixels, e.g. the mouse cursor an OSWorld screenshot
    draws, at both its positions) never count. A size change counts every pixel."""
    w, h = before.size
    if before.size != after.size:
        return w * h, 1.0
    # PIL's C loops throughout (difference, per-pixel max over the bands, histogram): a 4K pair
    # costs about a tenth of the CPU of the same count in numpy (int16 copies of both images).
    r, g, b = ImageChops.difference(_rgb(before), _rgb(after)).split()
    moved = ImageChops.lighter(ImageChops.lighter(r, g), b)
    for box in ignore:
        x0, y0 = max(0, math.floor(box.left)), max(0, math.floor(box.top))
        x1, y1 = min(w, math.ceil(box.right)), min(h, math.ceil(box.bottom))
        if x1 > x0 and y1 > y0:
            moved.paste(0, (x0, y0, x1, y1))
    changed = sum(moved.histogram()[channel_delta + 1 :])
    return changed, changed / max(1, w * h)
