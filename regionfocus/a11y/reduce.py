"""Phase 2 of A11y-Compressor (§3.2, App. C): what says nothing dropped, duplicates merged,
long text cut around the instruction's keywords."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .elements import (
    CONTAINER_ROLES,
    A11yElement,
    _by_id,
    _norm_key,
    ancestors,
    in_viewport,
    normalize_space,
    tag_priority,
)

# App. C.2, Table 5.
STOP_WORDS = frozenset(
    "the a an in on at to for of with by from is are am be this that it "
    "please can could would you i my me need want try make let "
    "click tap press hit select choose open go browse navigate find search check uncheck button link tab "
    "menu window page website site input enter type fill text box field".split()
)


@dataclass(frozen=True)
class ReduceParams:
    """App. C parameters. Given: ``merge_distance`` (20 px), ``same_name_dy`` (30 px),
    ``max_length_ratio`` (2), ``context_chars`` (50), ``max_chars`` (N_max = 100). Chosen:
    what "larger horizontal deviations" allows for equal names (boxes overlapping
    horizontally), and ``compress_interactive`` (False: a control's name is what gets
    clicked, so only non-interactive text is cut; C.2 speaks of paragraphs)."""

    merge_distance: float = 20.0
    same_name_dy: float = 30.0
    max_length_ratio: float = 2.0
    context_chars: int = 50
    max_chars: int = 100
    compress_interactive: bool = False


def instruction_keywords(instruction: str) -> list[str]:
    """App. C.2 steps 1-3: lower-cased words of 2+ characters that are not stop words, in order,
    each once."""
    out: list[str] = []
    for w in re.sub(r"[^0-9a-z]+", " ", (instruction or "").lower()).split():
        if len(w) >= 2 and w not in STOP_WORDS and w not in out:
            out.append(w)
    return out


def compress_text(text: str, keywords: Sequence[str], p: ReduceParams = ReduceParams()) -> str:
    """App. C.2: text longer than ``max_chars`` becomes "...<context_chars around the first
    keyword hit>..." when a keyword occurs as a word, else its first ``max_chars`` characters
    and "..."."""
    if len(text) <= p.max_chars:
        return text
    low = text.lower()
    first = None
    for k in keywords:
        m = re.search(rf"(?<![0-9a-z]){re.escape(k)}(?![0-9a-z])", low)
        if m and (first is None or m.start() < first[0]):
            first = (m.start(), m.end())
    if first is not None:
        a, b = max(0, first[0] - p.context_chars), min(len(text), first[1] + p.context_chars)
        return "..." + text[a:b] + "..."
    return text[: p.max_chars] + "..."


def _relevant(el: A11yElement) -> bool:
    """Not noise (App. C Table 3 step 1): contentless containers and text-less nodes go."""
    if el.role in ("InlineTextBox", "LineBreak", "RootWebArea", "WebArea", "ListMarker"):
        return False
    if not el.label.strip():
        return el.interactive and el.role not in CONTAINER_ROLES
    if not el.interactive and not re.search(r"\w", el.label):
        return False  # separators and bullets ("·", "|", "•")
    if el.role in CONTAINER_ROLES and not el.interactive and not el.text.strip():
        return el.role in ("dialog", "alertdialog", "listitem", "group", "region", "article", "figure")
    return True


def _duplicates(a: A11yElement, b: A11yElement, p: ReduceParams) -> bool:
    """App. C.1 deduplication criteria: spatially close and semantically similar."""
    ka, kb = _norm_key(a.label), _norm_key(b.label)
    if not ka or not kb:
        return False
    if ka != kb and ka not in kb and kb not in ka:
        return False
    if max(len(ka), len(kb)) > p.max_length_ratio * min(len(ka), len(kb)):
        return False  # "prevention of over-merging"
    ca, cb = a.box.center, b.box.center
    if ca.distance(cb) <= p.merge_distance:
        return True
    if ka == kb and abs(ca.y - cb.y) <= p.same_name_dy:
        return min(a.box.right, b.box.right) >= max(a.box.left, b.box.left)
    return False


def _keep_first(a: A11yElement, b: A11yElement) -> bool:
    """App. C.1 execution logic: lower Table 4 score wins; a link beats static text; a tie
    keeps the longer label."""
    pa, pb = tag_priority(a.role), tag_priority(b.role)
    if pa != pb:
        return pa < pb
    return len(a.label) >= len(b.label)


def dedupe(
    elements: Sequence[A11yElement], p: ReduceParams = ReduceParams(), tree: Sequence[A11yElement] = ()
) -> list[A11yElement]:
    """App. C.1 over elements that have boxes, plus one rule of ours the tree makes possible:
    a static text whose nearest labelled ancestor is a control, or already holds its text (a
    paragraph's runs), is dropped. ``tree``: every node, for ancestor lookups (default
    ``elements``). Tree order is kept."""
    by_id = _by_id([*tree, *elements])
    dropped: set[int] = set()
    for el in elements:
        if el.role == "StaticText":
            for a in ancestors(el, by_id):
                if a.role in CONTAINER_ROLES and a.role != "listitem" and not a.interactive:
                    break  # a document's title or a landmark's name is not the run's text
                if a.label.strip():
                    # a control says its own text (its name wins, as Table 4 ranks controls
                    # first); a block that already holds the run says it too
                    if a.interactive or (_norm_key(el.label) and _norm_key(el.label) in _norm_key(a.label)):
                        dropped.add(id(el))
                    break
    live = sorted(
        (e for e in elements if id(e) not in dropped and e.box is not None),
        key=lambda e: e.box.center.y,
    )
    for i, a in enumerate(live):
        if id(a) in dropped:
            continue
        for b in live[i + 1 :]:
            if b.box.center.y - a.box.center.y > max(p.merge_distance, p.same_name_dy):
                break
            if id(b) in dropped or not _duplicates(a, b, p):
                continue
            if _keep_first(a, b):
                dropped.add(id(b))
            else:
                dropped.add(id(a))
                break
    return [e for e in elements if id(e) not in dropped]


def reduce_elements(
    elements: Sequence[A11yElement],
    viewport: tuple[int, int],
    instruction: str = "",
    p: ReduceParams = ReduceParams(),
    tree: Sequence[A11yElement] = (),
) -> list[A11yElement]:
    """Phase 2 on one element set (App. C, Table 3): noise removal (invisible, off-viewport,
    contentless), string normalisation, deduplication, instruction-based text compression.
    The centre-point form is applied when rendering (:func:`element_line`)."""
    keywords = instruction_keywords(instruction)
    kept = []
    for e in elements:
        if not e.visible or e.box is None or not in_viewport(e.box, viewport) or not _relevant(e):
            continue
        name, text = normalize_space(e.name), normalize_space(e.text)
        if text == name:
            text = ""
        kept.append(replace(e, name=name, text=text))
    kept = dedupe(kept, p, tree)
    out = []
    for e in kept:
        if p.compress_interactive or not e.interactive:
            e = replace(e, name=compress_text(e.name, keywords, p), text=compress_text(e.text, keywords, p))
        out.append(e)
    return out


def reduce(
    modal: Sequence[A11yElement],
    background: Sequence[A11yElement],
    viewport: tuple[int, int],
    instruction: str = "",
    params: ReduceParams = ReduceParams(),
) -> tuple[list[A11yElement], list[A11yElement]]:
    """Phase 2 (§3.2, Eq. 2): (M, B) -> (M', B'), each reduced on its own. Parent links to
    dropped nodes stay valid for lookups (ancestor walks skip missing ids)."""
    tree = [*modal, *background]  # ancestors are looked up across both sets
    return (
        reduce_elements(modal, viewport, instruction, params, tree),
        reduce_elements(background, viewport, instruction, params, tree),
    )
