"""Chain-of-Action-Thought around any VLM agent: a GroundingModel that wraps another.

After Zhang et al., "Android in the Zoo: Chain-of-Action-Thought for GUI Agents" (§2.1;
repository IMNearth/CoAT, commit bddd262); the parts and their prompts are
:mod:`regionfocus.adapters.reasoning.coat`'s. The wrapped adapter keeps its own prompt, frame and parser; this wrapper
only changes what the agent's own step (``act`` in agent mode, not zoomed) is told and how its
answer is read:

- the request: the task's instruction is followed by the CoAT chain so far
  (:func:`~regionfocus.adapters.reasoning.coat.coat_context`: each earlier step's action, its next-action
  description and the result the following answer gave it, and the environment's outcome),
  the previous step in full (its screen description and think too: the previous-action-result
  part compares the screen before the action with the one now shown) and the CoAT instructions (:func:`~regionfocus.adapters.reasoning.coat.coat_instructions`, labelled lines
  before the action the family writes as usual);
- the answer: :func:`~regionfocus.adapters.reasoning.coat.parse_coat` separates the labelled parts from the rest,
  and the wrapped adapter's own parser (``parse_action(text, W, H)``, when it has one) reads
  the action from the rest (the whole answer only when the rest holds none), so words in a part
  are not taken for an action;
- the history: the reply's text stays whole, so the loop's ``Turn.text`` carries the four
  parts to the next step; there the wrapper reads them back from each turn (a step chosen by
  RegionFocus has no text, only its action) and hands the wrapped adapter turns whose text is
  the answer without its parts, so a family that replays its own answers (UI-TARS) sees its
  usual format and the chain lives in one place.

RegionFocus's requests (views, focal point, judge, choice, region) go to the wrapped adapter
as they are, with the parts stripped from the turns: a view must be answered by one action in
the family's format, which CoAT's extra lines would only lengthen (a documented choice).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from PIL import Image

from regionfocus.actions import Action
from regionfocus.adapters.reasoning.coat import (
    CoatConfig,
    CoatHistory,
    CoatStep,
    coat_context,
    coat_instructions,
    parse_coat,
)
from regionfocus.geometry import Point
from regionfocus.model import Avoid, GroundingModel, ModelReply, Option, Query, Turn


class CoatModel:
    """``inner``: the wrapped GroundingModel (a VLM family adapter); ``config``: which CoAT parts
    are written and carried (all four by default; :meth:`CoatConfig.parse` reads
    ``sd,par,at,ad``). Everything else (``backend``, ``annotate``, ``image_tokens``, ...) is the
    wrapped adapter's."""

    def __init__(self, inner: GroundingModel, config: CoatConfig | None = None):
        if inner is None:
            raise ValueError("CoatModel needs a model to wrap")
        self.inner = inner
        self.config = config or CoatConfig()
        self.name = f"{getattr(inner, 'name', type(inner).__name__)}+coat"

    def __getattr__(self, attr: str) -> Any:
        # Only called for attributes this wrapper lacks: optional model features pass through.
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        return self.inner.input_size(size)

    # ------------------------------------------------------------------ the chain
    def _action_text(self, turn: Turn) -> str:
        if turn.action is None:
            return "(no action)"
        fmt = getattr(self.inner, "format_action", None)
        if fmt is not None:
            try:  # the family's own syntax, in the frame of that turn's screenshot
                return fmt(turn.action, turn.size)
            except Exception:  # noqa: BLE001 - an action the family cannot write: plain words
                pass
        return turn.action.describe()

    def history(self, turns: Sequence[Turn]) -> CoatHistory:
        """The CoAT chain read back from the turns' texts (oldest first)."""
        h = CoatHistory()
        for t in turns:
            parts = parse_coat(t.text) if t.text else None
            if parts is not None:  # this answer reports on the step before it
                h.set_last_result(parts.previous_action_result)
                s = parts.step(self._action_text(t))
                h.append(replace(s, outcome=t.outcome))
            else:
                h.append(CoatStep(self._action_text(t), outcome=t.outcome))
        return h

    @staticmethod
    def stripped(query: Query) -> Query:
        """``query`` with the CoAT parts removed from every turn's text."""
        turns = tuple(replace(t, text=parse_coat(t.text).rest) if t.text else t for t in query.turns)
        return replace(query, turns=turns)

    def last_step(self, history: CoatHistory) -> str:
        """The previous step with every enabled part it wrote: its screen description is what
        the previous-action-result part compares the current screen against (the model sees
        only the current one), its think the plan it was following."""
        if not history.steps:
            return ""
        s, cfg = history.steps[-1], self.config
        lines = []
        if cfg.screen_description and s.screen_description:
            lines.append(f"Screen description: {s.screen_description}")
        if cfg.action_think and s.action_think:
            lines.append(f"Action think: {s.action_think}")
        if cfg.next_action_description and s.action_description:
            lines.append(f"Next action description: {s.action_description}")
        if not lines:
            return ""
        done = f"Action: {s.action}" + (f" ({s.outcome})" if s.outcome else "")
        return "\n".join(["The previous step in full:", *lines, done])

    def instruction(self, query: Query) -> str:
        """The task's instruction followed by the chain (all earlier steps as CoAT carries them,
        the last one in full) and what to write before the action."""
        history = self.history(query.turns)
        blocks = [query.instruction, coat_context(history, self.config)]
        last = self.last_step(history)
        if last:
            blocks.append(last)
        asks = coat_instructions(self.config, style="lines")
        if asks:
            blocks.append(asks)
        return "\n\n".join(blocks)

    def _reparse(self, text: str, size: tuple[int, int], fallback: Action | None) -> Action | None:
        parser = getattr(self.inner, "parse_action", None)
        if parser is None:
            return fallback
        # The rest first; the whole answer only when the rest holds no action (a part's last
        # line can swallow the line that opens the action, e.g. a bare "<tool_call>").
        return parser(parse_coat(text).rest, *size) or fallback

    # ------------------------------------------------------------------ protocol
    async def act(self, image: Image.Image, query: Query, *, zoomed: bool = False) -> ModelReply:
        plain = self.stripped(query)
        if zoomed or query.mode != "agent":
            return await self.inner.act(image, plain, zoomed=zoomed)
        reply = await self.inner.act(image, replace(plain, instruction=self.instruction(query)))
        action = self._reparse(reply.text, image.size, reply.action)
        return replace(reply, action=action, point=action.point if action else None)

    async def propose_point(
        self, image: Image.Image, query: Query, avoid: Avoid, *, temperature: float | None = None
    ) -> ModelReply:
        return await self.inner.propose_point(image, self.stripped(query), avoid, temperature=temperature)

    async def judge(self, image: Image.Image, query: Query, point: Point) -> ModelReply:
        return await self.inner.judge(image, self.stripped(query), point)

    async def choose(
        self, image: Image.Image, query: Query, options: Sequence[Option], *, retry: int = 0
    ) -> ModelReply:
        return await self.inner.choose(image, self.stripped(query), options, retry=retry)

    async def propose_box(self, image: Image.Image, query: Query, focal: Point | None) -> ModelReply:
        return await self.inner.propose_box(image, self.stripped(query), focal)
