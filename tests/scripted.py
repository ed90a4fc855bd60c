"""A scripted GroundingModel: answers are functions of the request, calls are recorded.

It stands in for the *model* (a VLM we cannot run here), never for our own code. Handlers
receive the request's arguments and return a ModelReply; unset handlers answer with nothing
parseable. ``latency`` sleeps before every answer, to make concurrency observable.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from regionfocus import ModelReply, Point, Query


@dataclass
class Call:
    kind: str
    image: Image.Image
    query: Query
    kwargs: dict[str, Any]
    started: float
    ended: float = 0.0


@dataclass
class ScriptedModel:
    on_act: Callable[..., ModelReply] | None = None
    on_focal: Callable[..., ModelReply] | None = None
    on_judge: Callable[..., ModelReply] | None = None
    on_choose: Callable[..., ModelReply] | None = None
    on_box: Callable[..., ModelReply] | None = None
    latency: float = 0.0
    seen_size: tuple[int, int] | None = None
    calls: list[Call] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0

    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        return self.seen_size or size

    def kinds(self) -> list[str]:
        return [c.kind for c in self.calls]

    async def _answer(self, kind: str, handler, image, query, **kw) -> ModelReply:
        call = Call(kind, image, query, kw, time.perf_counter())
        self.calls.append(call)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
            reply = handler(image, query, **kw) if handler else ModelReply("(nothing)")
        finally:
            self.in_flight -= 1
            call.ended = time.perf_counter()
        return reply

    # The GroundingModel protocol.
    async def act(self, image, query, *, zoomed=False):
        return await self._answer("act", self.on_act, image, query, zoomed=zoomed)

    async def propose_point(self, image, query, avoid, *, temperature=None):
        return await self._answer(
            "focal",
            self.on_focal,
            image,
            query,
            avoid=list(avoid),
            avoid_on_image=avoid.on_image,
            temperature=temperature,
        )

    async def judge(self, image, query, point: Point):
        return await self._answer("judge", self.on_judge, image, query, point=point)

    async def choose(self, image, query, options, *, retry=0):
        return await self._answer("choose", self.on_choose, image, query, options=list(options), retry=retry)

    async def propose_box(self, image, query, focal):
        return await self._answer("box", self.on_box, image, query, focal=focal)
