"""Text side of the OCR agent: what an instruction asks for, and how well OCR lines match it.

No image and no OCR engine here: plain strings in, scores and character spans out, so the
instruction grammar and the fuzzy matcher are testable on their own. Boxes are XYXY in pixels
of whatever image the lines were read from (the caller owns the frame).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from regionfocus.geometry import Box

# Verbs that mean "put the pointer on X"; the action type they imply.
_CLICK_VERBS: tuple[tuple[str, str], ...] = (
    (r"double[- ]?click(?:\s+on)?", "double_click"),
    (r"right[- ]?click(?:\s+on)?", "right_click"),
    (r"click(?:\s+on|\s+at)?", "click"),
    (r"tap(?:\s+on)?", "click"),
    (r"press", "click"),
    (r"hit", "click"),
    (r"select", "click"),
    (r"choose", "click"),
    (r"pick", "click"),
    (r"(?:un)?check", "click"),
    (r"(?:un)?tick", "click"),
    (r"toggle", "click"),
    (r"open", "click"),
    (r"(?:go|navigate)\s+to", "click"),
    (r"switch\s+to", "click"),
    (r"activate", "click"),
    (r"follow", "click"),
    (r"expand", "click"),
    (r"collapse", "click"),
)
_CLICK_RE = re.compile(
    r"^(?:please\s+)?(?P<verb>" + "|".join(v for v, _ in _CLICK_VERBS) + r")\b\s*(?P<rest>.*)$", re.I
)
_TYPE_VERB = r"(?:type|enter|input|write|put|insert|fill\s+in)"
_PREP = r"(?:into|in|to|on|inside|within)"
_QUOTED = r"(?P<q>[\"'])(?P<value>.+?)(?P=q)"
# (pattern, field to use when the pattern names none)
_TYPE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # enter "v" into X / type 'v' in the X field
    (re.compile(rf"^(?:please\s+)?{_TYPE_VERB}\s+{_QUOTED}\s+{_PREP}\s+(?P<target>.+)$", re.I), ""),
    # fill X with "v" / set X to "v"
    (
        re.compile(
            rf"^(?:please\s+)?(?:fill(?:\s+in|\s+out)?|set)\s+(?P<target>.+?)\s+(?:with|to)\s+{_QUOTED}$",
            re.I,
        ),
        "",
    ),
    # search for "v": the search box is the field
    (re.compile(rf"^(?:please\s+)?search(?:\s+for)?\s+{_QUOTED}(?P<target>)$", re.I), "search"),
    # type "v": no field named, type wherever the focus is
    (re.compile(rf"^(?:please\s+)?{_TYPE_VERB}\s+{_QUOTED}(?P<target>)$", re.I), ""),
    # enter v into X: unquoted value; the last "into/in" splits value from field
    (re.compile(rf"^(?:please\s+)?{_TYPE_VERB}\s+(?P<value>.+)\s+(?:into|in)\s+(?P<target>.+)$", re.I), ""),
)
_ROLE_WORDS = (
    "radio button|check box|checkbox|menu item|text field|text box|input field|search box|search bar|"
    "drop-down|dropdown|button|link|tab|icon|menu|option|field|input|box|item|entry|label|toggle|switch|"
    "heading|title|text|section|panel|hyperlink"
)
_ROLE_RE = re.compile(rf"\s+(?:{_ROLE_WORDS})s?$", re.I)
_ARTICLE_RE = re.compile(r"^(?:the|a|an|on|at|to|my|this|that)\s+", re.I)
# Qualifiers that say where, not what: "Save in the toolbar" -> "Save".
_WHERE_RE = re.compile(
    r"\s+(?:in|on|at|from|under|inside|within|near|next to|beside|below|above|of)\s+(?:the|a|an|this)\s+.*$",
    re.I,
)
# Straight and typographic quotes; an apostrophe inside a word (don't) is not a quote.
_QUOTE_RES = (
    re.compile(r"\"([^\"]+)\""),
    re.compile(r"(?<![\w])'([^']+)'(?![\w])"),
)
_FANCY_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "`": "'"})
# OCR confuses these glyphs; folding both sides makes "0K" match "OK" (applied after lower()).
_CONFUSABLES = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l", "!": "l"})


@dataclass(frozen=True)
class ParsedInstruction:
    """What the instruction asks. ``kind``: click | double_click | right_click | type.
    ``target``: the text to find on screen ("" when a type instruction names no field);
    ``value``: the text to type; ``variants``: target phrasings to try, best first, each with
    the factor its similarity is multiplied by (a trimmed phrasing is slightly less exact)."""

    kind: str
    target: str
    value: str = ""
    variants: tuple[tuple[str, float], ...] = ()


def normalize(text: str) -> str:
    """Lower case, NFKC, punctuation at word edges dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[^\w\s]+(?=\s|$)|(?:(?<=\s)|^)[^\w\s]+", " ", text)
    return " ".join(text.split())


def fold(text: str) -> str:
    """``normalize`` plus OCR-confusable folding, for comparison only."""
    return normalize(text).translate(_CONFUSABLES)


def _clean_target(phrase: str) -> str:
    phrase = phrase.strip().strip(".?!,;:").strip()
    for _ in range(3):
        new = _ROLE_RE.sub("", _ARTICLE_RE.sub("", phrase)).strip()
        if new == phrase or not new:
            break
        phrase = new
    return phrase


def _variants(target: str, quoted: bool) -> tuple[tuple[str, float], ...]:
    out: list[tuple[str, float]] = []

    def add(text: str, factor: float) -> None:
        text = text.strip()
        if text and all(fold(text) != fold(t) for t, _ in out):
            out.append((text, factor))

    add(target, 1.0)
    if not quoted:
        trimmed = _clean_target(_WHERE_RE.sub("", target))
        add(trimmed, 0.97)
    return tuple(out)


def find_quoted(text: str) -> list[str]:
    """Quoted substrings in order of appearance (straight or typographic quotes)."""
    text = text.translate(_FANCY_QUOTES)
    found = [(m.start(), m.group(1)) for r in _QUOTE_RES for m in r.finditer(text)]
    return [s.strip() for _, s in sorted(found) if s.strip()]


def parse_instruction(instruction: str) -> ParsedInstruction:
    """Read a grounding instruction: quoted text, "click X", "click on the X button", "open the
    X link", "select X", "press X", "choose X", "check X", 'enter "v" into X', 'type "v" in X',
    or a plain "X". Never raises; an empty instruction gives an empty target."""
    text = " ".join(instruction.translate(_FANCY_QUOTES).split()).strip().rstrip(".")
    for pattern, default_field in _TYPE_PATTERNS:
        m = pattern.match(text)
        if m:
            value = m.group("value")
            raw_target = m.group("target") or default_field
            quoted = find_quoted(raw_target)
            target = quoted[0] if quoted else _clean_target(raw_target)
            return ParsedInstruction("type", target, value, _variants(target, bool(quoted)) if target else ())
    kind = "click"
    m = _CLICK_RE.match(text)
    rest = text
    if m:
        verb = m.group("verb").lower()
        kind = next(k for v, k in _CLICK_VERBS if re.fullmatch(v, verb, re.I))
        rest = m.group("rest")
    quoted = find_quoted(rest)
    target = quoted[0] if quoted else _clean_target(rest)
    return ParsedInstruction(kind, target, "", _variants(target, bool(quoted)) if target else ())


@dataclass(frozen=True)
class TextLine:
    """One OCR line: its text, confidence in [0, 1] and XYXY box (pixels of the read image)."""

    text: str
    conf: float
    box: Box


@dataclass(frozen=True)
class Match:
    """The best-matching part of one line. ``similarity`` in [0, 1] is the text match alone;
    ``score`` adds the penalties (low OCR confidence, a label that is only part of the line,
    a trimmed phrasing). ``box``: the matched characters' part of the line box."""

    line: int
    score: float
    similarity: float
    text: str
    box: Box


def _ratio(a: str, b: str) -> float:
    return fuzz.ratio(a, b) / 100.0


def _span_box(line: TextLine, start: int, end: int) -> Box:
    """Characters [start, end) of the line's text, located proportionally along its box."""
    n = max(len(line.text), 1)
    b = line.box
    return Box(b.left + b.width * start / n, b.top, b.left + b.width * end / n, b.bottom)


def match_line(target: str, line: TextLine, index: int = 0, factor: float = 1.0) -> Match | None:
    """The best match of ``target`` against the whole line or a contiguous run of its words.

    A run that is only part of the line loses up to 6 % (so the exact label wins a tie against
    a longer line that contains it); OCR confidence below 1 costs up to 25 %.
    """
    t = fold(target)
    if not t or not line.text.strip():
        return None
    t_ns = t.replace(" ", "")
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", line.text)]
    max_run = len(t.split()) + 1
    best: tuple[float, float, int, int] | None = None  # (score, similarity, start, end)
    total = max(len(line.text.strip()), 1)
    for i in range(len(words)):
        for j in range(i, min(len(words), i + max_run)):
            start, end = words[i][0], words[j][1]
            span = fold(line.text[start:end])
            if not span:
                continue
            sim = max(_ratio(t, span), _ratio(t_ns, span.replace(" ", "")))
            coverage = (end - start) / total
            score = sim * (1.0 - 0.06 * (1.0 - coverage))
            if best is None or score > best[0] + 1e-9:
                best = (score, sim, start, end)
    # OCR often drops the space between two labels ("SubmitCancel"): align inside the line.
    flat_idx = [k for k, ch in enumerate(line.text) if not ch.isspace()]
    if len(t_ns) >= 4 and len(flat_idx) > len(t_ns):
        flat = "".join(line.text[k] for k in flat_idx).lower().translate(_CONFUSABLES)
        al = fuzz.partial_ratio_alignment(t_ns, flat)
        if al is not None and al.dest_end > al.dest_start:
            sim = al.score / 100.0 * 0.92
            start, end = flat_idx[al.dest_start], flat_idx[al.dest_end - 1] + 1
            score = sim * (1.0 - 0.06 * (1.0 - (end - start) / total))
            if best is None or score > best[0] + 1e-9:
                best = (score, sim, start, end)
    if best is None:
        return None
    score, sim, start, end = best
    conf = min(max(line.conf, 0.0), 1.0)
    score *= (0.75 + 0.25 * conf) * factor
    return Match(index, score, sim, line.text[start:end], _span_box(line, start, end))


def best_matches(parsed: ParsedInstruction, lines: Sequence[TextLine]) -> list[Match]:
    """One match per line (its best over the target's variants), best first. Ties go to the
    line nearer the top, then the left, so the order is deterministic."""
    out = []
    for i, line in enumerate(lines):
        cands = [m for t, f in parsed.variants if (m := match_line(t, line, i, f)) is not None]
        if cands:
            out.append(max(cands, key=lambda m: m.score))
    out.sort(key=lambda m: (-round(m.score, 6), m.box.top, m.box.left))
    return out


def token_overlap(target: str, line: TextLine) -> float:
    """Fraction of the target's words (3+ letters) that appear, fuzzily, among the line's words."""
    t_words = [w for w in fold(target).split() if len(w) >= 3]
    l_words = fold(line.text).split()
    if not t_words or not l_words:
        return 0.0
    hits = sum(1 for w in t_words if max(_ratio(w, lw) for lw in l_words) >= 0.8)
    return hits / len(t_words)
