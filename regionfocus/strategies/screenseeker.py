"""ScreenSeekeR: a planner names the target and the areas it is likely in; the grounder grounds
each; padded patches around those points are scored by a Gaussian vote of all the grounder's
points, de-duplicated and searched recursively, best first; the planner checks the final answer.

Paper: K. Li et al., "ScreenSpot-Pro: GUI Grounding for Professional High-Resolution Computer
Use", arXiv:2504.07981 (2025), ScreenSeekeR. Code: likaixin2000/ScreenSpot-Pro-GUI-Grounding,
models/methods/screenseeker.py (commit 8390c0c7, unchanged up to bd8bbbb4): configs
``max_search_depth`` 3, ``min_crop_size`` (1280, 768); ``score_patch`` a Gaussian (mu 0.5,
sigma 0.3) of a vote's position inside the patch, 0 outside; NMS at IoU 0.5 keeping score order; ``visual_search`` grounds directly (then asks the planner whether the marked
element is the target: is_target / target_elsewhere with a rewritten instruction /
target_not_found) once the patch is at the minimum size or the depth limit, and otherwise
tries the patches best first, backtracking when a branch finds nothing. The planner's two
prompts are that code's texts, in ``prompts/`` (sources in ``prompts/SOURCES.md``); the code
sends each after a system message that a :class:`ChatModel` has no place for (not sent).
Deviations from the official code (likaixin2000/ScreenSpot-Pro-GUI-Grounding @ bd8bbbb4):
grounders here return points, so a reference's patch is the minimum-size patch centred on its
point (shifted inside the current patch) and the check marks the point with a small translucent
red square (there: the grounder's box outlined in red, 5 px); the planner is whatever chat
model is given (there GPT-4o at temperature 0); the aspect-ratio split of long patches is not needed for such
patches and is left out; ``max_branches`` can cap the backtracking (None = all, as the code).
When the search finds nothing, the baseline stands (noted). Without a planner (a grounder with
no ``chat``, like the OCR agent) only direct grounding votes and the check is skipped (noted).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from dataclasses import dataclass

from PIL import Image

from ..geometry import Box, Point
from ..model import GroundingModel, ModelReply
from .base import Attempt, BaseStrategy, box_inside, full_box, ground_view, strategy_prompt
from .chain_of_ground import draw_mark
from .protocol import ChatModel, Ledger

PLAN_PROMPT = strategy_prompt("screenseeker_plan.txt")
CHECK_PROMPT = strategy_prompt("screenseeker_check.txt")
_TAGS = ("element", "area", "neighbor")


def parse_plan(text: str) -> dict[str, list[str]]:
    """The planner's tagged references, in order of appearance per tag (tags are data: their
    contents are only ever sent back to the grounder as instructions)."""
    return {t: [m.strip() for m in re.findall(rf"<{t}>(.*?)</{t}>", text, re.S) if m.strip()] for t in _TAGS}


def parse_check(text: str) -> tuple[str | None, str | None]:
    """(result, new_instruction) from the checker's JSON (the last object naming a result)."""
    for m in reversed(list(re.finditer(r"\{[^{}]*\}", text, re.S))):
        try:
            data = json.loads(m.group(0))
        except ValueError:
            continue
        result = data.get("result") if isinstance(data, dict) else None
        if result in ("is_target", "target_elsewhere", "target_not_found"):
            new = data.get("new_instruction")
            return result, new if isinstance(new, str) and new.strip() else None
    return None, None


def gaussian_score(patch: Box, vote: Point, mu: float = 0.5, sigma: float = 0.3) -> float:
    """The vote's Gaussian weight at its normalised position in ``patch``; 0 outside."""
    rx, ry = (vote.x - patch.left) / max(patch.width, 1e-9), (vote.y - patch.top) / max(patch.height, 1e-9)
    if not (0 <= rx <= 1 and 0 <= ry <= 1):
        return 0.0
    d2 = (rx - mu) ** 2 + (ry - mu) ** 2
    return math.exp(-d2 / (2 * sigma**2))


def nms(boxes: list[Box], iou: float) -> list[Box]:
    """Keep boxes in the given (score) order, dropping any overlapping a kept one at >= ``iou``."""
    kept: list[Box] = []
    for b in boxes:
        if all(b.iou(k) < iou for k in kept):
            kept.append(b)
    return kept


@dataclass
class _Search:
    ledger: Ledger
    model: GroundingModel
    planner: ChatModel | None
    screenshot: Image.Image
    instruction: str
    source: object


@dataclass
class ScreenSeekeR(BaseStrategy):
    name = "screenseeker"
    paper = "Li et al. 2025, ScreenSpot-Pro (arXiv:2504.07981), ScreenSeekeR"
    call_budget = "per level: 1 plan + 1 + refs groundings; at the leaf 1 grounding + 1 check"
    needs_planner = True
    requires = "max_depth >= 0, min_patch > 0, 0 < nms_iou <= 1, sigma > 0"

    planner: ChatModel | None = None
    max_depth: int = 3
    min_patch: tuple[float, float] = (1280.0, 768.0)
    nms_iou: float = 0.5
    sigma: float = 0.3
    max_branches: int | None = None
    zoom: str = "native"

    def __post_init__(self) -> None:
        self.min_patch = tuple(self.min_patch)
        super().__post_init__()

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        planner = self.planner if self.planner is not None else model
        if not isinstance(planner, ChatModel):
            ledger.note("no planner (the grounder cannot chat): direct grounding only, no check")
            planner = None
        s = _Search(ledger, model, planner, screenshot, instruction, source)
        point = await self._search(s, full_box(screenshot.size), 0)
        if point is None:
            ledger.note("the search found no checked target: the baseline stands")
        return point

    async def _chat(self, s: _Search, kind: str, image: Image.Image, text: str) -> ModelReply | None:
        return await s.ledger.call(kind, image, s.planner.chat(image, text), model=s.planner)

    async def _search(self, s: _Search, region: Box, depth: int) -> Point | None:
        mw, mh = self.min_patch
        if depth >= self.max_depth or (region.width <= mw and region.height <= mh):
            return await self._leaf(s, region, depth)
        refs: list[str] = []
        if s.planner is not None:
            patch = _native(s.screenshot, region)  # the planner's own processor resizes it
            plan = await self._chat(
                s, f"plan[d{depth}]", patch, PLAN_PROMPT.format(instruction=s.instruction)
            )
            tags = parse_plan(plan.text if plan else "")
            refs = [r for t in _TAGS for r in tags[t]]
        asks = [s.instruction, *refs]
        found = await asyncio.gather(
            *(
                ground_view(
                    s.ledger, s.model, s.source, s.screenshot, region, a, self.zoom, f"ground[d{depth}.{i}]"
                )
                for i, a in enumerate(asks)
            )
        )
        votes = [p for p, _ in found if p is not None]
        patches = [box_inside(p, mw, mh, region) for p in votes]
        scored = sorted(
            (
                (sum(gaussian_score(b, v, 0.5, self.sigma) for v in votes), i, b)
                for i, b in enumerate(patches)
            ),
            key=lambda t: (-t[0], t[1]),
        )
        kept = nms([b for _, _, b in scored], self.nms_iou)
        s.ledger.step(
            depth=depth,
            region=region,
            refs=refs,
            votes=votes,
            patches=kept,
            scores=[sc for sc, _, _ in scored],
        )
        if depth == 0:
            s.ledger.result.candidates = votes
        for b in kept[: self.max_branches]:
            if b == region:  # no narrower patch: ground here instead of recursing forever
                return await self._leaf(s, region, depth)
            found_point = await self._search(s, b, depth + 1)
            if found_point is not None:
                return found_point
        return None

    async def _leaf(self, s: _Search, region: Box, depth: int) -> Point | None:
        point, _ = await ground_view(
            s.ledger, s.model, s.source, s.screenshot, region, s.instruction, self.zoom, f"leaf[d{depth}]"
        )
        if point is None or s.planner is None:
            s.ledger.step(depth=depth, leaf=region, point=point, check=None)
            return point
        patch = _native(s.screenshot, region)
        local = Point(point.x - math.floor(region.left), point.y - math.floor(region.top))
        mark = draw_mark(patch, local, max(6.0, 0.01 * max(patch.size)), "square")
        reply = await self._chat(s, f"check[d{depth}]", mark, CHECK_PROMPT.format(instruction=s.instruction))
        result, new_instruction = parse_check(reply.text if reply else "")
        s.ledger.step(depth=depth, leaf=region, point=point, check=result, new_instruction=new_instruction)
        if result == "is_target" or (result is None and reply is None):
            if result is None:
                s.ledger.note("the planner's check failed (call error): the grounder's point stands")
            return point
        if result == "target_elsewhere" and new_instruction:
            again, _ = await ground_view(
                s.ledger,
                s.model,
                s.source,
                s.screenshot,
                region,
                new_instruction,
                self.zoom,
                f"reground[d{depth}]",
            )
            return again
        if result is None:
            s.ledger.note("the planner's check was unreadable: the grounder's point stands")
            return point
        return None


def _native(screenshot: Image.Image, region: Box) -> Image.Image:
    """``region`` of the screenshot at its own pixels (snapped outward to whole pixels)."""
    left, top = math.floor(region.left), math.floor(region.top)
    return screenshot.crop((left, top, math.ceil(region.right), math.ceil(region.bottom)))
