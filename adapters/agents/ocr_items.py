"""The screen as the OCR agent reads it for a multi-step plan (:mod:`.task_plan`): its OCR lines
as plain text and the controls :class:`OpenCvDetector` finds over the same budget image, as
:class:`ScreenItem` s in pixels of the image asked about.

A control takes the text it shows as its label (a button its caption, a field what is typed in
it, a dropdown its selected option); a checkbox or radio button takes the line just right of
it, as its ``<label>`` reads. The agent reads a few things the detector's kinds leave open:
- a field whose text reads as a date or time pattern (mm/dd/yyyy, --:-- --), or a "dropdown"
  whose right-end mark is a closed icon rather than a chevron (a glyph the OCR read as one
  character alone at the field's right end, or a box the detector found there), is a date or
  time input; a date pattern read with no outline around it (a thin border the detector missed)
  is one too, the size of its text;
- a field with a resize grip (marks in its bottom-right corner) is a text area, however short;
- buttons side by side in a row (same top and bottom, touching) are tabs, and a flat bar
  (a button at least five times as wide as tall) is a section header, when their captions are
  short (a sentence on a coloured bar is no header): each is also given as a
  "tab" (selected when filled with colour among plain ones), for the plans that switch tabs or
  open sections.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

import numpy as np
from PIL import Image

from regionfocus.adapters.agents.ocr_seen import Seen
from regionfocus.adapters.perception.ocr_text import TextLine
from regionfocus.adapters.perception.ui_detect import DetectedElement, OpenCvDetector, _covered
from regionfocus.adapters.perception.ui_detect import _inside as _box_inside
from regionfocus.geometry import Box

from .task_plan import ScreenItem

ROLES = {
    "text_field": "textbox",
    "text_area": "textbox",
    "checkbox": "checkbox",
    "radio": "radio",
    "dropdown": "combobox",
    "button": "button",
    "link": "link",
}
# A date input's mm/dd/yyyy (or the date typed in it); a time input's --:-- -- (or 07:55 PM).
_DATE = re.compile(r"^(?:mm|\d{1,2})\s*/\s*(?:dd|\d{1,2})\s*/\s*(?:y{2,4}|\d{2,4})$", re.I)
_TIME = re.compile(r"^[-\d\s]+[:.][-\d\s]+(?:[ap]\.?m\.?)?$", re.I)


class ControlCache:
    """Detected controls per read (``Seen``), the last ``size`` reads kept: the act, focal,
    judge and choice requests of one step ask about the same image."""

    def __init__(self, size: int = 8, detector: OpenCvDetector | None = None):
        self.size = size
        self.detector = detector or OpenCvDetector()
        self._done: OrderedDict[int, tuple[Seen, list[DetectedElement]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, seen: Seen, lines: list[TextLine]) -> list[DetectedElement]:
        with self._lock:
            hit = self._done.get(id(seen))
            if hit is not None and hit[0] is seen:  # the read itself, not a newer one at its address
                self._done.move_to_end(id(seen))
                return hit[1]
        found = self.detector.detect(Image.fromarray(seen.array), lines)
        with self._lock:
            self._done[id(seen)] = (seen, found)
            while len(self._done) > self.size:
                self._done.popitem(last=False)
        return found


def _to_image(seen: Seen, b: Box) -> Box:
    return Box(b.left * seen.sx, b.top * seen.sy, b.right * seen.sx, b.bottom * seen.sy)


def _inside(lines: list[TextLine], box: Box) -> list[TextLine]:
    return [ln for ln in lines if box.contains(ln.box.center)]


def _label_right_of(lines: list[TextLine], box: Box) -> str:
    """The line starting just right of a checkbox on its row (within three of its widths)."""
    mid = (box.top + box.bottom) / 2
    row = [
        ln
        for ln in lines
        if ln.box.top - 2 <= mid <= ln.box.bottom + 2
        and box.left + box.width / 2 < ln.box.left + 2
        and ln.box.left <= box.right + 3 * box.width
    ]
    return min(row, key=lambda ln: ln.box.left).text.lstrip("□☐☑◯○◉● ").strip() if row else ""


def _nested(e: DetectedElement, controls: list[DetectedElement]) -> bool:
    """A control drawn inside another one (the unread caption of a button, a field's inner
    edge) is part of it."""
    return e.kind != "link" and any(
        o is not e and o.kind != "link" and _box_inside(e.box, o.box, 1.0) for o in controls
    )


def _grip(array: np.ndarray, box: Box, lines: list[TextLine]) -> bool:
    """Dark marks in the bottom-right corner of a field that no OCR line accounts for: the
    diagonal strokes of a text area's resize grip."""
    side, border = 0.35 * box.height, max(3.0, 0.08 * box.height)
    x0, y0 = int(box.right - border - side), int(box.bottom - border - side)
    x1, y1 = int(box.right - border), int(box.bottom - border)
    if x1 - x0 < 3 or y1 - y0 < 3 or any(_covered(ln.box, Box(x0, y0, x1, y1)) > 0 for ln in lines):
        return False
    patch = array[y0:y1, x0:x1].min(axis=2) < 215
    # The field's own border crosses the corner as a full row or column; grip strokes are
    # diagonal: a few pixels in each of several rows and columns.
    patch[patch.mean(axis=1) > 0.6, :] = False
    patch[:, patch.mean(axis=0) > 0.6] = False
    rows, cols = patch.any(axis=1).sum(), patch.any(axis=0).sum()
    return rows >= 3 and cols >= 3 and int(patch.sum()) <= 0.5 * patch.size


def _end_glyph(box: Box, inside: list[TextLine]) -> bool:
    """The text read in a field ends in one character standing alone at its right end: an icon
    (a clock, a calendar) the OCR read as a letter or a sign, not a word."""
    if not inside:
        return False
    last = max(inside, key=lambda ln: ln.box.right)
    words = last.text.split()
    return bool(words) and len(words[-1]) == 1 and last.box.right >= box.right - 0.25 * box.width


def _field_role(e: DetectedElement, inside: list[TextLine], controls: list[DetectedElement]) -> str:
    """A field's role by what it shows: a date or time input, else the detector's kind."""
    label = " ".join(ln.text for ln in inside)
    words = label.split()
    if _DATE.match(label.strip()) or _TIME.match(label.strip()):
        return "Date" if "/" in label else "InputTime"
    if e.kind == "dropdown":
        icon = bool(words) and _end_glyph(e.box, inside)
        boxed = any(
            o is not e and o.kind in ("checkbox", "radio") and _covers(e.box, o.box) for o in controls
        )
        if icon or boxed:
            rest = " ".join(words[:-1] if icon else words)
            return (
                "Date"
                if "/" in rest
                else "InputTime"
                if not re.search(r"[a-z]{2}", rest, re.I)
                else "combobox"
            )
    return ROLES[e.kind]


def _covers(outer: Box, inner: Box) -> bool:
    return outer.contains(inner.center) and inner.area < outer.area


def screen_items(seen: Seen, lines: list[TextLine], controls: list[DetectedElement]) -> list[ScreenItem]:
    """``lines`` (readable OCR lines of ``seen``) and ``controls`` (detected on its budget image)
    as plan items, boxes in pixels of the image ``seen`` was read from."""
    items = [ScreenItem(ln.text, _to_image(seen, ln.box)) for ln in lines]
    fields = []
    for e in controls:
        if _nested(e, controls):
            continue
        role, attrs = ROLES[e.kind], {}
        if e.kind in ("checkbox", "radio"):
            if any(o.kind == "dropdown" and _covers(o.box, e.box) for o in controls):
                continue  # a date field's calendar icon
            label = _label_right_of(lines, e.box)
            attrs["checked"] = "true" if e.checked else "false"
        elif e.kind == "link":
            label = e.text
        else:
            inside = _inside(lines, e.box)
            label = " ".join(ln.text for ln in inside)
            role = _field_role(e, inside, controls) if e.kind != "button" else role
            if e.kind == "text_area" or (e.kind == "text_field" and _grip(seen.array, e.box, lines)):
                attrs["multiline"] = "true"
            fields.append(e.box)
        box = _segments(e.box, _inside(lines, e.box)) if role in ("Date", "InputTime") else e.box
        items.append(ScreenItem(label, _to_image(seen, box), role, attrs))
    items += _tabs(seen, [i for i in items if i.role == "button"])
    for ln in lines:  # a date placeholder whose thin border was not detected
        if _DATE.match(ln.text.strip()) and not any(b.contains(ln.box.center) for b in fields):
            pad = 0.3 * ln.box.height
            box = Box(ln.box.left, ln.box.top - pad, ln.box.right + pad, ln.box.bottom + pad)
            items.append(ScreenItem(ln.text, _to_image(seen, box), "Date"))
    return items


def _tabs(seen: Seen, buttons: list[ScreenItem]) -> list[ScreenItem]:
    """The buttons that look like tabs or section headers, again as tabs."""
    out = []
    for b in buttons:
        x, h = b.box, b.box.height
        row = [
            o
            for o in buttons
            if o is not b
            and abs(o.box.top - x.top) <= 0.15 * h
            and abs(o.box.bottom - x.bottom) <= 0.15 * h
            and min(abs(o.box.left - x.right), abs(x.left - o.box.right)) <= 0.5 * h
        ]
        if (row or x.width >= 5 * h) and len(b.label.split()) <= 4:  # tab names are short
            # The open tab is the one filled with colour among plain ones; section bars are all
            # coloured alike, so colour says nothing about them.
            selected = bool(row) and _coloured(seen, x) and not all(_coloured(seen, o.box) for o in row)
            out.append(ScreenItem(b.label, x, "tab", {"selected": "true" if selected else "false"}))
    return out


def _coloured(seen: Seen, box: Box) -> bool:
    """Most of the box's inside is saturated colour (an active tab), not white or grey."""
    a = seen.array
    x0, y0 = int(box.left / seen.sx) + 2, int(box.top / seen.sy) + 2
    x1, y1 = int(box.right / seen.sx) - 2, int(box.bottom / seen.sy) - 2
    patch = a[max(0, y0) : max(0, y1), max(0, x0) : max(0, x1)].astype(np.int16)
    if patch.size == 0:
        return False
    return float(np.median(patch.max(axis=2) - patch.min(axis=2))) > 60


def _segments(field: Box, inside: list[TextLine]) -> Box:
    """A date or time input from where its segments start: typing fills the segment clicked
    and the ones after it, so the plan's point near the left end must land on the first one
    (the month, the hour), not on the field's padding. That is where its text starts, or, when
    the dashes were not read, a little inside the border."""
    icon = max(inside, key=lambda ln: ln.box.right) if _end_glyph(field, inside) else None
    texts = [ln for ln in inside if ln is not icon or len(ln.text.split()) > 1]
    left = min(ln.box.left for ln in texts) if texts else field.left + 0.04 * field.width
    return Box(left, field.top, field.right, field.bottom)
