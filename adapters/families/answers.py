"""What the families' answers share, read the way a person reads them: a judge's verdict, a
choice among numbered options, bare coordinates and boxes, typed text and key names. Model-frame
numbers throughout (the family adapters map them to pixels); every reader takes the bounded
reply (:mod:`regionfocus.adapters.model_text`) and never evaluates it."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.model_text import bounded, finite_number
from regionfocus.geometry import Point
from regionfocus.model import Verdict

NUM = r"-?\d+(?:\.\d+)?"


_VERDICT_WORDS = {
    "yes": Verdict.YES,
    "correct": Verdict.YES,
    "true": Verdict.YES,
    "right": Verdict.YES,
    "no": Verdict.NO,
    "incorrect": Verdict.NO,
    "false": Verdict.NO,
    "wrong": Verdict.NO,
}
# A labelled verdict: "Verdict: YES", "**Verdict:** no.", "Judgement: INCORRECT" (the paper's
# figures), "Answer: no". The value is one word; after it only punctuation or a clause opened by
# punctuation may follow, so "Verdict: not sure", "Verdict: YES or NO" and "Verdict: I do not
# know" read as unknown.
_VERDICT_LINE = re.compile(
    r"(?:^|(?<=[\s*_#>`(\[]))(?:final\s+)?(?:verdict|judge?ment|answer)[\s*_`]*[:=\-]\s*[*_`\"']*\s*"
    r"([a-z]+)\b([^\n]*)",
    re.I | re.M,
)
# "The answer is yes.", "so my verdict is: NO"
_VERDICT_IS = re.compile(r"\b(?:answer|verdict|judge?ment)\s+is\s*[:\-]?\s*[*_`\"']*([a-z]+)\b([^\n]*)", re.I)
# An answer that opens with its verdict: "Yes, the star is on File.", "NO - it is next to it.",
# "Incorrect: wrong button." The word must be followed by punctuation (or end the line), so
# "No verdict can be given" or "No idea" are not read as "no".
# The authors' judge prompt says "Answer YES if ... Answer NO if ...": a reply may end with the
# same words, no colon ("... so the point is on it. Answer YES.").
_VERDICT_TAIL = re.compile(r"\b(?:answer|verdict)\s+([a-z]+)[\s.!*_`\"']*\Z", re.I)
_LEADING_WORD = re.compile(r"^[\s*_`\"'#>]*([a-z]+)[\s*_`\"']*(?:[,.;:!\-\u2013\u2014]|$)", re.I | re.M)
_LONE_WORD = re.compile(r"^[\s*_`\"']*([a-z]+)[\s.!*_`\"']*$", re.I)


def _rest_ok(rest: str) -> bool:
    """After a verdict word or choice number: nothing, or punctuation opening a clause."""
    r = rest.lstrip(" \t*_`\"')]")
    return r == "" or r[0] in ",;:.!-\u2013\u2014("


def parse_verdict(text: str) -> Verdict:
    """A judge answer's verdict, read the way a person reads it; UNKNOWN when there is none.

    In order: the last labelled verdict (``Verdict:``/``Judgement:``/``Answer:`` followed by one
    verdict word; an unreadable last label is UNKNOWN, earlier ones are not consulted); the
    last "the answer is X"; an answer that ends "Answer X" (the authors' judge prompt's own
    words); an answer that opens with a verdict word followed by punctuation
    ("Yes, ...", "NO - ...", "Incorrect: ..."); a last line that is a single verdict word.
    Never a substring test: "I do not know", "not precise", "NOTE" or "INCORRECT" inside prose
    are not verdicts.
    """
    if not isinstance(text, str):
        return Verdict.UNKNOWN
    text = bounded(text)
    for m in reversed(list(_VERDICT_LINE.finditer(text))):
        word = m.group(1).lower()
        if word in _VERDICT_WORDS and _rest_ok(m.group(2)):
            return _VERDICT_WORDS[word]
        return Verdict.UNKNOWN  # the last verdict is unreadable: do not look further up
    for m in reversed(list(_VERDICT_IS.finditer(text))):
        word = m.group(1).lower()
        if word in _VERDICT_WORDS and _rest_ok(m.group(2)):
            return _VERDICT_WORDS[word]
    stripped = text.strip()
    m = _VERDICT_TAIL.search(stripped)
    if m and m.group(1).lower() in _VERDICT_WORDS:
        return _VERDICT_WORDS[m.group(1).lower()]
    m = _LEADING_WORD.match(stripped)
    if m and m.group(1).lower() in _VERDICT_WORDS:
        return _VERDICT_WORDS[m.group(1).lower()]
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    m = _LONE_WORD.match(lines[-1]) if lines else None
    if m and m.group(1).lower() in _VERDICT_WORDS:
        return _VERDICT_WORDS[m.group(1).lower()]
    return Verdict.UNKNOWN


_NOUN = r"(?:candidate|option|star|point|number|no\.?)"
# "Selected point: 2" (the paper's format), "Choice: 2", "Final answer: star 3".
_CHOICE_LINE = re.compile(
    r"(?:^|(?<=[\s*_#>`(\[]))(?:final\s+)?(?:selected(?:\s+(?:point|star|candidate|option))?|selection|"
    rf"choice|answer)[\s*_`]*[:=\-]\s*[*_`\"'#\[(]*\s*(?:{_NOUN}\s*#?\s*)?(\d+)\b([^\n]*)",
    re.I | re.M,
)
# "I choose 2", "I would pick star 3", "I'll go with candidate #1", "select option 2".
_CHOICE_VERB = re.compile(
    r"\b(?:choose|chose|select|pick|go\s+with|opt\s+for)\s+(?:the\s+)?"
    rf"(?:{_NOUN}\s*)?(?:number\s*)?#?\s*(\d+)\b(?!\s*[,.]\s*\d)",
    re.I,
)
_CHOICE_MENTION = re.compile(rf"(?:\b{_NOUN}\s*#?\s*|#)(\d+)\b(?!\s*[,.]\s*\d)", re.I)
_LONE_NUMBER = re.compile(
    r"^[\s*_`\"'#\[(]*(?:(?:candidate|option|star|number|point)\s*#?\s*)?(\d+)[\s.!*_`\"')\]]*$", re.I
)
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
_ORDINAL = re.compile(rf"\b({'|'.join(_ORDINALS)})\s+({_NOUN})\b", re.I)
_COORD_TAIL = re.compile(r"^\s*[,.]?\s*[,]\s*-?\d|^\s*,\s*-?\d")


def parse_choice(text: str, valid: Sequence[int] | None = None) -> int | None:
    """The option number a choice answer names, or None (never a silent default).

    In order: the last labelled choice (``Selected point: N``, ``Choice: N``, optionally with a
    clause after it); the last "I choose N" / "pick star N"; an answer that is a lone number
    ("2", "Star 2.", "**3**"); mentions that all name one number ("star 3 is on it", "#2",
    "the second star").
    A labelled value that is a coordinate pair ("Selected point: 512, 300") is not a number:
    the caller may map such a point to the nearest star. Ambiguity ("Choice: 1 or 2", "star 1
    is off, star 2 is on") and numbers not in ``valid`` give None.
    """
    if not isinstance(text, str):
        return None
    # "the second star" names star 2 as plainly as "star 2" does.
    text = _ORDINAL.sub(lambda m: f"{m.group(2)} {_ORDINALS.index(m.group(1).lower()) + 1}", bounded(text))
    n: int | None = None
    matches = list(_CHOICE_LINE.finditer(text))
    if matches:
        last = matches[-1]
        if _COORD_TAIL.match(last.group(2)) or not _rest_ok(last.group(2)):
            return None
        n = _option_number(last.group(1))
    if n is None:
        verbs = list(_CHOICE_VERB.finditer(text))
        if verbs:
            n = _option_number(verbs[-1].group(1))
    if n is None:
        m = _LONE_NUMBER.match(text.strip())
        if m:
            n = _option_number(m.group(1))
    if n is None:
        named = {_option_number(m.group(1)) for m in _CHOICE_MENTION.finditer(text)}
        if len(named) == 1:
            n = named.pop()
    if n is None or (valid is not None and n not in set(valid)):
        return None
    return n


def _option_number(digits: str) -> int | None:
    # int() refuses digit strings past 4300 characters: a number that long names no option.
    return int(digits) if len(digits) <= 6 else None


# Bare coordinates, most specific first. Each yields 2 numbers (a point) or 4 (a box). Every
# pattern is linear in the text: a box's contents hold no '<', so an unclosed tag's search
# stops at the next tag instead of running to the end of the reply for every opening.
_COORD_PATTERNS = [
    re.compile(rf"<point>\s*({NUM})[\s,]+({NUM})\s*</point>"),
    re.compile(r"<\|box_start\|>([^<]*)<\|box_end\|>"),
    re.compile(r"<bbox>([^<]*)</bbox>"),
    re.compile(
        rf"\"(?:bbox_2d|bbox|box)\"\s*:\s*\[\s*({NUM})\s*,\s*({NUM})\s*,\s*({NUM})\s*,\s*({NUM})\s*\]"
    ),
    re.compile(rf"\"(?:point_2d|point|coordinate|coordinates)\"\s*:\s*\[\s*({NUM})\s*,\s*({NUM})\s*\]"),
    re.compile(rf"[\[(]\s*({NUM})\s*,\s*({NUM})\s*\)?\s*,\s*\(?\s*({NUM})\s*,\s*({NUM})\s*[\])]"),
    re.compile(rf"[\[(]\s*({NUM})\s*,\s*({NUM})\s*[\])]"),
]


def numbers_in(s: str) -> list[float]:
    """The numbers written in ``s``; a digit string too long for a finite float spoils the
    lot (inf), so the caller's count check fails and nothing is read from it."""
    found = [finite_number(v) for v in re.findall(NUM, s)]
    return [v for v in found if v is not None] if all(v is not None for v in found) else [math.nan]


def coords_from_value(value: str) -> tuple[float, float] | None:
    """A point from a coordinate value as models write it: "(x,y)", "<point>x y</point>",
    "<|box_start|>(x,y)<|box_end|>", "[x1, y1, x2, y2]" (the centre) ..., else None."""
    nums = numbers_in(value)
    if len(nums) == 2:
        return nums[0], nums[1]
    if len(nums) == 4:
        return (nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2
    return None


def find_coordinates(text: str, want: int = 2) -> list[float] | None:
    """The earliest bare coordinate group in ``text``: a point (``want=2``; a box gives its
    centre) or a box (``want=4``; only 4-number groups). Model-frame numbers, or None."""
    text = bounded(text)
    best: tuple[int, list[float]] | None = None
    for pat in _COORD_PATTERNS:
        for m in pat.finditer(text):
            nums = numbers_in(" ".join(m.groups()))
            if len(nums) not in (2, 4) or (want == 4 and len(nums) != 4):
                continue
            if best is None or m.start() < best[0]:
                best = (m.start(), nums)
            break
    if best is None:
        return None
    nums = best[1]
    if want == 2 and len(nums) == 4:
        return [(nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2]
    return nums


def bare_click(text: str) -> Action | None:
    """A click at the first bare coordinates in ``text`` (grounding answers are often just
    "(x,y)" or a box), in model-frame numbers."""
    xy = find_coordinates(text, 2)
    return Action(ActionType.CLICK, Point(xy[0], xy[1])) if xy else None


def unescape_model_string(s: str) -> str:
    r"""Undo the escapes the UI-TARS prompt asks for (\', \", \n, \t, \\); other backslashes
    stay literal. Never eval."""
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "'": "'", '"': '"', "\\": "\\"}
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] in simple:
            out.append(simple[s[i + 1]])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def typed_text(content: str) -> tuple[str, bool]:
    """(text, submit): a trailing newline means "press Enter" in both families."""
    submit = content.endswith("\n")
    return (content.rstrip("\n") if submit else content), submit


def split_keys(keys: Any) -> tuple[str, ...]:
    """Key names, lower case: "ctrl c", "Ctrl+C", ["ctrl", "c"] -> ("ctrl", "c")."""
    if isinstance(keys, str):
        parts = re.split(r"[\s+]+", keys.strip())
    elif isinstance(keys, (list, tuple)):
        parts = [str(k).strip() for k in keys]
    else:
        return ()
    aliases = {
        "arrowleft": "left",
        "arrowright": "right",
        "arrowup": "up",
        "arrowdown": "down",
        "return": "enter",
    }
    return tuple(aliases.get(p.lower(), p.lower()) for p in parts if p)
