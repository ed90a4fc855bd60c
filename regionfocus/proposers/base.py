"""Box proposers: where to look around a focal point.

All return boxes in screenshot pixels that lie inside the image. ``fixed`` is the paper's
default; ``predict-region`` its ablation (the model draws the box); ``sam`` and ``layout``
live in their own modules because they need heavier machinery.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from PIL import Image

from ..a11y import A11yElement
from ..geometry import DEFAULT_RATIOS, Box, Point, box_around, fixed_ratio_boxes, shift_box_inside
from ..model import GroundingModel, ModelReply, Query


@dataclass
class ProposalContext:
    """Everything a proposer may use. ``replies`` collects any model calls it makes.
    ``focal`` is None only for proposers that declare ``needs_focal = False``.
    ``elements``: the screen's accessibility tree (:class:`regionfocus.a11y.A11yElement`, boxes
    in screenshot pixels) when the environment offers one; empty otherwise."""

    screenshot: Image.Image
    focal: Point | None
    query: Query
    model: GroundingModel | None = None
    replies: list[tuple[str, ModelReply]] = field(default_factory=list)
    elements: Sequence[A11yElement] = ()


class BoxProposer(Protocol):
    """``needs_focal`` (optional attribute, default True): whether the round asks for a focal
    point before proposing. An empty list means the round failed to find a region."""

    name: str

    async def propose(self, ctx: ProposalContext) -> list[Box]: ...


class FixedRatioProposer:
    """Boxes of fixed fractions of the image around the focal point (the paper's default)."""

    name = "fixed"

    def __init__(self, ratios: Sequence[tuple[float, float]] = DEFAULT_RATIOS):
        self.ratios = tuple(tuple(r) for r in ratios)

    async def propose(self, ctx: ProposalContext) -> list[Box]:
        return fixed_ratio_boxes(ctx.focal, ctx.screenshot.size, self.ratios)


def enforce_min_size(box: Box, min_size: float, size: tuple[int, int]) -> Box:
    """Grow ``box`` about its centre to at least ``min_size`` per side, then keep it inside."""
    w, h = max(box.width, min_size), max(box.height, min_size)
    return (
        box_around(box.center, w, h, size)
        if (w, h) != (box.width, box.height)
        else shift_box_inside(box, size)
    )


class PredictRegionProposer:
    """The paper's "predict-region" ablation: the model outputs the corners of one box.

    As the paper runs it: no focal request first and no hint; the box is the model's alone,
    clipped to the screenshot. No usable box (none, or none of it on the screenshot) means no
    views: the round fails and says so (no silent fallback to fixed ratios, which would measure
    the default method under the ablation's name).
    """

    name = "predict-region"
    needs_focal = False

    def __init__(self, min_size: float = 64):
        self.min_size = min_size

    async def propose(self, ctx: ProposalContext) -> list[Box]:
        if ctx.model is None:
            raise ValueError("predict-region needs the model")
        reply = await ctx.model.propose_box(ctx.screenshot, ctx.query, None)
        ctx.replies.append(("propose_box", reply))
        # The part of the box on the screenshot: one off it (another frame's numbers) is no box.
        box = clip_box(reply.box, ctx.screenshot.size) if reply.box is not None else None
        if box is None or box.area <= 1:
            return []
        return [enforce_min_size(box, self.min_size, ctx.screenshot.size)]


def clip_box(box: Box, size: tuple[int, int]) -> Box | None:
    """The part of ``box`` inside an image of ``size`` = (W, H), or None when none is."""
    left, top = max(box.left, 0.0), max(box.top, 0.0)
    right, bottom = min(box.right, float(size[0])), min(box.bottom, float(size[1]))
    return Box(left, top, right, bottom) if left < right and top < bottom else None
