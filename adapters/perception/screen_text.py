"""Screen-to-text: a screenshot becomes a list of OCR lines and UI elements with their boxes.

After Sasagawa and Kawahara (Waseda), "環境依存情報を利用しない大規模言語モデルによるコンピュータータスク
自動化手法": §3.2 (OCR + object detection, merged: a word inside a button becomes ``'Submit'
button``, the text inside a text area becomes ``text area containing the text '...'``), §3.3
(boxes sorted by y) and Appendix C, Table 4 (the observation layout: an ``OCR:`` section of
``'text': [x1, y1, x2, y2]`` lines, then an ``Object Detector:`` section of ``label: [...]``).

The OCR engine is the project's rapidocr pool (adapters/agents/ocr.py, shared with the OCR agent, no
downloads); the detector is :class:`regionfocus.adapters.perception.ui_detect.OpenCvDetector` unless another
:class:`~regionfocus.adapters.perception.ui_detect.ElementDetector` is given. The paper also captions "other object"
detections with InstructBLIP; there is no captioner here, so unlabeled controls keep their
kind only.

Frames: every box in a :class:`ScreenText` is XYXY in pixels of the image given to
:func:`describe_screen`. :meth:`ScreenText.to_text` can write them in another frame
(``to_model``), e.g. the doubled resolution the paper showed its LLM; the caller then maps the
model's coordinates back with the inverse.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from regionfocus.adapters.perception.ocr_engine import EnginePool, usable_cores
from regionfocus.adapters.perception.ocr_text import (
    Match,
    TextLine,
    match_line,
    span_box,
    split_words,
    text_lines,
)
from regionfocus.adapters.perception.ui_detect import DetectedElement, ElementDetector, OpenCvDetector
from regionfocus.geometry import Box, Point

# Kinds in a description. "text" is an OCR line that no element took in.
ELEMENT_KINDS = ("text", "button", "text_field", "text_area", "checkbox", "radio", "dropdown", "link")


def quote(text: str) -> str:
    """The paper's single-quoted label; text holding a single quote is double-quoted instead,
    and line breaks become spaces, so one element is always one line of the observation."""
    text = " ".join(text.split())
    return f'"{text}"' if "'" in text else f"'{text}'"


@dataclass(frozen=True)
class ScreenElement:
    """One entry of the description. ``kind``: one of :data:`ELEMENT_KINDS`; ``text``: the text
    it shows (OCR), "" when none; ``box``: XYXY pixels of the described image; ``checked``:
    for checkboxes and radio buttons; ``conf``: the OCR confidence of its text (1.0 when the
    element has none); ``words``: for an OCR line, one box per word of ``text`` (may be empty)."""

    kind: str
    text: str
    box: Box
    checked: bool | None = None
    conf: float = 1.0
    words: tuple[Box, ...] = ()

    @property
    def label(self) -> str:
        """How the element is named in the observation (the paper's merge rules, §3.2)."""
        t = self.text
        if self.kind == "text":
            return quote(t)
        if self.kind == "button":
            return f"{quote(t)} button" if t else "button"
        if self.kind == "link":
            return f"{quote(t)} link" if t else "link"
        if self.kind == "text_area":
            return f"text area containing the text {quote(t)}" if t else "text area"
        if self.kind == "text_field":
            return f"text field containing {quote(t)}" if t else "text field"
        if self.kind == "dropdown":
            return f"dropdown showing {quote(t)}" if t else "dropdown"
        if self.kind in ("checkbox", "radio"):
            name = "checkbox" if self.kind == "checkbox" else "radio button"
            state = {True: " (checked)" if self.kind == "checkbox" else " (selected)", False: ""}.get(
                self.checked, ""
            )
            return f"{name} {quote(t)}{state}" if t else f"{name}{state}"
        return quote(t) if t else self.kind

    @property
    def center(self) -> Point:
        return self.box.center

    def to_dict(self) -> dict:
        d = {
            "kind": self.kind,
            "text": self.text,
            "label": self.label,
            "box": [round(v, 1) for v in self.box.to_list()],
        }
        if self.checked is not None:
            d["checked"] = self.checked
        if self.words:
            d["words"] = [[round(v, 1) for v in w.to_list()] for w in self.words]
        return d


BoxMap = Callable[[Box], Box]


@dataclass
class ScreenText:
    """The description of one image. ``size``: its (W, H); ``elements`` sorted by y (top, then
    left); ``ocr_s``/``detect_s``: seconds spent reading and detecting."""

    size: tuple[int, int]
    elements: list[ScreenElement] = field(default_factory=list)
    ocr_s: float = 0.0
    detect_s: float = 0.0

    @property
    def texts(self) -> list[ScreenElement]:
        return [e for e in self.elements if e.kind == "text"]

    @property
    def controls(self) -> list[ScreenElement]:
        return [e for e in self.elements if e.kind != "text"]

    def to_text(self, to_model: BoxMap | None = None, layout: str = "paper") -> str:
        """The observation text. ``to_model``: maps a box in image pixels to the frame the model
        is told about (default: image pixels, rounded). ``layout``: "paper" (an ``OCR:`` section
        then an ``Object Detector:`` section, as Table 4) or "merged" (one list sorted by y)."""

        def fmt(e: ScreenElement) -> str:
            b = to_model(e.box) if to_model is not None else e.box
            return f"{e.label}: [{round(b.left)}, {round(b.top)}, {round(b.right)}, {round(b.bottom)}]"

        if layout == "merged":
            return "\n".join(fmt(e) for e in self.elements) or "(nothing detected)"
        if layout != "paper":
            raise ValueError(f"layout must be 'paper' or 'merged', got {layout!r}")
        ocr = [fmt(e) for e in self.texts] or ["(no text read)"]
        det = [fmt(e) for e in self.controls] or ["(no elements detected)"]
        return "OCR:\n" + "\n".join(ocr) + "\n\nObject Detector:\n" + "\n".join(det)

    def at(self, point: Point) -> list[ScreenElement]:
        """Elements whose box holds ``point`` (image pixels), smallest first."""
        return sorted((e for e in self.elements if e.box.contains(point)), key=lambda e: e.box.area)

    def find(self, label: str) -> ScreenElement | None:
        """The element named ``label`` (as written in the observation, with or without its
        box), else the one whose text equals it, case and spacing ignored."""
        want = " ".join(label.split()).lower()
        if ": [" in want:
            want = want.split(": [", 1)[0]
        bare = want.strip("'\"")
        for key in (
            lambda e: e.label.lower(),
            lambda e: e.label.lower().strip("'\""),
            lambda e: " ".join(e.text.split()).lower(),
        ):
            for e in self.elements:
                if key(e) in (want, bare):
                    return e
        return self.locate(bare)

    def locate(self, phrase: str, min_similarity: float = 0.8) -> ScreenElement | None:
        """``phrase`` where an OCR line shows it, with the phrase's own box: a link in a sentence
        is clicked on the link, not at the centre of the sentence. None when no line matches it
        at least ``min_similarity`` (fuzzy, OCR slips allowed)."""
        best: tuple[float, ScreenElement, Match] | None = None
        for e in self.texts:
            line = TextLine(e.text, e.conf, e.box, e.words)
            m = match_line(phrase, line)
            if m is not None and m.similarity >= min_similarity and (best is None or m.score > best[0]):
                best = (m.score, e, m)
        if best is None:
            return None
        _, e, m = best
        start = e.text.find(m.text)
        # The matched run may carry punctuation ("str()," for "str"): keep the phrase itself.
        inner = m.text.lower().find(phrase.strip().lower())
        if inner >= 0:
            start, m_len = start + inner, len(phrase.strip())
        else:
            m_len = len(m.text)
        box = span_box(TextLine(e.text, e.conf, e.box, e.words), start, start + m_len)
        return ScreenElement("text", e.text[start : start + m_len], box, None, e.conf)

    def to_dict(self) -> dict:
        return {"size": list(self.size), "elements": [e.to_dict() for e in self.elements]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def read_lines(image: Image.Image, *, threads: int = 1, engines: int | None = None) -> list[TextLine]:
    """OCR lines of ``image`` at its own resolution (no budget downscale: the screen-to-text
    agent reads what is there), boxes XYXY in its pixels, through the OCR agent's engine pool."""
    array = np.asarray(image.convert("RGB"), dtype=np.uint8)
    pool = EnginePool.get(int(threads), int(engines or max(1, usable_cores() // int(threads))))
    return pool.read(array)


def with_words(image: Image.Image, lines: Sequence[TextLine], contrast: int = 48) -> list[TextLine]:
    """``lines`` with their word boxes (:func:`~regionfocus.adapters.perception.ocr_text.split_words`):
    a column of a line's box holds ink when a pixel there differs from the box's median grey
    by more than ``contrast`` (a code span's tinted background does not, its glyphs do)."""
    gray = np.asarray(image.convert("L"), dtype=np.int16)
    out = []
    for ln in lines:
        b = ln.box
        x0, x1 = max(0, int(b.left)), min(gray.shape[1], int(np.ceil(b.right)))
        y0, y1 = max(0, int(b.top)), min(gray.shape[0], int(np.ceil(b.bottom)))
        if len(ln.text.split()) < 2 or x1 - x0 < 2 or y1 - y0 < 2:
            out.append(ln)
            continue
        crop = gray[y0:y1, x0:x1]
        ink = (np.abs(crop - np.median(crop)) > contrast).any(axis=0)
        placed = TextLine(ln.text, ln.conf, Box(x0, b.top, x1, b.bottom))
        out.append(TextLine(ln.text, ln.conf, ln.box, split_words(placed, ink.tolist())))
    return out


def merge(
    lines: Sequence[TextLine],
    detected: Sequence[DetectedElement],
    *,
    min_conf: float = 0.3,
    label_gap: float = 3.0,
) -> list[ScreenElement]:
    """The paper's merge rules (§3.2) over OCR ``lines`` and ``detected`` elements (same frame).

    - An OCR line whose centre lies inside a button, text field, text area or dropdown becomes
      that element's text (several lines join in reading order) and leaves the OCR list.
    - A link the detector found takes over the OCR line it sits in when it covers all of it;
      when it is one word of a longer line, the line stays and the link is listed too.
    - A checkbox or radio button is named by the nearest OCR line to its right on the same row
      (gap at most ``label_gap`` times its side); that line also stays as text, since clicking
      a label is a valid way to tick its box.
    Two rules the paper's trained detector learned from MiniWoB++ and outlines alone cannot
    give: a filled outline holding several rows of text is a menu, one button per row
    (:func:`_menu_items`); a character-wide filled block after a shell prompt is a terminal's
    text field (:func:`_prompt_field`).
    Lines below ``min_conf`` are dropped. The result is sorted by y (top, then left).
    """
    readable = [ln for ln in lines if ln.conf >= min_conf and ln.text.strip()]
    taken: set[int] = set()
    out: list[ScreenElement] = []
    containers = ("button", "text_field", "text_area", "dropdown")
    for d in detected:
        if d.kind in containers:
            inside = [i for i, ln in enumerate(readable) if i not in taken and d.box.contains(ln.box.center)]
            inside.sort(key=lambda i: (readable[i].box.top, readable[i].box.left))
            taken.update(inside)
            rows = _rows([readable[i] for i in inside])
            if d.kind == "button" and len(rows) >= 2:
                out.extend(_menu_items(d.box, rows))
                continue
            if d.kind == "button" and not inside and (prompt := _prompt_field(d.box, readable)) is not None:
                out.append(prompt)
                continue
            text = " ".join(readable[i].text.strip() for i in inside)
            conf = min((readable[i].conf for i in inside), default=1.0)
            out.append(ScreenElement(d.kind, text, d.box, None, conf))
        elif d.kind == "link":
            for i, ln in enumerate(readable):
                if i in taken or not ln.box.contains(d.box.center):
                    continue
                if d.box.width >= 0.8 * ln.box.width:
                    taken.add(i)
                break
            out.append(ScreenElement("link", d.text, d.box, None, 1.0))
        elif d.kind in ("checkbox", "radio"):
            side = max(d.box.width, d.box.height)
            # The OCR reads an empty box or circle as "O" / "口": that line is the box itself.
            for i, ln in enumerate(readable):
                if i not in taken and len(ln.text.strip()) <= 2 and d.box.contains(ln.box.center):
                    taken.add(i)
            best, best_gap = None, None
            for ln in readable:
                cy = ln.box.center.y
                gap = ln.box.left - d.box.right
                if (
                    d.box.top - 0.25 * side <= cy <= d.box.bottom + 0.25 * side
                    and -2 <= gap <= label_gap * side
                ):
                    if best_gap is None or gap < best_gap:
                        best, best_gap = ln, gap
            out.append(ScreenElement(d.kind, best.text.strip() if best else "", d.box, d.checked, 1.0))
        else:
            out.append(ScreenElement(d.kind, d.text, d.box, d.checked, d.score))
    for i, ln in enumerate(readable):
        if i not in taken:
            out.append(ScreenElement("text", ln.text.strip(), ln.box, None, ln.conf, ln.words))
    out.sort(key=lambda e: (round(e.box.top), e.box.left))
    return out


def _rows(lines: Sequence[TextLine]) -> list[list[TextLine]]:
    """``lines`` grouped into rows (vertical overlap of half a line), top to bottom."""
    rows: list[list[TextLine]] = []
    for ln in sorted(lines, key=lambda ln: ln.box.top):
        last = rows[-1][-1].box if rows else None
        if last is not None and min(last.bottom, ln.box.bottom) - ln.box.top >= 0.5 * min(
            last.height, ln.box.height
        ):
            rows[-1].append(ln)
        else:
            rows.append([ln])
    return rows


def _menu_items(box: Box, rows: list[list[TextLine]]) -> list[ScreenElement]:
    """A filled outline holding several rows of text is a menu or a list, not one button: one
    entry per row, as wide as the outline, split halfway between rows (where a menu's items
    meet), so each item is clicked on its own row.

    OCR lines of a dense screen overlap, reach past the outline, or join a row with a line
    far taller than the rest, so the halfway edges are only a first guess: each edge is kept
    between the middles of the two rows it separates (rows in order of their middles, which
    lie inside the outline), so the items come out in order, tile the outline and each holds
    its own row's middle."""
    middles = [_row_middle(row) for row in rows]
    order = sorted(range(len(rows)), key=lambda k: middles[k])
    rows, middles = [rows[k] for k in order], [middles[k] for k in order]
    edges = [box.top]
    for k, (a, b) in enumerate(zip(rows, rows[1:], strict=False)):
        halfway = (_median([ln.box.bottom for ln in a]) + _median([ln.box.top for ln in b])) / 2
        edges.append(min(max(halfway, middles[k], edges[-1]), middles[k + 1]))
    edges.append(max(box.bottom, edges[-1]))
    out = []
    for k, row in enumerate(rows):
        row = sorted(row, key=lambda ln: ln.box.left)
        text = " ".join(ln.text.strip() for ln in row)
        out.append(
            ScreenElement(
                "button",
                text,
                Box(box.left, edges[k], box.right, edges[k + 1]),
                None,
                min(ln.conf for ln in row),
            )
        )
    return out


def _median(values: Sequence[float]) -> float:
    """The lower median: one of ``values`` itself, so it lies within them exactly."""
    return sorted(values)[(len(values) - 1) // 2]


def _row_middle(row: Sequence[TextLine]) -> float:
    """Where a row sits: the median of its lines' vertical centres (a line taller than the
    rest does not drag it)."""
    return _median([ln.box.center.y for ln in row])


_PROMPT_ENDS = ("$", ">", "#", "%")


def _prompt_field(box: Box, lines: Sequence[TextLine]) -> ScreenElement | None:
    """A terminal's input line: a filled block no wider than a character (the cursor) right
    after a line ending in a shell prompt. It is described as a text field running from the
    cursor as far as the terminal's text reaches, where typing goes once it is clicked."""
    if box.width > 0.8 * box.height:
        return None
    for ln in lines:
        same_row = abs(ln.box.center.y - box.center.y) <= 0.5 * ln.box.height
        if (
            same_row
            and ln.text.strip().endswith(_PROMPT_ENDS)
            and -2 <= box.left - ln.box.right <= ln.box.height
        ):
            width = max(max(o.box.right for o in lines) - box.left, 10 * box.height)
            return ScreenElement("text_field", "", Box(box.left, box.top, box.left + width, box.bottom))
    return None


def describe_screen(
    image: Image.Image,
    *,
    detector: ElementDetector | None = None,
    min_conf: float = 0.3,
    ignore: Sequence[Box] = (),
    lines: Sequence[TextLine] | None = None,
) -> ScreenText:
    """The screen-to-text description of ``image`` (any size, any source).

    ``detector``: the UI-element detector (default :class:`~regionfocus.adapters.perception.ui_detect.OpenCvDetector`);
    ``min_conf``: OCR lines below this confidence are left out; ``ignore``: boxes (image pixels)
    whose elements are dropped, e.g. a task header the instruction already gives as text (the
    paper cut MiniWoB++'s instruction header from its screenshots, §3.2); ``lines``: OCR
    lines already read from this image (skips the OCR). CPU-bound and blocking: call it through
    ``asyncio.to_thread`` from async code. Returns boxes in pixels of ``image``.
    """
    if not isinstance(image, Image.Image):
        raise TypeError(f"describe_screen needs a PIL image, got {type(image).__name__}")
    if image.width < 2 or image.height < 2:
        raise ValueError(f"image too small to describe: {image.size}")
    t0 = time.perf_counter()
    read = list(lines) if lines is not None else read_lines(image)
    read = with_words(image, read)
    t1 = time.perf_counter()
    # The detector clears text before it traces outlines: a page of empty fields that the
    # recogniser read as one huge low-confidence glyph must not wipe the fields out.
    legible = text_lines([ln for ln in read if ln.conf >= min_conf])
    found = (detector or OpenCvDetector()).detect(image, legible)
    t2 = time.perf_counter()
    elements = merge(read, found, min_conf=min_conf)
    if ignore:
        elements = [e for e in elements if not any(b.contains(e.box.center) for b in ignore)]
    return ScreenText(image.size, elements, ocr_s=t1 - t0, detect_s=t2 - t1)
