"""The screen as the OCR agent reads it for a multi-step plan (:mod:`.task_plan`): its OCR lines
as plain text and the controls :class:`OpenCvDetector` finds over the same budget image, as
:class:`ScreenItem` s in pixels of the image asked about.

A control takes the text it shows as its label (a button its caption, a field what is typed in
it, a dropdown its selected option); a checkbox or radio button takes the line just right of
it, as its ``<label>`` reads. A field whose text reads as a date or time pattern (mm/dd/yyyy,
--:-- --) is a date or time input, whatever its right-end icon made the detector call it.
"""

from __future__ import annotations

import re
import statistics
import threading
from collections import OrderedDict

from PIL import Image

from regionfocus.adapters.agents.ocr_seen import Seen
from regionfocus.adapters.perception.ocr_text import TextLine
from regionfocus.adapters.perception.ui_detect import DetectedElement, OpenCvDetector
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


def text_lines(lines: list[TextLine]) -> list[TextLine]:
    """``lines`` without the ones far taller than every other: the recogniser sometimes reads a
    stack of empty fields as one huge glyph, which would also hide them from the detector."""
    out = []
    for i, ln in enumerate(lines):
        others = [o.box.height for j, o in enumerate(lines) if j != i]
        if not others or ln.box.height <= 3.0 * statistics.median(others):
            out.append(ln)
    return out


def _nested(e: DetectedElement, controls: list[DetectedElement]) -> bool:
    """A control drawn inside another one (the unread caption of a button, a field's inner
    edge) is part of it."""
    return e.kind != "link" and any(
        o is not e
        and o.kind != "link"
        and o.box.area > e.box.area
        and o.box.left - 1 <= e.box.left
        and o.box.top - 1 <= e.box.top
        and e.box.right <= o.box.right + 1
        and e.box.bottom <= o.box.bottom + 1
        for o in controls
    )


def screen_items(seen: Seen, lines: list[TextLine], controls: list[DetectedElement]) -> list[ScreenItem]:
    """``lines`` (readable OCR lines of ``seen``) and ``controls`` (detected on its budget image)
    as plan items, boxes in pixels of the image ``seen`` was read from."""
    items = [ScreenItem(ln.text, _to_image(seen, ln.box)) for ln in lines]
    for e in controls:
        if _nested(e, controls):
            continue
        role, attrs = ROLES[e.kind], {}
        if e.kind in ("checkbox", "radio"):
            label = _label_right_of(lines, e.box)
            attrs["checked"] = "true" if e.checked else "false"
        elif e.kind == "link":
            label = e.text
        else:
            label = " ".join(ln.text for ln in _inside(lines, e.box))
            if e.kind == "text_area":
                attrs["multiline"] = "true"
            elif _DATE.match(label.strip()):
                role = "Date"
            elif _TIME.match(label.strip()):
                role = "InputTime"
        items.append(ScreenItem(label, _to_image(seen, e.box), role, attrs))
    return items
