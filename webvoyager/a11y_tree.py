"""The accessibility tree of a live Chromium page as :class:`regionfocus.a11y.A11yElement` lists.

Source: Chrome DevTools Protocol, two calls per snapshot: ``Accessibility.getFullAXTree`` (roles,
names, values, states such as ``modal`` and ``focusable``, parent links, each node's
``backendDOMNodeId``) and ``DOMSnapshot.captureSnapshot`` (layout boxes of every rendered node,
text nodes included, computed styles and paint order), joined on the backend node id.

Why not Playwright's ``Page.aria_snapshot(boxes=True)`` (1.65): it is YAML meant for assertions,
its text runs carry no box (``- text: ...``), it drops the states phase 1 reads (``aria-modal``,
focusability), and it has no paint order or computed style, so opacity, fixed positioning and
what is in front are unknowable. The CDP pair is two round trips whatever the page size
(≈ 0.1 s on these pages) and Chromium is the only browser this project drives.

Frames: DOMSnapshot bounds are CSS pixels of the document after CSS ``zoom`` (Chromium's
standardised zoom: the MiniWoB++ pages' ``html { zoom: 1.25 }`` is already applied), so a box
is moved into the viewport by the scroll offset and scaled by ``devicePixelRatio`` into
screenshot pixels (1 in :class:`~regionfocus.webvoyager.browser.EnvConfig`'s contexts). Only the main frame
is read (iframes' trees are not merged).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from playwright.async_api import Page

from regionfocus.a11y import A11yElement, mark_appeared
from regionfocus.geometry import Box

# Roles that are controls whatever their styling.
INTERACTIVE_ROLES = frozenset(
    {
        "button", "link", "textbox", "searchbox", "combobox", "checkbox", "radio", "switch", "slider",
        "spinbutton", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "option", "treeitem",
        "listbox", "ToggleButton", "PopUpButton", "textField", "DisclosureTriangle", "ColorWell", "Date",
        "DateTime", "InputTime",
    }
)  # fmt: skip
# Nameless blocks whose text is the concatenation of their runs (a paragraph's StaticText
# children say it in pieces; the linearized tree lists both, as OSWorld's does).
TEXT_BLOCKS = frozenset(
    {"paragraph", "listitem", "cell", "gridcell", "blockquote", "caption", "term", "definition"}
)
_STATES = (
    "modal",
    "checked",
    "selected",
    "expanded",
    "pressed",
    "disabled",
    "level",
    "required",
    "invalid",
    "multiline",
)
_STYLES = ["display", "visibility", "opacity", "cursor", "position"]
_SKIP_ROLES = frozenset({"InlineTextBox", "none", "LineBreak"})
MAX_BLOCK_TEXT = 4000  # characters of a block's joined text kept (its runs stay complete)
# Each page's last snapshot (address without fragment, elements): a browsing step hands the
# agent one snapshot (Query.elements), so the temporal difference is taken here.
_LAST: WeakKeyDictionary[Page, tuple[str, list[A11yElement]]] = WeakKeyDictionary()


@dataclass
class A11ySnapshot:
    """One page's elements (tree order, boxes in screenshot pixels), the viewport (W, H) in
    screenshot pixels, the CSS-to-screenshot ``scale``, and the page's URL and title."""

    elements: list[A11yElement]
    viewport: tuple[int, int]
    scale: float
    url: str
    title: str = ""


def _value(prop: dict | None) -> str:
    if not prop:
        return ""
    v = prop.get("value")
    return "" if v is None else str(v)


async def snapshot(page: Page, *, mark_attribute: str | None = None) -> A11ySnapshot:
    """The accessibility tree of ``page``'s main frame with boxes in screenshot pixels.

    ``mark_attribute``: an HTML attribute (e.g. ``"data-a11y-modal"``) whose holders and their
    descendants get ``marked=True``: ground truth for measurements, never read by the phases.
    Nodes the accessibility tree ignores are left out; hidden-but-present ones (opacity 0, zero
    size) are kept with ``visible=False`` for phase 2 to drop. Elements new since the page's
    last snapshot at the same address carry the ``appeared`` attribute
    (:func:`regionfocus.a11y.mark_appeared`: phase 1's temporal signal).
    """
    cdp = await page.context.new_cdp_session(page)
    try:
        ax = await cdp.send("Accessibility.getFullAXTree")
        snap = await cdp.send(
            "DOMSnapshot.captureSnapshot",
            {"computedStyles": _STYLES, "includePaintOrder": True, "includeDOMRects": True},
        )
    finally:
        await cdp.detach()
    dpr, vw, vh, title = await page.evaluate(
        "() => [window.devicePixelRatio || 1, window.innerWidth, window.innerHeight, document.title]"
    )
    dpr = float(dpr)
    layout = _layout(snap, mark_attribute)
    nodes = ax.get("nodes", [])
    by_ax = {n["nodeId"]: n for n in nodes}

    def kept(n: dict) -> bool:
        return not n.get("ignored") and _value(n.get("role")) not in _SKIP_ROLES

    def kept_parent(n: dict) -> str:
        cur = by_ax.get(n.get("parentId", ""))
        while cur is not None and not kept(cur):
            cur = by_ax.get(cur.get("parentId", ""))
        return cur["nodeId"] if cur is not None else ""

    def text_of(n: dict, budget: list[int]) -> str:
        """Joined StaticText under ``n`` in tree order, up to MAX_BLOCK_TEXT characters."""
        out = []
        stack = list(reversed(n.get("childIds", [])))
        while stack and budget[0] > 0:
            c = by_ax.get(stack.pop())
            if c is None:
                continue
            if _value(c.get("role")) == "StaticText":
                t = _value(c.get("name"))
                out.append(t)
                budget[0] -= len(t)
            else:
                stack.extend(reversed(c.get("childIds", [])))
        return " ".join(" ".join(out).split())

    elements: list[A11yElement] = []
    for n in _tree_order(nodes, by_ax):
        if not kept(n):
            continue
        role = _value(n.get("role"))
        name = _value(n.get("name"))
        props = {p["name"]: _value(p.get("value")) for p in n.get("properties", [])}
        attrs = {
            k: props[k].lower() if props[k] in ("True", "False") else props[k] for k in _STATES if k in props
        }
        value = _value(n.get("value"))
        if value:
            attrs["value"] = value
        text = ""
        if role in TEXT_BLOCKS and not name:
            text = text_of(n, [MAX_BLOCK_TEXT])
        lay = layout.get(n.get("backendDOMNodeId"))
        box = None
        visible = False
        fixed = False
        pointer = False
        paint = 0
        marked = False
        if lay is not None:
            x, y, w, h = lay.bounds
            sx, sy = lay.scroll
            left, top = (x - sx) * dpr, (y - sy) * dpr
            box = Box(left, top, left + max(w, 0.0) * dpr, top + max(h, 0.0) * dpr)
            visible = lay.visible and w > 0 and h > 0
            fixed, pointer, paint, marked = lay.fixed, lay.pointer, lay.paint, lay.marked
        focusable = props.get("focusable") in ("True", "true") and role not in ("RootWebArea", "WebArea")
        interactive = role in INTERACTIVE_ROLES or focusable or (pointer and role != "RootWebArea")
        elements.append(
            A11yElement(
                role=role,
                name=name,
                text=text,
                box=box,
                interactive=interactive,
                visible=visible,
                fixed=fixed,
                node_id=str(n["nodeId"]),
                parent=kept_parent(n),
                paint_order=paint,
                attributes=attrs,
                marked=marked,
            )
        )
    viewport = (round(float(vw) * dpr), round(float(vh) * dpr))
    address, last = page.url.split("#")[0], _LAST.get(page)
    _LAST[page] = (address, elements)
    if last is not None and last[0] == address:
        elements = mark_appeared(elements, last[1], viewport)
    return A11ySnapshot(elements, viewport, dpr, page.url, str(title or ""))


def _tree_order(nodes: list[dict], by_ax: dict[str, dict]) -> list[dict]:
    """Depth-first document order from the roots (the protocol's list is not in that order)."""
    roots = [n for n in nodes if not n.get("parentId") or n["parentId"] not in by_ax]
    out: list[dict] = []
    seen: set[str] = set()
    stack = list(reversed(roots))
    while stack:
        n = stack.pop()
        if n["nodeId"] in seen:
            continue
        seen.add(n["nodeId"])
        out.append(n)
        stack.extend(by_ax[c] for c in reversed(n.get("childIds", [])) if c in by_ax)
    return out


@dataclass(frozen=True)
class _Layout:
    bounds: tuple[float, float, float, float]  # x, y, w, h in document CSS px
    scroll: tuple[float, float]
    visible: bool
    fixed: bool
    pointer: bool
    paint: int
    marked: bool


def _layout(snap: dict, mark_attribute: str | None) -> dict[int, _Layout]:
    """backendNodeId -> layout facts of the main document (documents[0])."""
    docs = snap.get("documents", [])
    if not docs:
        return {}
    strings: Sequence[str] = snap.get("strings", [])
    doc = docs[0]
    dn, lay = doc["nodes"], doc["layout"]
    parent_of = dn.get("parentIndex", [])
    backend = dn.get("backendNodeId", [])
    scroll = (float(doc.get("scrollOffsetX", 0)), float(doc.get("scrollOffsetY", 0)))
    n_nodes = len(backend)
    style_of: dict[int, list[str]] = {}
    bounds_of: dict[int, list[float]] = {}
    paint_of: dict[int, int] = {}
    paints = lay.get("paintOrders", [])
    for li, ni in enumerate(lay["nodeIndex"]):
        st = [strings[s] if s >= 0 else "" for s in lay["styles"][li]]
        style_of[ni] = st + [""] * (len(_STYLES) - len(st))  # the document node has none
        bounds_of[ni] = lay["bounds"][li]
        paint_of[ni] = paints[li] if li < len(paints) else 0

    # Marks and fixed positioning come down from ancestors: one pass in document order
    # (a DOM snapshot lists parents before children).
    marked = [False] * n_nodes
    fixed = [False] * n_nodes
    clear = [False] * n_nodes  # opacity 0 here or above
    mark_id = strings.index(mark_attribute) if mark_attribute and mark_attribute in strings else -1
    attrs = dn.get("attributes", [])
    for i in range(n_nodes):
        p = parent_of[i] if i < len(parent_of) else -1
        if p >= 0:
            marked[i], fixed[i], clear[i] = marked[p], fixed[p], clear[p]
        if mark_id >= 0 and i < len(attrs) and mark_id in attrs[i][0::2]:
            marked[i] = True
        st = style_of.get(i)
        if st and st[4] in ("fixed", "sticky"):
            fixed[i] = True
        if st:
            try:
                clear[i] = clear[i] or float(st[2] or 1) <= 0.01
            except ValueError:
                pass
    out: dict[int, _Layout] = {}
    for ni, b in bounds_of.items():
        st = style_of[ni]
        display, visibility, cursor = st[0], st[1], st[3]
        visible = display != "none" and visibility not in ("hidden", "collapse") and not clear[ni]
        out[backend[ni]] = _Layout(
            (float(b[0]), float(b[1]), float(b[2]), float(b[3])),
            scroll,
            visible,
            fixed[ni],
            cursor == "pointer",
            int(paint_of.get(ni, 0)),
            marked[ni],
        )
    return out
