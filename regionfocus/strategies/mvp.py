"""MVP (Multi-View Prediction): ground the full screenshot and a few 2x-magnified views of where
the model looks, group the points that agree, and answer from the largest group. Two entries:
``mvp``, the published method (views from the model's attention: an in-process model), and
``mvp-grid``, the same grouping over the code's fallback grid views (any model, served ones
included): not the paper's method, and never reported under its name.

Paper: Y. Zhang et al., "MVP: Multiple View Prediction Improves GUI Grounding", CVPR 2026,
arXiv:2512.08529. Code: ZJUSCL/MVP, commit 988ff3c61b9f7632d780ae27c83260de75b3c95f,
``mvp_sspro.py`` (UI-TARS-1.5, GTA1) and ``eval_sspro_qwen3vl_official.py`` (Qwen3-VL).
What that code does, kept here:

- the full-image point, coverage 0;
- view proposal (``get_top_attention_regions``, ``mvp_sspro.py`` lines 46-147, with the model
  fork's capture in ``qwen2_5_vl/modeling_qwen2_5_vl.py`` lines 1550-1565 and 2022-2037): one
  more greedy answer on the full image; at decoder layer ``--attn_layer`` (20 in
  ``eval_uitars_1_5.sh`` and ``eval_gta1.sh``), the query of the decoding step that reads the
  answer's ``,`` back (``--target_token_id ","``) against every key, softmax, maximum over
  heads, the image tokens; the ``top_k`` = 100 most attended tokens' cell centres; around each,
  a 1288 x 728 window (``rank_regions_by_coverage``, lines 149-217: shifted inside the
  screenshot, no larger than it) whose coverage is how many of those centres it holds; windows
  by coverage, most first, duplicates (same integer box) dropped, the first ``views`` kept.
  The code's fallback (``get_default_subimage_regions``, lines 219-256) when the image tokens
  cannot be found: a grid of ``views`` cells (ceil(sqrt(n)) columns, row by row, the last column
  and row reaching the edge), coverage 0;
- each window cropped, upsampled 2x, grounded, mapped back to screenshot pixels;
- grouping: in order (full image first, then the windows by rank), a point joins the first
  group whose every member is within ``threshold`` = 14 px on both axes (the group is a
  clique), else starts one; groups by size, largest first; the best group scores highest on
  size + mean coverage / 1000 (the first on ties); its answer is its member with the highest
  coverage (the first on ties).

Defaults follow ``mvp_sspro.py`` (``--max_inferences`` 4, also the UI-TARS-1.5 and GTA1
scripts; the Qwen3-VL scripts pass 2, the README's Qwen3-VL-32B row among them).

The requests, as that code sends them to every model it runs (UI-TARS-1.5, GTA1, Qwen3-VL): its
``SYSTEM_PROMPT`` (``mvp_sspro.py`` lines 22-29, the same in ``eval_sspro_qwen3vl_official.py``
21-28; ``prompts/mvp_system.txt``) with the height and width of the image sent, then the image
and the instruction; the image resized by the family's factor within ``min_pixels`` 3136 and
``max_pixels`` 4096 x 2160 (the processor the scripts load, lines 813-817); greedy, at most 32
new tokens (lines 88 and 316); the answer's first "(x, y)" (``extract_coordinates``, lines
258-264) in the family's frame. The full-image point is such a request of its own (the code's
step 1), not the baseline's; the attention pass is the same request again, whose answer's
"," the pass reads. A model that cannot send another request than its family's
(:class:`~.protocol.PromptableModel`; the adapters can) keeps its own, and the baseline's point,
noted. The attention layer is the backend's (``--attention-layer``: 20 for UI-TARS-1.5 and GTA1;
the Qwen3-VL scripts use 24 for 8B and 48 for 32B).

Where it runs. The attention pass needs the model's internals (one layer's queries and keys),
which a served model does not expose. A model offering ``attention`` (:class:`AttentionModel`:
the VLM adapters over the in-process transformers backend, which implements the pass) runs
``mvp``; for any other ``mvp`` refuses to start (:meth:`MVP.unfit`: the CLI exits before any
call, naming ``mvp-grid``), so no table reports the grid form as MVP. An attention pass that
finds no step to read (the answer holds no ",") or fails is that sample's error: the sample is
recorded as failed for ``mvp`` (the code has no views there either: its captured states are
empty), so a run whose answers never hold the separator fails on every sample, loudly, instead
of running the grid under MVP's name.

Deviations. The attention pass reads the last "," of the answer the model read back (so one
followed by another token), as the code's capture does. Points map back exactly (no integer
truncation of the view's or the screenshot's coordinates; a decimal answer is read as its
number, where the code's ``int()`` fails and scores (0, 0)); a view with no parsable point adds
nothing (as the Qwen3-VL script; the UI-TARS script scores such an answer as (0, 0)); a 0-1000
family's answer is read as 0-1000 throughout (the Qwen3-VL script reads two numbers of at most 10
as fractions and refuses numbers past 1000). ``mvp-grid`` sends the same requests.
"""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from PIL import Image

from ..geometry import Box, Point
from ..model import ModelReply, Query, Usage
from ..views import View, ViewSource
from .base import BaseStrategy, first_point, ground_full, ground_view, strategy_prompt, view_source
from .protocol import Ledger, OwnPrompt, PromptableModel, StrategyResult

# ``extract_coordinates`` (mvp_sspro.py lines 258-264): the first "(x, y)" of the answer.
_XY = re.compile(r"\((-?\d*\.?\d+),\s*(-?\d*\.?\d+)\)")


def read_xy(text: str) -> tuple[float, float] | None:
    """The answer's first "(x, y)", as MVP's code finds it (read as numbers, not truncated)."""
    m = _XY.search(text)
    return (float(m.group(1)), float(m.group(2))) if m else None


# MVP's requests, as its code sends them to every model (module docstring).
MVP_PROMPT = OwnPrompt(
    system=strategy_prompt("mvp_system.txt"),
    reader=read_xy,
    min_pixels=3136,
    max_pixels=4096 * 2160,
    max_tokens=32,
)


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


def attended_window(p: Point, size: tuple[int, int], window: tuple[float, float]) -> Box:
    """The code's window around ``p``: ``window`` (no larger than the image) from ``p`` less half
    of it, clipped at the far edges and then grown back toward the near ones; float edges."""
    w, h = size
    sw, sh = min(window[0], w), min(window[1], h)
    left, top = max(0, p.x - sw / 2), max(0, p.y - sh / 2)
    right, bottom = min(w, left + sw), min(h, top + sh)
    # The code's own arithmetic, kept so its windows and coverages come out bit for bit.
    if right - left < sw:
        if left == 0:
            right = sw
        else:
            left = right - sw
    if bottom - top < sh:
        if top == 0:
            bottom = sh
        else:
            top = bottom - sh
    return Box(left, top, right, bottom)


def ranked_windows(
    positions: list[Point], size: tuple[int, int], window: tuple[float, float], n: int
) -> list[tuple[Box, int]]:
    """The code's windows around attended positions: (integer box, coverage: how many positions
    the float window holds, edges included), most covering first (stable), one per integer
    box, at most ``n``."""
    scored = []
    for p in positions:
        b = attended_window(p, size, window)
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
    paper = (
        "MVP: Multiple View Prediction Improves GUI Grounding (CVPR 2026; code ZJUSCL/MVP): "
        "attention-guided views, in-process models only (--backend hf); served models: mvp-grid"
    )
    call_budget = "1 full-image request + 1 attention pass + views (4) magnified crops"
    protocol = (
        "mvp_sspro.py as run for UI-TARS-1.5-7B (41.9 -> 56.1): MVP's own (x,y) system prompt to "
        "every family, coordinates in the family's frame, images at most 4096x2160 (min 3136 px), "
        "32 new tokens, attention at the backend's layer (--attention-layer; 20 there, the "
        "Qwen3-VL scripts 24 or 48), 1 image per request, no reruns (a sample without an attention "
        "step fails); harness: in-process transformers (the code: transformers 4.51.2 with its "
        "model fork)"
    )
    requires = "views >= 0, top_k >= 1, threshold >= 0, scale >= 1, window > 0"
    # Where the views come from: "attention" (the paper's), or "grid" (the code's fallback cells).
    proposal = "attention"

    views: int = 4
    top_k: int = 100
    window: tuple[float, float] = (1288.0, 728.0)
    scale: float = 2.0
    threshold: float = 14.0

    @classmethod
    def unfit(cls, model: object) -> str | None:
        """Why this strategy cannot run on ``model`` (None: it can), for a harness to say before
        any call: the attention views need a model that offers the attention pass."""
        if cls.proposal != "attention" or isinstance(model, AttentionModel):
            return None
        return (
            "MVP's attention-guided views need the attention pass of an in-process model "
            "(--backend hf); this model has none (a served model exposes no attention). "
            "Run --strategy mvp-grid for MVP's grouping over the official code's grid views"
        )

    async def windows(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str
    ) -> list[tuple[Box, int]]:
        """The views to ground, ranked, with their coverage."""
        if not self.views:
            return []
        if self.proposal == "grid":
            ledger.step(stage="views", proposal="grid")
            return grid_windows(screenshot.size, self.views)
        model = ledger.model
        reason = self.unfit(model)
        if reason is not None:
            raise ValueError(f"{self.name}: {reason}")
        attended: list[Point] = []

        async def attend() -> ModelReply:
            positions, usage = await model.attention(screenshot, Query(instruction), self.top_k)
            attended.extend(positions)
            return ModelReply("", usage=usage)

        slot = ledger.reserve("attention")
        if await ledger.call("attention", screenshot, attend(), slot=slot) is None:
            # No views without the pass (the grid is another method, mvp-grid): the sample's error.
            raise RuntimeError(
                f"{self.name}: the attention pass gave no views ({ledger.result.calls[slot].error}); "
                "MVP's views come from it (--strategy mvp-grid runs the code's grid views)"
            )
        ledger.step(stage="attention", positions=attended)
        ledger.step(stage="views", proposal="attention")
        return ranked_windows(attended, screenshot.size, self.window, self.views)

    async def answer(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str, views: ViewSource | None
    ) -> StrategyResult:
        if isinstance(ledger.model, PromptableModel):
            # Every call is MVP's own request, costed at the size it sends.
            ledger.model = ledger.model.prompted(MVP_PROMPT)
            full = await ground_full(ledger, ledger.model, screenshot, instruction, "full")
        else:
            ledger.note(
                "ran with the model's own grounding prompt, not MVP's (it takes no other): "
                "the full-image point is the baseline's"
            )
            full = await first_point(ledger, ledger.model, screenshot, instruction)
        model = ledger.model
        windows = await self.windows(ledger, screenshot, instruction)
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


@dataclass
class MVPGrid(MVP):
    """MVP's grouping over the official code's fallback grid views: what runs on a model without
    the attention pass (a served one). Not the paper's method, so not under its name."""

    name = "mvp-grid"
    paper = (
        "MVP's grouping over the official code's grid fallback views, no attention pass (code "
        "ZJUSCL/MVP get_default_subimage_regions): for served models; not the paper's method"
    )
    call_budget = "1 full-image request + views (4) magnified grid cells"
    protocol = ""
    proposal = "grid"
