"""Stars on the model-size copy of a screenshot, computed only where they land: the patch a
star changes, resampled onto the model grid exactly as the whole image would be."""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from regionfocus.geometry import Point
from regionfocus.stars import draw_stars, star_extent


def starred_patch(
    image: Image.Image,
    model_size: tuple[int, int],
    points: Sequence[Point],
    labels: Sequence[str] | None,
    scale: float,
) -> tuple[Image.Image, tuple[int, int]]:
    """(patch, (left, top)): the part of the model-size copy of ``image`` that stars at
    ``points`` change, computed as today's path computes it (stars drawn at full resolution,
    then shrunk with Pillow's bicubic, the adapter's filter for shrinks) but only over the
    stars' extent: a small full-resolution crop is drawn on and resampled onto exactly the
    model grid (``box=``), so the patch matches the whole-image resize pixel for pixel, up to
    rounding, and a shrunk star keeps today's soft look instead of a sharp 1-px outline."""
    W, H = image.size
    mw, mh = model_size
    sx, sy = mw / W, mh / H
    ext = star_extent((W, H), points, labels, scale)
    left, top = min(b.left for b in ext), min(b.top for b in ext)
    right, bottom = max(b.right for b in ext), max(b.bottom for b in ext)
    # Output pixels the stars can reach (bicubic support: 2 output pixels each side), and the
    # full-resolution pixels their filters read (2 / s each side, plus a pixel for rounding).
    # Kept on the image, one pixel at least: a star off the screen (a point in another frame)
    # changes nothing, and the patch is then the plain resample of an edge pixel.
    ml, mt = min(max(0, int(left * sx) - 3), mw - 1), min(max(0, int(top * sy) - 3), mh - 1)
    mr, mb = max(ml + 1, min(mw, int(right * sx) + 4)), max(mt + 1, min(mh, int(bottom * sy) + 4))
    cx, cy = int(2 / sx) + 2, int(2 / sy) + 2
    fl, ft = max(0, int(ml / sx) - cx), max(0, int(mt / sy) - cy)
    fr, fb = min(W, int(mr / sx) + cx + 1), min(H, int(mb / sy) + cy + 1)
    crop = image.crop((fl, ft, fr, fb))
    if crop.mode != "RGB":
        crop = crop.convert("RGB")
    draw_stars(crop, points, labels, scale=scale, origin=(fl, ft), frame=(W, H), in_place=True)
    box = (ml / sx - fl, mt / sy - ft, mr / sx - fl, mb / sy - ft)
    return crop.resize((mr - ml, mb - mt), Image.Resampling.BICUBIC, box=box), (ml, mt)
