"""Phase 1 of A11y-Compressor (§3.1, Appendices A and B): foreground modal elements apart
from the background."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..geometry import Box, Point
from .elements import (
    DIALOG_ROLES,
    A11yElement,
    _by_id,
    _norm_key,
    ancestors,
    ensure_ids,
    in_viewport,
    landmark_of,
    normalize_space,
    says_something,
    union_box,
)

# App. A.5.1: tag-based scores of newly appeared elements.
MODAL_INTERACTIVE_TAGS = frozenset({"dialog", "alertdialog", "menu", "listbox", "tree"})
# Chromium calls a <label> "LabelText"; its text runs (StaticText) are not listed, as in the paper.
MODAL_DECORATIVE_TAGS = frozenset({"image", "img", "label", "LabelText", "heading", "paragraph", "generic"})
# App. A.5.2: name keywords (matched as words, case-insensitive).
KEYWORDS_DECIDE = ("ok", "cancel", "save", "yes", "no", "login", "agree", "delete")
KEYWORDS_FUNC = ("sort", "filter", "settings", "search", "find")
# App. B.1: anchor keywords. "setting" and "cookie" also match their plurals (word prefixes).
# Ours besides: a pop-up that is no consent box ("Join our newsletter", "Subscribe", "No
# thanks", "Dismiss") says so in words of its own.
KEYWORDS_CONTENT = ("cookie", "cookies", "gdpr", "privacy", "consent", "newsletter", "subscribe")
KEYWORDS_ACTION = (
    "accept", "agree", "allow", "reject", "save", "confirm", "close", "×", "ok", "policy", "manage", "setting",
    "dismiss", "thanks",
)  # fmt: skip
# A closing or cancel mechanism (App. B.6): an interactive element named like one of these.
KEYWORDS_CLOSE = (
    "accept",
    "agree",
    "allow",
    "reject",
    "decline",
    "close",
    "×",
    "ok",
    "cancel",
    "confirm",
    "got",
    "dismiss",
    "thanks",
)


@dataclass(frozen=True)
class ModalParams:
    """App. A and B parameters. Given by the paper: ``eps_static``/``eps_dynamic`` (25 px),
    ``same_screen_ratio`` (0.3), ``large_modal_matches`` (10), ``sparse_screen`` (15),
    ``threshold`` (T_modal = 1.0), ``cluster_frac`` (δ = 0.08 min(W, H)), the edge rule
    (``edge_top`` 0.15 H, ``edge_bottom`` 0.75 H, ``edge_aspect`` 2.5), ``region_threshold``
    (65) and ``region_relative`` (0.8 S_max). Not given, chosen here: ``w_decide`` and
    ``w_func`` (A.5.2's weights: a decision button counts as much as a dialog tag, +2, a
    function button half that), the region-score split (``anchor_points`` per anchor capped
    at 20, centrality up to 30, ``structure_points`` per kind of control), B.6's "too few"
    (``min_anchors`` distinct labels), "too small" and "most of the screen" (``min_area_frac``,
    ``max_area_frac``), and ``cluster_metric``: Eq. 17 measures between positions; "center"
    does exactly that, "gap" (default) between the boxes' nearest edges, because web
    buttons side by side are often wider than δ, so their centres never link. Ours: a layer
    "covers the page" (a pop-up's backdrop) when it spans ``cover_frac`` of the viewport and
    is painted over at least ``cover_behind`` elements of the page that say something."""

    eps_static: float = 25.0
    eps_dynamic: float = 25.0
    same_screen_ratio: float = 0.3
    large_modal_matches: int = 10
    sparse_screen: int = 15
    threshold: float = 1.0
    w_decide: float = 2.0
    w_func: float = 1.0
    cluster_frac: float = 0.08
    edge_top: float = 0.15
    edge_bottom: float = 0.75
    edge_aspect: float = 2.5
    region_threshold: float = 65.0
    region_relative: float = 0.8
    anchor_points: float = 5.0
    structure_points: float = 15.0
    min_anchors: int = 2
    cluster_metric: str = "gap"
    min_area_frac: float = 0.001
    max_area_frac: float = 0.6
    cover_frac: float = 0.9
    cover_behind: int = 3


@dataclass
class ModalResult:
    """Phase 1's output (Eq. 1): ``modal`` (M) and ``background`` (B) in tree order.
    ``methods``: which detectors fired ("attribute", "temporal", "tracked", "keyword");
    ``notes``: why, for traces; ``same_screen``: the App. A.3 verdict (None: not judged)."""

    modal: list[A11yElement]
    background: list[A11yElement]
    methods: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    same_screen: bool | None = None

    @property
    def box(self) -> Box | None:
        return union_box(e.box for e in self.modal if e.box is not None and e.visible)


def _words(text: str) -> list[str]:
    """App. C.2 steps 1-2, also used for keyword tests: lower case, non-alphanumerics (except
    the × glyph, itself a keyword) to spaces, split."""
    return re.sub(r"[^0-9a-z×]+", " ", (text or "").lower()).split()


def _has_keyword(text: str, keywords: Sequence[str]) -> bool:
    words = _words(text)
    for k in keywords:
        for w in words:
            if w == k or (len(k) >= 5 and w.startswith(k)):
                return True
    return False


def _content_key(el: A11yElement) -> tuple[str, str, str]:
    """App. A.1's semantic content c (role, name, text)."""
    return (el.role, normalize_space(el.name), normalize_space(el.text))


def _descendants_of(roots: Iterable[A11yElement], elements: Sequence[A11yElement]) -> set[str]:
    by_id = _by_id(elements)
    root_ids = {r.node_id for r in roots}
    out = set(root_ids) - {""}
    for el in elements:
        if any(a.node_id in root_ids for a in ancestors(el, by_id)):
            out.add(el.node_id)
    return out


def _on_screen(el: A11yElement, viewport: tuple[int, int]) -> bool:
    return el.visible and el.box is not None and in_viewport(el.box, viewport)


def detect_by_attribute(elements: Sequence[A11yElement], viewport: tuple[int, int]) -> set[str]:
    """A visible on-screen ``dialog``/``alertdialog`` and everything under it (the tree names
    the foreground itself; App. A.5.1 scores these roles +2, above T_modal on their own)."""
    roots = [e for e in elements if e.role in DIALOG_ROLES and _on_screen(e, viewport)]
    return _descendants_of(roots, elements) if roots else set()


def modal_score(candidates: Sequence[A11yElement], p: ModalParams = ModalParams()) -> float:
    """App. A.5, Eq. 12-15: Σ (M_tag + M_name) + M_count."""
    total = 0.0
    tags = []
    for m in candidates:
        t = 2.0 if m.role in MODAL_INTERACTIVE_TAGS else (-0.5 if m.role in MODAL_DECORATIVE_TAGS else 0.0)
        tags.append(t)
        name = 0.0
        if m.interactive and _has_keyword(m.label, KEYWORDS_DECIDE):
            name = p.w_decide
        elif m.interactive and _has_keyword(m.label, KEYWORDS_FUNC):
            name = p.w_func
        total += t + name
    if len(candidates) < 3 and all(t <= 0 for t in tags):
        total -= 3.0
    elif len(candidates) >= 6:
        total += 1.0
    return total


def detect_temporal(
    elements: Sequence[A11yElement],
    previous: Sequence[A11yElement],
    viewport: tuple[int, int],
    p: ModalParams = ModalParams(),
) -> tuple[bool | None, list[A11yElement], str]:
    """App. A.1-A.4: are ``previous`` and ``elements`` the same screen, and which elements are
    new? Returns (same_screen, new elements, note); same_screen None when either is empty.

    Positions are centres. The global shift (Eq. 8) is the median displacement of pairs whose
    content is unique in both frames (all-pairs medians are swamped by repeated labels).
    """
    cur = [e for e in elements if _on_screen(e, viewport)]
    prev = [e for e in previous if _on_screen(e, viewport)]
    if not cur or not prev:
        return None, [], "no temporal correspondence"
    prev_by_key: dict[tuple, list[A11yElement]] = {}
    for e in prev:
        prev_by_key.setdefault(_content_key(e), []).append(e)
    cur_count: dict[tuple, int] = {}
    for e in cur:
        cur_count[_content_key(e)] = cur_count.get(_content_key(e), 0) + 1
    shifts = [
        (e.center.x - prev_by_key[k][0].center.x, e.center.y - prev_by_key[k][0].center.y)
        for e in cur
        if not e.fixed and len(prev_by_key.get(k := _content_key(e), ())) == 1 and cur_count[k] == 1
    ]
    dx = statistics.median(s[0] for s in shifts) if shifts else 0.0
    dy = statistics.median(s[1] for s in shifts) if shifts else 0.0

    def matches(old: A11yElement, new: A11yElement) -> bool:
        if old.fixed:  # Eq. 6
            return old.center.distance(new.center) <= p.eps_static
        return Point(old.center.x + dx, old.center.y + dy).distance(new.center) <= p.eps_dynamic  # Eq. 9

    matched_prev: set[int] = set()
    new: list[A11yElement] = []
    for e in cur:
        hit = False
        for old in prev_by_key.get(_content_key(e), ()):
            if matches(old, e):
                matched_prev.add(id(old))
                hit = True
        if not hit:
            new.append(e)  # Eq. 11
    dyn_prev = [e for e in prev if not e.fixed]
    ratio = sum(1 for e in dyn_prev if id(e) in matched_prev) / len(dyn_prev) if dyn_prev else 1.0  # Eq. 10
    n_matched = len(matched_prev)
    if len(cur) < p.sparse_screen:
        same, why = True, f"sparse screen ({len(cur)} < {p.sparse_screen}): judged directly"
    elif n_matched > p.large_modal_matches:
        same, why = True, f"{n_matched} matched > {p.large_modal_matches}"
    else:
        same, why = ratio > p.same_screen_ratio, f"R={ratio:.2f} vs {p.same_screen_ratio}"
    return same, new, f"{why}; shift ({dx:.0f}, {dy:.0f}); {len(new)} new"


def _distance(a: Box, b: Box, metric: str = "gap") -> float:
    """Between two boxes: their centres' distance ("center") or the gap between their nearest
    edges, 0 when they overlap ("gap")."""
    if metric == "center":
        return a.center.distance(b.center)
    if metric != "gap":
        raise ValueError(f"cluster_metric must be 'gap' or 'center', got {metric!r}")
    dx = max(0.0, max(a.left, b.left) - min(a.right, b.right))
    dy = max(0.0, max(a.top, b.top) - min(a.bottom, b.bottom))
    return math.hypot(dx, dy)


def _common_container(members: Sequence[A11yElement], by_id: Mapping[str, A11yElement]) -> A11yElement | None:
    """The nearest ancestor holding every member (None when they share none)."""
    if not members:
        return None
    chains = [[m, *ancestors(m, by_id)] for m in members]
    ids = [{a.node_id for a in c} for c in chains]
    for a in chains[0]:
        if all(a.node_id in s for s in ids[1:]):
            return a
    return None


def covering_layer(
    candidates: Iterable[A11yElement],
    elements: Sequence[A11yElement],
    viewport: tuple[int, int],
    p: ModalParams = ModalParams(),
) -> A11yElement | None:
    """The front-most of ``candidates`` that covers the page (ours, see :class:`ModalParams`):
    a pop-up's dimmed backdrop, or a panel as large. A layer in the page's own flow is painted
    with the content beside it, never over it, so only a layer in front qualifies."""
    W, H = viewport
    by_id = _by_id(elements)
    best = None
    for e in candidates:
        b = e.box
        if not e.visible or b is None or (best is not None and e.paint_order <= best.paint_order):
            continue
        shown = max(0.0, min(b.right, W) - max(b.left, 0.0)) * max(0.0, min(b.bottom, H) - max(b.top, 0.0))
        if shown < p.cover_frac * W * H:
            continue
        own = _descendants_of([e], elements) | {a.node_id for a in ancestors(e, by_id)}
        behind = sum(
            1
            for o in elements
            if o.paint_order < e.paint_order and o.node_id not in own and says_something(o)
            and _on_screen(o, viewport) and b.contains(o.center)
        )  # fmt: skip
        if behind >= p.cover_behind:
            best = e
    return best


def _clusters(anchors: Sequence[A11yElement], delta: float, metric: str) -> list[list[A11yElement]]:
    """Eq. 17-18: anchors linked when closer than ``delta`` (single linkage)."""
    parent = list(range(len(anchors)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(anchors)):
        for j in range(i + 1, len(anchors)):
            if _distance(anchors[i].box, anchors[j].box, metric) < delta:
                parent[find(i)] = find(j)
    clusters: dict[int, list[A11yElement]] = {}
    for i, a in enumerate(anchors):
        clusters.setdefault(find(i), []).append(a)
    return list(clusters.values())


def _region(
    members: Sequence[A11yElement],
    elements: Sequence[A11yElement],
    by_id: Mapping[str, A11yElement],
    layer: A11yElement | None,
    area: float,
    p: ModalParams,
) -> tuple[set[str], Box]:
    """A cluster widened to its nearest common container's subtree (the web tree has one; the
    paper's linearized tree did not), or the anchors alone when there is none or it is most of
    the screen. A backdrop that holds the anchors (``layer``) is the pop-up's own container:
    its subtree, measured by what it shows. Returns (ids, box)."""
    container = _common_container(members, by_id)
    if container is not None and container is layer:
        ids = _descendants_of([layer], elements)
        shown = (
            e.box for e in elements if e.node_id in ids and e is not layer and e.box and says_something(e)
        )
        return ids, union_box(shown)
    if container is None or container.box is None or container.box.area > p.max_area_frac * area:
        return {m.node_id for m in members}, union_box(m.box for m in members)
    return _descendants_of([container], elements), container.box


def _rejection(
    members: Sequence[A11yElement],
    box: Box,
    inside: Sequence[A11yElement],
    by_id: Mapping[str, A11yElement],
    area: float,
    p: ModalParams,
) -> str:
    """App. B.6: why a cluster's region is no modal ("" when it may be one)."""
    if len({_norm_key(m.label) for m in members}) < p.min_anchors:
        return "too few anchors"
    if box.area < p.min_area_frac * area:
        return "region too small"
    if box.area > p.max_area_frac * area:
        return "covers most of the screen"
    if any(landmark_of(m, by_id) in ("NAVIGATION", "SEARCH") for m in members) or any(
        e.role in ("navigation", "search", "searchbox") for e in inside
    ):
        return "navigation bar or search form"
    if not any(e.interactive and _has_keyword(e.label, KEYWORDS_CLOSE) for e in inside):
        return "no closing or cancel control"
    return ""


def _region_score(
    members: Sequence[A11yElement],
    box: Box,
    inside: Sequence[A11yElement],
    covered: bool,
    viewport: tuple[int, int],
    p: ModalParams,
) -> float:
    """B.4-B.5: anchors, centrality, and the kinds of control inside; ours: standing in front
    of a layer that covers the page counts as one more kind."""
    W, H = viewport
    kinds = (
        any(e.interactive and e.role in ("button", "link") for e in inside),
        any(e.role in ("textbox", "searchbox", "combobox") for e in inside),
        any(e.role in ("checkbox", "switch", "radio") for e in inside),
        any(e.interactive and _has_keyword(e.label, ("close", "×")) for e in inside),
        covered,
    )
    centrality = max(0.0, 1.0 - box.center.distance(Point(W / 2, H / 2)) / math.hypot(W / 2, H / 2))
    return min(20.0, p.anchor_points * len(members)) + 30.0 * centrality + p.structure_points * sum(kinds)


def detect_by_keywords(
    elements: Sequence[A11yElement], viewport: tuple[int, int], p: ModalParams = ModalParams()
) -> tuple[set[str], list[str]]:
    """App. B: anchors (keyword-bearing on-screen elements), clustered when closer than
    δ = ``cluster_frac`` · min(W, H) (Eq. 17-18), each cluster widened to its region, kept by
    the edge rule (Eq. 19-20) or by the region score (B.4-B.5), unless a B.6 rejection applies.
    Returns the accepted modal element ids and notes."""
    W, H = viewport
    by_id = _by_id(elements)
    shown = [e for e in elements if _on_screen(e, viewport)]
    anchors = [e for e in shown if _has_keyword(e.label, KEYWORDS_CONTENT + KEYWORDS_ACTION)]
    if not anchors:
        return set(), ["keyword: no anchors"]
    layer = covering_layer(shown, elements, viewport, p)
    notes: list[str] = []
    scored: list[tuple[float, bool, set[str], str]] = []
    for members in _clusters(anchors, p.cluster_frac * min(W, H), p.cluster_metric):
        ids, box = _region(members, elements, by_id, layer, W * H, p)
        inside = [e for e in shown if e.node_id in ids]
        label = ", ".join(repr(m.label[:20]) for m in members[:4])
        why = _rejection(members, box, inside, by_id, W * H, p)
        if why:
            notes.append(f"keyword: rejected [{label}]: {why}")
            continue
        c = box.center
        edge = (c.y > p.edge_bottom * H or c.y < p.edge_top * H) and box.width > p.edge_aspect * max(
            box.height, 1
        )
        covered = layer is not None and min(m.paint_order for m in members) >= layer.paint_order
        score = _region_score(members, box, inside, covered, viewport, p)
        extra = (" edge banner" if edge else "") + (" in front of a page-covering layer" if covered else "")
        scored.append((score, edge, ids, f"[{label}] score {score:.0f}{extra}"))
    accepted: set[str] = set()
    s_max = max((s for s, _, _, _ in scored), default=0.0)
    for score, edge, ids, note in scored:
        ok = edge or (score >= p.region_threshold and score >= p.region_relative * s_max)  # Eq. 19-21
        notes.append(f"keyword: {'accepted' if ok else 'rejected'} {note}")
        if ok:
            accepted |= ids
    return accepted, notes


APPEARED = "appeared"  # the attribute :func:`mark_appeared` sets


def mark_appeared(
    elements: Sequence[A11yElement],
    previous: Sequence[A11yElement],
    viewport: tuple[int, int],
    p: ModalParams = ModalParams(),
) -> list[A11yElement]:
    """``elements`` with ``attributes["appeared"] = "true"`` on those new since ``previous``
    when the two screens correspond (App. A), unless ``previous`` held the same node (its id)
    visible: content scrolled into view was there all along, and App. A's shift, a median over
    content unique in both frames, cannot tell that on a page of repeated blocks. The temporal
    signal for a caller handed one snapshot at a time: :func:`detect_modal` without
    ``previous`` reads the marks."""
    same, new, _ = detect_temporal(elements, previous, viewport, p)
    there = {e.node_id for e in previous if e.node_id and e.visible}
    fresh = {id(e) for e in new if e.node_id not in there} if same else set()
    return [
        replace(e, attributes={**e.attributes, APPEARED: "true"}) if id(e) in fresh else e for e in elements
    ]


def _temporal(
    new: Sequence[A11yElement], elements: Sequence[A11yElement], viewport: tuple[int, int], p: ModalParams
) -> tuple[set[str], str]:
    """The new elements as the modal when App. A.5 scores them at T_modal (Eq. 12-16), or
    (ours) when one of them covers the page: then those painted at or above it."""
    score = modal_score(new, p) if new else 0.0
    layer = covering_layer(new, elements, viewport, p)
    note = f"score {score:.1f} vs {p.threshold}"
    if layer is not None:
        front = [e for e in new if e.paint_order >= layer.paint_order]
        return _descendants_of(front, elements), note + f"; a new {layer.role} covers the page"
    return (_descendants_of(new, elements) if new and score >= p.threshold else set()), note


def detect_modal(
    elements: Sequence[A11yElement],
    viewport: tuple[int, int],
    previous: Sequence[A11yElement] | None = None,
    previous_modal: Sequence[A11yElement] = (),
    params: ModalParams = ModalParams(),
) -> ModalResult:
    """Phase 1 (§3.1, Eq. 1): split ``elements`` into modal M and background B.

    ``viewport``: (W, H) screenshot pixels. ``previous``: the last step's elements (None on a
    first observation, or when the caller marked what appeared: :func:`mark_appeared`);
    ``previous_modal``: the last step's modal set, tracked while its elements persist (JA §3.1
    step 3). Order: attribute (a visible dialog), temporal difference when the screens
    correspond (App. A; scored by Eq. 12-16, or a new layer covering the page), tracking, and
    the keyword method only where no temporal correspondence exists (App. A's opening) and
    the tree names no dialog.
    """
    elements = ensure_ids(elements)
    result = ModalResult([], [])
    modal_ids = detect_by_attribute(elements, viewport)
    if modal_ids:
        result.methods.append("attribute")
    if previous is not None:
        same, new, note = detect_temporal(elements, previous, viewport, params)
        result.notes.append(f"temporal: {note}")
    else:
        new = [e for e in elements if e.attributes.get(APPEARED) == "true" and _on_screen(e, viewport)]
        same = True if new else None
        if new:
            result.notes.append(f"temporal: {len(new)} marked as appeared since the last snapshot")
    result.same_screen = same
    if same:
        ids, note = _temporal(new, elements, viewport, params)
        if ids:
            result.methods.append("temporal")
            modal_ids |= ids  # with the subtrees of new containers (their hidden or off-screen members)
        result.notes.append(f"temporal: {note}")
    if previous is not None and previous_modal:
        keys = {_content_key(e) for e in previous_modal}
        tracked = {e.node_id for e in elements if _content_key(e) in keys and _on_screen(e, viewport)}
        if tracked - modal_ids:
            result.methods.append("tracked")
        modal_ids |= tracked
    if not same and "attribute" not in result.methods:
        # Keywords are for pages that do not say which layer is in front; where the tree names
        # a dialog, a keyword cluster can only add background (a MiniWoB++ instruction saying
        # "Close the dialog" joined the dialog's own Close button).
        ids, notes = detect_by_keywords(elements, viewport, params)
        result.notes += notes
        if ids:
            result.methods.append("keyword")
        modal_ids |= ids
    for e in elements:
        (result.modal if e.node_id in modal_ids else result.background).append(e)
    return result
