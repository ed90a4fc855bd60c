"""BrowserGym action strings, read and written without running them.

BrowserGym actions are Python calls in a string (``click('a12')``, ``mouse_click(120.5, 88)``);
BrowserGym itself turns them into code and ``exec``s them in the page's context. Here they are only
read: the string is parsed by :mod:`ast` and a call is accepted only when it is exactly one call of
``mouse_click``/``mouse_dblclick``/``click`` whose arguments are plain literals
(:func:`ast.literal_eval` on each argument node, which evaluates nothing else). Anything else
(several calls, attributes, names, nested calls, operators, numbers that are not finite or fall
outside the screenshot, unknown keywords) is not read: the caller passes it on untouched.

Coordinates are screenshot pixels on both sides. BrowserGym's ``mouse_*`` actions take them so and
divide by the page's ``_bgym_scale_factor`` themselves (MiniWoB++ pages: 1.5;
browsergym/core/action/utils.py ``map_coordinates``), and the boxes in
``extra_element_properties`` are already multiplied by it (browsergym/core/observation.py
``extract_dom_extra_properties``): a ``click(bid)`` lands at its element's box centre, in the same
pixels, with no scaling here.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass

from regionfocus.actions import Action, ActionType
from regionfocus.geometry import Point

# Longer strings are not parsed: a pointer action is a few dozen characters, and ast's cost (and
# its recursion) grows with whatever an agent or a page put in the string.
MAX_READ_CHARS = 2000

# name -> (positional parameters, keyword defaults), as BrowserGym's functions declare them
# (browsergym/core/action/functions.py): mouse_click(x, y, button="left"), click(bid, button="left",
# modifiers=[]).
_SIGNATURES: dict[str, tuple[tuple[str, ...], dict[str, object]]] = {
    "mouse_click": (("x", "y", "button"), {"button": "left"}),
    "mouse_dblclick": (("x", "y", "button"), {"button": "left"}),
    "click": (("bid", "button", "modifiers"), {"button": "left", "modifiers": []}),
}
_BUTTON_TYPES = {"left": ActionType.CLICK, "right": ActionType.RIGHT_CLICK, "middle": ActionType.MIDDLE_CLICK}


@dataclass(frozen=True)
class Reading:
    """What an action string says, as far as RegionFocus needs it.

    ``action``: the pointer action in screenshot pixels (None when the string is not one we read).
    ``call``: the function's name when it was read. ``why``: why it was not read (for the trace).
    """

    action: Action | None
    call: str | None = None
    why: str | None = None


def read_action(text: object, elements: Mapping[str, Mapping] | None, size: tuple[int, int]) -> Reading:
    """Read a BrowserGym action string: a single ``mouse_click``/``mouse_dblclick``/``click(bid)``
    becomes a pointer :class:`~regionfocus.actions.Action` in screenshot pixels (``size``: the
    screenshot's (W, H); ``elements``: the observation's ``extra_element_properties``). Anything
    else is a :class:`Reading` without an action and the reason. Nothing is executed."""
    if not isinstance(text, str):
        return Reading(None, why=f"not a string ({type(text).__name__})")
    if len(text) > MAX_READ_CHARS:
        return Reading(None, why=f"longer than {MAX_READ_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return Reading(None, why="not Python")
    if (
        len(tree.body) != 1
        or not isinstance(tree.body[0], ast.Expr)
        or not isinstance(tree.body[0].value, ast.Call)
    ):
        return Reading(None, why="not a single call")
    call = tree.body[0].value
    if not isinstance(call.func, ast.Name) or call.func.id not in _SIGNATURES:
        return Reading(None, why="not a pointer action we read")
    name = call.func.id
    args = _bind(name, call)
    if args is None:
        return Reading(None, name, "arguments are not plain literals of its signature")
    kind = _BUTTON_TYPES.get(args["button"]) if isinstance(args["button"], str) else None
    if kind is None:
        return Reading(None, name, "unknown button")
    if name == "click":
        if args["modifiers"]:
            return Reading(None, name, "click with modifier keys")
        point = _element_centre(args["bid"], elements)
        if point is None:
            return Reading(None, name, "element without a box on screen")
    else:
        point = _point(args["x"], args["y"])
        if point is None:
            return Reading(None, name, "coordinates are not finite numbers")
        if name == "mouse_dblclick":
            if kind is not ActionType.CLICK:
                return Reading(None, name, "double click with another button")
            kind = ActionType.DOUBLE_CLICK
    w, h = size
    if not (0 <= point.x <= w and 0 <= point.y <= h):
        return Reading(None, name, "point outside the screenshot")
    return Reading(Action(kind, point, extras={"browsergym": name}), name)


def _bind(name: str, call: ast.Call) -> dict[str, object] | None:
    """The call's arguments by parameter name, each a literal; None when any is not."""
    params, defaults = _SIGNATURES[name]
    if len(call.args) > len(params) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    bound: dict[str, object] = dict(defaults)
    given = list(zip(params, call.args, strict=False))
    for kw in call.keywords:
        if kw.arg is None or kw.arg not in params or kw.arg in dict(given):
            return None  # **kwargs, an unknown keyword, or one given twice
        given.append((kw.arg, kw.value))
    for param, node in given:
        try:
            bound[param] = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return None
    if any(p not in bound for p in params):
        return None
    return bound


def _point(x: object, y: object) -> Point | None:
    coords = []
    for v in (x, y):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        try:
            f = float(v)
        except OverflowError:
            return None
        if not math.isfinite(f):
            return None
        coords.append(f)
    return Point(coords[0], coords[1])


def _element_centre(bid: object, elements: Mapping[str, Mapping] | None) -> Point | None:
    """The centre of element ``bid``'s box (x, y, w, h in screenshot pixels), when it has one."""
    if not isinstance(bid, str) or not elements:
        return None
    props = elements.get(bid)
    bbox = props.get("bbox") if isinstance(props, Mapping) else None
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        return None
    x, y, w, h = bbox
    corner, extent = _point(x, y), _point(w, h)
    if corner is None or extent is None or extent.x <= 0 or extent.y <= 0:
        return None
    return Point(corner.x + extent.x / 2, corner.y + extent.y / 2)


def write_action(action: Action | None) -> str | None:
    """The BrowserGym ``coord`` action string for a refined pointer action (screenshot pixels,
    one decimal), or None for an action this does not write (no point, a drag, a scroll): the
    caller keeps its agent's own."""
    if action is None or action.point is None:
        return None
    x, y = f"{action.point.x:.1f}", f"{action.point.y:.1f}"
    if action.type is ActionType.DOUBLE_CLICK:
        return f"mouse_dblclick({x}, {y})"
    if action.type is ActionType.RIGHT_CLICK:
        return f"mouse_click({x}, {y}, button='right')"
    if action.type is ActionType.MIDDLE_CLICK:
        return f"mouse_click({x}, {y}, button='middle')"
    if action.type is ActionType.HOVER:
        return f"mouse_move({x}, {y})"
    if action.type is ActionType.TYPE and action.text:
        # A round that chose a field to type into: click it, then type (repr: a quoted literal
        # that BrowserGym's parser reads back as the same string).
        return f"mouse_click({x}, {y})\nkeyboard_type({action.text!r})"
    if action.type is ActionType.CLICK:
        return f"mouse_click({x}, {y})"
    return None  # a drag or a scroll: not what a click-refining round should turn it into
