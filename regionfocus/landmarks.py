"""Numbered pink stars drawn on a copy of a screenshot: the "image-as-map".

Sizes scale with the image so a label stays legible on 3840x2160 (the reference code's tiny
bitmap font does not) and a star does not swamp a 500x400 page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from .geometry import Box, Point

STAR_FILL = (255, 20, 147)  # deep pink: rare in GUIs, so a model can tell stars from content
STAR_OUTLINE = (255, 255, 255)
LABEL_TEXT = (255, 255, 255)
BOX_COLORS = [(0, 170, 255), (255, 170, 0), (0, 200, 120), (170, 80, 255), (255, 60, 60)]


def star_radius(size: tuple[int, int]) -> int:
    """Outer radius in pixels: about 1 % of the long side, at least 9 px."""
    return max(9, round(max(size) * 0.0095))


@lru_cache(maxsize=32)
def _font(px: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    for name in ("DejaVuSans-Bold.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"):
        try:
            return ImageFont.truetype(name, px)
        except OSError:
            continue
    return ImageFont.load_default(size=px)  # Pillow >= 10.1 ships a scalable default


def _star_polygon(c: Point, r: float) -> list[tuple[float, float]]:
    pts = []
    for i in range(10):
        rad = r if i % 2 == 0 else r * 0.45
        a = -math.pi / 2 + i * math.pi / 5
        pts.append((c.x + rad * math.cos(a), c.y + rad * math.sin(a)))
    return pts


def draw_landmarks(
    image: Image.Image, points: Sequence[Point], labels: Sequence[str] | None = None, *, scale: float = 1.0
) -> Image.Image:
    """A copy of ``image`` with a numbered pink star at each point (screenshot pixels).

    ``labels`` default to "1", "2", ...; the input image is never modified. The star's centre
    is exactly the point; the label sits beside it on a pink tag so the point stays visible.
    """
    if labels is not None and len(labels) != len(points):
        raise ValueError(f"{len(labels)} labels for {len(points)} points")
    out = image.copy() if image.mode == "RGB" else image.convert("RGB")  # convert() copies already
    if not points:
        return out
    draw = ImageDraw.Draw(out)
    r = max(1, round(star_radius(out.size) * scale))
    font = _font(max(11, round(r * 1.3)))
    width = max(1, r // 6)
    for i, p in enumerate(points):
        label = labels[i] if labels is not None else str(i + 1)
        draw.polygon(_star_polygon(p, r), fill=STAR_FILL, outline=STAR_OUTLINE, width=width)
        dot = max(1, r // 8)
        draw.ellipse((p.x - dot, p.y - dot, p.x + dot, p.y + dot), fill=STAR_OUTLINE)
        if not label:
            continue
        tl, tt, tr, tb = draw.textbbox((0, 0), label, font=font)
        pad = max(2, r // 5)
        tw, th = tr - tl + 2 * pad, tb - tt + 2 * pad
        # Tag to the upper right of the star, flipped to stay inside the image.
        x0 = p.x + r * 0.8 if p.x + r * 0.8 + tw <= out.width else p.x - r * 0.8 - tw
        y0 = p.y - r * 0.8 - th if p.y - r * 0.8 - th >= 0 else p.y + r * 0.8
        draw.rounded_rectangle(
            (x0, y0, x0 + tw, y0 + th), radius=pad, fill=STAR_FILL, outline=STAR_OUTLINE, width=width
        )
        draw.text((x0 + pad - tl, y0 + pad - tt), label, fill=LABEL_TEXT, font=font)
    return out


def draw_boxes(image: Image.Image, boxes: Sequence[Box]) -> Image.Image:
    """A copy with each box outlined in its own colour (reports and debugging)."""
    out = image.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    width = max(2, round(max(out.size) * 0.0015))
    for i, b in enumerate(boxes):
        draw.rectangle(b.to_list(), outline=BOX_COLORS[i % len(BOX_COLORS)], width=width)
    return out
