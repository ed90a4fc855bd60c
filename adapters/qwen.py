"""Qwen2.5-VL and Qwen3-VL (Alibaba Qwen team) through their ``computer_use`` tool.

Convention (the Qwen2.5-VL / Qwen3-VL computer-use cookbooks): a function-calling system
prompt declares a ``computer_use`` tool whose description states the screen size the model
sees; answers are ``<tool_call>{"name": "computer_use", "arguments": {"action":
"left_click", "coordinate": [x, y]}}</tool_call>``. Frames: Qwen2.5-VL writes absolute
pixels of the smart_resized image (factor 28, min 3136, max 12845056 by default); Qwen3-VL
writes relative coordinates, 0-1000 (factor 32), and its tool states a 1000x1000 screen.
"""

from __future__ import annotations

import json
import re
from typing import Any

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.geometry import Point

from .backend import Message
from .resize import ResizeSpec
from .vlm import (
    VlmAdapter,
    bare_click,
    coords_from_value,
    load_prompt,
    render,
    split_keys,
    typed_text,
)

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"

_TYPES = {
    "left_click": ActionType.CLICK,
    "click": ActionType.CLICK,
    "triple_click": ActionType.CLICK,
    "right_click": ActionType.RIGHT_CLICK,
    "middle_click": ActionType.MIDDLE_CLICK,
    "double_click": ActionType.DOUBLE_CLICK,
    "mouse_move": ActionType.HOVER,
    "left_click_drag": ActionType.DRAG,
    "key": ActionType.HOTKEY,
    "type": ActionType.TYPE,
    "scroll": ActionType.SCROLL,
    "hscroll": ActionType.SCROLL,
    "wait": ActionType.WAIT,
    "terminate": ActionType.FINISHED,
    "answer": ActionType.FINISHED,
}


# ------------------------------------------------------------------ lenient JSON
def _close_json(s: str) -> str:
    """``s`` (a JSON prefix) with its open strings, arrays and objects closed."""
    stack: list[str] = []
    in_str = esc = False
    for c in s:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "{[":
            stack.append("}" if c == "{" else "]")
        elif c in "}]" and stack:
            stack.pop()
    tail = ('"' if in_str else "") + "".join(reversed(stack))
    return s.rstrip().rstrip(",") + tail if not in_str else s + tail


def loads_lenient(s: str) -> Any:
    """The first JSON value in ``s``: trailing junk ignored, an unterminated object closed.
    None when there is none."""
    start = s.find("{")
    if start < 0:
        return None
    dec = json.JSONDecoder()
    try:
        return dec.raw_decode(s, start)[0]
    except ValueError:
        pass
    try:
        return json.loads(_close_json(s[start:]))
    except ValueError:
        return None


def tool_calls(text: str) -> list[dict]:
    """Every tool-call object in ``text``, in order. A ``<tool_call>`` block runs to its
    closing tag, the next opening tag or the end (closing tags go missing); with no tags at
    all, any JSON object carrying ``name``/``arguments`` or an ``action`` counts."""
    out: list[dict] = []
    if _OPEN in text:
        parts = text.split(_OPEN)[1:]
        for part in parts:
            obj = loads_lenient(part.split(_CLOSE)[0])
            if isinstance(obj, dict):
                out.append(obj)
        return out
    for i, m in enumerate(re.finditer(r"\{", text)):
        if i >= 32:  # each attempt is linear in the text: bound the work on brace-heavy junk
            break
        obj = loads_lenient(text[m.start() :])
        if isinstance(obj, dict) and ("arguments" in obj or "action" in obj):
            out.append(obj)
            break
    return out


def _arguments(call: dict) -> dict | None:
    args = call.get("arguments", call if "action" in call else None)
    if isinstance(args, str):  # double-encoded arguments
        args = loads_lenient(args)
    if not isinstance(args, dict):
        return None
    if "action" not in args and isinstance(call.get("name"), str) and call["name"] in _TYPES:
        args = {"action": call["name"], **args}  # {"name": "left_click", "arguments": {...}}
    return args


def _coord(value: Any) -> Point | None:
    if isinstance(value, (list, tuple)):
        flat = [v for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(flat) == len(value) and len(flat) in (2, 4):
            value = ",".join(str(v) for v in flat)
        else:
            return None
    if isinstance(value, str):
        xy = coords_from_value(value)
        return Point(*xy) if xy else None
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def call_to_action(call: dict) -> Action | None:
    """One computer_use call -> Action with model-frame numbers, or None."""
    args = _arguments(call)
    if args is None:
        return None
    name = args.get("action")
    t = _TYPES.get(name) if isinstance(name, str) else None
    if t is None:
        return None
    point = _coord(args.get("coordinate"))
    extras: dict[str, Any] = {}
    if t in (ActionType.CLICK, ActionType.DOUBLE_CLICK, ActionType.RIGHT_CLICK, ActionType.MIDDLE_CLICK):
        if name == "triple_click":
            extras["clicks"] = 3
        return Action(t, point, extras=extras) if point else None
    if t == ActionType.HOVER:
        return Action(t, point) if point else None
    if t == ActionType.DRAG:
        # Qwen2.5-VL drags from the cursor's current position to ``coordinate``; some
        # variants also give ``start_coordinate``.
        start = _coord(args.get("start_coordinate"))
        if point is None:
            return None
        return Action(t, start, point, extras={} if start else {"from_cursor": True})
    if t == ActionType.HOTKEY:
        keys = split_keys(args.get("keys", args.get("key", args.get("text", ""))))
        return Action(t, keys=keys) if keys else None
    if t == ActionType.TYPE:
        text = args.get("text", "")
        if not isinstance(text, str):
            return None
        text, submit = typed_text(text)
        return Action(t, point, text=text, submit=submit)
    if t == ActionType.SCROLL:
        pixels = _number(args.get("pixels", args.get("amount")))
        direction = args.get("direction") if isinstance(args.get("direction"), str) else None
        if direction:
            direction = direction.lower().strip()
        elif pixels is not None and pixels != 0:
            # Qwen's tool: positive pixels scroll up (hscroll: right), negative down (left).
            if name == "hscroll":
                direction = "right" if pixels > 0 else "left"
            else:
                direction = "up" if pixels > 0 else "down"
        if direction not in ("up", "down", "left", "right"):
            return None
        return Action(t, point, direction=direction, amount=abs(pixels) if pixels else None)
    if t == ActionType.WAIT:
        return Action(t, amount=_number(args.get("time")))
    if t == ActionType.FINISHED:
        if name == "answer":
            text = args.get("text", "")
            return Action(t, text=text if isinstance(text, str) else json.dumps(text))
        status = args.get("status", "")
        return Action(t, extras={"status": status} if isinstance(status, str) else {})
    return None


def parse_qwen(text: str) -> Action | None:
    """The first usable tool call of a Qwen answer (model-frame numbers), else the first bare
    coordinates as a click (grounding answers such as ``{"bbox_2d": [...]}``), else None."""
    if not isinstance(text, str) or not text.strip():
        return None
    for call in tool_calls(text):
        action = call_to_action(call)
        if action is not None:
            return action
    if _OPEN in text:
        return None  # a malformed tool call is not a click at whatever numbers it holds
    return bare_click(text)


def computer_use_tool(width: int, height: int, relative: bool) -> dict:
    """The ``computer_use`` function declaration; ``width``/``height`` is the screen the
    model sees (the resized image, or 1000x1000 for a relative frame)."""
    actions = [
        "key",
        "type",
        "mouse_move",
        "left_click",
        "left_click_drag",
        "right_click",
        "middle_click",
        "double_click",
        "scroll",
        "wait",
        "terminate",
    ]
    if relative:
        actions[-1:-1] = ["triple_click", "hscroll", "answer"]
    action_doc = (
        "The action to perform. key: press the keys in order, then release them in reverse "
        "order. type: type a string of text. mouse_move: move the cursor to a coordinate. "
        "left_click / right_click / middle_click / double_click: click at a coordinate. "
        "left_click_drag: press the left button, drag to a coordinate, release. scroll: turn "
        "the mouse wheel. wait: wait some seconds for a change. terminate: end the task and "
        "report whether it succeeded."
    )
    if relative:
        action_doc += " triple_click: triple-click at a coordinate. hscroll: scroll horizontally. answer: give the answer to the task."
    return {
        "type": "function",
        "function": {
            "name": "computer_use",
            "description": render("qwen_computer_use.txt", width=width, height=height).strip(),
            "parameters": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": actions, "description": action_doc},
                    "keys": {"type": "array", "description": "Keys for action=key."},
                    "text": {"type": "string", "description": "Text for action=type (and answer)."},
                    "coordinate": {
                        "type": "array",
                        "description": "(x, y): pixels from the left edge and from the top edge.",
                    },
                    "pixels": {
                        "type": "number",
                        "description": "Scroll amount: positive scrolls up (hscroll: right), negative down (left).",
                    },
                    "time": {"type": "number", "description": "Seconds for action=wait."},
                    "status": {
                        "type": "string",
                        "enum": ["success", "failure"],
                        "description": "Task status for action=terminate.",
                    },
                },
                "required": ["action"],
            },
        },
    }


class QwenAdapter(VlmAdapter):
    """Shared Qwen behaviour: tool-call prompts for actions, plain prompts for the rest."""

    def parse_model_action(self, text: str) -> Action | None:
        return parse_qwen(text)

    def fmt_point(self, x: float, y: float) -> str:
        return f"[{round(x)}, {round(y)}]"

    def _zoom_note(self, v: dict[str, str]) -> str:
        return render("qwen_zoom.txt", **v).rstrip("\n")

    def _messages(self, kind: str, image: Image.Image, v: dict[str, str]) -> list[Message]:
        if kind in ("grounding", "agent", "focal"):
            tool = computer_use_tool(int(v["width"]), int(v["height"]), self.frame == "relative")
            system = load_prompt("qwen_system.txt").substitute(tools=json.dumps(tool, ensure_ascii=False))
        else:
            system = "You are a helpful assistant."
        text = render(f"qwen_{kind}.txt", **v).rstrip("\n")
        return [
            {"role": "system", "content": system.rstrip("\n")},
            {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]},
        ]


class Qwen25Adapter(QwenAdapter):
    """Qwen2.5-VL (3B/7B/32B/72B): absolute pixels of the resized image."""

    name = "qwen2.5-vl"
    frame = "absolute"
    default_resize = ResizeSpec(28, 3136, 12845056)


class Qwen3Adapter(QwenAdapter):
    """Qwen3-VL: relative 0-1000, factor 32 (patch 16 x merge 2). Pixel limits from its
    released preprocessor config (shortest_edge 65536, longest_edge 16777216 pixels)."""

    name = "qwen3-vl"
    frame = "relative"
    default_resize = ResizeSpec(32, 65536, 16777216)
