"""One GUI-Lens attempt at a sample (:class:`Sample`): the screenshot, its hints, the crop history,
the calls through the run's ledger, and what every step shares: a failed call ends the attempt
(:class:`CallFailed`, as the official ``reraise_if_fatal`` lets a provider error out of the
locator), an answer is read as the config says, a crop is shown at the size the model sees, and
when every final click fails, the centre of the deepest committed crop (``keep_best``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from ..geometry import Box, Point
from ..model import ModelReply
from .gui_lens_config import LensConfig
from .gui_lens_geometry import Shown, render
from .gui_lens_text import Candidate, Hint, IBox, build_candidates, number, read_json
from .protocol import Ledger

Hints = Callable[[Image.Image], Sequence[Hint]]


class CallFailed(Exception):
    """A model call that failed (the backend's retries spent): the attempt ends there, and the
    sample is run again while reruns remain. Not a rejected crop: the model said nothing."""


@dataclass
class Sample:
    """``run``: 0 for the first attempt, n for the n-th rerun (its calls are named ``rerun<n>:``)."""

    ledger: Ledger
    model: Any
    screenshot: Image.Image
    instruction: str
    config: LensConfig
    normalized: bool
    candidates: list[Candidate] = field(default_factory=list)
    hints: Hints | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    run: int = 0

    @property
    def size(self) -> tuple[int, int]:
        return self.screenshot.size

    @property
    def official(self) -> bool:
        return self.config.reading == "official"

    async def call(
        self, kind: str, image: Image.Image | Sequence[Image.Image], coro: Awaitable[ModelReply]
    ) -> ModelReply:
        """The reply to one request about ``image`` (or several); raises :class:`CallFailed`
        when the call failed."""
        kind = f"rerun{self.run}:{kind}" if self.run else kind
        slot = self.ledger.reserve(kind)
        reply = await self.ledger.call(kind, image, coro, slot=slot)
        if reply is None:
            raise CallFailed(f"{kind}: {self.ledger.result.calls[slot].error}")
        return reply

    async def ask(self, kind: str, image: Image.Image, prompt: str) -> tuple[dict[str, Any] | None, str]:
        """(the answer's JSON object, why there is none) for one free-text request."""
        reply = await self.call(kind, image, self.model.chat(image, prompt))
        parsed = read_json(reply.text, self.official)
        return parsed, "" if parsed is not None else "ValueError: no JSON object in the reply"

    async def shown(self, box: IBox, final: bool = False) -> Shown:
        return await render(self.model, self.screenshot, box, self.config, final, self.normalized)

    def committed(self) -> int:
        return sum(1 for e in self.history if e.get("next_box"))

    def check_now(self, r: int) -> bool:
        c = self.config
        return (
            c.crop_check
            and c.crop_check_mode != "off"
            and (c.crop_check_mode != "last_only" or r == c.rounds - 1)
        )


def entry(r: int, a: int, action: str, shown: Shown, parsed: dict[str, Any]) -> dict[str, Any]:
    """One crop decision of the history, as the code keeps it."""
    return {
        "round": r + 1,
        "attempt": a + 1,
        "action": action,
        "crop_box": list(shown.frame.box),
        "seen": list(shown.image.size),
        "target_visible_element": parsed.get("target_visible_element", ""),
        "confidence": number(parsed.get("confidence", 0)) or 0.0,
        "reasoning": parsed.get("reasoning", ""),
    }


async def read_hints(
    ledger: Ledger, hints: Hints | None, image: Image.Image, where: str, limit: int = 240
) -> list[Candidate]:
    """The candidates of ``image`` (boxes in its pixels) from the hint provider."""
    if hints is None:
        return []
    try:
        found = await asyncio.to_thread(hints, image)
    except Exception as e:  # noqa: BLE001 - perception is optional evidence, as in the code
        ledger.note(f"hints failed on the {where} ({type(e).__name__}: {e}): none used there")
        return []
    out = build_candidates(found, limit)
    ledger.step(stage="hints", where=where, read=len(found), candidates=len(out))
    return out


def trace_box(b: Sequence[int] | None) -> Box | None:
    return Box(*b) if b else None


def keep_best(s: Sample, current: IBox) -> Point | None:
    """The exhaustion fall-back: the centre of the deepest committed crop (``keep_best``)."""
    if s.config.exhaustion_fallback != "keep_best":
        return None
    committed = [e["next_box"] for e in s.history if e.get("next_box")]
    b = committed[-1] if committed else current
    cx, cy = int((b[0] + b[2]) / 2), int((b[1] + b[3]) / 2)
    if 0 < cx <= s.size[0] and 0 < cy <= s.size[1]:
        s.ledger.note("every final click failed: the centre of the deepest committed crop (keep_best)")
        s.ledger.step(stage="keep_best", crop=trace_box(b), point=Point(cx, cy))
        return Point(cx, cy)
    return None
