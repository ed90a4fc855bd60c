"""RegionFocus for a text-only agent: on a command without effect, the agent reads magnified
views as text and chooses among their commands listed in text (the screen-to-text paper's
setting, where stars on an image cannot be read)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from regionfocus.actions import Action
from regionfocus.adapters.agents import agent_prompt
from regionfocus.adapters.agents.react_agent import ReactAgent, format_command, parse_answer
from regionfocus.adapters.families.answers import parse_choice
from regionfocus.adapters.model_text import finite_number, json_objects
from regionfocus.adapters.perception.screen_text import ScreenText
from regionfocus.adapters.reasoning.coat import (
    CoatHistory,
)
from regionfocus.geometry import DEFAULT_RATIOS, Box, Point, fixed_ratio_boxes
from regionfocus.views import View, ViewSource


@dataclass
class TextFocusResult:
    """``action``: the chosen action in screenshot pixels (None: no view gave a usable
    command); ``trace``: focal point, boxes, each view's description and answer, the numbered
    candidates, the choice request's answer and how the choice was made."""

    action: Action | None
    trace: dict


VIEW_PROMPT = agent_prompt("text_view.txt")

CHOICE_PROMPT = agent_prompt("text_choose.txt")


def _tried_text(failed: Sequence[Point], view: View | None, screen: ScreenText | None) -> str:
    """The failed points as text: in a view's pixels (or "outside this view"), or in screen
    pixels with the element each landed on. This list is the text-only agent's history."""
    if not failed:
        return ""
    lines = ["Points already tried without effect (do not choose them again):"]
    for i, p in enumerate(failed, 1):
        if view is not None:
            if view.transform.box.contains(p):
                q = view.transform.screen_to_view(p)
                lines.append(f"{i}. [{round(q.x)}, {round(q.y)}]")
            else:
                lines.append(f"{i}. outside this view")
        else:
            on = screen.at(p) if screen is not None else []
            where = f" on {on[0].label}" if on else ""
            lines.append(f"{i}. [{round(p.x)}, {round(p.y)}]{where}")
    return "\n".join(lines)


def _first_number(text: str, n: int) -> int | None:
    """The option 1..n a text agent's choice names: its JSON ``"choice"``, else the answer read
    as any family's choice is (:func:`~regionfocus.adapters.families.answers.parse_choice`)."""
    for obj in json_objects(text):
        v = finite_number(obj.get("choice")) if isinstance(obj.get("choice"), (int, float, str)) else None
        if v is not None and v.is_integer() and 1 <= v <= n:
            return int(v)
    return parse_choice(text, range(1, n + 1))


async def text_region_focus(
    agent: ReactAgent,
    image: Image.Image,
    instruction: str,
    failed: Sequence[Point],
    views: ViewSource,
    *,
    screen: ScreenText | None = None,
    history: CoatHistory | None = None,
    focal: Point | None = None,
    ratios: Sequence[tuple[float, float]] = DEFAULT_RATIOS,
    target: tuple[int, int] | None = None,
    merge_radius: float = 6.0,
) -> TextFocusResult:
    """RegionFocus for the text-only agent, one round.

    ``image``: the screenshot on which the command failed; ``failed``: the points tried on it
    without effect (screenshot pixels, oldest first); ``views``: a
    :class:`regionfocus.views.ViewSource` (``StaticViews(image)`` crops and upsamples, a live
    browser's ``env.zoom`` re-renders); ``focal``: the centre of the boxes (default: the last
    failed point, as the static round 1 of the paper centres near the first guess);
    ``ratios``: box sizes as fractions of the image (the paper's fixed boxes); ``target``: the
    size a view is rendered toward (default the screenshot's size, so small text is read at up
    to the view source's max zoom); ``screen``: the description of ``image`` if already made.

    Each view is described by the same screen-to-text step, the LLM gives one command per view
    (its coordinates mapped back through the view's transform), equal candidates (within
    ``merge_radius`` px) are merged, and, when more than one remains, the LLM picks by number
    from a text list. An unreadable pick falls back to the candidate most views proposed (ties:
    the lowest number). Returns the action in screenshot pixels and a JSON-ready trace.
    """
    if focal is None and not failed:
        raise ValueError("text_region_focus needs a focal point or at least one failed point")
    history = history if history is not None else CoatHistory()
    focal = focal if focal is not None else failed[-1]
    size = image.size
    target = target or size
    boxes = fixed_ratio_boxes(focal, size, ratios)
    trace: dict = {"focal": focal.to_list(), "failed": [p.to_list() for p in failed], "views": []}

    async def one(box: Box) -> tuple[Action | None, dict]:
        view = await views.view(box, target)
        vscreen = await agent.describe(view.image)
        msgs = agent.messages(instruction, vscreen, history)
        note = VIEW_PROMPT.format(
            w=view.image.width, h=view.image.height, tried=_tried_text(failed, view, None)
        )
        msgs[-1] = {"role": "user", "content": msgs[-1]["content"] + "\n\n" + note}
        raw, usage = await agent._complete(msgs)
        parsed = parse_answer(raw, screen=vscreen, from_model=None)
        action = parsed.actions[0].map_points(view.transform.view_to_screen) if parsed.actions else None
        rec = {
            "box": box.to_list(),
            "view": view.describe(),
            "observation": vscreen.to_text(layout=agent.layout),
            "raw": raw,
            "errors": parsed.errors + ([usage.error] if usage.error else []),
            "action": action.to_dict() if action else None,
        }
        return action, rec

    results = await asyncio.gather(*(one(b) for b in boxes))
    candidates: list[tuple[Action, int]] = []
    for action, rec in results:
        trace["views"].append(rec)
        if action is None:
            continue
        for k, (a, votes) in enumerate(candidates):
            if a.same_as(action, merge_radius):
                candidates[k] = (a, votes + 1)
                break
        else:
            candidates.append((action, 1))
    trace["candidates"] = [
        {"number": i, "action": a.to_dict(), "votes": v} for i, (a, v) in enumerate(candidates, 1)
    ]
    if not candidates:
        trace["chosen_by"] = "none"
        return TextFocusResult(None, trace)
    if len(candidates) == 1:
        trace["chosen_by"] = "single candidate"
        return TextFocusResult(candidates[0][0], trace)
    if screen is None:
        screen = await agent.describe(image)
    options = []
    for i, (a, v) in enumerate(candidates, 1):
        on = screen.at(a.point) if a.point is not None else []
        where = f" on {on[0].label}" if on else ""
        options.append(f"{i}. {format_command(a)}{where} (proposed by {v} view{'s' if v > 1 else ''})")
    msgs = agent.messages(instruction, screen, history)
    note = CHOICE_PROMPT.format(tried=_tried_text(failed, None, screen), options="\n".join(options))
    msgs[-1] = {"role": "user", "content": msgs[-1]["content"] + "\n\n" + note}
    raw, usage = await agent._complete(msgs, max_tokens=64)
    trace["choice_raw"] = raw
    number = _first_number(raw, len(candidates))
    if number is None:
        # The core's rule for an unreadable choice: the candidate most views agreed on.
        number = max(range(1, len(candidates) + 1), key=lambda n: (candidates[n - 1][1], -n))
        trace["chosen_by"] = "most votes (choice unreadable)"
    else:
        trace["chosen_by"] = "model"
    trace["choice"] = number
    return TextFocusResult(candidates[number - 1][0], trace)
