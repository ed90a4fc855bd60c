"""A cheap signature of a screenshot, to tell "the same screen" from a new one."""

from __future__ import annotations

import numpy as np
from PIL import Image

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
