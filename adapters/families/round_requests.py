"""What a RegionFocus round asks a VLM family beyond its own next action: a focal point, a
verdict on a starred point, a choice among numbered candidates, a region. Written once over the
hooks every family adapter has (``_prepare``, ``_own_vars``, ``own_messages``, ``ask``, the frame
maps and parsers of :class:`~regionfocus.adapters.families.vlm.VlmAdapter`).

The prompts are ours (``rf_*.txt``) except where a family names the authors' own text for a
request in ``round_prompts`` (tiangeluo/RegionFocus, prompts/official/SOURCES.md): that text is
sent, byte for byte, laid out by ``round_messages``, whenever the request is one the authors'
static ScreenSpot-Pro code sends (grounding mode, no history, no stars of earlier attempts to
avoid, every choice option a star)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.backends.base import Message
from regionfocus.adapters.families.answers import (
    coords_from_value,
    find_coordinates,
    parse_choice,
    parse_verdict,
)
from regionfocus.adapters.families.prompting import Prompt, given_size, render
from regionfocus.adapters.model_text import bounded, stops_mid_number
from regionfocus.geometry import Point
from regionfocus.model import Avoid, ModelReply, Option, Query
from regionfocus.stars import star_map

# A choice answered with a point picks the nearest candidate within this fraction of the image's
# long side (77 px on a 3840-px screenshot): about twice a star's reach, so a point aimed at a
# star counts and a point somewhere else does not.
CHOICE_POINT_TOLERANCE = 0.02

# A tool call as the backends render a structured one (openai_replies.choice_text), or as a
# model writes it: its body runs to the closing tag, the next opening one or the end.
_CALL = re.compile(r"<tool_call>(.*?)(?=</tool_call>|<tool_call>|\Z)", re.S)
_OPENERS = {"(": ")", "[": "]", "{": "}"}


def left_open(text: str) -> bool:
    """Whether ``text`` leaves a bracket open and stops where a number may go on (``(644, 4``,
    ``click(start_box='(644,4``): a value cut inside a number, which a reader never closes
    (``model_text.stops_mid_number``), so no fallback may read it either. Quotes are not
    counted: prose has apostrophes ("the swatch's centre: 644, 40")."""
    stack: list[str] = []
    for c in text:
        if c in _OPENERS:
            stack.append(_OPENERS[c])
        elif stack and c == stack[-1]:
            stack.pop()
    return bool(stack) and stops_mid_number(text.rstrip())


class RoundRequests:
    """The RegionFocus requests of :class:`~regionfocus.adapters.families.vlm.VlmAdapter`."""

    # request kind ("focal", "judge", "zoom", "select") -> the authors' text for it, under prompts/.
    round_prompts: dict[str, str] = {}

    def round_messages(self, kind: str, image: Image.Image, text: str) -> list[Message]:
        """An authors' request as their code lays it out: one user turn, the image first."""
        return [
            {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}
        ]

    def _official(self, kind: str, query: Query, **values: object) -> str | None:
        """The authors' text for ``kind`` filled in, or None where their code has none."""
        name = self.round_prompts.get(kind)
        if name is None or query.mode != "grounding" or query.turns:
            return None
        return render(name, instruction=query.instruction, **values)

    def _round_prompt(
        self, kind: str, image: Image.Image, official: str | None, ours: str, v: dict
    ) -> Prompt:
        """The authors' request when ``official`` (their text, filled) is given, else ours."""
        if official is not None:
            return Prompt(self.round_messages(kind, image, official))
        return Prompt(self.own_messages(image, render(ours, **v).rstrip("\n")))

    async def propose_point(
        self, image: Image.Image, query: Query, avoid: Avoid, *, temperature: float | None = None
    ) -> ModelReply:
        """A focal point in pixels of ``image``, away from ``avoid`` (stars or listed). The
        answer may be "(x, y)" (the paper's format), an action, or any bare coordinates."""
        resized, ms, v = await self._prepare(image)
        given = given_size(image)
        v = self._own_vars(query, given, v)
        v["avoid_block"] = self._avoid_block(avoid, avoid.on_image, given)
        v["point_format"] = self.point_format()
        official = None if avoid.points else self._official("focal", query)
        prompt = self._round_prompt("focal", resized, official, "rf_focal.txt", v)
        del resized
        answer, _, usage = await self.ask(prompt, temperature)
        action = self.parse_action(answer, *given)
        point = self.parse_point(answer, *given)
        return ModelReply(answer, action=action, point=point, usage=usage)

    async def locate_in_view(self, image: Image.Image, query: Query) -> ModelReply:
        """RegionFocus's candidate request on a zoomed view: the authors' zoom text where the
        family has one (static setting), else the family's own request on a view. Their answer
        is bare coordinates ("x,y"), read as a click; an answer holding just two numbers (or four:
        a box) gives them, as their ``pred_2_point`` reads it, unless a value was left open inside
        a number (:func:`left_open`), which the family's reader refuses too (a tool call cut so is
        a failed call before it gets here: ``openai_replies.choice_text``)."""
        official = self._official("zoom", query)
        if official is None:
            return await self.act(image, query, zoomed=True)
        given = given_size(image)
        answer, _, usage = await self.ask(
            Prompt(self.round_messages("zoom", await self.model_image(image), official))
        )
        action = self.parse_action(answer, *given)
        if action is None and not left_open(answer or ""):
            # The authors' pred_2_point: bare numbers, read from an answer with nothing left open.
            xy = find_coordinates(answer or "", 2) or coords_from_value(bounded(answer or ""))
            action = Action(ActionType.CLICK, self.from_model(*xy, given)) if xy else None
        return ModelReply(answer, action=action, point=action.point if action else None, usage=usage)

    def point_format(self) -> str:
        """How a point is written in our own prompts' answer formats, in this family's frame."""
        return "(x, y)"

    async def judge(self, image: Image.Image, query: Query, point: Point) -> ModelReply:
        """Is the starred ``point`` (pixels of ``image``) right? Sets ``verdict``."""
        resized, ms, v = await self._prepare(image)
        given = given_size(image)
        v = self._own_vars(query, given, v)
        v["point"] = self.fmt_point(*self.to_model(point, given))
        prompt = self._round_prompt("judge", resized, self._official("judge", query), "rf_judge.txt", v)
        del resized
        answer, _, usage = await self.ask(prompt)
        return ModelReply(answer, verdict=parse_verdict(answer), usage=usage)

    async def choose(
        self, image: Image.Image, query: Query, options: Sequence[Option], *, retry: int = 0
    ) -> ModelReply:
        """Pick an option by number; ``choice`` None when unreadable. An answer that gives a
        point instead of a number picks the candidate nearest to it, if one is close enough."""
        resized, ms, v = await self._prepare(image)
        given = given_size(image)
        v = self._own_vars(query, given, v)
        starred = [o.number for o in options if o.on_image]
        stars_note = render("rf_stars_note.txt") if starred else ""
        if any(o.action.points and not o.on_image for o in options):
            stars_note += v["frame_note"] + "\n"
        v.update(
            stars_note=stars_note,
            options_block="\n".join(self.describe_option(o, given) for o in options),
            last=str(options[-1].number) if options else "1",
        )
        # The authors' selection text numbers its stars 1..n and has no retry of its own.
        numbered = [o.number for o in options] == list(range(1, len(options) + 1))
        starred_only = numbered and len(starred) == len(options) > 1 and retry == 0
        official = self._official("select", query, n=len(options)) if starred_only else None
        ours = "rf_choose.txt" if retry == 0 else "rf_choose_retry.txt"
        prompt = self._round_prompt("select", resized, official, ours, v)
        del resized
        answer, _, usage = await self.ask(prompt)
        valid = [o.number for o in options]
        choice = parse_choice(answer, valid)
        if choice is None:
            choice = self._choice_by_point(answer, options, given)
        return ModelReply(answer, choice=choice, usage=usage)

    def _choice_by_point(self, answer: str, options: Sequence[Option], size: tuple[int, int]) -> int | None:
        """The option whose point, or whose numbered star (in a crowd's magnified inset it stands
        away from the point), is nearest to a point the answer gives, within
        ``CHOICE_POINT_TOLERANCE`` of the image's long side; None otherwise."""
        xy = find_coordinates(answer, 2) if isinstance(answer, str) else None
        pointed = [o for o in options if o.action.point is not None]
        if xy is None or not pointed:
            return None
        p = self.from_model(xy[0], xy[1], size)
        starred = [o for o in pointed if o.on_image]
        drawn = star_map(size, [o.action.point for o in starred], [str(o.number) for o in starred]).marks
        stars = {o.number: m.at for o, m in zip(starred, drawn, strict=True)}

        def distance(o: Option) -> float:
            d = o.action.point.distance(p)
            return min(d, stars[o.number].distance(p)) if o.number in stars else d

        best = min(pointed, key=distance)
        return best.number if distance(best) <= CHOICE_POINT_TOLERANCE * max(size) else None

    async def propose_box(self, image: Image.Image, query: Query, focal: Point | None) -> ModelReply:
        """A region likely to contain the target, in pixels of ``image`` (predict-region)."""
        resized, ms, v = await self._prepare(image)
        given = given_size(image)
        v = self._own_vars(query, given, v)
        near = self.fmt_point(*self.to_model(focal, given)) if focal is not None else None
        v["focal_note"] = render("rf_near.txt", point=near) if near else ""
        text = render("rf_region.txt", **v).rstrip("\n")
        answer, _, usage = await self.ask(Prompt(self.own_messages(resized, text)))
        return ModelReply(answer, box=self.parse_box(answer, *given), usage=usage)
