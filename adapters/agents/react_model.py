"""The screen-to-text LLM agent as a :class:`regionfocus.model.GroundingModel` (agent ``screen-text``).

Wraps :class:`regionfocus.adapters.agents.react_agent.ReactAgent` (after Sasagawa and Kawahara: the screenshot becomes
text, a text-only chat model answers ReAct-style with a *list* of commands) so the browsing loop
(:func:`regionfocus.loop.run_episode`) and :class:`regionfocus.agent.RegionFocusAgent` can drive
it like any other agent.

How the protocol maps onto a model without eyes:

- ``act(screenshot, query)`` in agent mode: one answer may hold several commands; they are
  executed one per loop step, with the environment's effect check after each. When the action
  executed last (``query.turns[-1]``) is a command this model issued, it had an effect
  (outcome "changed the page"; any outcome with ``whole_answers``, the paper's way) and its
  answer has commands left, the next one is returned without a model call (its usage's
  endpoint is :data:`regionfocus.loop.NO_MODEL`: no model step). Otherwise (first step, a command without effect or with an error, the
  answer used up, or an action RegionFocus chose) the screen is described and the LLM asked
  again. The queue travels with the action it follows: each issued action (the very object,
  by identity) is remembered with the commands queued after it, so one model instance serves
  many tasks at once without per-task state.
- ``act(view, query, zoomed=True)`` (a RegionFocus candidate): the view is described by the
  same screen-to-text step at its own, higher resolution; the LLM gives one command in the
  view's pixels; the failed points of the current screen are listed in the view's pixels.
- ``propose_point``: the LLM names a point on the screen description (JSON ``{"point": [x,
  y]}``), the points to avoid listed in text with the element each landed on.
- ``choose``: the candidates as a numbered text list (command and the element under its
  point); the answer is ``{"choice": N}``. Stars cannot be read, so the CLI forces
  ``--aggregation text`` and ``--history text`` for this agent (any starred option is listed
  in text all the same).
- ``judge`` / ``propose_box``: the same, in text (a verdict; a box in screen pixels).

The history the LLM reads is rebuilt from ``query.turns`` at every request: each executed
command with its outcome (and, with CoAT, the parts its answer wrote). Coordinates: the model
reads and writes screenshot pixels (the description's boxes), so ``input_size`` is the identity.
"""

from __future__ import annotations

import re
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from PIL import Image

from regionfocus.actions import Action
from regionfocus.adapters.agents import agent_prompt
from regionfocus.adapters.agents.react_agent import (
    ReactAgent,
    exemplar_tasks,
    format_command,
    history_entry,
    parse_answer,
)
from regionfocus.adapters.backends.base import ChatBackend, Message
from regionfocus.adapters.families.answers import find_coordinates, parse_choice, parse_verdict
from regionfocus.adapters.model_text import finite_number, json_objects
from regionfocus.adapters.perception.screen_text import ScreenText
from regionfocus.adapters.perception.ui_detect import ElementDetector
from regionfocus.adapters.reasoning.coat import CoatConfig, CoatHistory, CoatParts, CoatStep
from regionfocus.geometry import Box, Point, ViewTransform
from regionfocus.loop import NO_MODEL
from regionfocus.model import Avoid, ModelReply, Option, Query, Turn, Usage, Verdict

EFFECT = "changed the page"  # regionfocus.loop.Step.outcome for an action that took effect
_MINIWOB_PAGE = re.compile(r"/miniwob/([a-z0-9-]+)\.html", re.I)

FOCAL_PROMPT = agent_prompt("text_focal.txt")
VIEW_PROMPT = agent_prompt("text_view.txt")
CHOICE_PROMPT = agent_prompt("text_choose.txt")
CHOICE_RETRY = agent_prompt("text_choose_retry.txt")
JUDGE_PROMPT = agent_prompt("text_judge.txt")
REGION_PROMPT = agent_prompt("text_region.txt")


@dataclass
class _Issued:
    """A command this model returned: the action object itself (its identity is the key), the
    command line the history shows, the CoAT parts of its answer, whether it opened its answer,
    and the commands of the same answer still queued after it."""

    action: Action
    command: str
    coat: CoatParts | None
    first: bool
    queued: list[tuple[Action, str]] = field(default_factory=list)


def failed_points_text(
    points: Sequence[Point], view: ViewTransform | None = None, screen: ScreenText | None = None
) -> str:
    """The text-only history of failed points: in a view's own pixels (or "outside this view")
    when ``view`` is given, else in screen pixels with the element each one landed on."""
    if not points:
        return ""
    lines = ["Points already tried without effect (do not choose them again):"]
    for i, p in enumerate(points, 1):
        if view is not None:
            if view.box.contains(p):
                q = view.screen_to_view(p)
                lines.append(f"{i}. [{round(q.x)}, {round(q.y)}]")
            else:
                lines.append(f"{i}. outside this view")
        else:
            on = screen.at(p) if screen is not None else []
            lines.append(f"{i}. [{round(p.x)}, {round(p.y)}]" + (f" on {on[0].label}" if on else ""))
    return "\n".join(lines)


def failed_on_screen(turns: Sequence[Turn]) -> list[Point]:
    """The points of the trailing run of turns whose action had no visible effect: the clicks
    that failed on the current screen (the first effective action ends the run)."""
    out: list[Point] = []
    for t in reversed(turns):
        if t.outcome != "no visible effect":
            break
        if t.action is not None and t.action.point is not None:
            out.insert(0, t.action.point)
    return out


def _json_field(text: str, key: str):
    return next((obj[key] for obj in json_objects(text) if key in obj), None)


def read_choice(text: str, valid: Sequence[int]) -> int | None:
    """The option a text agent's choice names: its JSON ``"choice"`` (a whole number, or its
    digits), else the answer read as any family's choice is (:func:`parse_choice`)."""
    v = finite_number(_json_field(text, "choice"))
    if v is not None and v.is_integer() and int(v) in valid:
        return int(v)
    return parse_choice(text, valid)


class ReactModel:
    """The screen-to-text ReAct agent behind the GroundingModel protocol (see the module notes).

    ``backend``: a text-only chat backend (any OpenAI-compatible endpoint). ``coat``: carry
    Chain-of-Action-Thought (the agent's own JSON "thoughts" keys); None: the paper's history of
    executed actions. ``exemplars``: "auto" shows the shipped one-shot exemplar of a MiniWoB++
    page when the query's URL names one (as the paper's §4.1 does per task), "none" never.
    ``remember``: issued commands kept to continue their answers (oldest forgotten first).
    ``whole_answers``: run every command of an answer whatever the ones before it did (the
    paper executes the whole list); default: only while each takes effect.
    """

    name = "screen-text"

    def __init__(
        self,
        backend: ChatBackend | None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        coat: CoatConfig | None = None,
        exemplars: str = "auto",
        detector: ElementDetector | None = None,
        min_conf: float = 0.3,
        layout: str = "paper",
        remember: int = 4096,
        whole_answers: bool = False,
    ):
        if backend is None:
            raise ValueError("screen-text needs a chat backend (--base-url and --model)")
        if exemplars not in ("auto", "none"):
            raise ValueError(f"screen-text exemplars must be 'auto' or 'none', got {exemplars!r}")
        self.backend = backend
        self.coat = coat
        self.exemplars = exemplars
        self.whole_answers = whole_answers
        self._opts = dict(
            coat=coat,
            detector=detector,
            min_conf=min_conf,
            max_tokens=max_tokens,
            temperature=temperature,
            layout=layout,
        )
        self._agents: dict[str | None, ReactAgent] = {}
        self._shipped = set(exemplar_tasks())
        self._issued: OrderedDict[int, _Issued] = OrderedDict()
        self._remember = int(remember)
        # Descriptions by image identity: a round asks about one screenshot several times and
        # OCR is the expensive step. Entries go with their images.
        self._screens: OrderedDict[int, tuple[weakref.ref, ScreenText]] = OrderedDict()

    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        return size

    # ------------------------------------------------------------------ plumbing
    def agent_for(self, query: Query) -> ReactAgent:
        """The ReactAgent whose one-shot exemplar fits the query's page (shared backend)."""
        task = None
        m = _MINIWOB_PAGE.search(query.url or "")
        if self.exemplars == "auto" and m and m.group(1) in self._shipped:
            task = m.group(1)
        agent = self._agents.get(task)
        if agent is None:
            agent = self._agents[task] = ReactAgent(self.backend, task=task, **self._opts)
        return agent

    async def describe(self, agent: ReactAgent, image: Image.Image) -> ScreenText:
        key = id(image)
        hit = self._screens.get(key)
        if hit is not None and hit[0]() is image:
            return hit[1]
        screen = await agent.describe(image)
        self._screens[key] = (weakref.ref(image), screen)
        while len(self._screens) > 16:
            self._screens.popitem(last=False)
        return screen

    def _lookup(self, action: Action | None) -> _Issued | None:
        entry = self._issued.get(id(action)) if action is not None else None
        return entry if entry is not None and entry.action is action else None

    def _issue(self, entry: _Issued) -> None:
        self._issued[id(entry.action)] = entry
        while len(self._issued) > self._remember:
            self._issued.popitem(last=False)

    def history(self, turns: Sequence[Turn]) -> CoatHistory:
        """The executed steps as the LLM reads them: commands it issued with its CoAT parts,
        actions RegionFocus chose as plain commands, each with its outcome."""
        h = CoatHistory()
        for t in turns:
            e = self._lookup(t.action)
            if e is None:
                h.append(CoatStep(format_command(t.action) if t.action else "(no action)", outcome=t.outcome))
                continue
            if e.coat is not None and e.first:  # its answer said what the step before it did
                h.set_last_result(e.coat.previous_action_result)
            h.append(history_entry(e.coat, e.command, t.outcome))
        return h

    async def _ask(
        self, msgs: list[Message], max_tokens: int, temperature: float | None = None
    ) -> tuple[str, Usage]:
        t0 = time.perf_counter()
        try:
            resp = await self.backend.complete(
                msgs,
                max_tokens=max_tokens,
                temperature=self._opts["temperature"] if temperature is None else temperature,
            )
        except Exception as e:  # noqa: BLE001 - recorded as the call's error, never a crash
            return "", Usage(latency_s=time.perf_counter() - t0, error=f"{type(e).__name__}: {e}")
        resp.usage.latency_s = resp.usage.latency_s or time.perf_counter() - t0
        return resp.text, resp.usage

    async def _request(
        self, image: Image.Image, query: Query, note: str, max_tokens: int, temperature: float | None = None
    ) -> tuple[str, Usage, ScreenText]:
        """The agent's usual request about ``image`` (task, history, observation) plus ``note``."""
        agent = self.agent_for(query)
        screen = await self.describe(agent, image)
        msgs = agent.messages(query.instruction, screen, self.history(query.turns))
        msgs[-1] = {"role": "user", "content": msgs[-1]["content"] + "\n\n" + note}
        raw, usage = await self._ask(msgs, max_tokens, temperature)
        return raw, usage, screen

    # ------------------------------------------------------------------ acting
    async def act(self, image: Image.Image, query: Query, *, zoomed: bool = False) -> ModelReply:
        if zoomed:
            return await self._act_view(image, query)
        last = query.turns[-1] if query.turns else None
        prev = self._lookup(last.action) if last is not None else None
        if query.mode == "agent" and prev and prev.queued and (last.outcome == EFFECT or self.whole_answers):
            (action, command), rest = prev.queued[0], prev.queued[1:]
            self._issue(_Issued(action, command, prev.coat, False, rest))
            text = f"(queued from the previous answer) {command}"
            return ModelReply(text, action=action, point=action.point, usage=Usage(endpoint=NO_MODEL))
        agent = self.agent_for(query)
        screen = await self.describe(agent, image)
        step = await agent.next_actions(image, query.instruction, self.history(query.turns), screen=screen)
        if not step.actions:
            return ModelReply(step.raw, usage=step.usage)
        pairs = list(zip(step.actions, step.commands, strict=True))
        if query.mode != "agent":  # grounding: one point, nothing queued
            pairs = [p for p in pairs if p[0].point is not None][:1] or pairs[:1]
        (action, command), rest = pairs[0], pairs[1:]
        self._issue(_Issued(action, command, step.coat, True, rest))
        return ModelReply(step.raw, action=action, point=action.point, usage=step.usage)

    async def _act_view(self, image: Image.Image, query: Query) -> ModelReply:
        failed = failed_on_screen(query.turns)
        note = VIEW_PROMPT.format(
            w=image.width, h=image.height, tried=failed_points_text(failed, query.view) if query.view else ""
        )
        raw, usage, vscreen = await self._request(image, query, note, self._opts["max_tokens"])
        parsed = parse_answer(raw, screen=vscreen)
        action = parsed.actions[0] if parsed.actions else None  # view pixels; the core maps back
        return ModelReply(raw, action=action, point=action.point if action else None, usage=usage)

    # ------------------------------------------------------------------ RegionFocus, in text
    async def propose_point(
        self, image: Image.Image, query: Query, avoid: Avoid, *, temperature: float | None = None
    ) -> ModelReply:
        # The avoid points are always listed in text: stars on the image cannot be read.
        agent = self.agent_for(query)
        screen = await self.describe(agent, image)
        note = FOCAL_PROMPT.format(tried=failed_points_text(avoid, None, screen))
        raw, usage, _ = await self._request(image, query, note, 96, temperature)
        point = None
        v = _json_field(raw, "point")
        xy = [finite_number(x) for x in v[:2]] if isinstance(v, list) and len(v) >= 2 else []
        if len(xy) == 2 and None not in xy and not any(isinstance(x, bool) for x in v[:2]):
            point = Point(xy[0], xy[1])
        action = None
        if point is None:
            parsed = parse_answer(raw, screen=screen)
            action = next((a for a in parsed.actions if a.point is not None), None)
            xy = find_coordinates(raw, 2) if action is None else None
            point = action.point if action else (Point(xy[0], xy[1]) if xy else None)
        if point is not None and not (0 <= point.x <= image.width and 0 <= point.y <= image.height):
            point = None  # off the screen: no focal point (the core falls back)
        return ModelReply(raw, action=action, point=point, usage=usage)

    async def choose(
        self, image: Image.Image, query: Query, options: Sequence[Option], *, retry: int = 0
    ) -> ModelReply:
        agent = self.agent_for(query)
        screen = await self.describe(agent, image)
        lines = []
        for o in options:  # every option in text, starred or not: stars cannot be read
            on = screen.at(o.action.point) if o.action.point is not None else []
            lines.append(f"{o.number}. {format_command(o.action)}" + (f" on {on[0].label}" if on else ""))
        tried = failed_points_text(failed_on_screen(query.turns), None, screen)
        note = CHOICE_PROMPT.format(tried=tried, options="\n".join(lines))
        if retry:
            note += "\n\n" + CHOICE_RETRY.format(last=options[-1].number if options else 1)
        raw, usage, _ = await self._request(image, query, note, 64)
        return ModelReply(raw, choice=read_choice(raw, [o.number for o in options]), usage=usage)

    async def judge(self, image: Image.Image, query: Query, point: Point) -> ModelReply:
        agent = self.agent_for(query)
        screen = await self.describe(agent, image)
        on = screen.at(point)
        note = JUDGE_PROMPT.format(
            x=round(point.x), y=round(point.y), on=f" (on {on[0].label})" if on else ""
        )
        raw, usage, _ = await self._request(image, query, note, 64)
        v = _json_field(raw, "verdict")
        if isinstance(v, str) and v.strip().lower() in ("yes", "no"):
            verdict = Verdict(v.strip().lower())
        else:
            verdict = parse_verdict(raw)
        return ModelReply(raw, verdict=verdict, usage=usage)

    async def propose_box(self, image: Image.Image, query: Query, focal: Point | None) -> ModelReply:
        near = f", around the point [{round(focal.x)}, {round(focal.y)}]" if focal is not None else ""
        raw, usage, _ = await self._request(image, query, REGION_PROMPT.format(near=near), 96)
        nums = find_coordinates(raw, 4)
        box = None
        if nums is not None:
            box = Box.from_corners(Point(nums[0], nums[1]), Point(nums[2], nums[3]))
        return ModelReply(raw, box=box, usage=usage)

    async def aclose(self) -> None:
        closer = getattr(self.backend, "aclose", None)
        if closer is not None:
            await closer()
