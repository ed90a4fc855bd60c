"""What a RegionFocus round did, as plain data that serialises to JSON."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from .actions import Action
from .geometry import Box, Point
from .model import ModelReply, Usage


@dataclass
class CallRecord(Usage):
    """One model call: what was asked (``kind``), the raw text, and its cost and error (the
    :class:`~regionfocus.model.Usage` the backend reported, field for field)."""

    kind: str = ""
    text: str = ""

    @classmethod
    def from_reply(cls, kind: str, reply: ModelReply) -> CallRecord:
        return cls(kind=kind, text=reply.text, **vars(reply.usage))

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "text": self.text}  # what was asked first, then its cost
        d.update((k, v) for k, v in vars(self).items() if v is not None and k not in d)
        return d


@dataclass
class Candidate:
    """A candidate action in screenshot pixels. ``views``: indices of the views that proposed
    it (several after merging); ``number``: its label in the choice request."""

    action: Action
    views: list[int]
    number: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"action": self.action.to_dict(), "views": self.views}
        if self.number is not None:
            d["number"] = self.number
        return d


@dataclass
class RefineResult:
    """The outcome of one :meth:`RegionFocus.refine` round, with its full trace.

    ``choice_method``: "single" (one distinct candidate, no request), "model" (the model's
    answer), "model-retry" (its answer on the second asking), "rule" (no readable answer: the
    candidate most views agreed on, ties broken by distance to the focal point), "none" (no
    candidate at all: ``action`` is None).

    ``focal_source``: "model", "model-retry" (after the temperature ladder), "fallback-prediction",
    "fallback-center", or "skipped" (predict-region asks for the box directly). ``dropped``:
    candidates a grounding round cannot use (no point). ``failure``: why the round chose
    nothing ("no-box": predict-region got no usable box; "no-candidate": no view gave one).
    """

    trigger: str
    action: Action | None
    focal: Point | None
    focal_source: str
    boxes: list[Box]
    views: list[dict]
    candidates: list[Candidate]
    merged: list[Candidate]
    choice: int | None
    choice_method: str
    history: list[Point] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    dropped: list[Candidate] = field(default_factory=list)
    failure: str | None = None
    wall_s: float = 0.0

    @property
    def n_calls(self) -> int:
        return len(self.calls)

    def to_dict(self) -> dict[str, Any]:
        return {
            "trigger": self.trigger,
            "action": self.action.to_dict() if self.action else None,
            "focal": self.focal.to_list() if self.focal else None,
            "focal_source": self.focal_source,
            "boxes": [b.to_list() for b in self.boxes],
            "views": self.views,
            "candidates": [c.to_dict() for c in self.candidates],
            "merged": [c.to_dict() for c in self.merged],
            "choice": self.choice,
            "choice_method": self.choice_method,
            "history": [p.to_list() for p in self.history],
            "calls": [c.to_dict() for c in self.calls],
            "dropped": [c.to_dict() for c in self.dropped],
            "failure": self.failure,
            "wall_s": round(self.wall_s, 4),
        }


async def record_call(calls: list[CallRecord], kind: str, coro: Awaitable[ModelReply]) -> ModelReply | None:
    """Await a model call and append its record to ``calls``. A failure (an exception, or a
    reply whose usage carries an error) is recorded and yields None: a failed call is data,
    never the end of a round or a run."""
    t0 = time.perf_counter()
    try:
        reply = await coro
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001
        reply = ModelReply(
            "", usage=Usage(latency_s=time.perf_counter() - t0, error=f"{type(e).__name__}: {e}")
        )
    calls.append(CallRecord.from_reply(kind, reply))
    return None if reply.usage.error else reply
