"""GUI-Lens's geometry, as the official code computes it (Fzkuji/GUI-Agent-Harness @ 23e75e0,
``gui_harness/planning/screenspot_locator.py``, each function named after its original): the
display scale of a crop, the next crop from a proposed bbox, the crops to back out to and to
click on, and a crop rendered at the size the model sees (:class:`Shown`)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageDraw

from ..geometry import Box, ViewTransform
from ..model import GroundingModel
from ..resample import lanczos
from .gui_lens_config import LensConfig
from .gui_lens_text import Frame, IBox


# ------------------------------------------------------------------ geometry (the official code's)
def area(b: Sequence[int]) -> int:
    return max(0, int(b[2]) - int(b[0])) * max(0, int(b[3]) - int(b[1]))


def clamp(b: Sequence[float], w: int, h: int) -> IBox:
    x1, y1, x2, y2 = (int(v) for v in b)
    return [max(0, x1), max(0, y1), min(w, x2), min(h, y2)]


def display_scale(
    w: int, h: int, mode: str, max_side: int, max_scale: float, short: int, floor: float
) -> float:
    """``_render_iterative_crop``'s scale for a ``w`` x ``h`` crop."""
    floor = floor if floor and floor > 0 else 0.1
    if mode == "fill":
        cap = float(max_scale) if max_scale > 0 else math.inf
        if max_side > 0:
            cap = min(cap, max_side / max(w, h))
        scale = cap if cap != math.inf else 1.0
        if short > 0:
            scale = min(cap, max(scale, short / min(w, h)))
        return max(floor, scale)
    scale = 1.0
    if short > 0:
        scale = max(scale, short / min(w, h))
    if max_scale > 0:
        scale = min(scale, float(max_scale))
    if max_side > 0:
        scale = min(scale, max_side / max(w, h))
    return max(floor, scale)


def expand_to_area(box: IBox, parent: IBox, min_area: float) -> IBox:
    """``_expand_box_to_min_area``: grow ``box`` about its centre to ``min_area`` inside ``parent``."""
    if min_area <= 0 or area(box) >= min_area:
        return box
    pw, ph = max(1, parent[2] - parent[0]), max(1, parent[3] - parent[1])
    width, height = max(1, box[2] - box[0]), max(1, box[3] - box[1])
    factor = (min_area / max(1, width * height)) ** 0.5
    nw = min(pw, max(width, int(round(width * factor))))
    nh = min(ph, max(height, int(round(height * factor))))
    cx, cy = (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0
    x1 = max(parent[0], min(int(round(cx - nw / 2.0)), parent[2] - nw))
    y1 = max(parent[1], min(int(round(cy - nh / 2.0)), parent[3] - nh))
    return [x1, y1, x1 + nw, y1 + nh]


def stage_min_area_pct(stage: int, c: LensConfig) -> int:
    if not c.staged_crop:
        return 0
    return max(0, (c.stage1_min_area_pct, c.stage2_min_area_pct, 0)[min(stage, 2)])


def next_box(
    bbox: Sequence[float], f: Frame, size: tuple[int, int], c: LensConfig, stage: int
) -> IBox | None:
    """``_iterative_next_box``: a proposed bbox (displayed pixels, or 0-1000 of the display)
    as the next crop in screenshot pixels, or None when it fails the geometric checks."""
    dx1, dy1, dx2, dy2 = bbox
    if dx2 <= dx1 or dy2 <= dy1:
        return None
    x1, y1, x2, y2 = f.box
    w, h = size
    if f.normalized and max(dx1, dy1, dx2, dy2) <= 1000:
        cw, ch = x2 - x1, y2 - y1
        nb = [x1 + dx1 / 1000.0 * cw, y1 + dy1 / 1000.0 * ch, x1 + dx2 / 1000.0 * cw, y1 + dy2 / 1000.0 * ch]
    else:
        nb = [x1 + dx1 / f.sx, y1 + dy1 / f.sy, x1 + dx2 / f.sx, y1 + dy2 / f.sy]
    box = [int(round(v)) for v in nb]
    pad_x = int(round(max(1, box[2] - box[0]) * c.padding_pct / 100.0))
    pad_y = int(round(max(1, box[3] - box[1]) * c.padding_pct / 100.0))
    box = clamp([box[0] - pad_x, box[1] - pad_y, box[2] + pad_x, box[3] + pad_y], w, h)
    if box[2] - box[0] < c.min_width:
        cx = (box[0] + box[2]) // 2
        box[0] = cx - c.min_width // 2
        box[2] = box[0] + c.min_width
    if box[3] - box[1] < c.min_height:
        cy = (box[1] + box[3]) // 2
        box[1] = cy - c.min_height // 2
        box[3] = box[1] + c.min_height
    box = clamp(box, w, h)
    pct = stage_min_area_pct(stage, c)
    if pct > 0:
        box = clamp(expand_to_area(box, list(f.box), area(f.box) * pct / 100.0), w, h)
    if box[2] <= box[0] or box[3] <= box[1] or area(box) >= area(f.box):
        return None
    if c.max_area_pct > 0 and area(box) > area(f.box) * c.max_area_pct / 100.0:
        return None
    return box


def restart_box(current: IBox, history: Sequence[dict[str, Any]], size: tuple[int, int]) -> IBox:
    """``_iterative_restart_box``: the latest crop of the history wider than ``current``."""
    for e in reversed(history):
        b = e.get("crop_box")
        if isinstance(b, list) and len(b) == 4 and area(b) > area(current):
            return clamp(b, *size)
    return [0, 0, size[0], size[1]]


def final_boxes(current: IBox, history: Sequence[dict[str, Any]], size: tuple[int, int]) -> list[IBox]:
    """``_iterative_final_box_candidates``: the current crop, the history's crops and
    fall-backs newest first, then the whole screenshot; each once."""
    out: list[IBox] = []
    for b in (
        current,
        *(x for e in reversed(history) for x in (e.get("crop_box"), e.get("fallback_box"))),
        None,
    ):
        b = [0, 0, size[0], size[1]] if b is None else b
        if not isinstance(b, list) or len(b) != 4:
            continue
        b = clamp(b, *size)
        if b[2] > b[0] and b[3] > b[1] and b not in out:
            out.append(b)
    return out


def click_boxes(
    current: IBox, history: Sequence[dict[str, Any]], size: tuple[int, int], c: LensConfig
) -> list[IBox]:
    """The final boxes the config clicks, in turn: all of :func:`final_boxes`, the first
    ``final_recrop_limit`` of them (0: all), or only the current crop without ``final_recrop``."""
    boxes = final_boxes(current, history, size)
    if not c.final_recrop:
        return boxes[:1]
    return boxes[: c.final_recrop_limit] if c.final_recrop_limit > 0 else boxes


def normalize_bbox_to_display(bbox: list[float], f: Frame) -> list[float]:
    """``_normalize_bbox_to_display``: on a downscaled crop, a bbox beyond the displayed size
    (2 % slack) was written in screenshot pixels (Claude's habit); map it to the display. A
    0-1000 answer to a 0-1000 request is left as it is: the official 0-1000 config never shows a
    crop smaller (min_scale 1), so there the heuristic never meets one; here an adapter's rounding
    (Qwen2.5-VL's multiples of 28) can, and read as pixels it lands outside the crop."""
    if f.normalized and max(bbox) <= 1000:
        return bbox
    x1, y1, x2, y2 = f.box
    dw, dh = (x2 - x1) * f.sx, (y2 - y1) * f.sy
    if max(bbox[0], bbox[2]) <= dw * 1.02 and max(bbox[1], bbox[3]) <= dh * 1.02:
        return bbox
    return [(bbox[0] - x1) * f.sx, (bbox[1] - y1) * f.sy, (bbox[2] - x1) * f.sx, (bbox[3] - y1) * f.sy]


# ------------------------------------------------------------------ displayed crops
@dataclass
class Shown:
    """A crop as the model sees it: ``image`` shows ``frame.box`` of the screenshot."""

    image: Image.Image
    frame: Frame

    @property
    def transform(self) -> ViewTransform:
        x1, y1, x2, y2 = self.frame.box
        return ViewTransform(Box(x1, y1, x2, y2), self.frame.sx, self.frame.sy)

    def to_screen(self, x: float, y: float) -> tuple[float, float]:
        return self.frame.box[0] + x / self.frame.sx, self.frame.box[1] + y / self.frame.sy


def resample(screenshot: Image.Image, box: IBox, size: tuple[int, int]) -> Image.Image:
    crop = screenshot.crop(tuple(box)).convert("RGB")
    return crop if crop.size == size else lanczos(crop, size)


async def render(
    model: GroundingModel, screenshot: Image.Image, box: IBox, c: LensConfig, final: bool, normalized: bool
) -> Shown:
    """The crop ``box`` at the official display scale, resampled once, straight to the size the
    model sees for it (so the displayed pixels are the frame the model answers in)."""
    box = clamp(box, *screenshot.size)
    w, h = max(1, box[2] - box[0]), max(1, box[3] - box[1])
    if final:
        s = display_scale(
            w, h, c.scale_mode, c.final_max_side, c.final_max_scale, c.final_min_short_side, c.final_min_scale
        )
    else:
        s = display_scale(w, h, c.scale_mode, c.max_side, c.max_scale, c.min_short_side, c.min_scale)
    seen = model.input_size((max(1, int(round(w * s))), max(1, int(round(h * s)))))
    image = await asyncio.to_thread(resample, screenshot, box, seen)
    return Shown(image, Frame(tuple(box), seen[0] / w, seen[1] / h, normalized))


def overlay(shown: Shown, bbox: list[float]) -> Image.Image:
    """``_render_crop_commit_overlay``: the proposed crop as a magenta rectangle."""
    img = shown.image.copy()
    x1, y1, x2, y2 = bbox
    if shown.frame.normalized and max(bbox) <= 1000:
        w, h = img.size
        x1, y1, x2, y2 = x1 * w / 1000, y1 * h / 1000, x2 * w / 1000, y2 * h / 1000
    draw = ImageDraw.Draw(img)
    draw.rectangle(
        [x1, y1, max(x1, x2), max(y1, y2)], outline="#ff00ff", width=max(4, round(max(img.size) / 300))
    )
    draw.text((max(0, x1 + 6), max(0, y1 + 6)), "proposed crop", fill="#ff00ff")
    return img
