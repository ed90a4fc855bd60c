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
from regionfocus.adapters.backends.base import Message
from regionfocus.adapters.families.answers import bare_click, coords_from_value, split_keys, typed_text
from regionfocus.adapters.families.prompting import Prompt, render
from regionfocus.adapters.families.resize import ResizeSpec
from regionfocus.adapters.families.vlm import VlmAdapter, model_extent
from regionfocus.adapters.model_text import (
    STRICT_JSON,
    bounded,
    finite_number,
    sound_action,
    stops_mid_number,
)
from regionfocus.geometry import Point
from regionfocus.model import Query

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
    """The first JSON value in ``s``: trailing junk ignored, an unterminated object closed
    unless it stops where a number may go on (``[188, 6`` is no point). None when there is none."""
    start = s.find("{")
    if start < 0:
        return None
    try:
        return STRICT_JSON.raw_decode(s, start)[0]
    except (ValueError, RecursionError):  # RecursionError: brackets nested past the stack
        pass
    if stops_mid_number(s):
        return None
    try:
        return STRICT_JSON.decode(_close_json(s[start:]))
    except (ValueError, RecursionError):
        return None


def tool_calls(text: str) -> list[dict]:
    """Every tool-call object in ``text``, in order. A ``<tool_call>`` block runs to its
    closing tag, the next opening tag or the end (closing tags go missing); with no tags at
    all, any JSON object carrying ``name``/``arguments`` or an ``action`` counts."""
    out: list[dict] = []
    text = bounded(text)
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
        flat = [finite_number(v) if isinstance(v, (int, float)) else None for v in value]
        if None in flat or len(flat) not in (2, 4):
            return None
        if len(flat) == 4:  # a box: its centre
            return Point((flat[0] + flat[2]) / 2, (flat[1] + flat[3]) / 2)
        return Point(flat[0], flat[1])
    if isinstance(value, str):
        xy = coords_from_value(value)
        return Point(*xy) if xy else None
    return None


def _number(value: Any) -> float | None:
    return finite_number(value) if isinstance(value, (int, float, str)) else None


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
        raw = args.get("pixels", args.get("amount"))
        pixels = _number(raw)
        if raw is not None and pixels is None:
            return None  # "pixels": "nan" is no amount to scroll by
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
        seconds = _number(args.get("time"))
        if args.get("time") is not None and seconds is None:
            return None  # "time": "nan" or "inf" is no time to wait
        return Action(t, amount=seconds)
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
    text = bounded(text)
    if not text.strip():
        return None
    for call in tool_calls(text):
        action = sound_action(call_to_action(call))
        if action is not None:
            return action
    if _OPEN in text:
        return None  # a malformed tool call is not a click at whatever numbers it holds
    return bare_click(text)


def _coordinate(p: Point | None, to_model) -> list[int] | None:
    if p is None:
        return None
    x, y = to_model(p)
    return [round(x), round(y)]


class QwenAdapter(VlmAdapter):
    """Shared Qwen behaviour: the official ``computer_use`` function-calling system prompt for
    grounding and live actions, plain requests for our own RegionFocus questions.

    Grounding is sent as the official ScreenSpot-Pro evaluation sends it: the system prompt in
    two text parts, the screenshot then the instruction, and the assistant turn pre-filled up
    to the ``left_click`` coordinate (``official_prefill``); the answer is the pre-fill plus the
    continuation. Live steps follow the Qwen2.5-VL mobile-agent cookbook: "The user query: ..."
    with the task progress as earlier tool calls, then the screenshot.
    """

    system_files: tuple[str, ...] = ()
    prefill_file: str | None = None
    # The paper's browser window for Qwen2.5-VL; the grounders fine-tuned from Qwen inherit it.
    viewport = (2240, 1260)
    # The tool's action names for a finished task and a task handed back to the user.
    finish_action = "terminate"

    def parse_model_action(self, text: str) -> Action | None:
        return parse_qwen(text)

    def fmt_point(self, x: float, y: float) -> str:
        return f"[{round(x)}, {round(y)}]"

    def point_format(self) -> str:
        return "[x, y]"

    def system_parts(self, width: float, height: float) -> list[dict]:
        """The official system message parts with the screen size the model sees (the extent of
        its coordinate frame: 1000x1000 for a relative family, as the Qwen3-VL cookbook passes).
        The placeholders keep each source's own names (SOURCES.md)."""
        w, h = f"{width:.0f}", f"{height:.0f}"
        return [
            {
                "type": "text",
                "text": render(
                    name, screen_width=w, screen_height=h, display_width_px=w, display_height_px=h
                ),
            }
            for name in self.system_files
        ]

    def own_messages(self, image: Image.Image, text: str) -> list[Message]:
        return [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]},
        ]

    def round_messages(self, kind: str, image: Image.Image, text: str) -> list[Message]:
        # The authors' Qwen2.5-VL code sends its focal, zoom and selection requests after the
        # computer_use system prompt of its grounding request; its judge request has none.
        messages = super().round_messages(kind, image, text)
        if kind == "judge":
            return messages
        return [
            {"role": "system", "content": self.system_parts(*model_extent(self.frame, image.size))},
            *messages,
        ]

    def task_prompt(
        self, kind: str, image: Image.Image, given: tuple[int, int], query: Query, zoomed: bool
    ) -> Prompt:
        ew, eh = model_extent(self.frame, image.size)
        system = {"role": "system", "content": self.system_parts(ew, eh)}
        note = ""
        if zoomed and self.zoom_note:
            note = render("qwen_zoom.txt", frame_note=self.frame_note(image.size)).rstrip("\n")
        shot = {"type": "image", "image": image}
        if kind == "grounding":
            user = {"role": "user", "content": [shot, {"type": "text", "text": query.instruction + note}]}
            prefill = render(self.prefill_file) if self.prefill_file else ""
            return Prompt([system, user], prefill)
        # Qwen2.5-VL cookbooks/mobile_agent.ipynb: two spaces after the colon, then
        # "Step N: <tool call JSON>; " per earlier step.
        text = f"The user query:  {query.instruction}"
        steps = self.history_lines(query, given)
        if steps:
            progress = "".join(f"Step {i}: {line}; " for i, line in enumerate(steps, start=1))
            text += (
                f"\nTask progress (You have done the following operation on the current device): {progress}"
            )
        user = {"role": "user", "content": [{"type": "text", "text": text + note}, shot]}
        return Prompt([system, user])

    def history_lines(self, query: Query, given: tuple[int, int]) -> list[str]:
        # The cookbook's task progress holds the tool calls alone.
        out = []
        for turn in query.turns:
            action = self.turn_action(turn, query, given)
            out.append(self.format_action(action, given) if action is not None else "{}")
        return out

    def format_action(self, action: Action, given: tuple[int, int]) -> str:
        """The computer_use call for ``action``, coordinates in this family's frame."""

        def coord(p: Point | None) -> list[int] | None:
            return _coordinate(p, lambda q: self.to_model(q, given))

        t = action.type
        args: dict[str, Any]
        if t == ActionType.TYPE:
            args = {"action": "type", "text": action.text + ("\n" if action.submit else "")}
        elif t == ActionType.HOTKEY:
            args = {"action": "key", "keys": list(action.keys)}
        elif t == ActionType.BACK:
            args = {"action": "key", "keys": ["alt", "left"]}
        elif t == ActionType.SCROLL:
            amount = action.amount or 10
            args = {
                "action": "scroll",
                "pixels": -amount if action.direction in ("down", "right") else amount,
            }
            if action.point is not None:
                args["coordinate"] = coord(action.point)
        elif t == ActionType.WAIT:
            args = {"action": "wait", "time": action.amount or 2}
        elif t == ActionType.FINISHED:
            args = {"action": self.finish_action, "status": "success"}
            if self.finish_action == "answer":
                args = {"action": "answer", "text": action.text}
        elif t == ActionType.CALL_USER:
            args = {"action": "terminate", "status": "failure"}
        elif t == ActionType.DRAG:
            args = {"action": "left_click_drag", "coordinate": coord(action.end_point)}
        else:
            name = {
                ActionType.CLICK: "left_click",
                ActionType.DOUBLE_CLICK: "double_click",
                ActionType.RIGHT_CLICK: "right_click",
                ActionType.MIDDLE_CLICK: "middle_click",
                ActionType.HOVER: "mouse_move",
            }[t]
            args = {"action": name, "coordinate": coord(action.point)}
        return json.dumps({"name": "computer_use", "arguments": args}, ensure_ascii=False)


class Qwen25Adapter(QwenAdapter):
    """Qwen2.5-VL (3B/7B/32B/72B): absolute pixels of the resized image. Templates from the
    official ScreenSpot-Pro evaluation; RegionFocus's focal, judge, zoom and selection requests from
    the authors' ``models/qwen25vl_RegionFocus.py`` (prompts/official/SOURCES.md)."""

    name = "qwen2.5-vl"
    checkpoint = "Qwen/Qwen2.5-VL-7B-Instruct"
    frame = "absolute"
    default_resize = ResizeSpec(28, 3136, 12845056)
    round_prompts = {
        "focal": "official/rf_official_qwen25vl_focal.txt",
        "judge": "official/rf_official_qwen25vl_judge.txt",
        "zoom": "official/rf_official_qwen25vl_zoom.txt",
        "select": "official/rf_official_qwen25vl_select.txt",
    }
    system_files = ("official/qwen25vl_screenspot_system_1.txt", "official/qwen25vl_screenspot_system_2.txt")
    prefill_file = "official/qwen25vl_screenspot_prefill.txt"


class Qwen3Adapter(QwenAdapter):
    """Qwen3-VL: relative 0-1000, factor 32 (patch 16 x merge 2). Pixel limits from its
    released preprocessor config (shortest_edge 65536, longest_edge 16777216 pixels).

    The official ScreenSpot-Pro evaluation has no Qwen3-VL file; grounding is sent the way it
    sends Qwen2.5-VL's (the default system text, then the tool declaration as a second part,
    the ``left_click`` pre-fill), with the ``computer_use`` declaration exactly as qwen-agent
    renders the Qwen3-VL cookbook's tool, and its 1000x1000 screen."""

    name = "qwen3-vl"
    checkpoint = "Qwen/Qwen3-VL-8B-Instruct"
    frame = "relative"
    default_resize = ResizeSpec(32, 65536, 16777216)
    system_files = (
        "official/qwen25vl_screenspot_system_1.txt",
        "official/qwen3vl_cookbook_computer_use_system_2.txt",
    )
    prefill_file = "official/qwen25vl_screenspot_prefill.txt"
    finish_action = "answer"
