"""Grounding models fine-tuned from Qwen2.5-VL or Qwen3-VL: GUI-Owl 1.5, MAI-UI, UI-Venus 1.5,
Holo2 and GTA1.

Each is asked the way its own ScreenSpot-Pro evaluation (or model card) asks: one request, one
point back. They share the Qwen code (resize, frames, our RegionFocus requests, the answer
readers); what differs is data: the official prompt files (prompts/official/SOURCES.md), where
the text goes (system or user, before or after the screenshot), the frame, the resize limits and
the answer reader. A live step ("agent" kind) is asked as a grounding request for the task, as
these models are grounders first.
"""

from __future__ import annotations

import re
from typing import Any

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.families.answers import NUM
from regionfocus.adapters.families.prompting import Prompt, render
from regionfocus.adapters.families.qwen import QwenAdapter, call_to_action, parse_qwen, tool_calls
from regionfocus.adapters.families.resize import ResizeSpec
from regionfocus.adapters.model_text import bounded, finite_number, json_objects, sound_action
from regionfocus.geometry import Point
from regionfocus.model import Query


def _schema_number(value: Any) -> float | None:
    """A coordinate of Holo2's ``ClickCoordinates`` schema (an integer in 0-1000; pydantic's
    lax mode also takes a numeric string); a decimal is kept, as our readers keep them."""
    v = finite_number(value) if isinstance(value, (int, float, str)) else None
    return v if v is not None and 0 <= v <= 1000 else None


def parse_xy_json(text: str) -> Action | None:
    """Holo2's ``{"x": 552, "y": 404}`` as a click (model-frame numbers), the keys in either
    order, as the cookbook reads it: ``ClickCoordinates.model_validate_json`` (x and y in
    0-1000). An object with an ``x`` or ``y`` outside that (or missing one) is no click: the
    schema rejects it. Only whole JSON objects count, so a reply cut inside a number never
    reads. With no such object, the Qwen readers."""
    for obj in json_objects(text):
        if "x" in obj or "y" in obj:
            x, y = _schema_number(obj.get("x")), _schema_number(obj.get("y"))
            return Action(ActionType.CLICK, Point(x, y)) if x is not None and y is not None else None
    return parse_qwen(text)


_REFUSAL = re.compile(r"\s*\[\s*-1\s*,\s*-1\s*\]\s*")
# Two corner points, "[x1,y1],[x2,y2]": a box (UI-Venus' evaluation, pattern3).
_CORNERS = re.compile(rf"\[\s*({NUM})\s*,\s*({NUM})\s*\]\s*,\s*\[\s*({NUM})\s*,\s*({NUM})\s*\]")


def parse_venus(text: str) -> Action | None:
    """UI-Venus' answer as its evaluation reads it (``_parse_point``): ``[-1,-1]`` is a refusal
    ("infeasible"); a box, ``[x1,y1,x2,y2]`` or two corner points ``[x1,y1],[x2,y2]``, is its
    centre; else the Qwen readers (a point ``[x,y]``)."""
    text = bounded(text)
    if _REFUSAL.fullmatch(text):
        return Action(ActionType.FINISHED, text="infeasible")
    m = _CORNERS.search(text)
    if m:
        x1, y1, x2, y2 = (finite_number(v) for v in m.groups())
        if None not in (x1, y1, x2, y2):
            return Action(ActionType.CLICK, Point((x1 + x2) / 2, (y1 + y2) / 2))
    return parse_qwen(text)


def parse_last_call(text: str) -> Action | None:
    """GUI-Owl 1.5's answer as its evaluation reads it: the LAST coordinate of the reply (its
    regexes over every tool call, ``coordinates[-1]``). So the last tool call with a point;
    with none, the last readable call (a ``terminate``); with no call, the Qwen readers."""
    text = bounded(text)
    actions = [a for a in (sound_action(call_to_action(c)) for c in tool_calls(text)) if a is not None]
    pointed = [a for a in actions if a.point is not None]
    if pointed or actions:
        return (pointed or actions)[-1]
    return parse_qwen(text)


# MAI-UI's reasoning, which may name places it rejects before its <answer>.
_THINK = re.compile(r"<(grounding_think|think)>.*?(?:</\1>|\Z)", re.S)
_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|\Z)", re.S)


def parse_answer_block(text: str) -> Action | None:
    """MAI-UI's ``<grounding_think>...</grounding_think><answer>{"coordinate": [x,y]}</answer>``:
    the coordinate of the answer, never one the reasoning mentions (its evaluation takes the
    first ``[x,y]`` of the reply, which its format puts in the answer). Read by the Qwen readers
    inside ``<answer>``, or in what is left outside the reasoning when there is no answer tag."""
    text = bounded(text)
    m = _ANSWER.search(text)
    return parse_qwen(m.group(1) if m else _THINK.sub(" ", text))


class GrounderAdapter(QwenAdapter):
    """One grounding request as the family's evaluation sends it. Subclasses are data."""

    # The official system text ($width/$height: the pixels of the image the model sees), or None.
    system_file: str | None = None
    # The official user text ($instruction), or None: the instruction alone.
    user_file: str | None = None
    text_first = False  # the text part before the screenshot
    drop_final_period = False  # the evaluation cuts one trailing "." off the instruction
    default_sampling: dict[str, Any] = {}
    reader = staticmethod(parse_qwen)

    def __init__(self, backend=None, **options: Any):
        super().__init__(backend, **options)
        self.sampling = {**self.default_sampling, **self.sampling}

    def parse_model_action(self, text: str) -> Action | None:
        return self.reader(text)

    def task_prompt(
        self, kind: str, image: Image.Image, given: tuple[int, int], query: Query, zoomed: bool
    ) -> Prompt:
        instruction = query.instruction
        if self.drop_final_period and instruction.endswith("."):
            instruction = instruction[:-1]
        text = render(self.user_file, instruction=instruction) if self.user_file else instruction
        if zoomed and self.zoom_note:
            text += render("qwen_zoom.txt", frame_note=self.frame_note(image.size)).rstrip("\n")
        shot, words = {"type": "image", "image": image}, {"type": "text", "text": text}
        messages: list = []
        if self.system_file:
            system = render(self.system_file, width=image.width, height=image.height)
            messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
        messages.append({"role": "user", "content": [words, shot] if self.text_first else [shot, words]})
        return Prompt(messages)


class GuiOwl15Adapter(GrounderAdapter):
    """GUI-Owl 1.5 (mPLUG, Qwen3-VL based): the ``computer_use`` tool limited to left_click and
    mouse_move on a 1000x1000 screen, as a system message; screenshot, then instruction.
    Relative 0-1000; factor 32, at most 9800 tokens (9800*32^2 pixels), the processor's
    min_pixels 196*32^2."""

    name = "gui-owl-1.5"
    checkpoint = "mPLUG/GUI-Owl-1.5-8B-Instruct"
    frame = "relative"
    default_resize = ResizeSpec(32, 196 * 32 * 32, 9800 * 32 * 32)
    system_file = "official/gui_owl15_screenspot_system.txt"
    reader = staticmethod(parse_last_call)


class MaiUiAdapter(GrounderAdapter):
    """MAI-UI (Tongyi, Qwen3-VL based): the grounding system prompt ending "## Input
    instruction"; the instruction and a newline, then the screenshot. Answers
    ``<answer>{"coordinate": [x,y]}</answer>``, relative 0-1000 in the evaluation (its mobile
    agent divides by 999). Factor 32, 1024..6553600 pixels."""

    name = "mai-ui"
    checkpoint = "Tongyi-MAI/MAI-UI-8B"
    frame = "relative"
    default_resize = ResizeSpec(32, 16 * 16 * 4, 6553600)
    system_file = "official/mai_ui_screenspot_system.txt"
    user_file = "official/mai_ui_screenspot_user.txt"
    text_first = True
    reader = staticmethod(parse_answer_block)


class UiVenus15Adapter(GrounderAdapter):
    """UI-Venus 1.5 (inclusionAI, 2B/8B/30B-A3B): one user turn, screenshot then the
    center-point prompt (with its [-1,-1] refusal), the instruction's final "." removed.
    Answers ``[x,y]``, relative 0-1000. The evaluation resizes twice, and so do we: qwen-vl-utils'
    ``process_vision_info`` at its defaults (0.0.14: factor 28, 4..16384 tokens of 28^2 pixels),
    then the Qwen3-VL processor (factor 32, 65536..16777216 pixels): 3840x2160 is seen at
    3840x2144, 800x600 at 800x576."""

    name = "ui-venus-1.5"
    checkpoint = "inclusionAI/UI-Venus-1.5-8B"
    frame = "relative"
    default_resize = ResizeSpec(28, 4 * 28 * 28, 16384 * 28 * 28, then=ResizeSpec(32, 65536, 16777216))
    user_file = "official/ui_venus15_screenspot_prompt.txt"
    drop_final_period = True
    reader = staticmethod(parse_venus)


class Holo2Adapter(GrounderAdapter):
    """Holo2 (H Company, Qwen3-VL Thinking based): the cookbook's localization prompt after the
    screenshot, thinking off; answers ``{"x": .., "y": ..}``, relative 0-1000. Resized by the
    processor's own limits (Qwen3-VL's released ones: factor 32, 65536..16777216 pixels)."""

    name = "holo2"
    checkpoint = "Hcompany/Holo2-8B"
    frame = "relative"
    default_resize = ResizeSpec(32, 65536, 16777216)
    user_file = "official/holo2_cookbook_localization.txt"
    default_sampling = {"chat_template_kwargs": {"thinking": False}}
    reader = staticmethod(parse_xy_json)


class Gta1Adapter(GrounderAdapter):
    """GTA1 (Salesforce, Qwen2.5-VL based): the README's system prompt stating the resized
    image's height and width; screenshot, then instruction. Answers ``(x,y)`` in absolute
    pixels of that image; factor 28, 3136..4096*2160 pixels."""

    name = "gta1"
    checkpoint = "Salesforce/GTA1-7B"
    frame = "absolute"
    default_resize = ResizeSpec(28, 3136, 4096 * 2160)
    system_file = "official/gta1_readme_system.txt"
