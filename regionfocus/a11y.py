"""Accessibility observations: the plain linearized tree and A11y-Compressor's compressed one.

After Takeshita, Kawada, Ohashi, Kitada and Iyatomi, "A11y-Compressor: A Framework for Enhancing
the Efficiency of GUI Agent Observations through Visual Context Reconstruction and Redundancy
Reduction" (Hosei University; Japanese version "Compressed-a11y"). No code was released; every
rule below is written from the paper's text, section numbers cited where each one is used.
Three phases, each a pure function, each switchable for the paper's ablation (§4.5, Table 2):

1. :func:`detect_modal` (§3.1, Appendices A and B): foreground modal elements apart from the
   background, from roles/attributes (a visible ``dialog``/``alertdialog``: our web addition,
   the tree states it outright), the temporal difference against the previous step (App. A)
   and keywords clustered in space (App. B, used when no temporal correspondence exists).
2. :func:`reduce` (§3.2, App. C): invisible / off-viewport / contentless elements dropped,
   duplicates merged by Table 4's priorities, strings normalised, long text cut around the
   instruction's keywords (C.2: Table 5's stop words, 50 characters of context, else the first
   100), and each box written as its centre.
3. :func:`structure` (§3.3, App. D): reading order by centres (D.1, rows as the JA §3.3 step 2
   says), regions from landmarks and layout (D.2; web regions are ours, D.4.1 only separates
   browser chrome from PAGE_CONTENT, and our screenshots hold the page alone), ``[BLOCK]``
   breaks at the adaptive gap Θ (D.3, D.5) and before headings (JA §3.3 step 3).

:func:`compress` runs them and renders ``MODAL:`` first, then one block per region, each line
``[role] "name" @ (x, y)`` (JA Figure 1). :func:`linearize` is the baseline (§4.3 (2), Figure 1:
role, name, text, top-left position and size per line).

Frames: every box here is in pixels of the original screenshot. Coordinates written into text
go through ``to_model`` (a callable from screenshot :class:`Point` to the model's own (x, y),
identity by default), so adapters keep owning model frames.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from .geometry import Box, Point

ToModel = Callable[[Point], tuple[float, float]]
PHASES = ("modal", "reduce", "structure")


def identity_frame(p: Point) -> tuple[float, float]:
    return (p.x, p.y)


@dataclass(frozen=True)
class A11yElement:
    """One accessibility node with its geometry.

    ``node_id``: stable id within one page (the extractor's backend node id); ``parent``: the
    nearest kept ancestor's id ("" at the root). ``role``: the tree's role ("button", "link",
    "StaticText", "dialog", ...). ``name``: accessible name; ``text``: text content or value
    the name does not carry. ``box``: XYXY in screenshot pixels, None when the node has no
    layout. ``interactive``: can be acted on (a widget role, focusable, or a pointer cursor).
    ``visible``: rendered and not transparent. ``fixed``: stays put when the page scrolls (the
    paper's "static region", App. A.2). ``paint_order``: larger is painted later (in front).
    ``attributes``: a few states ("modal", "checked", "expanded", "level", "value", ...).
    ``marked``: inside an element carrying the caller's ground-truth mark (measurement only;
    no phase reads it).
    """

    role: str
    name: str = ""
    text: str = ""
    box: Box | None = None
    interactive: bool = False
    visible: bool = True
    fixed: bool = False
    node_id: str = ""
    parent: str = ""
    paint_order: int = 0
    attributes: Mapping[str, str] = field(default_factory=dict)
    marked: bool = False

    @property
    def label(self) -> str:
        """What the element says: its name, else its text."""
        return self.name or self.text

    @property
    def center(self) -> Point | None:
        return self.box.center if self.box is not None else None


# ---------------------------------------------------------------------------------- roles
# Structure-only roles: they group other nodes and say nothing themselves unless named.
CONTAINER_ROLES = frozenset(
    {
        "generic", "none", "presentation", "group", "section", "div", "list", "listitem",
        "RootWebArea", "WebArea", "document", "Section", "LayoutTable", "LayoutTableRow",
        "LayoutTableCell", "table", "rowgroup", "row", "Pre", "LineBreak", "InlineTextBox",
        "article", "figure", "Iframe", "IframePresentational", "Canvas", "Abbr", "Ruby",
        "DescriptionList", "strong", "emphasis", "code", "subscript", "superscript", "mark",
        "time", "insertion", "deletion", "blockquote", "form", "search", "region", "main",
        "navigation", "banner", "contentinfo", "complementary", "toolbar", "menubar", "tablist",
        "tabpanel", "dialog", "alertdialog", "status", "log", "note", "application",
    }
)  # fmt: skip
LANDMARK_REGIONS: Mapping[str, str] = {
    "banner": "HEADER",
    "navigation": "NAVIGATION",
    "search": "SEARCH",
    "toolbar": "TOOLBAR",
    "menubar": "TOOLBAR",
    "tablist": "TOOLBAR",
    "form": "FORM",
    "complementary": "SIDEBAR",
    "main": "CONTENT",
    "contentinfo": "FOOTER",
}
REGION_ORDER = ("MODAL", "HEADER", "TOOLBAR", "NAVIGATION", "SEARCH", "SIDEBAR", "FORM", "CONTENT", "FOOTER")
DIALOG_ROLES = frozenset({"dialog", "alertdialog"})

# App. C.1 Table 4: lower keeps. Chromium role names for the OSWorld tags it lists.
_PRIORITY_0 = frozenset(
    {"textbox", "searchbox", "combobox", "checkbox", "radio", "switch", "spinbutton", "slider",
     "ToggleButton", "textField", "listbox", "entry", "input"}
)  # fmt: skip
_PRIORITY_10 = frozenset(
    {"button", "link", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "option", "treeitem"}
)


def tag_priority(role: str) -> int:
    """App. C.1, Table 4: 0 entries, 10 buttons and links, 20 headings, 30 everything else."""
    if role in _PRIORITY_0:
        return 0
    if role in _PRIORITY_10:
        return 10
    if role == "heading":
        return 20
    return 30


def display_role(role: str) -> str:
    return {"StaticText": "text", "RootWebArea": "document"}.get(role, role)


# ---------------------------------------------------------------------------------- helpers
_WS = re.compile(r"\s+")


def normalize_space(text: str) -> str:
    """App. C Table 3 "String Normalization": whitespace runs and newlines to one space."""
    return _WS.sub(" ", text or "").strip()


def _norm_key(text: str) -> str:
    """App. C.1: lower case, whitespace removed."""
    return _WS.sub("", (text or "").lower())


def ensure_ids(elements: Sequence[A11yElement]) -> list[A11yElement]:
    """``elements`` with every missing ``node_id`` set to "#<index>" (phase 1 tells elements
    apart by id; hand-built lists may leave ids out)."""
    return [e if e.node_id else replace(e, node_id=f"#{i}") for i, e in enumerate(elements)]


def _by_id(elements: Iterable[A11yElement]) -> dict[str, A11yElement]:
    return {e.node_id: e for e in elements if e.node_id}


def ancestors(el: A11yElement, by_id: Mapping[str, A11yElement]) -> Iterable[A11yElement]:
    """``el``'s kept ancestors, nearest first (cycles cut)."""
    seen = {el.node_id}
    cur = by_id.get(el.parent)
    while cur is not None and cur.node_id not in seen:
        seen.add(cur.node_id)
        yield cur
        cur = by_id.get(cur.parent)


def landmark_of(el: A11yElement, by_id: Mapping[str, A11yElement]) -> str:
    """The region name of ``el``'s nearest landmark ancestor (or itself), "" when none."""
    if el.role in LANDMARK_REGIONS:
        return LANDMARK_REGIONS[el.role]
    for a in ancestors(el, by_id):
        if a.role in LANDMARK_REGIONS:
            return LANDMARK_REGIONS[a.role]
    return ""


def union_box(boxes: Iterable[Box]) -> Box | None:
    bs = list(boxes)
    if not bs:
        return None
    return Box(
        min(b.left for b in bs), min(b.top for b in bs), max(b.right for b in bs), max(b.bottom for b in bs)
    )


def in_viewport(box: Box, viewport: tuple[int, int]) -> bool:
    """The element's centre is on screen (App. C Table 3: off-window elements are noise)."""
    c = box.center
    return 0 <= c.x < viewport[0] and 0 <= c.y < viewport[1] and box.area > 0


def _fmt(v: float) -> str:
    return str(int(round(v)))


def point_text(p: Point, to_model: ToModel) -> str:
    x, y = to_model(p)
    return f"({_fmt(x)}, {_fmt(y)})"


# ---------------------------------------------------------------------------------- baseline
LINEAR_HEADER = "role\tname\ttext\tposition (top-left x, y)\tsize (w, h)"


def says_something(el: A11yElement) -> bool:
    """Worth a line in the baseline: named, texted, or actionable (nameless containers are
    not, as in OSWorld's linearization, which keeps nodes with a name or text)."""
    return bool(el.name.strip() or el.text.strip() or el.interactive)


def linear_line(el: A11yElement, to_model: ToModel = identity_frame) -> str:
    """One baseline row: role, name, text, top-left and size, tab-separated (Figure 1)."""
    pos = size = ""
    if el.box is not None:
        x0, y0 = to_model(Point(el.box.left, el.box.top))
        x1, y1 = to_model(Point(el.box.right, el.box.bottom))
        pos, size = f"({_fmt(x0)}, {_fmt(y0)})", f"({_fmt(x1 - x0)}, {_fmt(y1 - y0)})"
    text = el.text if el.text != el.name else ""
    return "\t".join((display_role(el.role), el.name, text, pos, size))


def linearize(
    elements: Sequence[A11yElement],
    to_model: ToModel = identity_frame,
    *,
    viewport: tuple[int, int] | None = None,
) -> str:
    """The paper's baseline observation (§4.3 (2)): one tab-separated row per node in tree
    order, with role, name, text, top-left position and size, under a header row. Every node
    that says something is listed, hidden and off-screen ones included (Figure 1's problems
    4 and 5); ``viewport`` = (W, H) keeps only nodes whose centre is on screen (a stricter
    baseline, for comparison)."""
    rows = [LINEAR_HEADER]
    for el in elements:
        if not says_something(el):
            continue
        if viewport is not None and (el.box is None or not in_viewport(el.box, viewport)):
            continue
        rows.append(linear_line(el, to_model))
    return "\n".join(rows)


# ---------------------------------------------------------------------------------- phase 1
# App. A.5.1: tag-based scores of newly appeared elements.
MODAL_INTERACTIVE_TAGS = frozenset({"dialog", "alertdialog", "menu", "listbox", "tree"})
# Chromium calls a <label> "LabelText"; its text runs (StaticText) are not listed, as in the paper.
MODAL_DECORATIVE_TAGS = frozenset({"image", "img", "label", "LabelText", "heading", "paragraph", "generic"})
# App. A.5.2: name keywords (matched as words, case-insensitive).
KEYWORDS_DECIDE = ("ok", "cancel", "save", "yes", "no", "login", "agree", "delete")
KEYWORDS_FUNC = ("sort", "filter", "settings", "search", "find")
# App. B.1: anchor keywords. "setting" and "cookie" also match their plurals (word prefixes).
KEYWORDS_CONTENT = ("cookie", "cookies", "gdpr", "privacy", "consent")
KEYWORDS_ACTION = (
    "accept", "agree", "allow", "reject", "save", "confirm", "close", "×", "ok", "policy", "manage", "setting",
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
    buttons side by side are often wider than δ, so their centres never link."""

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


def detect_by_keywords(
    elements: Sequence[A11yElement], viewport: tuple[int, int], p: ModalParams = ModalParams()
) -> tuple[set[str], list[str]]:
    """App. B: anchors (keyword-bearing on-screen elements), clustered when their centres are
    closer than δ = ``cluster_frac`` · min(W, H) (Eq. 17-18), each cluster widened to its nearest
    common container (the web tree has one; the paper's linearized tree did not), kept by the
    edge rule (Eq. 19-20) or by the region score (B.4-B.5), unless a B.6 rejection applies.
    Returns the accepted modal element ids and notes."""
    W, H = viewport
    by_id = _by_id(elements)
    shown = [e for e in elements if _on_screen(e, viewport)]
    anchors = [e for e in shown if _has_keyword(e.label, KEYWORDS_CONTENT + KEYWORDS_ACTION)]
    notes: list[str] = []
    if not anchors:
        return set(), ["keyword: no anchors"]
    delta = p.cluster_frac * min(W, H)
    parent = list(range(len(anchors)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(anchors)):
        for j in range(i + 1, len(anchors)):
            if _distance(anchors[i].box, anchors[j].box, p.cluster_metric) < delta:
                parent[find(i)] = find(j)
    clusters: dict[int, list[A11yElement]] = {}
    for i, a in enumerate(anchors):
        clusters.setdefault(find(i), []).append(a)

    scored: list[tuple[float, bool, set[str], str]] = []
    diag = math.hypot(W / 2, H / 2)
    for members in clusters.values():
        container = _common_container(members, by_id)
        cbox = container.box if container is not None and container.box is not None else None
        if cbox is None or cbox.area > p.max_area_frac * W * H:
            container, cbox = None, union_box(m.box for m in members)
        ids = (
            _descendants_of([container], elements) if container is not None else {m.node_id for m in members}
        )
        inside = [e for e in shown if e.node_id in ids]
        label = ", ".join(repr(m.label[:20]) for m in members[:4])
        # B.6 rejections
        why = ""
        if len({_norm_key(m.label) for m in members}) < p.min_anchors:
            why = "too few anchors"
        elif cbox.area < p.min_area_frac * W * H:
            why = "region too small"
        elif cbox.area > p.max_area_frac * W * H:
            why = "covers most of the screen"
        elif any(landmark_of(m, by_id) in ("NAVIGATION", "SEARCH") for m in members) or any(
            e.role in ("navigation", "search", "searchbox") for e in inside
        ):
            why = "navigation bar or search form"
        elif not any(e.interactive and _has_keyword(e.label, KEYWORDS_CLOSE) for e in inside):
            why = "no closing or cancel control"
        if why:
            notes.append(f"keyword: rejected [{label}]: {why}")
            continue
        c = cbox.center
        edge = (c.y > p.edge_bottom * H or c.y < p.edge_top * H) and cbox.width > p.edge_aspect * max(
            cbox.height, 1
        )
        kinds = {
            "button": any(e.interactive and e.role in ("button", "link") for e in inside),
            "input": any(e.role in ("textbox", "searchbox", "combobox") for e in inside),
            "toggle": any(e.role in ("checkbox", "switch", "radio") for e in inside),
            "close": any(e.interactive and _has_keyword(e.label, ("close", "×")) for e in inside),
        }
        score = (
            min(20.0, p.anchor_points * len(members))
            + 30.0 * max(0.0, 1.0 - c.distance(Point(W / 2, H / 2)) / diag)
            + p.structure_points * sum(kinds.values())
        )
        scored.append((score, edge, ids, f"[{label}] score {score:.0f}" + (" edge banner" if edge else "")))
    accepted: set[str] = set()
    s_max = max((s for s, _, _, _ in scored), default=0.0)
    for score, edge, ids, note in scored:
        ok = edge or (score >= p.region_threshold and score >= p.region_relative * s_max)  # Eq. 19-21
        notes.append(f"keyword: {'accepted' if ok else 'rejected'} {note}")
        if ok:
            accepted |= ids
    return accepted, notes


def detect_modal(
    elements: Sequence[A11yElement],
    viewport: tuple[int, int],
    previous: Sequence[A11yElement] | None = None,
    previous_modal: Sequence[A11yElement] = (),
    params: ModalParams = ModalParams(),
) -> ModalResult:
    """Phase 1 (§3.1, Eq. 1): split ``elements`` into modal M and background B.

    ``viewport``: (W, H) screenshot pixels. ``previous``: the last step's elements (None on a
    first observation); ``previous_modal``: the last step's modal set, tracked while its
    elements persist (JA §3.1 step 3). Order: attribute (a visible dialog), temporal
    difference when the screens correspond (App. A; scored by Eq. 12-16), tracking, and the
    keyword method only where no temporal correspondence exists (App. A's opening) and the
    tree names no dialog.
    """
    elements = ensure_ids(elements)
    result = ModalResult([], [])
    modal_ids = detect_by_attribute(elements, viewport)
    if modal_ids:
        result.methods.append("attribute")
    temporal_ok = False
    if previous is not None:
        same, new, note = detect_temporal(elements, previous, viewport, params)
        result.same_screen = same
        result.notes.append(f"temporal: {note}")
        if same:
            temporal_ok = True
            score = modal_score(new, params) if new else 0.0
            if new and score >= params.threshold:
                result.methods.append("temporal")
                # with the subtrees of new containers (their hidden or off-screen members)
                modal_ids |= _descendants_of(new, elements)
            result.notes.append(f"temporal: score {score:.1f} vs {params.threshold}")
        if previous_modal:
            keys = {_content_key(e) for e in previous_modal}
            tracked = {e.node_id for e in elements if _content_key(e) in keys and _on_screen(e, viewport)}
            if tracked - modal_ids:
                result.methods.append("tracked")
            modal_ids |= tracked
    if not temporal_ok and "attribute" not in result.methods:
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


# ---------------------------------------------------------------------------------- phase 2
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


# ---------------------------------------------------------------------------------- phase 3
@dataclass(frozen=True)
class StructureParams:
    """App. D.5: ``min_gap`` (40 px floor of G_base), ``gap_quantile`` (the lower 70 %),
    ``multipliers`` (3, 4, 8), ``max_blocks`` (50), ``many_blocks`` (10) and
    ``max_single_frac`` (0.5). Chosen: ``row_tolerance`` (fraction of the row's first element
    height within which centres share a row, JA §3.3 step 2), the layout fallbacks for pages
    without landmarks (``header_frac``: a top band holding ``min_links`` links is HEADER;
    ``nav_frac``: such a left column is NAVIGATION)."""

    min_gap: float = 40.0
    gap_quantile: float = 0.7
    multipliers: tuple[float, ...] = (3.0, 4.0, 8.0)
    max_blocks: int = 50
    many_blocks: int = 10
    max_single_frac: float = 0.5
    row_tolerance: float = 0.5
    header_frac: float = 0.1
    nav_frac: float = 0.2
    min_links: int = 3


@dataclass
class Region:
    """A functional region (App. D.2): its name, elements in reading order, their union box,
    and its blocks (D.3: lists of elements, split at gaps above Θ and before headings)."""

    name: str
    elements: list[A11yElement]
    box: Box | None
    blocks: list[list[A11yElement]] = field(default_factory=list)


def reading_order(
    elements: Sequence[A11yElement], p: StructureParams = StructureParams()
) -> list[A11yElement]:
    """App. D.1 with JA §3.3 step 2: rows top to bottom by centre y (centres within
    ``row_tolerance`` x the row's first height share a row), left to right within a row."""
    items = sorted((e for e in elements if e.box is not None), key=lambda e: (e.box.center.y, e.box.center.x))
    rows: list[list[A11yElement]] = []
    for e in items:
        if rows:
            head = rows[-1][0]
            if e.box.center.y - head.box.center.y <= p.row_tolerance * max(head.box.height, 1.0):
                rows[-1].append(e)
                continue
        rows.append([e])
    return [e for row in rows for e in sorted(row, key=lambda e: e.box.center.x)]


def _split(
    ordered: Sequence[A11yElement], theta: float, row_tolerance: float = 0.5
) -> list[list[A11yElement]]:
    """Blocks of ``ordered``: a new one after a vertical gap above ``theta``, and at a heading
    that opens a new row (headings side by side, as in a grid of cards, share the row's block)."""
    blocks: list[list[A11yElement]] = []
    for e in ordered:
        if blocks:
            prev = blocks[-1][-1]
            gap = e.box.center.y - prev.box.center.y
            new_row = gap > row_tolerance * max(prev.box.height, 1.0)
            if gap <= theta and not (e.role == "heading" and new_row):
                blocks[-1].append(e)
                continue
        blocks.append([e])
    return blocks


def block_threshold(ordered: Sequence[A11yElement], p: StructureParams = StructureParams()) -> float:
    """App. D.5: Θ = G_base · N, G_base = max(median of the lower 70 % of vertical gaps between
    neighbours, 40 px); N the first of 3, 4, 8 that does not over-segment (> 50 blocks, or
    > 10 blocks more than half of them single), else 8."""
    gaps = sorted(
        b.box.center.y - a.box.center.y
        for a, b in zip(ordered, ordered[1:], strict=False)
        if b.box.center.y - a.box.center.y > 0
    )
    lower = gaps[: max(1, math.ceil(len(gaps) * p.gap_quantile))] if gaps else []
    base = max(statistics.median(lower) if lower else 0.0, p.min_gap)
    for n in p.multipliers:
        blocks = _split(ordered, base * n, p.row_tolerance)
        singles = sum(1 for b in blocks if len(b) == 1)
        if len(blocks) > p.max_blocks or (
            len(blocks) > p.many_blocks and singles > p.max_single_frac * len(blocks)
        ):
            continue
        return base * n
    return base * p.multipliers[-1]


def assign_regions(
    elements: Sequence[A11yElement],
    viewport: tuple[int, int],
    tree: Sequence[A11yElement] = (),
    p: StructureParams = StructureParams(),
) -> dict[str, list[A11yElement]]:
    """App. D.2 for web pages: the nearest landmark names the region (``LANDMARK_REGIONS``);
    without one, an element in the top ``header_frac`` band goes to HEADER and one in the left
    ``nav_frac`` column to NAVIGATION when that band/column holds ``min_links`` links and the
    page has no landmark of that kind; the rest is CONTENT. ``tree``: all nodes (ancestors)."""
    W, H = viewport
    by_id = _by_id([*tree, *elements])
    named = {id(e): landmark_of(e, by_id) for e in elements}
    present = set(named.values())
    loose = [e for e in elements if e.role == "link" and not named[id(e)]]
    links_top = sum(1 for e in loose if e.box.center.y < p.header_frac * H)
    links_left = sum(1 for e in loose if e.box.center.x < p.nav_frac * W)
    out: dict[str, list[A11yElement]] = {}
    for e in elements:
        region = named[id(e)]
        if not region:
            c = e.box.center
            if "HEADER" not in present and links_top >= p.min_links and c.y < p.header_frac * H:
                region = "HEADER"
            elif "NAVIGATION" not in present and links_left >= p.min_links and c.x < p.nav_frac * W:
                region = "NAVIGATION"
            else:
                region = "CONTENT"
        out.setdefault(region, []).append(e)
    return out


def structure(
    modal: Sequence[A11yElement],
    background: Sequence[A11yElement],
    viewport: tuple[int, int],
    tree: Sequence[A11yElement] = (),
    params: StructureParams = StructureParams(),
) -> list[Region]:
    """Phase 3 (§3.3, Eq. 3-4): R = f_region(B'), then O = f_struct(R, M'): the MODAL region
    first (when M' is not empty), then the background regions in ``REGION_ORDER``, each in
    reading order and cut into blocks. ``tree``: every node, so landmarks dropped by phase 2
    are still found as ancestors."""
    regions: list[Region] = []
    groups: list[tuple[str, list[A11yElement]]] = []
    if modal:
        groups.append(("MODAL", list(modal)))
    by_region = assign_regions([e for e in background if e.box is not None], viewport, tree, params)
    groups += [(name, by_region[name]) for name in REGION_ORDER if name in by_region]
    for name, members in groups:
        ordered = reading_order(members, params)
        if not ordered:
            continue
        theta = block_threshold(ordered, params)
        blocks = _split(ordered, theta, params.row_tolerance)
        regions.append(Region(name, ordered, union_box(e.box for e in ordered), blocks))
    return regions


# ---------------------------------------------------------------------------------- render
def element_line(el: A11yElement, to_model: ToModel = identity_frame) -> str:
    """``[role] "name" @ (x, y)`` with the centre (JA Figure 1), plus a value or state when the
    element has one (App. C Table 3 keeps tag and name; JA §3.2 step 3 adds the value)."""
    label = el.label.replace('"', "'")
    parts = [f"[{display_role(el.role)}]", f'"{label}"']
    value = el.attributes.get("value", "")
    if value and value != el.name:
        parts.append(f'value="{normalize_space(value)[:100]}"')
    for state in ("checked", "selected", "expanded", "pressed", "disabled"):
        if el.attributes.get(state) in ("true", "mixed"):
            parts.append(state if el.attributes[state] == "true" else f"{state}=mixed")
    if el.box is not None:
        parts.append(f"@ {point_text(el.box.center, to_model)}")
    return " ".join(parts)


@dataclass
class Compressed:
    """:func:`compress`'s result. ``text``: the observation. ``modal``/``background``: the
    elements after the phases that ran. ``regions``: phase 3's regions (empty when it is off).
    ``detection``: phase 1's result (None when off). ``state``: pass it back as ``previous``
    next step (temporal modal detection and tracking)."""

    text: str
    modal: list[A11yElement]
    background: list[A11yElement]
    regions: list[Region]
    detection: ModalResult | None
    state: A11yState


@dataclass(frozen=True)
class A11yState:
    """What the next step's modal detection needs from this one."""

    elements: tuple[A11yElement, ...]
    modal: tuple[A11yElement, ...]


def compress(
    elements: Sequence[A11yElement],
    instruction: str = "",
    previous: A11yState | None = None,
    phases: Iterable[str] = PHASES,
    *,
    viewport: tuple[int, int],
    to_model: ToModel = identity_frame,
    modal_params: ModalParams = ModalParams(),
    reduce_params: ReduceParams = ReduceParams(),
    structure_params: StructureParams = StructureParams(),
) -> Compressed:
    """A11y-Compressor (§3): run the ``phases`` named (any of "modal", "reduce", "structure";
    the full pipeline by default, one alone for Table 2's ablation) and render the observation.

    ``elements``: the page's nodes in tree order, boxes in screenshot pixels; ``viewport``:
    the screenshot's (W, H); ``instruction``: the task, for C.2's keywords; ``previous``: the
    last call's ``.state`` on the same task (None on the first step); ``to_model``: screenshot
    point -> the model's (x, y). Without "reduce", lines keep the baseline's top-left and size
    (the centre form is part of phase 2); without "structure", lines keep tree order under
    ``MODAL:``/``BACKGROUND:`` headers (no headers without "modal" either).
    """
    phases = set(phases)
    unknown = phases - set(PHASES)
    if unknown:
        raise ValueError(f"unknown a11y phase(s) {sorted(unknown)}; known: {', '.join(PHASES)}")
    elements = ensure_ids(elements)
    detection = None
    modal: list[A11yElement] = []
    background = elements
    if "modal" in phases:
        detection = detect_modal(
            elements,
            viewport,
            previous.elements if previous is not None else None,
            previous.modal if previous is not None else (),
            modal_params,
        )
        modal, background = detection.modal, detection.background
    if "reduce" in phases:
        modal, background = reduce(modal, background, viewport, instruction, reduce_params)
        line: Callable[[A11yElement], str] = lambda e: element_line(e, to_model)  # noqa: E731
    else:
        modal = [e for e in modal if says_something(e)]
        background = [e for e in background if says_something(e)]
        line = lambda e: linear_line(e, to_model)  # noqa: E731
    regions: list[Region] = []
    out: list[str] = []
    if "structure" in phases:
        regions = structure(modal, background, viewport, elements, structure_params)
        for r in regions:
            out.append(f"{r.name}:")
            for i, block in enumerate(r.blocks):
                if i:
                    out.append("[BLOCK]")
                out += [line(e) for e in block]
        # elements without a box cannot be placed; listed after the regions
        rest = [e for e in [*modal, *background] if e.box is None]
        if rest:
            out.append("UNPLACED:")
            out += [line(e) for e in rest]
    elif "modal" in phases:
        if modal:
            out.append("MODAL:")
            out += [line(e) for e in modal]
            out.append("BACKGROUND:")
        out += [line(e) for e in background]
    else:
        out += [line(e) for e in background]
    if "reduce" not in phases:
        out.insert(0, LINEAR_HEADER)
    state = A11yState(tuple(elements), tuple(detection.modal if detection else ()))
    return Compressed("\n".join(out), list(modal), list(background), regions, detection, state)


OBSERVATIONS = ("screenshot", "a11y", "compressed-a11y", "screenshot+compressed-a11y")


def observation_text(
    fmt: str,
    elements: Sequence[A11yElement],
    viewport: tuple[int, int],
    instruction: str = "",
    previous: A11yState | None = None,
    phases: Iterable[str] = PHASES,
    to_model: ToModel = identity_frame,
) -> tuple[str, A11yState | None]:
    """The text part of a browsing observation ``fmt`` (one of ``OBSERVATIONS``) and the state
    to pass back as ``previous`` next step: "" for "screenshot"; the linearized tree for
    "a11y"; :func:`compress`'s text for "compressed-a11y" and "screenshot+compressed-a11y"."""
    if fmt not in OBSERVATIONS:
        raise ValueError(f"unknown observation {fmt!r}; known: {', '.join(OBSERVATIONS)}")
    if fmt == "screenshot":
        return "", previous
    if fmt == "a11y":
        return linearize(elements, to_model), previous
    c = compress(elements, instruction, previous, phases, viewport=viewport, to_model=to_model)
    return c.text, c.state


# ---------------------------------------------------------------------------------- hit testing
def elements_at(elements: Sequence[A11yElement], point: Point, tolerance: float = 0.0) -> list[A11yElement]:
    """Elements whose box (grown by ``tolerance`` px) holds ``point``, front first: later
    paint order, then the smaller box."""
    t = tolerance
    hits = [
        e
        for e in elements
        if e.box is not None
        and e.visible
        and e.box.left - t <= point.x <= e.box.right + t
        and e.box.top - t <= point.y <= e.box.bottom + t
    ]
    return sorted(hits, key=lambda e: (-e.paint_order, e.box.area))


def element_at(
    elements: Sequence[A11yElement], point: Point, *, interactive: bool = False, tolerance: float = 0.0
) -> A11yElement | None:
    """The front-most element under ``point`` (screenshot pixels), or None. ``interactive``:
    only actionable elements count."""
    for e in elements_at(elements, point, tolerance):
        if e.interactive or not interactive:
            return e
    return None


def hits_interactive(
    elements: Sequence[A11yElement],
    point: Point,
    *,
    modal: Sequence[A11yElement] = (),
    tolerance: float = 2.0,
) -> A11yElement | None:
    """The interactive element a click at ``point`` would reach, or None. While a ``modal`` is
    open the background cannot be reached (§3.1: modals block it), so only modal elements
    count then."""
    pool = modal if modal else elements
    return element_at(pool, point, interactive=True, tolerance=tolerance)


# ---------------------------------------------------------------------------------- groups
def element_groups(regions: Sequence[Region]) -> list[tuple[str, Box]]:
    """Every block of every region as (region name, union box): the element groups a
    proposer can cut views from, in observation order."""
    out = []
    for r in regions:
        for b in r.blocks:
            box = union_box(e.box for e in b if e.box is not None)
            if box is not None:
                out.append((r.name, box))
    return out
