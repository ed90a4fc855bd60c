"""The accessibility elements, their roles and geometry, the plain linearized tree (the
paper's baseline) and hit testing; the three phases build on these."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..geometry import Box, Point

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
