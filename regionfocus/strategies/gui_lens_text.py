"""What GUI-Lens (:mod:`.gui_lens`) writes to the model and reads back: its official prompt texts
(``prompts/gui_lens/``, sources in ``prompts/SOURCES.md``), the evidence lines built from OCR
and UI-element hints, the history and rejection lines, and the JSON reader of its answers.

Boxes here are the official code's integer ``[x1, y1, x2, y2]`` lists in screenshot pixels
(printed into the prompts exactly as Python prints a list); a displayed crop maps them with its
per-axis scale. Every line format is the one ``gui_harness/planning/screenspot_locator.py`` and
``active_localization.py`` write (Fzkuji/GUI-Agent-Harness @ 23e75e0), cited by function.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..geometry import Box
from .base import strategy_prompt

IBox = list[int]  # the official code's box: [x1, y1, x2, y2], whole screenshot pixels


def text(name: str) -> str:
    """The official text ``prompts/gui_lens/<name>.txt``, exactly as written."""
    return strategy_prompt(f"gui_lens/{name}.txt")


# ------------------------------------------------------------------ evidence
@dataclass(frozen=True)
class Hint:
    """One OCR line or detected UI element (what the official code calls a component):
    ``box`` in pixels of the image the provider was given, ``kind`` "text" for an OCR line,
    else the detector's class ("icon", "button", ...), ``source`` the engine's name."""

    label: str
    box: Box
    source: str
    kind: str
    confidence: float = 0.0


@dataclass(frozen=True)
class Candidate:
    """A hint as the official ``build_candidates`` normalises it: an integer box, an integer
    centre (``cx = x1 + w // 2``), its label and where it came from."""

    label: str
    box: tuple[int, int, int, int]
    cx: int
    cy: int
    source: str
    kind: str
    confidence: float

    def moved(self, dx: int, dy: int) -> Candidate:
        x1, y1, x2, y2 = self.box
        return Candidate(
            self.label,
            (x1 + dx, y1 + dy, x2 + dx, y2 + dy),
            self.cx + dx,
            self.cy + dy,
            self.source,
            self.kind,
            self.confidence,
        )


def iou(a: Sequence[int], b: Sequence[int]) -> float:
    """``active_localization._iou``: whole-pixel intersection over union, areas at least 1."""
    ix1, iy1, ix2, iy2 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    inter = max(0, ix2 - ix1) * max(0, iy2 - iy1)
    if inter <= 0:
        return 0.0
    area_a = max(1, (a[2] - a[0]) * (a[3] - a[1]))
    area_b = max(1, (b[2] - b[0]) * (b[3] - b[1]))
    return inter / float(area_a + area_b - inter)


def build_candidates(hints: Sequence[Hint], limit: int = 240) -> list[Candidate]:
    """``active_localization.build_candidates``: the first 160 OCR lines, then the first 120
    detections (most confident first, as ``detect_components`` sorts them), skipping one whose
    centre is not positive or whose box overlaps a kept one at IoU > 0.82, at most ``limit``."""
    texts = [h for h in hints if h.kind == "text"][:160]
    icons = sorted((h for h in hints if h.kind != "text"), key=lambda h: -h.confidence)[:120]
    out: list[Candidate] = []
    for h in (*texts, *icons):
        if len(out) >= limit:
            break
        x1, y1 = int(h.box.left), int(h.box.top)
        w, h_ = int(h.box.right) - x1, int(h.box.bottom) - y1
        cx, cy = x1 + w // 2, y1 + h_ // 2
        if cx <= 0 or cy <= 0:
            continue
        box = (x1, y1, x1 + max(1, w), y1 + max(1, h_))
        if any(iou(box, c.box) > 0.82 for c in out):
            continue
        out.append(Candidate(h.label.strip(), box, cx, cy, h.source, h.kind, float(h.confidence)))
    return out


def _tokens(s: str) -> set[str]:
    return {t for t in re.findall(r"[a-z0-9_]+", (s or "").lower()) if len(t) > 1}


def relevance(target: str, c: Candidate) -> float:
    """``active_localization._candidate_relevance``: +8 when the label and the target contain
    one another, +2 per shared word, +1 for a source named "ocr" or "text" (the OCR engines'
    own names, easyocr and vision_ocr there, rapidocr here, never are)."""
    label = c.label.lower()
    if not label:
        return 0.0
    t = (target or "").lower()
    score = 8.0 if (label in t or t in label) else 0.0
    score += 2.0 * len(_tokens(t) & _tokens(label))
    if (c.source or c.kind) in {"ocr", "text"}:
        score += 1.0
    return score


def _inside(c: Candidate, crop: Sequence[int]) -> bool:
    return iou(c.box, crop) > 0 or (crop[0] <= c.cx <= crop[2] and crop[1] <= c.cy <= crop[3])


@dataclass(frozen=True)
class Frame:
    """How a displayed crop shows the screenshot: ``box`` (integer, screenshot pixels),
    ``sx``/``sy`` displayed pixels per screenshot pixel, ``normalized``: the model writes
    0-1000 of the displayed crop instead of its pixels."""

    box: tuple[int, int, int, int]
    sx: float
    sy: float
    normalized: bool = False

    def local(self, x: float, y: float) -> list[int]:
        if self.normalized:
            cw, ch = max(1, self.box[2] - self.box[0]), max(1, self.box[3] - self.box[1])
            return [round((x - self.box[0]) / cw * 1000), round((y - self.box[1]) / ch * 1000)]
        return [round((x - self.box[0]) * self.sx), round((y - self.box[1]) * self.sy)]


def _line(c: Candidate, f: Frame) -> str:
    """One candidate as ``_iterative_candidate_lines`` writes it (without its id)."""
    lb = f.local(c.box[0], c.box[1]) + f.local(c.box[2], c.box[3])
    center = f.local(c.cx, c.cy)
    label = c.label or "(unlabeled)"
    key = "norm" if f.normalized else "display"
    return (
        f"{label} source={c.source} type={c.kind} {key}_bbox={lb} {key}_center={center}"
        f" original_center=({c.cx},{c.cy})"
    )


def candidate_lines(
    candidates: Sequence[Candidate], f: Frame, limit: int, target: str, sort: str
) -> tuple[str, list[tuple[str, Candidate]]]:
    """``_iterative_candidate_lines``: the candidates touching the crop, ranked by ``sort``
    ("none": detector order; "relevance": match to the target, then confidence; "confidence")
    before the ``limit`` cut, numbered z0, z1, ... in the order shown."""
    pool = [c for c in candidates if _inside(c, f.box)]
    if sort == "relevance" and target:
        pool.sort(key=lambda c: (relevance(target, c), c.confidence), reverse=True)
    elif sort == "confidence":
        pool.sort(key=lambda c: c.confidence, reverse=True)
    scoped = [(f"z{i}", c) for i, c in enumerate(pool[:limit])]
    return "\n".join(f"{cid}: {_line(c, f)}" for cid, c in scoped), scoped


def partition_lines(
    candidates: Sequence[Candidate], f: Frame, proposed: Sequence[int], limit: int = 60
) -> tuple[str, str]:
    """``_iterative_candidate_partition_lines``: the crop's candidates inside and outside the
    proposed next crop, in pixels of the displayed crop (the gate's evidence)."""
    inside, outside = [], []
    pixels = Frame(f.box, f.sx, f.sy)
    for c in candidates:
        if not _inside(c, f.box):
            continue
        (inside if _inside(c, proposed) else outside).append(_line(c, pixels))
    return "\n".join(inside[:limit]), "\n".join(outside[:limit])


# ------------------------------------------------------------------ history
def history_lines(history: Sequence[dict[str, Any]]) -> str:
    """``_format_iterative_history``: the last 8 crop decisions."""
    lines = [
        f"round {e.get('round')}: action={e.get('action')} crop={e.get('crop_box')} "
        f"next={e.get('next_box')} area_fraction={e.get('area_fraction')} "
        f"visible={e.get('target_visible_element')}"
        for e in history[-8:]
    ]
    return "\n".join(lines) or "(none)"


def rejection_lines(rejections: Sequence[dict[str, Any]]) -> str:
    """``_format_crop_rejections``: the last 6 rejected attempts on the current crop."""
    if not rejections:
        return "(none)"
    return "\n".join(
        f"attempt {i}: action={r.get('action')} bbox={r.get('bbox')} "
        f"reason={r.get('reasoning') or r.get('reason')}"
        for i, r in enumerate(rejections[-6:], start=1)
    )


def stage_guidance(stage: int, staged: bool) -> str:
    """``_iterative_stage_guidance`` for the 0-based committed crop count ``stage``."""
    if not staged:
        return text("stage_off")
    return text(f"stage{min(stage, 3) + 1}")


def scale_line(crop: Sequence[int], f: Frame) -> str:
    """``_display_scale_line``: a downscaled crop (scale < 1) is described in Claude Code's
    metadata words; any other by its scale."""
    scale = f.sx
    if scale < 1.0:
        cw, ch = crop[2] - crop[0], crop[3] - crop[1]
        return text("scale_down").format(
            cw=cw, ch=ch, w=int(round(cw * scale)), h=int(round(ch * scale)), k=1.0 / scale
        )
    return text("scale_up").format(scale=scale)


# ------------------------------------------------------------------ answers
_MAX_REPLY_CHARS = 32 * 1024  # as every parser of the project: a reply is untrusted input


def _not_a_number(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _finite(s: str) -> float:
    v = float(s)
    if not math.isfinite(v):
        raise ValueError(f"{s} is not a finite number")
    return v


_STRICT = json.JSONDecoder(parse_constant=_not_a_number, parse_float=_finite)


def read_json(reply: str, official: bool = False) -> dict[str, Any] | None:
    """The answer object of a reply, None when it holds none. ``official`` reads it as the
    code's ``parse_json`` (Fzkuji/OpenProgram @ 6b44e44,
    ``openprogram/functions/agentics/json_parsing.py``, which GUI-Agent-Harness imports): the
    whole reply, else the first fenced block, else the first balanced ``{...}`` that parses; a
    value that is no object fails there (its ``.get`` raises), so it is None here. Strict (ours):
    the first object that names an ``action``, else the first object, prose, fences and thinking
    around it skipped. Both refuse NaN and Infinity and read at most 32 KB."""
    s = reply[:_MAX_REPLY_CHARS] if isinstance(reply, str) else ""
    if official:
        found = _parse_json(s)
        return found if isinstance(found, dict) else None
    first: dict[str, Any] | None = None
    i = s.find("{")
    while i != -1:
        try:
            obj, end = _STRICT.raw_decode(s, i)
        except (ValueError, RecursionError):
            i = s.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            if "action" in obj:
                return obj
            first = first if first is not None else obj
        i = s.find("{", end)
    return first


_NO_VALUE = object()
_FENCE = re.compile(r"```(?:json)?\s*\n?(.*?)\n?\s*```", re.DOTALL)


def _loads(s: str) -> Any:
    try:
        return _STRICT.decode(s)
    except (ValueError, RecursionError):
        return _NO_VALUE


def _parse_json(s: str) -> Any:
    """``parse_json``'s three tries, in its order (our strict decoder in each)."""
    for candidate in (s, *(m.group(1) for m in [_FENCE.search(s)] if m)):
        found = _loads(candidate)
        if found is not _NO_VALUE:
            return found
    start = s.find("{")
    while start != -1:
        depth, in_string, escape = 0, False, False
        for i in range(start, len(s)):
            c = s[i]
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == '"':
                in_string = not in_string
            elif not in_string and c in "{}":
                depth += 1 if c == "{" else -1
                if depth == 0:
                    found = _loads(s[start : i + 1])
                    if found is not _NO_VALUE:
                        return found
                    break
        start = s.find("{", start + 1)
    return None


def number(v: Any) -> float | None:
    """``v`` (a JSON number or numeric string) as a finite float, else None."""
    if isinstance(v, bool):
        return None
    try:
        x = float(v.strip()) if isinstance(v, str) else float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


def quad(v: Any) -> list[float] | None:
    """A bbox answer: a list of four finite numbers, else None."""
    if not isinstance(v, list) or len(v) != 4:
        return None
    nums = [number(x) for x in v]
    return None if any(n is None for n in nums) else nums  # type: ignore[return-value]


def flag(v: Any, official: bool = False) -> bool:
    """A yes/no field. ``official``: as the gate's ``bool(parsed.get(...))`` there, so any
    non-empty string is yes, "false" included. Strict (ours): JSON true, or the words
    "true"/"yes" (a model that quotes its booleans)."""
    if official:
        return bool(v)
    if isinstance(v, str):
        return v.strip().lower() in ("true", "yes")
    return v is True


def action_of(parsed: dict[str, Any]) -> str:
    return str(parsed.get("action", "")).lower().strip()


# Words the review's control-type guard looks for (``_is_adjustment_like_request``,
# ``_mentions_direct_control``, ``_mentions_passive_marker``): code, not prompt text.
_ADJUST = ("adjust", "change", "modify", "set ", "increase", "decrease", "raise", "lower", "make ",
           "select", "choose", "pick")  # fmt: skip
_CONTROL = ("slider", "track", "thumb", "handle", "knob", "input", "textbox", "text box", "field",
            "dropdown", "drop-down", "combo", "checkbox", "check box", "radio", "switch", "toggle",
            "button", "swatch", "color square", "color chip", "palette", "value area", "control")  # fmt: skip
_PASSIVE = ("label", "icon", "category", "heading", "header", "title", "status", "caption", "legend",
            "preview", "thumbnail")  # fmt: skip


def _has(s: str, words: tuple[str, ...]) -> bool:
    low = (s or "").lower()
    return any(w in low for w in words)


def breaks_control_type(instruction: str, proposed: dict[str, Any], reviewed: dict[str, Any]) -> bool:
    """``_review_replacement_breaks_control_type``: a review must not swap a direct editable
    control for a passive label or icon of the same setting on an adjust-like instruction."""
    if not _has(f"{instruction}\n{instruction}", _ADJUST):
        return False
    was = f"{proposed.get('target_visible_element', '')}\n{proposed.get('reasoning', '')}"
    now = f"{reviewed.get('target_visible_element', '')}\n{reviewed.get('reasoning', '')}"
    return _has(was, _CONTROL) and not _has(now, _CONTROL) and _has(now, _PASSIVE)
