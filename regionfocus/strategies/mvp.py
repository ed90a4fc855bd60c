"""MVP (Multi-View Prediction): ground the full screenshot and a few 2x-magnified views of where
the model looks, group the points that agree, and answer from the largest group.

Paper: Y. Zhang et al., "MVP: Multiple View Prediction Improves GUI Grounding", CVPR 2026,
arXiv:2512.08529. Code: ZJUSCL/MVP, commit 988ff3c61b9f7632d780ae27c83260de75b3c95f,
``mvp_sspro.py`` (UI-TARS-1.5, GTA1) and ``eval_sspro_qwen3vl_official.py`` (Qwen3-VL).
What that code does, kept here:

- the full-image point (the baseline here), coverage 0;
- view proposal: one more forward pass on the full image, the attention of the answer's ``,``
  token (one layer, maximum over heads) on the image tokens; the ``top_k`` = 100 most attended
  tokens' cell centres; around each, a 1288 x 728 window (shifted inside the screenshot, no
  larger than it) whose coverage is how many of those centres it holds; windows by coverage,
  most first, duplicates (same integer box) dropped, the first ``views`` kept. When the image
  tokens cannot be found, the code's fallback: a grid of ``views`` cells (ceil(sqrt(n))
  columns, row by row, the last column and row reaching the edge), coverage 0;
- each window cropped, upsampled 2x, grounded, mapped back to screenshot pixels;
- grouping: in order (full image first, then the windows by rank), a point joins the first
  group whose every member is within ``threshold`` = 14 px on both axes (the group is a
  clique), else starts one; groups by size, largest first; the best group scores highest on
  size + mean coverage / 1000 (the first on ties); its answer is its member with the highest
  coverage (the first on ties).

Defaults follow ``mvp_sspro.py`` (``--max_inferences`` 4, also the UI-TARS-1.5 and GTA1
scripts; the Qwen3-VL scripts pass 2, the README's Qwen3-VL-32B row among them).

Deviations. The attention pass needs the model's internals (query and key states of one layer),
which a served model does not expose: a model offering ``attention`` (:class:`AttentionModel`)
is asked for the positions; any other gets the code's grid fallback, which is then what runs
(noted in the result): so over HTTP this is grid views plus the grouping, not the paper's
attention-guided views. Grounding requests use the model adapter's own prompt, not the code's
``SYSTEM_PROMPT`` (the "(x,y)" locator prompt, ``mvp_sspro.py`` lines 22-29; a model's
prompt is its adapter's, ``prompts/SOURCES.md``). Points map back exactly (no integer
truncation of the view's or the screenshot's coordinates); a view with no parsable point
adds nothing (as the Qwen3-VL script; the UI-TARS script scores such an answer as (0, 0)).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from PIL import Image

from ..geometry import Box, Point
from ..model import ModelReply, Query, Usage
from ..views import View, ViewSource
from .base import BaseStrategy, box_inside, first_point, full_box, ground_view, view_source
from .protocol import Ledger, StrategyResult


@runtime_checkable
class AttentionModel(Protocol):
    """A model that can say where its answer looks (MVP's view proposal): the centres, in
    pixels of ``image``, of the ``top_k`` image tokens its answer's coordinate separator
    attends to most, most first, and what the pass cost. An in-process model can; a served
    one cannot."""

    async def attention(self, image: Image.Image, query: Query, top_k: int) -> tuple[list[Point], Usage]: ...


@dataclass
class Magnified:
    """A view source showing every box at ``scale`` times its own pixels (MVP's 2x views),
    whatever target the caller names."""

    inner: ViewSource
    scale: float

    async def view(self, box: Box, target: tuple[int, int]) -> View:
        return await self.inner.view(box, (round(box.width * self.scale), round(box.height * self.scale)))


def ranked_windows(
    positions: list[Point], size: tuple[int, int], window: tuple[float, float], n: int
) -> list[tuple[Box, int]]:
    """The code's windows around attended positions: (box, coverage), most covering first,
    one per integer box, at most ``n``."""
    bounds = full_box(size)
    scored = []
    for p in positions:
        b = box_inside(p, window[0], window[1], bounds)
        covered = sum(b.left <= q.x <= b.right and b.top <= q.y <= b.bottom for q in positions)
        scored.append((Box(int(b.left), int(b.top), int(b.right), int(b.bottom)), covered))
    scored.sort(key=lambda s: -s[1])
    out: list[tuple[Box, int]] = []
    for box, covered in scored:
        if len(out) < n and all(box != b for b, _ in out):
            out.append((box, covered))
    return out


def grid_windows(size: tuple[int, int], n: int) -> list[tuple[Box, int]]:
    """The code's fallback views: ``n`` grid cells, row by row, coverage 0."""
    if n <= 0:
        return []
    w, h = size
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    cw, ch = w // cols, h // rows
    cells = [
        Box(j * cw, i * ch, w if j == cols - 1 else (j + 1) * cw, h if i == rows - 1 else (i + 1) * ch)
        for i in range(rows)
        for j in range(cols)
    ]
    return [(c, 0) for c in cells[:n]]


def agreeing_groups(points: list[Point], threshold: float) -> list[list[int]]:
    """Indices of ``points`` in groups whose members are all within ``threshold`` of each other
    on both axes, formed greedily in order; largest group first (stable)."""
    groups: list[list[int]] = []
    taken: set[int] = set()
    for i in range(len(points)):
        if i in taken:
            continue
        group = [i]
        for j in range(i + 1, len(points)):
            a = points[j]
            if j not in taken and all(
                abs(a.x - points[k].x) <= threshold and abs(a.y - points[k].y) <= threshold for k in group
            ):
                group.append(j)
        taken.update(group)
        groups.append(group)
    return sorted(groups, key=len, reverse=True)


def choose(points: list[Point], coverage: list[int], threshold: float) -> tuple[int | None, list[list[int]]]:
    """(index of the answer, the groups): the best group scores highest on size + mean
    coverage / 1000, the first on ties; its answer is its most covering member, the first on ties."""
    groups = agreeing_groups(points, threshold)
    best = max(groups, key=lambda g: len(g) + sum(coverage[i] for i in g) / len(g) / 1000, default=[])
    return max(best, key=lambda i: coverage[i], default=None), groups


@dataclass
class MVP(BaseStrategy):
    name = "mvp"
    paper = "MVP: Multiple View Prediction Improves GUI Grounding (CVPR 2026; code ZJUSCL/MVP)"
    call_budget = "views (4) magnified crops (+1 attention pass for a model that offers one)"
    requires = "views >= 0, top_k >= 1, threshold >= 0, scale >= 1, window > 0"

    views: int = 4
    top_k: int = 100
    window: tuple[float, float] = (1288.0, 728.0)
    scale: float = 2.0
    threshold: float = 14.0

    async def answer(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str, views: ViewSource | None
    ) -> StrategyResult:
        model, size = ledger.model, screenshot.size
        full = await first_point(ledger, model, screenshot, instruction)
        windows: list[tuple[Box, int]] = []
        if self.views and isinstance(model, AttentionModel):
            attended: list[Point] = []

            async def attend() -> ModelReply:
                positions, usage = await model.attention(screenshot, Query(instruction), self.top_k)
                attended.extend(positions)
                return ModelReply("", usage=usage)

            await ledger.call("attention", screenshot, attend())
            windows = ranked_windows(attended, size, self.window, self.views)
            ledger.step(stage="attention", positions=attended)
        if self.views and not windows:
            windows = grid_windows(size, self.views)
            ledger.note("no attention positions (a served model gives none): the code's grid views")
        source = Magnified(view_source(model, screenshot, views, "fill", max_zoom=self.scale), self.scale)
        found = await asyncio.gather(
            *(
                ground_view(ledger, model, source, screenshot, box, instruction, "native", f"view[{i}]")
                for i, (box, _) in enumerate(windows)
            )
        )
        preds = [(full, 0)] if full is not None else []
        preds += [(p, c) for (p, _), (_, c) in zip(found, windows, strict=True) if p is not None]
        points = [p for p, _ in preds]
        pick, groups = choose(points, [c for _, c in preds], self.threshold)
        ledger.result.candidates = list(dict.fromkeys(points))
        ledger.step(
            stage="group",
            windows=[b for b, _ in windows],
            coverage=[c for _, c in windows],
            points=[p for p, _ in found],
            groups=[[points[i] for i in g] for g in groups],
            point=points[pick] if pick is not None else None,
        )
        return ledger.finish(points[pick] if pick is not None else None)
