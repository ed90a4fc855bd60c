"""UI-TARS 1.0 and 1.5 (ByteDance; Qin et al., "UI-TARS: Pioneering Automated GUI Interaction
with Native Agents", 2025).

Answers look like ``Thought: ...\\nAction: click(start_box='(x,y)')`` (conventions in the
model cards and the ``ui-tars`` PyPI package). Frames: UI-TARS 1.0 (Qwen2-VL based) writes
relative coordinates, 0-1000 on each axis; UI-TARS 1.5 (Qwen2.5-VL based) writes absolute
pixels of the smart_resized image it saw (factor 28, min 100*28^2, max 16384*28^2).
The parser here is our own, a small scanner over the call syntax, never eval: the package's
``parse_action_to_structure_output`` drops truncated and flooded answers and is quadratic on
some (BENCHMARKS.md, "Library or ours"); it stays the tests' oracle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.backends.base import Message
from regionfocus.adapters.families.answers import (
    bare_click,
    coords_from_value,
    split_keys,
    typed_text,
    unescape_model_string,
)
from regionfocus.adapters.families.prompting import Prompt, render
from regionfocus.adapters.families.resize import ResizeSpec
from regionfocus.adapters.families.vlm import VlmAdapter
from regionfocus.adapters.model_text import bounded, sound_action, stops_mid_number
from regionfocus.geometry import Point
from regionfocus.model import Query

# UI-TARS action names (and the aliases its variants emit) -> our types.
_TYPES = {
    "click": ActionType.CLICK,
    "left_single": ActionType.CLICK,
    "left_click": ActionType.CLICK,
    "left_double": ActionType.DOUBLE_CLICK,
    "double_click": ActionType.DOUBLE_CLICK,
    "right_single": ActionType.RIGHT_CLICK,
    "right_click": ActionType.RIGHT_CLICK,
    "middle_click": ActionType.MIDDLE_CLICK,
    "hover": ActionType.HOVER,
    "move_to": ActionType.HOVER,
    "mouse_move": ActionType.HOVER,
    "drag": ActionType.DRAG,
    "select": ActionType.DRAG,
    "hotkey": ActionType.HOTKEY,
    "press": ActionType.HOTKEY,
    "type": ActionType.TYPE,
    "scroll": ActionType.SCROLL,
    "wait": ActionType.WAIT,
    "finished": ActionType.FINISHED,
    "call_user": ActionType.CALL_USER,
    "press_back": ActionType.BACK,
}
_POINT_KEYS = ("start_box", "point", "start_point")
_END_KEYS = ("end_box", "end_point")
_CALL = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(_TYPES, key=len, reverse=True)) + r")\s*\(")
_ACTION_MARK = re.compile(r"(?<![A-Za-z_])Action\s*:")
_KEY = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*")
_NEXT_KEY = re.compile(r"\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*=")
_NOISE = re.compile(r"\[EOS\]|<\|im_end\|>|<\|endoftext\|>")


@dataclass
class RawCall:
    """One call as written: its name and its keyword arguments as raw strings."""

    name: str
    args: dict[str, str] = field(default_factory=dict)


def _closes(s: str, j: int) -> bool:
    """Is a quote just before ``j`` a closing quote? Only when the argument list can go on
    after it (a ``)``, another ``key=``, or the end): so ``type(content='It's')`` keeps the
    apostrophe, as a human reader would."""
    k = j
    while k < len(s) and s[k] in " \t":
        k += 1
    if k >= len(s) or s[k] in ")\n":
        return True
    return bool(_NEXT_KEY.match(s, j))


def _scan_args(s: str, i: int) -> tuple[dict[str, str], int]:
    """Keyword arguments from ``s[i:]`` (just after the opening parenthesis) up to the
    closing one. Tolerates a missing closing quote or parenthesis (truncated output), but a
    value cut where a number may go on (``start_box='(188,6``) is left out: no point."""
    args: dict[str, str] = {}
    n = len(s)
    while i < n:
        while i < n and s[i] in " \t\n,":
            i += 1
        if i >= n or s[i] == ")":
            return args, i + 1
        m = _KEY.match(s, i)
        if not m:
            return args, i  # positional junk: stop here, keep what we have
        key, i = m.group(1), m.end()
        if i < n and s[i] in "'\"":
            quote, i = s[i], i + 1
            buf = []
            closed = False
            while i < n:
                c = s[i]
                if c == "\\" and i + 1 < n:
                    buf.append(s[i : i + 2])
                    i += 2
                    continue
                if c == quote and _closes(s, i + 1):
                    i += 1
                    closed = True
                    break
                buf.append(c)
                i += 1
            value = "".join(buf)
            if closed or not stops_mid_number(value):
                args[key] = value
        else:
            j = i
            depth = 0
            while j < n and not (depth == 0 and s[j] in ",)"):
                depth += s[j] in "(["
                depth -= s[j] in ")]" and depth > 0
                j += 1
            if j < n or not stops_mid_number(s[i:j]):
                args[key] = s[i:j].strip()
            i = j
    return args, i


def scan_calls(text: str) -> list[RawCall]:
    """Every known action call in ``text``, in order (UI-TARS may write several, separated
    by blank lines)."""
    calls = []
    pos = 0
    while True:
        m = _CALL.search(text, pos)
        if not m:
            return calls
        args, end = _scan_args(text, m.end())
        calls.append(RawCall(m.group(1), args))
        pos = max(end, m.end())


def _point(args: dict[str, str], keys: tuple[str, ...]) -> Point | None:
    for k in keys:
        if k in args and args[k].strip():
            xy = coords_from_value(args[k])
            return Point(*xy) if xy else None
    return None


def _direction(value: str) -> str | None:
    m = re.search(r"\b(up|down|left|right)\b", value.lower())
    return m.group(1) if m else None


def call_to_action(call: RawCall) -> Action | None:
    """One raw call -> Action with model-frame numbers, or None when it lacks what it needs
    (a click without a point, a drag without both ends, an unknown name)."""
    t = _TYPES.get(call.name)
    a = call.args
    if t is None:
        return None
    point = _point(a, _POINT_KEYS)
    if t in (
        ActionType.CLICK,
        ActionType.DOUBLE_CLICK,
        ActionType.RIGHT_CLICK,
        ActionType.MIDDLE_CLICK,
        ActionType.HOVER,
    ):
        return Action(t, point) if point else None
    if t == ActionType.DRAG:
        end = _point(a, _END_KEYS)
        return Action(t, point, end) if point and end else None
    if t == ActionType.HOTKEY:
        keys = split_keys(a.get("key") or a.get("hotkey") or a.get("keys") or "")
        return Action(t, keys=keys) if keys else None
    if t == ActionType.TYPE:
        text, submit = typed_text(unescape_model_string(a.get("content", a.get("text", ""))))
        return Action(t, point, text=text, submit=submit)
    if t == ActionType.SCROLL:
        direction = _direction(a.get("direction", ""))
        return Action(t, point, direction=direction) if direction else None
    if t == ActionType.FINISHED:
        return Action(t, text=unescape_model_string(a.get("content", a.get("answer", ""))))
    return Action(t)


def parse_uitars(text: str) -> Action | None:
    """The first action of a UI-TARS answer, points in model-frame numbers, or None.

    Reads after the last ``Action:`` marker when there is one (the thought may mention
    clicks); takes the first call that yields an action; falls back to bare coordinates
    (a click) for grounding answers such as ``(512,300)`` or ``<point>512 300</point>``.
    The thought (or reflection) goes into ``extras``.
    """
    text = bounded(text)
    if not text.strip():
        return None
    text = _NOISE.sub("", text)
    marks = list(_ACTION_MARK.finditer(text))
    body = text[marks[-1].end() :] if marks else text
    thought = ""
    m = re.search(r"(?:Thought|Action_Summary)\s*:\s*(.*?)(?=(?<![A-Za-z_])Action\s*:|\Z)", text, re.S)
    if m:
        thought = m.group(1).strip()
    for call in scan_calls(body):
        action = sound_action(call_to_action(call))
        if action is not None:
            if thought:
                action.extras["thought"] = thought
            return action
    return bare_click(body)


class UiTarsAdapter(VlmAdapter):
    """Shared UI-TARS behaviour; the versions differ in frame, resize, templates and how they
    write a point.

    Live tasks are multi-turn as UI-TARS's own agent code sends them: the instruction prompt
    first, then each earlier step as a user screenshot (the last ``history_images`` only) and
    the assistant's own answer, then the current screenshot.
    """

    default_history_images = 4  # + the current screenshot = 5 images, vLLM's --limit-mm-per-prompt
    # The authors' models/uitars_RegionFocus.py (written for UI-TARS 1.0, 72B/7B-DPO; 1.5 has no
    # text of its own there): the focal request is its grounding question again.
    round_prompts = {
        "focal": "official/rf_official_ground.txt",
        "judge": "official/rf_official_uitars_judge.txt",
        "zoom": "official/rf_official_uitars_zoom.txt",
        "select": "official/rf_official_uitars_select.txt",
    }

    def parse_model_action(self, text: str) -> Action | None:
        return parse_uitars(text)

    # How this version writes a point argument: ``role`` is "point" (click, scroll), "start" or
    # "end" (a drag's ends).
    def point_arg(self, x: int, y: int, role: str = "point") -> str:
        raise NotImplementedError

    def instruction_prompt(self, kind: str, query: Query) -> str:
        raise NotImplementedError

    image_first_grounding = False

    def format_action(self, action: Action, given: tuple[int, int]) -> str:
        def arg(p: Point | None, role: str = "point") -> str:
            if p is None:
                return ""
            x, y = self.to_model(p, given)
            return self.point_arg(round(x), round(y), role)

        t, start = action.type, arg(action.point)
        if t == ActionType.TYPE:
            content = action.text.replace("\\", "\\\\").replace("'", "\\'") + ("\\n" if action.submit else "")
            call = f"type(content='{content}')"
        elif t == ActionType.FINISHED:
            text = action.text.replace("\\", "\\\\").replace("'", "\\'")
            call = f"finished(content='{text}')" if text else "finished()"
        elif t == ActionType.DRAG:
            call = f"drag({arg(action.point, 'start')}, {arg(action.end_point, 'end')})"
        elif t == ActionType.SCROLL:
            call = f"scroll({start + ', ' if start else ''}direction='{action.direction or 'down'}')"
        elif t == ActionType.HOTKEY:
            call = f"hotkey(key='{' '.join(action.keys)}')"
        else:
            call = {
                ActionType.CLICK: f"click({start})",
                ActionType.DOUBLE_CLICK: f"left_double({start})",
                ActionType.RIGHT_CLICK: f"right_single({start})",
                ActionType.MIDDLE_CLICK: f"click({start})",
                ActionType.HOVER: f"hover({start})",
                ActionType.WAIT: "wait()",
                ActionType.BACK: "hotkey(key='alt left')",
                ActionType.CALL_USER: "call_user()",
            }[t]
        return f"Action: {call}"

    async def task_prompt_async(
        self, kind: str, image: Image.Image, given: tuple[int, int], query: Query, zoomed: bool
    ) -> Prompt:
        text = self.instruction_prompt(kind, query)
        if zoomed and self.zoom_note:
            text += render("uitars_zoom.txt", frame_note=self.frame_note(image.size)).rstrip("\n")
        current = {"type": "image", "image": image}
        if kind == "grounding":
            text_part = {"type": "text", "text": text}
            parts = [current, text_part] if self.image_first_grounding else [text_part, current]
            return Prompt([{"role": "user", "content": parts}])
        messages: list[Message] = [{"role": "user", "content": [{"type": "text", "text": text}]}]
        keep_from = len(query.turns) - self.history_images
        for i, turn in enumerate(query.turns):
            if i >= keep_from and turn.image is not None:
                shown = await self.model_image(turn.image)
                messages.append({"role": "user", "content": [{"type": "image", "image": shown}]})
            # The model's own words when the action was its own; a RegionFocus choice is
            # written as the model would have written it, in the frame of that screenshot.
            answer = turn.text
            if not answer:
                answer = self.format_action(turn.action, turn.size) if turn.action else "Action: wait()"
            messages.append({"role": "assistant", "content": answer})
        messages.append({"role": "user", "content": [current]})
        return Prompt(messages)


class UiTars10Adapter(UiTarsAdapter):
    """UI-TARS 1.0 (2B/7B/72B, SFT/DPO): relative 0-1000; Qwen2-VL processor, whose
    ``max_pixels`` in the released preprocessor config is 2700*28^2.

    Grounding: the v1 README's grounding prompt, image before text. Live tasks: the computer
    prompt with the task as the RegionFocus paper's appendix prints it for WebVoyager
    (OBJECTIVE and URL under "## Other Information"). Sources in prompts/official/SOURCES.md.
    """

    name = "uitars-1.0"
    checkpoint = "bytedance-research/UI-TARS-7B-DPO"
    frame = "relative"
    default_resize = ResizeSpec(28, 4 * 28 * 28, 2700 * 28 * 28)
    image_first_grounding = True

    def point_arg(self, x: int, y: int, role: str = "point") -> str:
        return f"{'end' if role == 'end' else 'start'}_box='<|box_start|>({x},{y})<|box_end|>'"

    def instruction_prompt(self, kind: str, query: Query) -> str:
        if kind == "grounding":
            return render("official/uitars10_grounding.txt", instruction=query.instruction)
        return render(
            "official/uitars10_webvoyager_agent.txt", objective=query.instruction, url=query.url or "(none)"
        )


class UiTars15Adapter(UiTarsAdapter):
    """UI-TARS 1.5 (7B): absolute pixels of the smart_resized image (min 100*28^2, max
    16384*28^2, the ``ui-tars`` package's constants). Prompts: ``GROUNDING_DOUBAO`` and
    ``COMPUTER_USE_DOUBAO``, imported from the ``ui-tars`` package (ByteDance's own)."""

    name = "uitars-1.5"
    checkpoint = "ByteDance-Seed/UI-TARS-1.5-7B"
    frame = "absolute"
    default_resize = ResizeSpec(28, 100 * 28 * 28, 16384 * 28 * 28)

    def point_arg(self, x: int, y: int, role: str = "point") -> str:
        # COMPUTER_USE_DOUBAO: click(point=...), drag(start_point=..., end_point=...)
        return f"{'point' if role == 'point' else role + '_point'}='<point>{x} {y}</point>'"

    def instruction_prompt(self, kind: str, query: Query) -> str:
        from ui_tars.prompt import COMPUTER_USE_DOUBAO, GROUNDING_DOUBAO

        if kind == "grounding":
            return GROUNDING_DOUBAO.format(instruction=query.instruction)
        return COMPUTER_USE_DOUBAO.format(language=self.language, instruction=query.instruction)
