"""UI-element detection without learned weights: buttons, text fields, text areas, checkboxes,
radio buttons, dropdowns and links from OpenCV structure plus the OCR lines.

The screen-to-text agent (Sasagawa and Kawahara, Waseda, "環境依存情報を利用しない大規模言語モデル
によるコンピュータータスク自動化手法", §3.2) trains a YOLOv8 detector (40 classes) on ~2.8k annotated
MiniWoB++ screenshots; no such weights ship here, so this module finds the same kinds of
elements from what a GUI toolkit draws: a control is a closed, axis-aligned outline (Canny
edges -> contours) whose shape and fill say what it is. A learned detector plugs in behind the
same :class:`ElementDetector` protocol.

The rules (each threshold is a parameter of :class:`OpenCvDetector`; "line height" is the
median OCR line height, or ``default_line_px`` when nothing was read):
- an outline is kept when its contour fills most of its bounding box (rectangles, rounded
  rectangles, circles), is at least ``min_side`` px on each side and at most ``max_area_frac``
  of the image; near-identical outlines (the inner and outer edge of one border) are merged;
  an outline holding two or more other outlines is a panel, not a control;
- a small square (side between 0.4 and 2 line heights, aspect within 1.35) is a checkbox, or a
  radio button when its outline lies deep inside the corners of its box (along each diagonal
  the first edge is ``circle_depth`` of the side or more from the corner: 0.21 for a circle,
  under 0.1 for a rounded square); ink inside it means checked / selected;
- any other outline with a near-white interior is a field: a dropdown when ink that no OCR line
  explains sits in its right end (the chevron), a text area when taller than
  ``area_lines`` line heights, else a text field;
- an outline with a coloured or grey interior is a button;
- an OCR line (or the part of it) drawn in blue ink is a link.

Boxes are XYXY in pixels of the image given to :meth:`OpenCvDetector.detect`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import cv2
import numpy as np
from PIL import Image

from regionfocus.adapters.perception.ocr_text import TextLine, _advance
from regionfocus.geometry import Box

KINDS = ("button", "text_field", "text_area", "checkbox", "radio", "dropdown", "link")


@dataclass(frozen=True)
class DetectedElement:
    """One detected control. ``kind``: one of :data:`KINDS`; ``box``: XYXY pixels of the
    detected image; ``checked``: for checkboxes and radio buttons, whether a mark is drawn
    inside (None for other kinds); ``text``: set only when the detector itself read the text
    (links take the OCR characters they cover)."""

    kind: str
    box: Box
    score: float = 1.0
    checked: bool | None = None
    text: str = ""


@runtime_checkable
class ElementDetector(Protocol):
    """Finds UI elements in a screenshot. ``lines``: the OCR lines already read from the same
    image (boxes in its pixels); a detector may use them (to tell text from controls) or not."""

    def detect(self, image: Image.Image, lines: Sequence[TextLine]) -> list[DetectedElement]: ...


@dataclass
class OpenCvDetector:
    """The weight-free detector (rules in the module docstring). Deterministic."""

    min_side: int = 8
    max_area_frac: float = 0.35
    rect_fill: float = 0.72
    circle_depth: float = 0.13
    white_level: float = 250.0
    area_lines: float = 2.4
    default_line_px: float = 16.0
    canny_low: int = 40
    canny_high: int = 120
    link_blue: float = 60.0

    def detect(self, image: Image.Image, lines: Sequence[TextLine]) -> list[DetectedElement]:
        rgb = np.asarray(image.convert("RGB"), dtype=np.uint8)
        gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        h, w = gray.shape
        heights = [ln.box.height for ln in lines if ln.text.strip()]
        line_px = statistics.median(heights) if heights else self.default_line_px
        edges = cv2.Canny(gray, self.canny_low, self.canny_high)
        outlines = self._outlines(edges, (w, h))
        out: list[DetectedElement] = []
        for box, _fill in outlines:
            # A closed letter (o, e, 0) inside a read line is a glyph, not a radio button.
            if any(_covered(box, ln.box) >= 0.6 and ln.box.area > 2.0 * box.area for ln in lines):
                continue
            el = self._classify(rgb, gray, edges, box, line_px, lines)
            if el is not None:
                out.append(el)
        # Links are free text: blue ink inside a button (a coloured bar's text) is not one.
        out.extend(
            link
            for link in self._links(rgb, lines)
            if not any(e.kind != "link" and e.box.contains(link.box.center) for e in out)
        )
        out.sort(key=lambda e: (e.box.top, e.box.left))
        return out

    # ------------------------------------------------------------------ outlines
    def _outlines(self, edges: np.ndarray, size: tuple[int, int]) -> list[tuple[Box, float]]:
        w, h = size
        # A thin border's edge is traced as an open curve (area ~0) where Canny leaves a gap
        # of a pixel at a rounded corner; one dilation closes it into a ring.
        closed = cv2.dilate(edges, np.ones((3, 3), np.uint8))
        contours, _ = cv2.findContours(closed, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
        found: list[tuple[Box, float]] = []
        for c in contours:
            x, y, bw, bh = cv2.boundingRect(c)
            if bw < self.min_side or bh < self.min_side or bw * bh > self.max_area_frac * w * h:
                continue
            # A closed outline's polygon area nearly fills its bounding box; a glyph's does not.
            fill = cv2.contourArea(c) / float(bw * bh)
            if fill < self.rect_fill:
                continue
            found.append((Box(x, y, x + bw, y + bh), fill))
        # One border gives two contours (its inner and outer edge): keep the outer one.
        found.sort(key=lambda bf: -bf[0].area)
        kept: list[tuple[Box, float]] = []
        for box, fill in found:
            if any(_same_outline(box, k) for k, _ in kept):
                continue
            kept.append((box, fill))
        # Panels: an outline around two or more others holds controls; it is not one.
        controls = []
        for box, fill in kept:
            inner = sum(1 for other, _ in kept if other is not box and _inside(other, box, 1.0))
            if inner < 2:
                controls.append((box, fill))
        return controls

    # ------------------------------------------------------------------ kinds
    def _classify(
        self,
        rgb: np.ndarray,
        gray: np.ndarray,
        edges: np.ndarray,
        box: Box,
        line_px: float,
        lines: Sequence[TextLine],
    ) -> DetectedElement | None:
        bw, bh = box.width, box.height
        side = max(bw, bh)
        square = max(bw, bh) / max(1.0, min(bw, bh)) <= 1.35
        if square and 0.4 * line_px <= side <= 2.0 * line_px:
            kind = "radio" if _corner_depth(edges, box) >= self.circle_depth else "checkbox"
            checked = self._ink_fraction(gray, box, inset=0.3) > 0.08
            return DetectedElement(kind, box, 0.8, checked=checked)
        interior = _interior(rgb, box, lines)
        if interior is None:
            return None
        level = float(np.median(interior.min(axis=1)))  # the darkest channel: white stays white
        if level >= self.white_level:
            if self._chevron(gray, box, lines):
                return DetectedElement("dropdown", box, 0.7)
            kind = "text_area" if bh > self.area_lines * line_px else "text_field"
            return DetectedElement(kind, box, 0.7)
        return DetectedElement("button", box, 0.7)

    @staticmethod
    def _ink_fraction(gray: np.ndarray, box: Box, inset: float) -> float:
        """Fraction of dark pixels in the middle of ``box`` (``inset`` of each side left out)."""
        dx, dy = box.width * inset, box.height * inset
        x0, y0 = int(box.left + dx), int(box.top + dy)
        x1, y1 = int(np.ceil(box.right - dx)), int(np.ceil(box.bottom - dy))
        patch = gray[y0:y1, x0:x1]
        if patch.size == 0:
            return 0.0
        return float((patch < 128).mean())

    def _chevron(self, gray: np.ndarray, box: Box, lines: Sequence[TextLine]) -> bool:
        """Dark marks in the right end of a field that no OCR line accounts for."""
        # Keep clear of the border and its rounded corners: the chevron sits mid-height.
        end = min(box.height, 0.25 * box.width)
        x0, x1 = int(box.right - end), int(box.right - 6)
        y0, y1 = int(box.top + 0.25 * box.height), int(box.bottom - 0.25 * box.height)
        if x1 <= x0 or y1 <= y0:
            return False
        patch = gray[y0:y1, x0:x1] < 128
        _clear_text(patch, (x0, y0, x1, y1), lines)
        return int(patch.sum()) >= 6

    def _links(self, rgb: np.ndarray, lines: Sequence[TextLine]) -> list[DetectedElement]:
        """Blue runs of ink inside OCR lines: each run becomes a link over the characters it
        covers (a link is often one word of a sentence the OCR read as one line)."""
        out = []
        h, w = rgb.shape[:2]
        for ln in lines:
            b = ln.box
            x0, y0 = max(0, int(b.left)), max(0, int(b.top))
            x1, y1 = min(w, int(np.ceil(b.right))), min(h, int(np.ceil(b.bottom)))
            patch = rgb[y0:y1, x0:x1].astype(np.int16)
            if patch.size == 0 or not ln.text.strip():
                continue
            r, g, bl = patch[..., 0], patch[..., 1], patch[..., 2]
            # Ink is what differs from the line's background: white text on a blue bar is
            # not a link, blue text on white is.
            bg = np.median(patch.reshape(-1, 3), axis=0)
            ink = np.abs(patch - bg).max(axis=2) > 80
            blue = ink & (bl - np.maximum(r, g) > self.link_blue) & (bl > 120)
            cols = blue.any(axis=0)
            if cols.sum() < 2:
                continue
            # Columns of blue ink, joined across the gaps between the letters of one link (none
            # where it is underlined, a pixel or two otherwise) but not across a space (~0.25
            # em), which separates two adjacent links.
            gap = max(1, int(0.15 * b.height))
            runs: list[list[int]] = []
            for x in np.flatnonzero(cols):
                if runs and x - runs[-1][1] <= gap:
                    runs[-1][1] = int(x)
                else:
                    runs.append([int(x), int(x)])
            for a, z in runs:
                left, right = x0 + a, x0 + z + 1
                text = _chars_between(ln, left, right)
                if text:
                    out.append(DetectedElement("link", Box(left, b.top, right, b.bottom), 0.6, text=text))
        return out


def _corner_depth(edges: np.ndarray, box: Box) -> float:
    """Median over the four corners of how far along the diagonal (as a fraction of the box's
    side) the first edge pixel lies: ~0.21 for a circle, near 0 for a (rounded) square."""
    h, w = edges.shape
    x0, y0 = int(box.left), int(box.top)
    x1, y1 = min(w - 1, int(box.right) - 1), min(h - 1, int(box.bottom) - 1)
    side = max(1, min(x1 - x0, y1 - y0))
    depths = []
    for cx, cy, sx, sy in ((x0, y0, 1, 1), (x1, y0, -1, 1), (x0, y1, 1, -1), (x1, y1, -1, -1)):
        hit = side // 2
        for t in range(side // 2):
            x, y = cx + sx * t, cy + sy * t
            if 0 <= x < w and 0 <= y < h and edges[y, x]:
                hit = t
                break
        depths.append(hit / side)
    return float(statistics.median(depths))


def _covered(a: Box, b: Box) -> float:
    """Fraction of ``a``'s area inside ``b``."""
    ix = max(0.0, min(a.right, b.right) - max(a.left, b.left))
    iy = max(0.0, min(a.bottom, b.bottom) - max(a.top, b.top))
    return ix * iy / a.area if a.area > 0 else 0.0


def _same_outline(a: Box, b: Box, tol: float = 4.0) -> bool:
    return (
        abs(a.left - b.left) <= tol
        and abs(a.top - b.top) <= tol
        and abs(a.right - b.right) <= tol
        and abs(a.bottom - b.bottom) <= tol
    )


def _inside(inner: Box, outer: Box, tol: float) -> bool:
    return (
        inner.left >= outer.left - tol
        and inner.top >= outer.top - tol
        and inner.right <= outer.right + tol
        and inner.bottom <= outer.bottom + tol
        and inner.area < outer.area
    )


def _clear_text(mask: np.ndarray, window: tuple[int, int, int, int], lines: Sequence[TextLine]) -> None:
    """Set to False, in ``mask`` (the pixels of ``window`` = (x0, y0, x1, y1) of the screen),
    every pixel an OCR line covers: what is left is ink or colour the OCR did not explain."""
    x0, y0, x1, y1 = window
    for ln in lines:
        b = ln.box
        lx0, lx1 = max(x0, int(b.left)), min(x1, int(np.ceil(b.right)))
        ly0, ly1 = max(y0, int(b.top)), min(y1, int(np.ceil(b.bottom)))
        if lx1 > lx0 and ly1 > ly0:
            mask[ly0 - y0 : ly1 - y0, lx0 - x0 : lx1 - x0] = False


def _interior(rgb: np.ndarray, box: Box, lines: Sequence[TextLine]) -> np.ndarray | None:
    """The box's inner pixels (3 px border left out) that no OCR line covers, as (N, 3)."""
    x0, y0 = int(box.left) + 3, int(box.top) + 3
    x1, y1 = int(box.right) - 3, int(box.bottom) - 3
    if x1 <= x0 or y1 <= y0:
        return None
    mask = np.ones((y1 - y0, x1 - x0), dtype=bool)
    _clear_text(mask, (x0, y0, x1, y1), lines)
    pix = rgb[y0:y1, x0:x1][mask]
    return pix if len(pix) >= 4 else None


def _chars_between(line: TextLine, left: float, right: float) -> str:
    """The characters of ``line`` whose place along its box (by proportional advance widths,
    as ocr_text places a match) overlaps [left, right]; trimmed of spaces and punctuation."""
    widths = [_advance(ch) for ch in line.text]
    total = sum(widths) or 1
    b = line.box
    picked = []
    acc = 0
    for ch, wd in zip(line.text, widths, strict=True):
        c0 = b.left + b.width * acc / total
        c1 = b.left + b.width * (acc + wd) / total
        acc += wd
        mid = (c0 + c1) / 2
        if left - 1 <= mid <= right + 1:
            picked.append(ch)
    return "".join(picked).strip().strip(".,;:!?")
