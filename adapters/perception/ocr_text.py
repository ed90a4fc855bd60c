"""Text side of the OCR agent: what an instruction asks for, and how well OCR lines match it.

No image and no OCR engine here: plain strings in, scores and character spans out, so the
instruction grammar and the fuzzy matcher are testable on their own. Boxes are XYXY in pixels
of whatever image the lines were read from (the caller owns the frame).
"""

from __future__ import annotations

import math
import re
import statistics
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
# The role named first: "Click button ONE" (MiniWoB++ click-test-2), "open link Home".
_LEAD_ROLE_RE = re.compile(rf"^(?:{_ROLE_WORDS})\s+(?=\S)", re.I)
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


def fraction(owner: str, label: str, value: float) -> float:
    """``value`` as a float; a ValueError naming ``owner`` and the option when it is outside [0, 1]."""
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{owner} {label} must be in [0, 1], got {value!r}")
    return float(value)


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
        add(_LEAD_ROLE_RE.sub("", trimmed), 0.97)
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
    """One OCR line: its text, confidence in [0, 1] and XYXY box (pixels of the read image).
    ``words``: one box per whitespace-separated word of ``text`` when known (see
    :func:`split_words`), else empty."""

    text: str
    conf: float
    box: Box
    words: tuple[Box, ...] = ()


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


# Advance widths of a proportional sans-serif face, in 1/1000 em (the Helvetica/Arial metrics
# most UI fonts follow closely); unlisted characters take _DEFAULT_ADVANCE, wide scripts 1000.
# A label inside "ultrices mi,. In cursus" sits well left of where a count of characters puts it.
_ADVANCE: dict[str, int] = {
    **dict.fromkeys("ijl|'", 222),
    **dict.fromkeys(" .,:;!ftI/\\[]", 278),
    **dict.fromkeys('r()-"`*', 333),
    **dict.fromkeys("ckszvxyJ", 500),
    **dict.fromkeys("FTZL", 611),
    **dict.fromkeys("ABEKPSVXY&", 667),
    **dict.fromkeys("CDHNRUw", 722),
    **dict.fromkeys("GOQ", 778),
    **dict.fromkeys("mM%", 833),
    "W": 944,
    "@": 1015,
}
_DEFAULT_ADVANCE = 556  # lower-case letters and digits


def _advance(ch: str) -> int:
    if ch in _ADVANCE:
        return _ADVANCE[ch]
    return 1000 if unicodedata.east_asian_width(ch) in ("W", "F") else _DEFAULT_ADVANCE


def _span_box(line: TextLine, start: int, end: int) -> Box:
    """Characters [start, end) of the line's text, located along its box by their advance
    widths in a proportional font."""
    widths = [_advance(ch) for ch in line.text]
    total = sum(widths) or 1
    b = line.box
    x0 = b.left + b.width * sum(widths[:start]) / total
    x1 = b.left + b.width * sum(widths[:end]) / total
    return Box(x0, b.top, x1, b.bottom)


def split_words(line: TextLine, ink: Sequence[bool]) -> tuple[Box, ...]:
    """One box per word of ``line.text``, from ``ink``: per pixel column of the line's box,
    whether any glyph pixel is there. Each space between two words is placed by advance
    widths along the inked extent, then snapped to the nearest ink-free run of columns at
    least a tenth of the line height wide (the real space); a word then spans the ink between
    its two spaces. A space with no such run within a line height keeps its estimate."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", line.text)]
    cols = [i for i, v in enumerate(ink) if v]
    if not spans or not cols:
        return ()
    b = line.box
    x0, x1 = b.left + cols[0], b.left + cols[-1] + 1
    inked = TextLine(line.text.strip(), line.conf, Box(x0, b.top, x1, b.bottom))
    offset = len(line.text) - len(line.text.lstrip())
    runs, start = [], None  # ink-free runs as (left, right) in image pixels
    for i, v in enumerate([*ink, True]):
        if not v and start is None:
            start = i
        elif v and start is not None:
            if i - start >= max(1.0, 0.1 * b.height) and b.left + start > x0 and b.left + i < x1:
                runs.append((b.left + start, b.left + i))
            start = None
    cuts, used = [], -1
    for (_, e0), (s1, _) in zip(spans, spans[1:], strict=False):
        est = _span_box(inked, e0 - offset, s1 - offset).center.x
        near = [(abs((r[0] + r[1]) / 2 - est), k) for k, r in enumerate(runs) if k > used]
        d, k = min(near, default=(math.inf, -1))
        if d <= b.height:
            cuts.append(runs[k])
            used = k
        else:
            cuts.append((est, est))
    # An estimate may fall left of a run an earlier space snapped to (a line narrower than its
    # characters): keep the cuts in order so the words are too.
    ordered, right = [], x0
    for c0, c1 in cuts:
        right = max(right, c0)
        ordered.append((right, max(right, c1)))
        right = ordered[-1][1]
    edges = [(x0, x0), *ordered, (x1, x1)]
    return tuple(
        Box(edges[i][1], b.top, max(edges[i + 1][0], edges[i][1] + 1), b.bottom) for i in range(len(spans))
    )


def span_box(line: TextLine, start: int, end: int) -> Box:
    """Characters [start, end) of ``line.text``: inside its word boxes when the line has them
    (advance widths place characters within a word), else along the whole line box."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", line.text)]
    if len(spans) != len(line.words) or not spans:
        return _span_box(line, start, end)

    def x_at(c: int, right: bool) -> float:
        pairs = list(zip(spans, line.words, strict=True))
        # An end index in a gap belongs to the word before it, a start index to the word after.
        for (s, e), w in reversed(pairs) if right else pairs:
            if (s < c) if right else (c < e):
                k = min(c, e) - s if right else max(c, s) - s
                return _span_box(TextLine(line.text[s:e], line.conf, w), 0, k).right
        return line.words[0].left if right else line.words[-1].right

    left = x_at(start, False)
    return Box(left, line.box.top, max(x_at(end, True), left + 1), line.box.bottom)


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
    return Match(index, score, sim, line.text[start:end], span_box(line, start, end))


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


# ---------------------------------------------------------------- instruction echo
# Task pages often print the instruction itself (MiniWoB++'s yellow header: 'Click on the link
# "In".'), and that line contains the target phrase, so without this rule the agent clicks the
# instruction instead of the link, in the full screenshot and in every zoomed view alike.
#
# The rule. Content words are folded words of 3+ characters that are not in _STOPWORDS. Let I be
# the instruction's content words that are not target words (target words: those every phrasing
# of the target shares, so "Click button ONE" keeps "button" in I). A line *echoes* the
# instruction when
#   (a) it contains at least ECHO_MIN_WORDS distinct words of I, and at least ECHO_MIN_OWN of its
#       own content words are instruction words (a label that merely shares one word with the
#       instruction, or a sentence that happens to use two of its words among many others, is
#       not an echo); or
#   (b) it belongs to a block of adjacent lines (wrapped text: next row, or same row split by the
#       OCR) made only of instruction words, and the block together contains ECHO_MIN_WORDS
#       words of I: a wrapped header whose last row reads only '"In".' is an echo too.
# A line that is only the target phrase is never an echo by (a), whatever the instruction.
ECHO_MIN_WORDS = 2
ECHO_MIN_OWN = 0.75
_WORD_SIM = 0.8  # fuzzy word equality for 3+ letter words (OCR slips one letter in five)
_STOPWORDS = frozenset(
    fold(w)
    for w in "the and for with this that from into onto then than you your are its was has have".split()
)


def _content(words: Sequence[str]) -> list[str]:
    return [w for w in words if len(w) >= 3 and w not in _STOPWORDS]


def _word_in(word: str, pool: Sequence[str]) -> bool:
    if len(word) < 3:
        return word in pool
    return any(_ratio(word, p) >= _WORD_SIM for p in pool if len(p) >= 3)


def _adjacent(a: Box, b: Box) -> bool:
    """Same text block: the next row down (gap under ~a line height, columns overlapping) or the
    same row split in two (rows overlapping, a short horizontal gap)."""
    h = max(a.height, b.height, 1.0)
    x_overlap = min(a.right, b.right) - max(a.left, b.left)
    y_overlap = min(a.bottom, b.bottom) - max(a.top, b.top)
    gap_y = max(a.top, b.top) - min(a.bottom, b.bottom)
    if y_overlap >= 0.5 * min(a.height, b.height):
        return -x_overlap <= 2.0 * h
    return gap_y <= 0.8 * h and x_overlap > -h


def echo_lines(instruction: str, parsed: ParsedInstruction, lines: Sequence[TextLine]) -> frozenset[int]:
    """Indices of ``lines`` that repeat the instruction rather than show the target (rule above).
    Boxes only need to share one frame."""
    words = fold(instruction).split()
    if parsed.variants:
        target = set.intersection(*(set(fold(v).split()) for v, _ in parsed.variants))
    else:
        target = set(fold(parsed.target).split())
    others = sorted({w for w in _content(words) if w not in target})
    if len(others) < ECHO_MIN_WORDS:
        return frozenset()
    hits: list[set[str]] = []
    pure: list[bool] = []
    echo: set[int] = set()
    for i, ln in enumerate(lines):
        lw = fold(ln.text).split()
        own = _content(lw)
        found = {w for w in others if _word_in(w, own)}
        hits.append(found)
        pure.append(bool(lw) and all(_word_in(w, words) for w in lw))
        if len(found) >= ECHO_MIN_WORDS and own:
            if sum(_word_in(w, words) for w in own) >= ECHO_MIN_OWN * len(own):
                echo.add(i)
    # (b): blocks of adjacent instruction-only lines (echo lines join them as they are).
    members = [i for i in range(len(lines)) if pure[i] or i in echo]
    seen: set[int] = set()
    for start in members:
        if start in seen:
            continue
        block, todo = [], [start]
        seen.add(start)
        while todo:
            i = todo.pop()
            block.append(i)
            for j in members:
                if j not in seen and _adjacent(lines[i].box, lines[j].box):
                    seen.add(j)
                    todo.append(j)
        if len(set().union(*(hits[i] for i in block))) >= ECHO_MIN_WORDS:
            echo.update(block)
    return frozenset(echo)


def text_lines(lines: list[TextLine]) -> list[TextLine]:
    """``lines`` without the ones far taller than every other: the recogniser sometimes reads a
    stack of empty fields as one huge glyph, which would also hide them from the detector."""
    out = []
    for i, ln in enumerate(lines):
        others = [o.box.height for j, o in enumerate(lines) if j != i]
        if not others or ln.box.height <= 3.0 * statistics.median(others):
            out.append(ln)
    return out
