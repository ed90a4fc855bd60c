"""What the strategies share: :class:`BaseStrategy`, the opening of ``run`` (a ledger of calls
and steps, a note when live views cannot be used) and, for a strategy that looks for one point,
its close (the final point as the final action); the steps they are built of (ground a view,
the baseline's point, the crop-and-ask loop) and their prompt files (``prompts/``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import NamedTuple

from PIL import Image

from ..actions import Action
from ..checks import require
from ..geometry import Box, Point, clamp_point
from ..model import GroundingModel, ModelReply, Query
from ..views import StaticViews, View, ViewSource
from .protocol import Ledger, StrategyResult


@cache
def strategy_prompt(name: str) -> str:
    """The prompt ``regionfocus/strategies/prompts/<name>``, exactly as written (``{}`` fields
    for ``str.format``); where each comes from: ``prompts/SOURCES.md``."""
    return resources.files(__package__).joinpath("prompts", name).read_text(encoding="utf-8")


class Attempt(NamedTuple):
    """One sample as a strategy's search sees it: the ledger its calls go through, the
    model, the source of views, the screenshot and the instruction."""

    ledger: Ledger
    model: GroundingModel
    source: ViewSource
    screenshot: Image.Image
    instruction: str


class BaseStrategy:
    """``zoom``: how a crop is shown to the model ("native": at its own pixels; see
    :func:`view_target`); ``ignores_views``: why a strategy does not look through live views
    given to it (noted when they are). Subclasses set ``name`` and the listing fields, are
    dataclasses of their options (``requires``: the rules those keep), and write :meth:`search`
    (one point) or, to make the result themselves, :meth:`answer`."""

    name = "strategy"
    zoom = "native"
    ignores_views = ""
    needs_sampling = False
    needs_planner = False
    requires = ""  # the constructor's checks (:func:`regionfocus.checks.require`)

    def __post_init__(self) -> None:
        require(self, self.requires)

    async def run(
        self,
        model: GroundingModel,
        screenshot: Image.Image,
        instruction: str,
        baseline: Action | None,
        *,
        views: ViewSource | None = None,
    ) -> StrategyResult:
        ledger = Ledger(self.name, model, baseline)
        if views is not None and self.ignores_views:
            ledger.note(f"views ignored: {self.ignores_views}")
        return await self.answer(ledger, screenshot, instruction, views)

    async def answer(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str, views: ViewSource | None
    ) -> StrategyResult:
        """The result of one sample, every call through ``ledger`` (its model is the grounder)."""
        source = view_source(ledger.model, screenshot, views, self.zoom)
        attempt = Attempt(ledger, ledger.model, source, screenshot, instruction)
        return ledger.finish(await self.search(attempt))

    async def search(self, attempt: Attempt) -> Point | None:
        """The final point in screenshot pixels (None: none found), every call through ``ledger``."""
        raise NotImplementedError


def view_source(
    model: GroundingModel, screenshot: Image.Image, views: ViewSource | None, zoom: str, max_zoom: float = 4.0
) -> ViewSource:
    """The views a cropping strategy looks through. ``zoom``: "native" shows a crop at its own
    pixels (the model's processor resizes it as it would any image: what most of these papers'
    code does), "fill" upsamples it toward the size the model sees for the whole screenshot
    (RegionFocus's views). A live environment's ``views`` (true zoom) win when given."""
    if zoom not in ("native", "fill"):
        raise ValueError(f"zoom must be 'native' or 'fill', got {zoom!r}")
    if views is not None:
        return views
    return StaticViews(screenshot, max_zoom=1.0 if zoom == "native" else max_zoom, fit=model.input_size)


def view_target(model: GroundingModel, screenshot: Image.Image, box: Box, zoom: str) -> tuple[int, int]:
    if zoom == "native":
        return max(1, round(box.width)), max(1, round(box.height))
    return model.input_size(screenshot.size)


async def ground_view(
    ledger: Ledger,
    model: GroundingModel,
    source: ViewSource,
    screenshot: Image.Image,
    box: Box,
    instruction: str,
    zoom: str,
    kind: str,
) -> tuple[Point | None, View]:
    """Show ``box`` of the screenshot, ask for the instruction's point, map it back to
    screenshot pixels (clamped into the image)."""
    slot = ledger.reserve(kind)  # calls are recorded in the order they were asked for
    view = await source.view(box, view_target(model, screenshot, box, zoom))
    reply = await ledger.call(
        kind,
        view.image,
        model.act(view.image, Query(instruction, view=view.transform), zoomed=True),
        slot=slot,
    )
    point = reply_point(reply)
    if point is None:
        return None, view
    return clamp_point(view.transform.view_to_screen(point), screenshot.size), view


async def refine_in_crops(
    ledger: Ledger,
    model: GroundingModel,
    source: ViewSource,
    screenshot: Image.Image,
    instruction: str,
    zoom: str,
    point: Point | None,
    rounds: int,
    next_crop: Callable[[Box, Point, int], Box | None],
    kind: str,
) -> Point | None:
    """The loop of the crop-and-ask strategies (iterative narrowing, iterative focusing): each
    round shows ``next_crop(previous crop, current point, round)`` (None ends the loop; it
    notes why) and takes the point found there; a round that finds none keeps the last point."""
    crop = full_box(screenshot.size)
    for r in range(1, rounds + 1):
        if point is None:
            break
        nxt = next_crop(crop, point, r)
        if nxt is None:
            break
        crop = nxt
        new, _ = await ground_view(ledger, model, source, screenshot, crop, instruction, zoom, f"{kind}[{r}]")
        ledger.step(round=r, crop=crop, point=new)
        if new is None:
            ledger.note(f"round {r}: no point in the crop; the previous point stands")
            break
        point = new
    return point


async def ground_full(
    ledger: Ledger, model: GroundingModel, image: Image.Image, instruction: str, kind: str
) -> Point | None:
    """The instruction's point on a full-size image (the screenshot, or an annotated copy)."""
    reply = await ledger.call(kind, image, model.act(image, Query(instruction)))
    point = reply_point(reply)
    return clamp_point(point, image.size) if point is not None else None


async def first_point(
    ledger: Ledger, model: GroundingModel, screenshot: Image.Image, instruction: str
) -> Point | None:
    """The baseline's point, or (no baseline given) the model's answer on the screenshot."""
    baseline = ledger.result.baseline
    if baseline is not None and baseline.point is not None:
        return clamp_point(baseline.point, screenshot.size)
    ledger.note("no baseline point given: asked the model on the full screenshot")
    return await ground_full(ledger, model, screenshot, instruction, "baseline")


def reply_point(reply: ModelReply | None) -> Point | None:
    """The point of a grounding answer: its action's, else the bare point it named."""
    if reply is None:
        return None
    if reply.action is not None and reply.action.point is not None:
        return reply.action.point
    return reply.point


def clip_box(box: Box, size: tuple[int, int]) -> Box:
    """``box`` intersected with the image ``size`` = (W, H) (at least one pixel)."""
    w, h = size
    left, top = min(max(box.left, 0.0), w - 1.0), min(max(box.top, 0.0), h - 1.0)
    right, bottom = max(min(box.right, float(w)), left + 1.0), max(min(box.bottom, float(h)), top + 1.0)
    return Box(left, top, right, bottom)


def box_inside(center: Point, width: float, height: float, bounds: Box) -> Box:
    """A ``width`` x ``height`` box centred on ``center``, shifted (not shrunk) to lie inside
    ``bounds``; shrunk only where ``bounds`` is smaller."""
    bw, bh = min(width, bounds.width), min(height, bounds.height)
    left = min(max(center.x - bw / 2, bounds.left), bounds.right - bw)
    top = min(max(center.y - bh / 2, bounds.top), bounds.bottom - bh)
    return Box(left, top, left + bw, top + bh)


def full_box(size: tuple[int, int]) -> Box:
    return Box(0.0, 0.0, float(size[0]), float(size[1]))
