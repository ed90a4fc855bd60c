"""A reader of choice maps for tests and benchmarks: crowded candidates drawn as a family's
model sees them, every tag read back with the project's OCR and paired to a star by distance.

Frames: a case's points are pixels of a 3840x2160 screenshot; :func:`read_map` works in pixels
of the image it is given (the model-size copy) and is told where the stars are drawn there.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from regionfocus.geometry import Box, Point

UHD = (3840, 2160)
FAMILIES = ("uitars-1.0", "uitars-1.5", "qwen2.5-vl", "qwen3-vl")
_WORDS = (
    "file edit view layer select filter render window help export import mesh vertex normal buffer "
    "kernel thread signal matrix vector sample frame track clip audio channel volume profile"
).split()
STAR_PINK = (255, 20, 147)
PINK_UI = STAR_PINK  # the star colour itself: the hardest background for a pink tag
SOFT_PINK_UI = (255, 150, 200)


def _font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.truetype("DejaVuSans.ttf", px)
    except OSError:
        return ImageFont.load_default(size=px)


@lru_cache(maxsize=2)
def crowded_screen(seed: int = 0) -> Image.Image:
    """(Shared: never draw on it.) A 4K screen of small text on 18 px lines (13 px glyphs, no digits): light on the left,
    dark top right, the star's own pink (and a softer pink) bottom right."""
    rng = random.Random(seed)
    W, H = UHD
    img = Image.new("RGB", UHD, (246, 246, 246))
    d = ImageDraw.Draw(img)
    d.rectangle((W // 2, 0, W, H // 2), fill=(30, 31, 34))
    d.rectangle((W // 2, H // 2, W, H), fill=PINK_UI)
    d.rectangle((W * 3 // 4, H // 2, W, H), fill=SOFT_PINK_UI)
    font = _font(13)
    for y in range(2, H, 18):
        for x0, x1 in ((4, W // 2), (W // 2 + 4, W)):
            fg = (30, 30, 30) if x0 < W // 2 else (220, 220, 220) if y < H // 2 else (255, 255, 255)
            x = x0
            while x < x1 - 60:
                word = rng.choice(_WORDS)
                d.text((x, y), word, fill=fg, font=font)
                x += int(d.textlength(word, font=font)) + rng.choice((6, 6, 30))
    return img


def _spread(n: int, side: float, least: float, seed: int) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    out: list[tuple[float, float]] = []
    while len(out) < n:
        p = (rng.uniform(0, side), rng.uniform(0, side))
        if all(math.dist(p, q) >= least for q in out):
            out.append(p)
    return out


# Offsets in screenshot pixels (4K): what candidates on neighbouring elements look like.
SHAPES: dict[str, list[tuple[float, float]]] = {
    "2 @ 18 px, adjacent lines": [(0, 0), (0, 18)],
    "2 @ 10 px": [(0, 0), (10, 0)],
    "3 @ 18 px, a column": [(0, 0), (0, 18), (0, 36)],
    "4 @ 12-20 px, a grid": [(0, 0), (20, 0), (0, 12), (20, 12)],
    "5 @ 12 px, a row": [(0, 0), (12, 0), (24, 0), (36, 0), (48, 0)],
    "6 within 60 px": _spread(6, 60, 10, 4),
    "6 @ 45-53 px, a ring": [(0, 0)]
    + [(45 * math.cos(a), 45 * math.sin(a)) for a in np.linspace(0, 2 * math.pi, 6)[:5]],
}
# Where a crowd sits: on the light text, in corners and at edges, over dark and pink UI.
PLACES: dict[str, tuple[float, float]] = {
    "light text": (900, 1000.5),
    "top-left corner": (0, 0),
    "right edge, dark": (3839, 500.5),
    "bottom edge, pink": (2500, 2159),
    "dark UI": (2900, 700.5),
    "pink UI": (2300, 1500.5),
    "soft pink UI": (3300, 1700.5),
}


def crowd(shape: str, place: str) -> list[Point]:
    """The shape's points at the place, moved inside the screenshot as a whole (a crowd at an
    edge keeps its spacing) and kept one pixel from the border."""
    offs = SHAPES[shape]
    ax, ay = PLACES[place]
    xs, ys = [ax + dx for dx, _ in offs], [ay + dy for _, dy in offs]
    sx = max(0.0, 1 - min(xs)) + min(0.0, UHD[0] - 2 - max(xs))
    sy = max(0.0, 1 - min(ys)) + min(0.0, UHD[1] - 2 - max(ys))
    return [Point(x + sx, y + sy) for x, y in zip(xs, ys, strict=True)]


@dataclass(frozen=True)
class Reading:
    labels_ok: int  # labels read exactly once and paired to their own star
    labels: int
    texts: list[str]  # every number read in the window

    @property
    def legible(self) -> bool:
        return self.labels_ok == self.labels


def _gap(p: Point, b: Box) -> float:
    dx = max(0.0, b.left - p.x, p.x - b.right)
    dy = max(0.0, b.top - p.y, p.y - b.bottom)
    return math.hypot(dx, dy)


def find_tags(arr: np.ndarray, most: float = 0.06, reach: int = 8) -> list[Box]:
    """Number tags as a reader finds them: compact blocks, mostly of nearly the star colour,
    holding white marks, no taller than ``most`` of the image's short side. A block is the
    pink pixels connected to each other (thin lines opened away) with what they enclose."""
    import cv2

    from tests.model_like import _shift_any

    pink = _strong_pink(arr)
    inside = pink == 0  # the digits: not pink, but with pink on all four sides close by
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        inside &= _shift_any(pink, dx, dy, reach).astype(bool)
    solid = cv2.morphologyEx(pink | inside.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(solid, connectivity=4)
    white = (arr[..., 0] >= 225) & (arr[..., 1] >= 185) & (arr[..., 2] >= 215)
    tall = most * min(arr.shape[:2])
    out = []
    for i in range(1, n):
        x, y, w, h, area = (int(v) for v in stats[i])
        if h < 8 or w < 8 or h > tall or w > 4 * tall or area < 0.7 * w * h:
            continue
        if pink[y : y + h, x : x + w].mean() < 0.45:
            continue  # a star: an outline round a translucent body, not an opaque block
        if white[y : y + h, x : x + w].sum() < 2:
            continue
        out.append(Box(x, y, x + w, y + h))
    # Every tag of a drawing has one height whatever its digits: much smaller blocks are star
    # centres (a pink disc round a white dot), not numbers.
    tallest = max((b.height for b in out), default=0.0)
    return [b for b in out if b.height >= 0.7 * tallest]


def _strong_pink(arr: np.ndarray, tol: int = 60) -> np.ndarray:
    near = np.abs(arr - np.array(STAR_PINK, dtype=np.int16)).max(axis=2) <= tol
    return (near & (arr[..., 2] - arr[..., 1] >= 50)).astype(np.uint8)


def read_map(
    image: Image.Image,
    window: Box,
    marks: Sequence[tuple[int, Point]],
    labels: Sequence[str],
    tie: float = 1.0,
) -> Reading:
    """Read the numbers on the tags inside ``window`` of ``image`` and pair each to the
    nearest mark.

    Tags are found as a reader sees them (:func:`find_tags`) and each is read by the project's
    OCR recogniser (``tests.model_like.read_tag``: rapidocr's recognition model from its wheel,
    on the tag's pixels enlarged to its line height). ``marks``: (owner, point) for every star
    drawn, in pixels of ``image``; owner is the index of the candidate it marks. A label counts
    when exactly one tag reads as it and the mark nearest that tag (by at least ``tie``
    pixels) is its own candidate's.
    """
    from tests.model_like import read_tag

    left, top = max(0, math.floor(window.left)), max(0, math.floor(window.top))
    right, bottom = min(image.width, math.ceil(window.right)), min(image.height, math.ceil(window.bottom))
    arr = np.asarray(image.convert("RGB").crop((left, top, right, bottom)), dtype=np.int16)
    found: dict[str, list[Box]] = {}
    for t in find_tags(arr, most=0.06 * min(image.size) / max(1, min(arr.shape[:2]))):
        n = read_tag(arr, (t.left, t.top, t.right, t.bottom))
        if n is not None:
            found.setdefault(str(n), []).append(
                Box(t.left + left, t.top + top, t.right + left, t.bottom + top)
            )
    ok = 0
    for i, label in enumerate(labels):
        boxes = found.get(label, [])
        if len(boxes) != 1:
            continue
        own = min((_gap(p, boxes[0]) for o, p in marks if o == i), default=math.inf)
        other = min((_gap(p, boxes[0]) for o, p in marks if o != i), default=math.inf)
        ok += own + tie <= other
    return Reading(ok, len(labels), sorted(found))


def window_around(extents: Sequence[Box], sx: float, sy: float, margin: float = 24) -> Box:
    """The union of ``extents`` (screenshot pixels) in model pixels, with a margin."""
    return Box(
        min(b.left for b in extents) * sx - margin,
        min(b.top for b in extents) * sy - margin,
        max(b.right for b in extents) * sx + margin,
        max(b.bottom for b in extents) * sy + margin,
    )
