"""The model-facing protocol the core needs, and the plain data that crosses it.

Adapters implement :class:`GroundingModel`. Every point or box an adapter returns is in pixels
of the image it was *given* (a full screenshot, an annotated screenshot, or a zoomed view);
the core maps views back to the screenshot. Only adapters know model frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, Protocol, runtime_checkable

from PIL import Image

from .actions import Action
from .geometry import Box, Point, ViewTransform


class Verdict(str, Enum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Turn:
    """One earlier step of a live task, as the agent lived it.

    ``image``: the screenshot the model was shown at that step (None when not kept).
    ``action``: what was executed, points in pixels of ``size`` (that screenshot), or None.
    ``text``: the model's own answer when the executed action is the one it wrote on that
    screenshot; empty when RegionFocus chose the action (the adapter then writes the action in
    its own format and frame). ``outcome``: what the environment reported ("changed the
    page", "no visible effect", an error).
    """

    image: Image.Image | None
    size: tuple[int, int]
    action: Action | None
    text: str = ""
    outcome: str = ""


@dataclass(frozen=True)
class Query:
    """What the agent is asked to do.

    ``mode``: "grounding" (one instruction, one point: ScreenSpot-Pro) or "agent" (a task over
    many steps: WebVoyager). ``url``: the page's address, for agent prompts that show it.
    ``turns``: the previous steps of a live task, oldest first; adapters render them the way
    their model was trained to read them (UI-TARS: earlier screenshots and its own answers as
    chat turns; others: history lines), coordinates always in their own frame.
    ``view``: set on a request about a zoomed view; maps screenshot pixels to pixels of the
    view, so history coordinates are written in the view's own frame.
    ``elements``: the screen's accessibility tree when the environment offers one
    (:class:`regionfocus.a11y.A11yElement`, boxes in screenshot pixels): for agents that read
    structure, the a11y box proposer and the no-target trigger. ``observation``: what the agent
    is shown ("screenshot", "a11y", "compressed-a11y", "screenshot+compressed-a11y").
    """

    instruction: str
    mode: Literal["grounding", "agent"] = "grounding"
    url: str = ""
    turns: tuple[Turn, ...] = ()
    view: ViewTransform | None = None
    elements: tuple[Any, ...] = ()
    observation: str = "screenshot"
    # The A11y-Compressor phases a compressed observation applies (the paper's ablation).
    observation_phases: tuple[str, ...] = ("modal", "reduce", "structure")


@dataclass(frozen=True)
class Option:
    """A numbered candidate offered to ``choose``. ``on_image``: drawn as star ``number`` on the
    image; otherwise the adapter must describe it in text (coordinates in its own frame)."""

    number: int
    action: Action
    on_image: bool


@dataclass
class Usage:
    """One model call's cost. ``error`` is set when the call failed (after any retries)."""

    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    endpoint: str | None = None
    # Transport cost, when the backend measures it: CPU seconds spent encoding this request's
    # images (0 when all were encoded for an earlier request) and their bytes as sent.
    encode_s: float | None = None
    image_bytes: int | None = None
    # Hosted providers bill cached input at another rate: the part of ``prompt_tokens`` the
    # provider served from its prompt cache (reads; cache writes count as plain input).
    cached_tokens: int | None = None
    # The model id the provider reports having served (the price table's key).
    model: str | None = None
    # [w, h] of each image as sent, and as the provider's model sees it after any server-side
    # downscaling; the answer's frame is the seen size.
    image_sent: list[list[int]] | None = None
    image_seen: list[list[int]] | None = None
    # The part of ``completion_tokens`` the model spent reasoning or thinking (billed as output).
    reasoning_tokens: int | None = None
    # Requests this call made (set when more than one) and the seconds it waited between them.
    attempts: int | None = None
    waited_s: float | None = None


@dataclass
class ModelReply:
    """A model's raw text and what the adapter parsed from it (fields unused by a request stay
    None). Points and boxes are in pixels of the image the request carried."""

    text: str
    action: Action | None = None
    point: Point | None = None
    box: Box | None = None
    verdict: Verdict | None = None
    choice: int | None = None
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class Avoid:
    """Where a focal point must not go: the points of RegionFocus choices that already failed on
    this screen (pixels of the request's image, oldest first). ``on_image``: they are drawn as
    numbered stars on the image (the paper's image-as-map history); else the request lists them
    in text (the paper's text-as-history ablation). Iterates over ``points``."""

    points: Sequence[Point] = ()
    on_image: bool = True

    def __iter__(self):
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)


@runtime_checkable
class GroundingModel(Protocol):
    """An agent RegionFocus can wrap. All methods are async: model calls are I/O."""

    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        """(W, H) of the image the model actually sees when given an image of ``size``."""
        ...

    async def act(self, image: Image.Image, query: Query, *, zoomed: bool = False) -> ModelReply:
        """The next action on ``image``. ``zoomed``: the image is a magnified part of the screen."""
        ...

    async def propose_point(
        self, image: Image.Image, query: Query, avoid: Avoid, *, temperature: float | None = None
    ) -> ModelReply:
        """The single most relevant point for the query, away from the ``avoid`` points
        (drawn as numbered stars on ``image`` when ``avoid.on_image``, else listed in text).
        ``temperature``: overrides the model's own for this request (the retry ladder)."""
        ...

    async def judge(self, image: Image.Image, query: Query, point: Point) -> ModelReply:
        """Is ``point`` (drawn as a star on ``image``) right for the query? Sets ``verdict``."""
        ...

    async def choose(
        self, image: Image.Image, query: Query, options: Sequence[Option], *, retry: int = 0
    ) -> ModelReply:
        """Pick one of ``options`` by number; sets ``choice`` (an option number) or leaves None.
        ``retry`` > 0: the earlier answer was unreadable; ask again, more firmly and in other
        words (the same request at temperature 0 would return the same text)."""
        ...

    async def propose_box(self, image: Image.Image, query: Query, focal: Point | None) -> ModelReply:
        """A region (``box``) likely to contain the target: the paper's predict-region ablation."""
        ...


@runtime_checkable
class AnnotatingModel(Protocol):
    """Optional: a model that draws stars on its own copy of a screenshot.

    :func:`~regionfocus.stars.mark_for_model` uses it when a model offers it. The returned
    image stands for ``image`` with numbered stars at ``points`` (pixels of ``image``; star and
    tag sizes relative to ``image``, as :func:`~regionfocus.stars.draw_stars` draws
    them); it may be at any size (typically the size the model sees). Given back to the same
    model in ``judge``, ``choose`` or ``propose_point``, every point in and out of the request
    stays in pixels of ``image``. Models without it get full-resolution annotated copies.
    """

    async def annotate(
        self,
        image: Image.Image,
        points: Sequence[Point],
        labels: Sequence[str] | None = None,
        *,
        scale: float = 1.0,
    ) -> Image.Image: ...
