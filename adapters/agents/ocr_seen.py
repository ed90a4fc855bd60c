"""What the OCR agent saw of one image (its budget rendering and the lines read from it), and
where that image has ink no line accounts for: the agent's guess at an icon."""

from __future__ import annotations

import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from regionfocus.adapters.perception.ocr_text import (
    TextLine,
)
from regionfocus.geometry import Box, Point
from regionfocus.stars import STAR_FILL


@dataclass
class Seen:
    """What the agent saw of one image: its budget rendering and the OCR lines read from it.

    ``size``: the given image's (W, H); ``array``: the budget image (H', W', 3) uint8; line
    boxes are in budget pixels. ``through_stars``: read from an annotated image because no
    clean version of the screen had been seen.
    """

    size: tuple[int, int]
    array: np.ndarray
    lines: list[TextLine]
    through_stars: bool = False
    ocr_s: float = 0.0

    @property
    def budget(self) -> tuple[int, int]:
        return self.array.shape[1], self.array.shape[0]

    @property
    def sx(self) -> float:
        """Given-image pixels per budget pixel, horizontally."""
        return self.size[0] / self.array.shape[1]

    @property
    def sy(self) -> float:
        return self.size[1] / self.array.shape[0]

    def to_image(self, p: Point) -> Point:
        return Point(p.x * self.sx, p.y * self.sy)

    def to_budget(self, p: Point) -> Point:
        return Point(p.x / self.sx, p.y / self.sy)


class BudgetArrays:
    """The budget rendering of each image object still alive, made once. The samples of one
    screen share one decoded screenshot, and every request about it (an answer, a focal
    point) needs its 4K -> 1 MP resize: 244 of the main job's 309 resizes were of 12 images.
    Keyed by the object (PIL images do not hash): callers must not draw on an image after
    handing it over, which the core never does (stars go on a copy)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._arrays: dict[int, tuple[weakref.ref, np.ndarray]] = {}

    def get(self, image, make: Callable[[object], np.ndarray]) -> np.ndarray:
        key = id(image)
        with self._lock:
            hit = self._arrays.get(key)
        if hit is not None and hit[0]() is image:
            return hit[1]
        array = make(image)
        array.flags.writeable = False
        ref = weakref.ref(image, lambda _ref, k=key: self._arrays.pop(k, None))
        with self._lock:
            self._arrays[key] = (ref, array)
        return array


class SeenCache:
    """Reads by image content: at most ``size`` of them kept (least recently used out first),
    each made once. A read under way when another thread asks for the same key is waited for,
    not repeated: the samples of one screenshot that are in flight together ask for the same
    screen, and often the same views, at the same moment. ``reads``/``hits`` count both ways."""

    def __init__(self, size: int):
        self.size = max(1, int(size))
        self._done: OrderedDict[str, Seen] = OrderedDict()
        self._pending: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self.reads = self.hits = 0

    def get(self, key: str, read: Callable[[], Seen]) -> Seen:
        while True:
            with self._lock:
                if key in self._done:
                    self._done.move_to_end(key)
                    self.hits += 1
                    return self._done[key]
                pending = self._pending.get(key)
                if pending is None:
                    pending = self._pending[key] = threading.Event()
                    self.reads += 1
                    break
            pending.wait()  # then look again; a read that failed is tried by the next caller
        try:
            seen = read()
            with self._lock:
                self._done[key] = seen
                while len(self._done) > self.size:
                    self._done.popitem(last=False)
            return seen
        finally:
            with self._lock:
                del self._pending[key]
            pending.set()

    def recent(self) -> list[Seen]:
        """Every kept read, most recently used first."""
        with self._lock:
            return list(reversed(self._done.values()))

    def __len__(self) -> int:
        return len(self._done)


def grow_box(b: Box, pad: float) -> Box:
    return Box(b.left - pad, b.top - pad, b.right + pad, b.bottom + pad)


def _box_sum(a: np.ndarray, kh: int, kw: int) -> np.ndarray:
    """Sum of every kh x kw window of ``a`` ("valid" positions), via an integral image."""
    c = np.pad(a, ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    return c[kh:, kw:] - c[:-kh, kw:] - c[kh:, :-kw] + c[:-kh, :-kw]


def unread_ink_peak(
    seen: Seen, readable: list[TextLine], avoid: list[Point], keep_out: float
) -> Point | None:
    """The centroid of the densest patch of fine detail the OCR did not read, away from stars.

    Fine detail = pixels that differ from their 5x5 neighbourhood mean (strokes of small text,
    icons); read lines and pink stars are masked out, so what remains is what the agent sees
    but cannot read. The patch is a fifth of the image on each side: well inside the paper's
    smallest box (0.3 x 0.3), so a view centred on it contains it.
    """
    a = seen.array.astype(np.float32)
    gray = a @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    hh, ww = gray.shape
    if hh < 10 or ww < 10:
        return None
    blur = _box_sum(np.pad(gray, 2, mode="edge"), 5, 5) / 25.0
    ink = np.abs(gray - blur) > 18.0
    star = (
        (np.abs(a[..., 0] - STAR_FILL[0]) < 40)
        & (np.abs(a[..., 1] - STAR_FILL[1]) < 60)
        & (np.abs(a[..., 2] - STAR_FILL[2]) < 60)
    )
    ink &= ~star
    for ln in readable:
        pad = 2 + 0.3 * ln.box.height
        b = grow_box(ln.box, pad)
        ink[max(0, int(b.top)) : int(math.ceil(b.bottom)), max(0, int(b.left)) : int(math.ceil(b.right))] = (
            False
        )
    r_budget = keep_out / min(seen.sx, seen.sy) + 2
    ys, xs = np.ogrid[:hh, :ww]
    for p in avoid:
        q = seen.to_budget(p)
        ink &= (xs - q.x) ** 2 + (ys - q.y) ** 2 > (3.5 * r_budget) ** 2
    # Coarse cells (4 px) keep the window sums cheap.
    cell = 4
    gh, gw = hh // cell, ww // cell
    if gh < 2 or gw < 2:
        return None
    grid = ink[: gh * cell, : gw * cell].reshape(gh, cell, gw, cell).mean(axis=(1, 3))
    kh, kw = max(1, round(gh * 0.2)), max(1, round(gw * 0.2))
    sums = _box_sum(grid, kh, kw)
    if sums.size == 0 or sums.max() < 0.01 * kh * kw:
        return None
    j, i = np.unravel_index(int(np.argmax(sums)), sums.shape)  # first maximum: deterministic
    win = grid[j : j + kh, i : i + kw]
    wy, wx = np.nonzero(win > 0)
    weights = win[wy, wx]
    cy = (j + (wy * weights).sum() / weights.sum() + 0.5) * cell
    cx = (i + (wx * weights).sum() / weights.sum() + 0.5) * cell
    p = seen.to_image(Point(float(cx), float(cy)))
    if any(p.distance(q) <= keep_out for q in avoid):
        return None
    return p
