"""The hosted providers' computer-use calls as Actions, each in its tool's frame (the family maps
the points to the screenshot): the calls come from the provider's API as data
(:class:`~regionfocus.adapters.backends.base.ToolCall`), never from the reply's text. A call that
is no action on the screen (a screenshot, a zoom, the cursor position) is None.

:class:`Answer` carries a reply's calls beside its text from the backend to the reader.
"""

from __future__ import annotations

import json
from typing import Any

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.backends.base import ToolCall
from regionfocus.adapters.families.answers import split_keys, typed_text
from regionfocus.adapters.model_text import finite_number
from regionfocus.geometry import Point


class Answer(str):
    """A hosted reply's text with the tool calls the provider returned as data. The text is what
    the record shows (prose, then each call rendered after it); the reader takes calls from
    ``tool_calls`` only, so a tag the model wrote in its prose, or echoed from an instruction,
    is text and never a call."""

    tool_calls: tuple[ToolCall, ...] = ()

    def __new__(cls, text: str, tool_calls: list[ToolCall] | tuple[ToolCall, ...] = ()) -> Answer:
        shown = text
        for call in tool_calls:
            shown += (
                "\n" if shown else ""
            ) + f"[tool call {call.name}: {json.dumps(call.args, ensure_ascii=False)}]"
        out = super().__new__(cls, shown)
        out.tool_calls = tuple(tool_calls)
        out.prose = text
        return out


def tool_calls(answer: str) -> tuple[ToolCall, ...]:
    """The provider's tool calls behind ``answer`` (none for plain text)."""
    return getattr(answer, "tool_calls", ())


def xy_pair(value: Any) -> Point | None:
    """A [x, y] list as a Point, if both are finite numbers."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        x, y = (finite_number(v) if isinstance(v, (int, float)) else None for v in value)
        if x is not None and y is not None:
            return Point(x, y)
    return None


def _num(args: dict[str, Any], key: str) -> float | None:
    v = args.get(key)
    return finite_number(v) if isinstance(v, (int, float)) else None


def _named_xy(args: dict[str, Any], kx: str = "x", ky: str = "y") -> Point | None:
    x, y = _num(args, kx), _num(args, ky)
    return Point(x, y) if x is not None and y is not None else None


_CLICKS = {
    "left_click": (ActionType.CLICK, 1),
    "click": (ActionType.CLICK, 1),
    "click_at": (ActionType.CLICK, 1),
    "double_click": (ActionType.DOUBLE_CLICK, 2),
    "triple_click": (ActionType.CLICK, 3),
    "right_click": (ActionType.RIGHT_CLICK, 1),
    "middle_click": (ActionType.MIDDLE_CLICK, 1),
    "mouse_move": (ActionType.HOVER, 0),
    "move": (ActionType.HOVER, 0),
    "hover_at": (ActionType.HOVER, 0),
}


def claude_action(call: ToolCall) -> Action | None:
    """Claude's ``computer`` tool call (its action named in the input) or a toolset member (the
    member's name is the action), points in the declared display."""
    # The single computer tool names its action in the input; a toolset member is the name.
    args = call.args
    name = args.get("action") if call.name == "computer" else call.name
    if not isinstance(name, str):
        return None
    point = xy_pair(args.get("coordinate"))
    if name in _CLICKS:
        t, clicks = _CLICKS[name]
        if point is None:
            return None
        return Action(t, point, extras={"clicks": 3} if clicks == 3 else {})
    if name == "left_click_drag":
        start = xy_pair(args.get("start_coordinate"))
        return Action(ActionType.DRAG, start, point) if point is not None and start is not None else None
    if name == "type" and isinstance(args.get("text"), str):
        text, submit = typed_text(args["text"])
        return Action(ActionType.TYPE, text=text, submit=submit)
    if name == "key":
        keys = split_keys(args.get("text", ""))
        return Action(ActionType.HOTKEY, keys=keys) if keys else None
    if name == "scroll":
        direction = args.get("scroll_direction")
        if direction not in ("up", "down", "left", "right"):
            return None
        return Action(ActionType.SCROLL, point, direction=direction, amount=_num(args, "scroll_amount"))
    if name == "wait":
        return Action(ActionType.WAIT, amount=_num(args, "duration"))
    return None  # screenshot, zoom, cursor_position: no action on the screen


def openai_action(call: ToolCall) -> Action | None:
    """One ``computer_call`` action, points in pixels of the screenshot as seen."""
    args = call.args
    kind = args.get("type")
    point = _named_xy(args)
    if kind == "click":
        button = args.get("button", "left")
        t = {
            "left": ActionType.CLICK,
            "right": ActionType.RIGHT_CLICK,
            "wheel": ActionType.MIDDLE_CLICK,
        }.get(button)
        return Action(t, point) if t is not None and point is not None else None
    if kind in ("double_click", "move"):
        t = ActionType.DOUBLE_CLICK if kind == "double_click" else ActionType.HOVER
        return Action(t, point) if point is not None else None
    if kind == "drag":
        path = [
            p for p in (_named_xy(q) for q in args.get("path", []) if isinstance(q, dict)) if p is not None
        ]
        return Action(ActionType.DRAG, path[0], path[-1]) if len(path) >= 2 else None
    if kind == "type" and isinstance(args.get("text"), str):
        text, submit = typed_text(args["text"])
        return Action(ActionType.TYPE, text=text, submit=submit)
    if kind == "keypress":
        keys = split_keys(args.get("keys", []))
        return Action(ActionType.HOTKEY, keys=keys) if keys else None
    if kind == "scroll":
        sx, sy = _num(args, "scroll_x") or 0.0, _num(args, "scroll_y") or 0.0
        if sx == 0 and sy == 0:
            return None
        direction = ("down" if sy > 0 else "up") if abs(sy) >= abs(sx) else ("right" if sx > 0 else "left")
        return Action(ActionType.SCROLL, point, direction=direction, amount=max(abs(sx), abs(sy)))
    if kind == "wait":
        return Action(ActionType.WAIT)
    return None


def gemini_action(call: ToolCall) -> Action | None:
    """A Computer Use function call, x and y on the 1000 grid."""
    args, name = call.args, call.name
    point = _named_xy(args)
    if name in _CLICKS:
        t, clicks = _CLICKS[name]
        if point is None:
            return None
        return Action(t, point, extras={"clicks": 3} if clicks == 3 else {})
    if name in ("type_text_at", "type") and isinstance(args.get("text"), str):
        text, submit = typed_text(args["text"])
        return Action(ActionType.TYPE, point, text=text, submit=submit or bool(args.get("press_enter")))
    if name == "drag_and_drop":
        end = _named_xy(args, "destination_x", "destination_y")
        return Action(ActionType.DRAG, point, end) if point is not None and end is not None else None
    if name in ("key_combination", "hotkey", "press_key"):
        keys = split_keys(args.get("keys", args.get("key", "")))
        return Action(ActionType.HOTKEY, keys=keys) if keys else None
    if name in ("scroll_at", "scroll", "scroll_document"):
        direction = args.get("direction")
        if direction not in ("up", "down", "left", "right"):
            return None
        return Action(ActionType.SCROLL, point, direction=direction, amount=_num(args, "magnitude"))
    if name in ("wait", "wait_5_seconds"):
        return Action(ActionType.WAIT, amount=5.0 if name == "wait_5_seconds" else _num(args, "seconds"))
    if name == "go_back":
        return Action(ActionType.BACK)
    return None
