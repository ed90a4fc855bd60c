"""Comparing two screenshots: a cheap signature to tell "the same screen" from a new one, and the
pixels an action changed (regions the caller names, such as a drawn mouse cursor, left out)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

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
    a = np.asarray(before.convert("RGB"))
    b = np.asarray(after.convert("RGB"))
    if np.array_equal(a, b):
        return 0, 0.0
    # uint8 all the way (max - min), no int16 copies of a 4K screenshot.
    moved = (np.maximum(a, b) - np.minimum(a, b)).max(axis=2) > channel_delta
    for box in ignore:
        x0, y0 = max(0, int(np.floor(box.left))), max(0, int(np.floor(box.top)))
        x1, y1 = min(w, int(np.ceil(box.right))), min(h, int(np.ceil(box.bottom)))
        if x1 > x0 and y1 > y0:
            moved[y0:y1, x0:x1] = False
    changed = int(np.count_nonzero(moved))
    return changed, changed / max(1, w * h)
