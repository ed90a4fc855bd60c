"""Which elements of a rendered screen become targets: text that names one element alone (no
other occurrence of its words on the screen), boxes that overlap no other target, and the mix of
text and icon targets the quotas ask for."""

from __future__ import annotations

import math
import random
import re
from collections import Counter

from . import geometry, pages

TARGETS_PER_SCREEN = 12
# Per screen: (bucket, max targets). Buckets are filled in this order, then the remainder comes
# from any bucket, so a screen short of one kind still yields TARGETS_PER_SCREEN targets.
QUOTAS = (
    ("tile-text", 5),
    ("chrome-text", 2),
    ("tool", 2),
    ("tile-icon", 2),
    ("chrome-icon", 1),
)
TEXT_TEMPLATES = {
    "menu": ('open the "{t}" menu', "打开“{t}”菜单"),
    "tab": ('switch to the "{t}" tab', "切换到“{t}”标签页"),
    "side": ('select "{t}" in the sidebar', "在侧边栏中选择“{t}”"),
    "status": ('click "{t}" in the status bar', "点击状态栏中的“{t}”"),
    "wintitle": ('bring the "{t}" window to the front', "将“{t}”窗口置于前台"),
    "button": ('click the "{t}" button', "点击“{t}”按钮"),
    "link": ('open the "{t}" link', "打开“{t}”链接"),
    "option": ('select "{t}"', "选择“{t}”"),
    "section": ('expand the "{t}" section', "展开“{t}”部分"),
    "text": ('click "{t}"', "点击“{t}”"),
}
ICON_TEMPLATES = {
    "checkbox": ('tick the checkbox next to "{t}"', "勾选“{t}”旁边的复选框"),
    "radio": ('choose the radio button for "{t}"', "选中“{t}”对应的单选按钮"),
    "eye": ('toggle the visibility of layer "{t}"', "切换图层“{t}”的可见性"),
    "win-close": ('close the "{t}" window', "关闭“{t}”窗口"),
    "win-maximize": ('maximize the "{t}" window', "最大化“{t}”窗口"),
    "win-minimize": ('minimize the "{t}" window', "最小化“{t}”窗口"),
}


def _is_word_char(ch: str) -> bool:
    # ASCII letters and digits, and every letter-like code point from U+00C0 up.
    return ch.isascii() and ch.isalnum() or "\u00c0" <= ch <= "\uffff"


def _occurrences(text: str, units: list[str] | str) -> int:
    """How often ``text`` occurs (case-insensitive, whole words) across visible text units.

    ``units`` may be pre-joined with ``_join_units`` (one scan instead of one per unit). Matches
    do not overlap, as with ``re.findall``. A plain substring scan: a regex with a Unicode word
    class costs milliseconds to compile, and there is one pattern per candidate."""
    joined = units if isinstance(units, str) else _join_units(units)
    needle = text.lower()
    if not needle:
        return 0
    count, start = 0, 0
    while (i := joined.find(needle, start)) >= 0:
        end = i + len(needle)
        if (i == 0 or not _is_word_char(joined[i - 1])) and (
            end == len(joined) or not _is_word_char(joined[end])
        ):
            count += 1
            start = end
        else:
            start = i + 1
    return count


def _join_units(units: list[str]) -> str:
    # A newline is not a word character, so no match can span two units.
    return "\n".join(u.lower() for u in units)


def _int_box(b: list[float], scale: float = 1.0) -> list[int]:
    """Float CSS-px rect -> the integer image-px box that covers it (CSS px times ``scale``,
    the device scale factor, rounded outward), clipped to the screen."""
    x1, y1 = max(0, math.floor(b[0] * scale)), max(0, math.floor(b[1] * scale))
    x2 = min(geometry.SCREEN_W, math.ceil(b[2] * scale))
    y2 = min(geometry.SCREEN_H, math.ceil(b[3] * scale))
    return [x1, y1, x2, y2]


def _acceptable(c: dict, units: str) -> bool:
    text = c["text"]
    if not re.search(r"[A-Za-z]", text) or not 2 <= len(text) <= 40:
        return False
    if c["kind"] == "text" and (len(text.split()) > 4 or not re.fullmatch(r"\w[\w '-]*\w", text)):
        return False  # free text: keep short clean phrases, not sentence fragments
    if c["kind"] in ("tool", "swatch"):
        return True  # described by the icon's meaning, one of each per screen by construction
    return _occurrences(text, units) == 1


def instruction_for(c: dict) -> tuple[str, str]:
    kind, text = c["kind"], c["text"]
    if kind == "tool":
        return f"click the {text} icon in the toolbar", f"点击工具栏中的{pages.ICON_CN[text]}图标"
    if kind == "swatch":
        return f"pick the {text} swatch in the palette", f"在调色板中选择{pages.COLOR_CN.get(text, text)}色块"
    en, cn = (TEXT_TEMPLATES if c["ui_type"] == "text" else ICON_TEMPLATES)[kind]
    return en.format(t=text), cn.format(t=text)


def _overlaps(a: list[int], b: list[int]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def unambiguous_targets(cands: list[dict], units: list[str], scale: float = 1.0) -> list[dict]:
    """Candidates whose instruction would name exactly one element, boxes made integer image px
    (the CSS-px float box stays in ``css_bbox`` for the hit test)."""
    pool = []
    joined = _join_units(units)
    for c in cands:
        if _acceptable(c, joined):
            c = dict(c, bbox=_int_box(c["bbox"], scale), css_bbox=c["bbox"])
            if c["bbox"][2] > c["bbox"][0] and c["bbox"][3] > c["bbox"][1]:
                pool.append(c)
    return pool


def select_targets(pool: list[dict], rng: random.Random) -> list[dict]:
    """Pick up to TARGETS_PER_SCREEN non-overlapping targets from ``pool``, bucket quotas first."""
    pool = list(pool)
    rng.shuffle(pool)
    chosen: list[dict] = []
    used_texts: set[str] = set()

    def take(c: dict) -> bool:
        key = c["text"].lower()
        if c["kind"] not in ("tool", "swatch") and key in used_texts:
            return False  # e.g. a label and its checkbox: keep one
        if any(_overlaps(c["bbox"], o["bbox"]) for o in chosen):
            return False
        chosen.append(c)
        used_texts.add(key)
        return True

    kind_counts: Counter[str] = Counter()
    for bucket, quota in QUOTAS:
        # Within a bucket, always prefer the least-chosen kind (buttons, links, tabs, labels...)
        # so a screen full of checkbox lists does not yield only checkbox labels.
        left = [c for c in pool if c["bucket"] == bucket]
        n = 0
        while left and n < quota and len(chosen) < TARGETS_PER_SCREEN:
            c = min(left, key=lambda c: kind_counts[c["kind"]])  # first such in shuffled order
            left.remove(c)
            if take(c):
                kind_counts[c["kind"]] += 1
                n += 1
    for c in pool:
        if len(chosen) == TARGETS_PER_SCREEN:
            break
        if c not in chosen:
            take(c)
    return chosen
