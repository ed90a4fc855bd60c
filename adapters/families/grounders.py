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
from regionfocus.adapters.families.qwen import QwenAdapter, parse_qwen
from regionfocus.adapters.families.resize import ResizeSpec
from regionfocus.adapters.model_text import bounded, finite_number
from regionfocus.geometry import Point
from regionfocus.model import Query

# The y must be followed by something other than more of a number: "y": 40 at the end of a
# cut reply may have been 404.
_XY_JSON = re.compile(rf"\"x\"\s*:\s*({NUM})\s*,\s*\"y\"\s*:\s*({NUM})(?![\d.eE]|\Z)")


def parse_xy_json(text: str) -> Action | None:
    """Holo2's ``{"x": 552, "y": 404}`` as a click (model-frame numbers), else the Qwen readers."""
    m = _XY_JSON.search(bounded(text))
    if m:
        x, y = finite_number(m.group(1)), finite_number(m.group(2))
        if x is not None and y is not None:
            return Action(ActionType.CLICK, Point(x, y))
    return parse_qwen(text)


_REFUSAL = re.compile(r"\s*\[\s*-1\s*,\s*-1\s*\]\s*")


def parse_venus(text: str) -> Action | None:
    """UI-Venus' ``[-1,-1]`` ("infeasible") as a refusal, as its evaluation reads it; else the
    Qwen readers."""
    if _REFUSAL.fullmatch(bounded(text)):
        return Action(ActionType.FINISHED, text="infeasible")
    return parse_qwen(text)


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


class UiVenus15Adapter(GrounderAdapter):
    """UI-Venus 1.5 (inclusionAI, 2B/8B/30B-A3B): one user turn, screenshot then the
    center-point prompt (with its [-1,-1] refusal), the instruction's final "." removed.
    Answers ``[x,y]``, relative 0-1000. The evaluation resizes twice (qwen_vl_utils' defaults,
    factor 28 up to 16384*28^2 pixels, then the Qwen3-VL processor at factor 32); here once, at
    factor 32 within the first pass's limit."""

    name = "ui-venus-1.5"
    checkpoint = "inclusionAI/UI-Venus-1.5-8B"
    frame = "relative"
    default_resize = ResizeSpec(32, 65536, 16384 * 28 * 28)
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
