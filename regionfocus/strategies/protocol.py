"""The strategy protocol: baseline prediction in, final action plus trace and cost out.

RegionFocus is one test-time strategy among several published ones (Iterative Narrowing,
ZoomClick, DiMo-GUI, ...; ``regionfocus.strategies``). To compare them on the same model and
samples, every strategy returns the same :class:`StrategyResult`: the final action in pixels of
the original screenshot, each model call with the size of the image it sent and the size the
model saw, the image tokens that size costs the model's family, the text tokens and latency,
and a per-step trace of crops and points as plain dicts.

Image tokens. Qwen2-VL, Qwen2.5-VL and UI-TARS cut the smart_resized image into 14 px patches
and merge 2x2 of them into one token: (H/28)*(W/28) tokens. Qwen3-VL: 16 px patches, merge 2:
(H/32)*(W/32). A model says how it counts through an optional ``image_tokens(size)`` method
(the VLM adapters have one); without it the core assumes factor 28 on ``input_size``. So the
table predicts GPU cost for a real model without the core knowing families.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from ..actions import Action, click
from ..geometry import Box, Point
from ..model import GroundingModel, ModelReply, Query, Usage
from ..trace import CallRecord, record_call
from ..views import ViewSource

DEFAULT_TOKEN_FACTOR = 28  # patch 14 x merge 2: Qwen2-VL, Qwen2.5-VL, UI-TARS


def image_tokens(model: Any, size: tuple[int, int]) -> int:
    """Vision tokens ``model`` spends on an image of ``size`` = (W, H) given to it."""
    fn = getattr(model, "image_tokens", None)
    if callable(fn):
        return int(fn(size))
    w, h = model.input_size(size)
    f = DEFAULT_TOKEN_FACTOR
    return math.ceil(w / f) * math.ceil(h / f)


@dataclass
class CostedCall(CallRecord):
    """A :class:`CallRecord` with what its image cost: ``image_size`` (W, H) sent,
    ``seen_size`` (W, H) the model saw after its own resize, ``image_tokens`` of that size,
    ``text_tokens`` = prompt tokens minus image tokens (None when the server gave no count or
    counts differently), and ``n`` completions (sampling returns several per request)."""

    image_size: list[int] | None = None
    seen_size: list[int] | None = None
    image_tokens: int | None = None
    text_tokens: int | None = None
    n: int = 1


# ------------------------------------------------------------------ optional model abilities
@dataclass
class Samples:
    """``n`` completions of one grounding request. ``replies``: each parsed like ``act``
    (points in pixels of the image given). ``confidences``: per reply, the mean token
    probability (exp of the mean log-probability), None when the backend gave none.
    ``usage``: the one request's cost."""

    replies: list[ModelReply]
    confidences: list[float | None]
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class SamplingModel(Protocol):
    """A model that can draw several answers at a temperature > 0 in one request (UI-Zoomer,
    GUI-RC). Deterministic models (the OCR agent) do not implement it; sampling strategies
    then degenerate to one answer and say so in the result's notes."""

    async def sample(self, image: Image.Image, query: Query, n: int, temperature: float) -> Samples: ...


@dataclass(frozen=True)
class OwnPrompt:
    """A strategy's own grounding request, as its official code sends it to every model it runs
    (MVP's): ``system``, a ``str.format`` template with ``{width}`` and ``{height}`` of the image
    as sent, as the system message; then the image and the instruction as the user turn; the
    image resized with the family's factor within ``min_pixels``..``max_pixels`` (None: the
    family's); at most ``max_tokens`` new tokens (None: the model's); the answer read by
    ``reader`` (text -> x, y in the family's frame, None when it names none)."""

    system: str
    reader: Callable[[str], tuple[float, float] | None]
    min_pixels: int | None = None
    max_pixels: int | None = None
    max_tokens: int | None = None


@runtime_checkable
class PromptableModel(Protocol):
    """A model that can send a strategy's own grounding request instead of its family's:
    ``prompted(prompt)`` is the same model whose grounding requests (``act``, and the attention
    pass where it has one) are ``prompt``'s, costed at the sizes that request sends."""

    def prompted(self, prompt: OwnPrompt) -> GroundingModel: ...


@runtime_checkable
class ChatModel(Protocol):
    """Free-form question about an image (or none): a planner (ScreenSeekeR), a checker."""

    async def chat(self, image: Image.Image | None, text: str) -> ModelReply: ...


# ------------------------------------------------------------------ the result
_TOKEN_KEYS = ("calls", "prompt_tokens", "cached_tokens", "completion_tokens", "max_prompt_tokens")


@dataclass
class StrategyResult:
    """One sample's outcome. ``action``: final point action in screenshot pixels (None: the
    strategy found nothing and there was no baseline). ``candidates``: the distinct final
    points a multi-candidate strategy had before it picked one (for an image-as-map choice).
    ``steps``: the per-step trace (plain dicts, screenshot pixels). ``notes``: degenerations
    and fallbacks, in words."""

    strategy: str
    action: Action | None
    baseline: Action | None
    calls: list[CostedCall] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    candidates: list[Point] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def point(self) -> Point | None:
        return self.action.point if self.action is not None else None

    def totals(self) -> dict[str, Any]:
        """Sums over the calls: requests, completions, image/prompt/completion tokens, latency."""

        def total(name: str) -> int | None:
            values = [getattr(c, name) for c in self.calls]
            return sum(v for v in values if v is not None) if any(v is not None for v in values) else None

        return {
            "requests": len(self.calls),
            "completions": sum(c.n for c in self.calls),
            "image_tokens": total("image_tokens"),
            "prompt_tokens": total("prompt_tokens"),
            "completion_tokens": total("completion_tokens"),
            "latency_s": round(sum(c.latency_s for c in self.calls), 4),
            "errors": sum(1 for c in self.calls if c.error),
            "cached_tokens": total("cached_tokens"),
            "by_model": self.tokens_by_model(),
        }

    def tokens_by_model(self) -> dict[str, dict[str, int]]:
        """Token sums per model id the backend reported ("" when it named none): what a price
        table needs, since rates differ per model and a second model may share the ledger."""
        out: dict[str, dict[str, int]] = {}
        for c in self.calls:
            if c.prompt_tokens is None and c.completion_tokens is None:
                continue
            t = out.setdefault(c.model or "", dict.fromkeys(_TOKEN_KEYS, 0))
            t["calls"] += 1
            t["prompt_tokens"] += c.prompt_tokens or 0
            t["cached_tokens"] += c.cached_tokens or 0
            t["completion_tokens"] += c.completion_tokens or 0
            t["max_prompt_tokens"] = max(t["max_prompt_tokens"], c.prompt_tokens or 0)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "action": self.action.to_dict() if self.action else None,
            "baseline": self.baseline.to_dict() if self.baseline else None,
            "candidates": [p.to_list() for p in self.candidates],
            "steps": self.steps,
            "notes": self.notes,
            "calls": [c.to_dict() for c in self.calls],
            "totals": self.totals(),
            "wall_s": round(self.wall_s, 4),
        }


class Strategy(Protocol):
    """A test-time strategy. ``paper``: citation; ``call_budget``: requests per sample in words
    (beyond the baseline); ``needs_sampling`` / ``needs_planner``: what it wants of the model."""

    name: str
    paper: str
    call_budget: str
    needs_sampling: bool
    needs_planner: bool

    async def run(
        self,
        model: GroundingModel,
        screenshot: Image.Image,
        instruction: str,
        baseline: Action | None,
        *,
        views: ViewSource | None = None,
    ) -> StrategyResult: ...


# ------------------------------------------------------------------ the record of one run
class Ledger:
    """Records each call with its cost, and the step trace, for one run of a strategy.

    Calls are numbered in the order they are *started* (concurrent calls keep their order);
    ``t0`` is when the run started (the result's ``wall_s`` counts from it)."""

    def __init__(self, strategy: str, model: Any, baseline: Action | None):
        self.model = model
        self.result = StrategyResult(strategy, None, baseline)
        self.t0 = time.perf_counter()

    async def call(
        self,
        kind: str,
        image: Image.Image | Sequence[Image.Image] | None,
        coro: Awaitable[ModelReply],
        *,
        model: Any = None,
        n: int = 1,
        slot: int | None = None,
    ) -> ModelReply | None:
        """Await ``coro`` (a request about ``image`` to ``model``, default the ledger's; a list
        of images for a request carrying several, costed together) and record it. A failure is
        recorded and yields None, as :func:`record_call` does.
        ``slot``: a place taken earlier with :meth:`reserve` (keeps the order of concurrent
        calls whose requests are prepared at different speeds)."""
        model = model if model is not None else self.model
        if slot is None:
            slot = self.reserve(kind)
        records: list[CallRecord] = []
        reply = await record_call(records, kind, coro)
        images = [] if image is None else [image] if isinstance(image, Image.Image) else list(image)
        self.result.calls[slot] = costed(records[0], [im.size for im in images], model, n)
        return reply

    def reserve(self, kind: str) -> int:
        """Take the next place in the call record (filled by :meth:`call` with ``slot``)."""
        self.result.calls.append(CostedCall(kind=kind))
        return len(self.result.calls) - 1

    def step(self, **info: Any) -> None:
        self.result.steps.append({k: _plain(v) for k, v in info.items()})

    def note(self, text: str) -> None:
        if text not in self.result.notes:
            self.result.notes.append(text)

    def finish(self, point: Point | None) -> StrategyResult:
        """The result with a click at ``point`` (None: the baseline stands, noted)."""
        r = self.result
        if point is not None:
            r.action = _final_action(r.baseline, point)
        else:
            r.action = r.baseline
            self.note("no point found: the baseline stands")
        r.wall_s = time.perf_counter() - self.t0
        return r


def costed(
    rec: CallRecord, size: tuple[int, int] | Sequence[tuple[int, int]] | None, model: Any, n: int = 1
) -> CostedCall:
    """``rec`` with the cost of its image of ``size`` (W, H) to ``model`` (None or []: no image;
    a list of sizes: several images, ``image_size``/``seen_size`` the first's, ``image_tokens``
    their sum)."""
    sizes = [] if not size else list(size) if isinstance(size[0], (tuple, list)) else [size]
    sent = seen = tokens = text_tokens = None
    if sizes:
        sent = list(sizes[0])
        if callable(getattr(model, "input_size", None)):  # a chat-only planner may not say
            seen = list(model.input_size(sizes[0]))
            tokens = sum(image_tokens(model, s) for s in sizes)
    if rec.prompt_tokens is not None and rec.prompt_tokens >= (tokens or 0):
        text_tokens = rec.prompt_tokens - (tokens or 0)
    return CostedCall(
        **{f.name: getattr(rec, f.name) for f in fields(CallRecord)},
        image_size=sent,
        seen_size=seen,
        image_tokens=tokens,
        text_tokens=text_tokens,
        n=n,
    )


def _final_action(baseline: Action | None, point: Point) -> Action:
    if baseline is not None and baseline.is_point_action:
        return replace(baseline, point=point)
    return click(point.x, point.y)


def _plain(v: Any) -> Any:
    """Points, boxes and containers of them as JSON-ready lists."""
    if isinstance(v, (Point, Box)):
        return [round(x, 3) for x in v.to_list()]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, float):
        return round(v, 4)
    return v
