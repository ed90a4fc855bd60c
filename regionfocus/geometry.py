"""Points, boxes and the affine maps between a screenshot and a view of part of it.

Every coordinate here is in pixels of the *original screenshot* unless a name says
otherwise (``*_in_view``). Floats are allowed: a model frame rarely maps to whole pixels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# The paper's default box shapes, as (width, height) fractions of the image.
DEFAULT_RATIOS: tuple[tuple[float, float], ...] = ((0.5, 0.5), (0.3, 0.3), (0.4, 0.8), (0.8, 0.4))


@dataclass(frozen=True)
class Point:
    """(x, y) in screenshot pixels."""

    x: float
    y: float

    def distance(self, other: Point) -> float:
        return math.hypot(self.x - other.x, self.y - other.y)

    def to_list(self) -> list[float]:
        return [self.x, self.y]

    @classmethod
    def from_list(cls, xy: Sequence[float]) -> Point:
        return cls(float(xy[0]), float(xy[1]))


@dataclass(frozen=True)
class Box:
    """XYXY box in screenshot pixels: left <= right, top <= bottom."""

    left: float
    top: float
    right: float
    bottom: float

    def __post_init__(self) -> None:
        if self.right < self.left or self.bottom < self.top:
            raise ValueError(f"Box corners out of order: {self}")

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def center(self) -> Point:
        return Point((self.left + self.right) / 2, (self.top + self.bottom) / 2)

    @property
    def area(self) -> float:
        return self.width * self.height

    def contains(self, point: Point) -> bool:
        """Edges inclusive, as ScreenSpot-Pro scores a hit."""
        return self.left <= point.x <= self.right and self.top <= point.y <= self.bottom

    def to_list(self) -> list[float]:
        return [self.left, self.top, self.right, self.bottom]

    @classmethod
    def from_list(cls, xyxy: Sequence[float]) -> Box:
        return cls(*(float(v) for v in xyxy[:4]))

    @classmethod
    def from_corners(cls, a: Point, b: Point) -> Box:
        """A box from two opposite corners given in any order."""
        return cls(min(a.x, b.x), min(a.y, b.y), max(a.x, b.x), max(a.y, b.y))

    def iou(self, other: Box) -> float:
        ix = max(0.0, min(self.right, other.right) - max(self.left, other.left))
        iy = max(0.0, min(self.bottom, other.bottom) - max(self.top, other.top))
        inter = ix * iy
        union = self.area + other.area - inter
        return inter / union if union > 0 else 0.0


def clamp_point(point: Point, size: tuple[int, int]) -> Point:
    """Clamp into the image (width, height): a model may answer just past an edge."""
    w, h = size
    return Point(min(max(point.x, 0.0), w - 1.0), min(max(point.y, 0.0), h - 1.0))


def shift_box_inside(box: Box, size: tuple[int, int]) -> Box:
    """Translate ``box`` so it lies inside ``size`` = (W, H), shrinking only if it is larger
    than the image. The paper shifts rather than clips so each box keeps its area."""
    w, h = size
    bw, bh = min(box.width, w), min(box.height, h)
    left = min(max(box.left, 0.0), w - bw)
    top = min(max(box.top, 0.0), h - bh)
    return Box(left, top, left + bw, top + bh)


def box_around(center: Point, width: float, height: float, size: tuple[int, int]) -> Box:
    """A ``width`` x ``height`` box centred on ``center``, then shifted inside ``size``."""
    box = Box(center.x - width / 2, center.y - height / 2, center.x + width / 2, center.y + height / 2)
    return shift_box_inside(box, size)


def fixed_ratio_boxes(
    focal: Point, size: tuple[int, int], ratios: Sequence[tuple[float, float]] = DEFAULT_RATIOS
) -> list[Box]:
    """One box per (w, h) ratio of the image ``size`` = (W, H), centred on ``focal`` and
    shifted (not shrunk) to lie fully inside the image."""
    w, h = size
    out = []
    for rw, rh in ratios:
        if not (0 < rw <= 1 and 0 < rh <= 1):
            raise ValueError(f"box ratio must be in (0, 1], got {(rw, rh)}")
        out.append(box_around(focal, rw * w, rh * h, size))
    return out


@dataclass(frozen=True)
class ViewTransform:
    """Maps view pixels to screenshot pixels: ``screen = box.origin + view / scale``.

    ``box`` is the region of the screenshot the view shows; ``scale_x``/``scale_y`` are view
    pixels per screenshot pixel (> 1 when zoomed in). Exact, so a round trip is lossless up to
    float error.
    """

    box: Box
    scale_x: float
    scale_y: float

    def view_to_screen(self, p: Point) -> Point:
        return Point(self.box.left + p.x / self.scale_x, self.box.top + p.y / self.scale_y)

    def screen_to_view(self, p: Point) -> Point:
        return Point((p.x - self.box.left) * self.scale_x, (p.y - self.box.top) * self.scale_y)

    def to_dict(self) -> dict:
        return {"box": self.box.to_list(), "scale_x": self.scale_x, "scale_y": self.scale_y}

    @classmethod
    def identity(cls, size: tuple[int, int]) -> ViewTransform:
        return cls(Box(0, 0, size[0], size[1]), 1.0, 1.0)
