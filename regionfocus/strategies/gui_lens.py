"""GUI-Lens: the model zooms itself in. OCR and UI-element hints are listed beside every crop; each
round the model names the next, smaller crop, a commit gate checks that the target is still
inside, and on the last crop the model clicks; a review on wider crops may keep or move the click.

Code: Fzkuji/GUI-Agent-Harness (MIT), commit 23e75e00db54486c6f3baf155979ad0f12471172,
``gui_harness/planning/screenspot_locator.py`` (``_iterative_zoom_locate`` and the functions it
calls), ``gui_harness/planning/active_localization.py`` (``build_candidates``,
``_candidate_relevance``), ``gui_harness/planning/component_memory.py`` (``locate_target``: the
hints of the whole screenshot) and ``benchmarks/screenspot_pro/run_screenspot_pro.py`` (task =
target = the instruction), with the ScreenSpot-Pro configs in
``benchmarks/screenspot_pro/configs/``. What that code does, kept here:

- hints: OCR lines (at most 160) then detections (at most 120, most confident first) of the
  whole screenshot, a box overlapping a kept one at IoU > 0.82 dropped, at most 240;
- per round (``rounds`` = 8), up to 1 + ``crop_retry_limit`` (6) attempts on the current crop,
  shown at the display scale of ``scale_mode`` ("preserve": native pixels, a crop whose short
  side is under 512 px enlarged up to 5x; "fill": every crop enlarged or shrunk to a long side
  of ``max_side``); the crop request (official rules, the task, the crop's place in the
  screenshot, the staged guidance by committed crops, the last 8 decisions, the last 6
  rejections, the hints touching the crop ranked by their match to the target, numbered z0..)
  asks for ``crop`` with a bbox in displayed pixels, ``final`` or ``recrop``;
- ``recrop`` (or an invalid answer) backs out to the last wider crop; ``final`` before any
  committed crop is refused while the gate is on; a bbox is mapped back, padded 8 %, grown to
  240 x 80 px, in the first two committed stages grown to 20 % / 8 % of the current crop, and
  must be smaller than it; the commit gate (a magenta rectangle on the crop, the hints inside
  and outside it) accepts only with ``target_inside`` and ``context_sufficient`` and no
  ``discarded_plausible_targets``; a rejected proposal is retried, after the last attempt the
  crop widens; the loop stops at ``final``, at a crop of 240 px width or 80 px height or less,
  or after the last round;
- final clicks on the current crop, then the wider crops of the history, then the whole
  screenshot (the first ``final_recrop_limit``; 0 = all), each enlarged (short side 640 px, up
  to 8x) with the hints of the screenshot and of the crop read anew: an x, y in displayed pixels
  (or a hint's id), ``recrop`` for the next; the review (``final_recheck``) sees the final crop
  and up to 3 wider ones and keeps the click or replaces it with a point on one of them (never
  an editable control by a passive label on an adjust-like instruction);
- when every final click fails: the centre of the deepest committed crop (``keep_best``).

Presets (``config=``): "sspro_stack_zoom" (default; the design-ablation "full" arm, 88.7 % for
GPT-5.5 on 300 samples), "legacy_baseline" (the config of GPT-5.5's 87.9 % on all 1581 samples:
fill scaling, the legacy prompt order, no ranking of hints, an 85 % area cap, all final boxes)
and "sspro_stack_zoom_claude2000" (Claude Opus 4.7's 82.3 %: crops shown at most 2000 px long,
no gate); the last two are also registered on their own, ``gui-lens-legacy`` and
``gui-lens-claude``, so ``--strategy`` reaches them. Any field of :class:`LensConfig` can be
changed with ``dataclasses.replace``.

The protocol. Every request above is free text with JSON answers: a model offering ``chat``
(:class:`~regionfocus.strategies.protocol.ChatModel`) gets the official texts exactly
(``prompts/gui_lens/``); every crop is rendered straight at the size the model sees
(``input_size``), so its pixels are the frame of the answer, and a family that writes 0-1000
gets the official normalised-coordinate override (``coords="normalized"``; the ScreenSpot-Pro
harness sets it from the adapter). The hints come from ``hints`` (a callable: image -> list of
:class:`~regionfocus.strategies.gui_lens_text.Hint`, run in a thread); the harness supplies the
project's OCR and UI-element detector (``adapters/perception``); without one the strategy runs,
every evidence list reads "(none)", and the result says so. A model without ``chat`` (the OCR
agent) cannot read these prompts: each step becomes the grounding protocol's request for it
(crop: ``propose_box`` on the crop; gate: ``act`` on the proposed crop, accepted when it finds a
point; final click: ``act``; review: ``judge`` of the click, then ``act`` on the next wider crop
when the judge says no), hints unused, and a refused attempt is not asked again (the same request
gets the same answer); the result notes it.

Deviations. The rules and the request are one text (the code sends them as two content blocks,
the rules marked for the prompt cache); the image goes where the model's adapter puts it (there:
after the text). The review attaches all its crops to a model offering ``chat_images``
(:class:`MultiImageChat`); through ``chat`` (one image) only the final crop is attached and
listed (noted). Crops are resampled once with Lanczos to the size the model sees; their scale is
kept per axis (the prompts print the horizontal one, as the code prints its single scale).
The gate's magenta rectangle of a 0-1000 answer is drawn where it points (the code draws the
raw numbers as pixels). Not reproduced: the knobs every published ScreenSpot-Pro config leaves
off (reasoning-first, crop-local coordinates, accumulated context, refusal, the final verifier,
candidate de-duplication, "target_pixels" scaling, the legacy crop-first pipeline), the
UI-Vision "element" prompts, a target string's own "(x, y)" taken as the answer, the runner's
post-hoc snap of red/yellow swatch instructions to a coloured blob, and the per-call 180 s
timeout (the backend's timeouts apply). A call that fails counts as the code counts an
exception there. When nothing is found the baseline stands (there: no answer); the baseline
itself is not used.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from PIL import Image, ImageDraw

from ..checks import require
from ..geometry import Box, Point, ViewTransform
from ..model import GroundingModel, ModelReply, Query, Verdict
from ..resample import lanczos
from ..stars import mark_for_model
from ..views import ViewSource
from .base import BaseStrategy, reply_point
from .gui_lens_text import (
    Candidate,
    Frame,
    Hint,
    IBox,
    action_of,
    breaks_control_type,
    build_candidates,
    candidate_lines,
    flag,
    history_lines,
    number,
    partition_lines,
    quad,
    read_json,
    rejection_lines,
    scale_line,
    stage_guidance,
    text,
)
from .protocol import ChatModel, Ledger, StrategyResult

Hints = Callable[[Image.Image], Sequence[Hint]]
_BACK_OUT = {"recrop", "restart", "widen", "fail"}


@runtime_checkable
class MultiImageChat(Protocol):
    """A model that takes several images in one free-form request (the review's crops)."""

    async def chat_images(self, images: Sequence[Image.Image], text: str) -> ModelReply: ...


@dataclass(frozen=True)
class LensConfig:
    """The official ``ScreenSpotLocatorConfig`` fields GUI-Lens runs with (their names without
    ``iterative_``/``enable_``); defaults are ``configs/sspro_stack_zoom.yaml``."""

    rounds: int = 8
    scale_mode: str = "preserve"
    max_side: int = 0
    max_scale: float = 5.0
    min_short_side: int = 512
    min_scale: float = 1.0
    final_max_side: int = 0
    final_max_scale: float = 8.0
    final_min_short_side: int = 640
    final_min_scale: float = 1.0
    prompt_layout: str = "cache"
    candidate_limit: int = 60
    candidate_sort: str = "relevance"
    max_area_pct: int = 0
    padding_pct: int = 8
    min_width: int = 240
    min_height: int = 80
    final_candidates: int = 80
    stage1_min_area_pct: int = 20
    stage2_min_area_pct: int = 8
    staged_crop: bool = True
    crop_check: bool = True
    crop_check_mode: str = "every"
    crop_check_reject_mode: str = "widen"
    crop_retry: bool = True
    crop_retry_limit: int = 6
    final_candidate_detect: bool = True
    final_recheck: bool = True
    final_recrop: bool = True
    final_recrop_limit: int = 3
    exhaustion_fallback: str = "keep_best"

    name = "gui-lens config"

    def __post_init__(self) -> None:
        require(
            self,
            "rounds >= 1, max_side >= 0, max_scale >= 0, min_short_side >= 0, min_scale >= 0, "
            "final_max_side >= 0, final_max_scale >= 0, final_min_short_side >= 0, "
            "final_min_scale >= 0, candidate_limit >= 0, max_area_pct >= 0, padding_pct >= 0, "
            "min_width >= 1, min_height >= 1, final_candidates >= 0, crop_retry_limit >= 0, "
            "final_recrop_limit >= 0, stage1_min_area_pct >= 0, stage2_min_area_pct >= 0",
        )
        for key, allowed in (
            ("scale_mode", ("preserve", "fill")),
            ("prompt_layout", ("cache", "legacy")),
            ("candidate_sort", ("none", "relevance", "confidence")),
            ("crop_check_mode", ("every", "last_only", "off")),
            ("crop_check_reject_mode", ("widen", "restart_full")),
            ("exhaustion_fallback", ("none", "keep_best")),
        ):
            if getattr(self, key) not in allowed:
                raise ValueError(
                    f"gui-lens: {key} must be one of {', '.join(allowed)}, got {getattr(self, key)!r}"
                )


PRESETS: dict[str, LensConfig] = {
    "sspro_stack_zoom": LensConfig(),
    "legacy_baseline": LensConfig(
        scale_mode="fill",
        prompt_layout="legacy",
        max_side=2048,
        min_scale=0.1,
        final_max_side=4096,
        final_min_scale=0.1,
        max_area_pct=85,
        candidate_sort="none",
        final_recrop_limit=0,
        exhaustion_fallback="none",
    ),
    "sspro_stack_zoom_claude2000": LensConfig(
        max_side=2000, min_scale=0.3, final_max_side=2000, final_min_scale=0.3, crop_check_mode="off"
    ),
}


# ------------------------------------------------------------------ geometry (the official code's)
def _area(b: Sequence[int]) -> int:
    return max(0, int(b[2]) - int(b[0])) * max(0, int(b[3]) - int(b[1]))


def _clamp(b: Sequence[float], w: int, h: int) -> IBox:
    x1, y1, x2, y2 = (int(v) for v in b)
    return [max(0, x1), max(0, y1), min(w, x2), min(h, y2)]


def display_scale(
    w: int, h: int, mode: str, max_side: int, max_scale: float, short: int, floor: float
) -> float:
    """``_render_iterative_crop``'s scale for a ``w`` x ``h`` crop."""
    floor = floor if floor and floor > 0 else 0.1
    if mode == "fill":
        cap = float(max_scale) if max_scale > 0 else math.inf
        if max_side > 0:
            cap = min(cap, max_side / max(w, h))
        scale = cap if cap != math.inf else 1.0
        if short > 0:
            scale = min(cap, max(scale, short / min(w, h)))
        return max(floor, scale)
    scale = 1.0
    if short > 0:
        scale = max(scale, short / min(w, h))
    if max_scale > 0:
        scale = min(scale, float(max_scale))
    if max_side > 0:
        scale = min(scale, max_side / max(w, h))
    return max(floor, scale)


def expand_to_area(box: IBox, parent: IBox, min_area: float) -> IBox:
    """``_expand_box_to_min_area``: grow ``box`` about its centre to ``min_area`` inside ``parent``."""
    if min_area <= 0 or _area(box) >= min_area:
        return box
    pw, ph = max(1, parent[2] - parent[0]), max(1, parent[3] - parent[1])
    width, height = max(1, box[2] - box[0]), max(1, box[3] - box[1])
    factor = (min_area / max(1, width * height)) ** 0.5
    nw = min(pw, max(width, int(round(width * factor))))
    nh = min(ph, max(height, int(round(height * factor))))
    cx, cy = (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0
    x1 = max(parent[0], min(int(round(cx - nw / 2.0)), parent[2] - nw))
    y1 = max(parent[1], min(int(round(cy - nh / 2.0)), parent[3] - nh))
    return [x1, y1, x1 + nw, y1 + nh]


def stage_min_area_pct(stage: int, c: LensConfig) -> int:
    if not c.staged_crop:
        return 0
    return max(0, (c.stage1_min_area_pct, c.stage2_min_area_pct, 0)[min(stage, 2)])


def next_box(
    bbox: Sequence[float], f: Frame, size: tuple[int, int], c: LensConfig, stage: int
) -> IBox | None:
    """``_iterative_next_box``: a proposed bbox (displayed pixels, or 0-1000 of the display)
    as the next crop in screenshot pixels, or None when it fails the geometric checks."""
    dx1, dy1, dx2, dy2 = bbox
    if dx2 <= dx1 or dy2 <= dy1:
        return None
    x1, y1, x2, y2 = f.box
    w, h = size
    if f.normalized and max(dx1, dy1, dx2, dy2) <= 1000:
        cw, ch = x2 - x1, y2 - y1
        nb = [x1 + dx1 / 1000.0 * cw, y1 + dy1 / 1000.0 * ch, x1 + dx2 / 1000.0 * cw, y1 + dy2 / 1000.0 * ch]
    else:
        nb = [x1 + dx1 / f.sx, y1 + dy1 / f.sy, x1 + dx2 / f.sx, y1 + dy2 / f.sy]
    box = [int(round(v)) for v in nb]
    pad_x = int(round(max(1, box[2] - box[0]) * c.padding_pct / 100.0))
    pad_y = int(round(max(1, box[3] - box[1]) * c.padding_pct / 100.0))
    box = _clamp([box[0] - pad_x, box[1] - pad_y, box[2] + pad_x, box[3] + pad_y], w, h)
    if box[2] - box[0] < c.min_width:
        cx = (box[0] + box[2]) // 2
        box[0] = cx - c.min_width // 2
        box[2] = box[0] + c.min_width
    if box[3] - box[1] < c.min_height:
        cy = (box[1] + box[3]) // 2
        box[1] = cy - c.min_height // 2
        box[3] = box[1] + c.min_height
    box = _clamp(box, w, h)
    pct = stage_min_area_pct(stage, c)
    if pct > 0:
        box = _clamp(expand_to_area(box, list(f.box), _area(f.box) * pct / 100.0), w, h)
    if box[2] <= box[0] or box[3] <= box[1] or _area(box) >= _area(f.box):
        return None
    if c.max_area_pct > 0 and _area(box) > _area(f.box) * c.max_area_pct / 100.0:
        return None
    return box


def restart_box(current: IBox, history: Sequence[dict[str, Any]], size: tuple[int, int]) -> IBox:
    """``_iterative_restart_box``: the latest crop of the history wider than ``current``."""
    for e in reversed(history):
        b = e.get("crop_box")
        if isinstance(b, list) and len(b) == 4 and _area(b) > _area(current):
            return _clamp(b, *size)
    return [0, 0, size[0], size[1]]


def final_boxes(current: IBox, history: Sequence[dict[str, Any]], size: tuple[int, int]) -> list[IBox]:
    """``_iterative_final_box_candidates``: the current crop, the history's crops and
    fall-backs newest first, then the whole screenshot; each once."""
    out: list[IBox] = []
    for b in (
        current,
        *(x for e in reversed(history) for x in (e.get("crop_box"), e.get("fallback_box"))),
        None,
    ):
        b = [0, 0, size[0], size[1]] if b is None else b
        if not isinstance(b, list) or len(b) != 4:
            continue
        b = _clamp(b, *size)
        if b[2] > b[0] and b[3] > b[1] and b not in out:
            out.append(b)
    return out


def normalize_bbox_to_display(bbox: list[float], f: Frame) -> list[float]:
    """``_normalize_bbox_to_display``: on a downscaled crop, a bbox beyond the displayed size
    (2 % slack) was written in screenshot pixels (Claude's habit); map it to the display."""
    x1, y1, x2, y2 = f.box
    dw, dh = (x2 - x1) * f.sx, (y2 - y1) * f.sy
    if max(bbox[0], bbox[2]) <= dw * 1.02 and max(bbox[1], bbox[3]) <= dh * 1.02:
        return bbox
    return [(bbox[0] - x1) * f.sx, (bbox[1] - y1) * f.sy, (bbox[2] - x1) * f.sx, (bbox[3] - y1) * f.sy]


# ------------------------------------------------------------------ displayed crops
@dataclass
class Shown:
    """A crop as the model sees it: ``image`` shows ``frame.box`` of the screenshot."""

    image: Image.Image
    frame: Frame

    @property
    def transform(self) -> ViewTransform:
        x1, y1, x2, y2 = self.frame.box
        return ViewTransform(Box(x1, y1, x2, y2), self.frame.sx, self.frame.sy)

    def to_screen(self, x: float, y: float) -> tuple[float, float]:
        return self.frame.box[0] + x / self.frame.sx, self.frame.box[1] + y / self.frame.sy


def _resample(screenshot: Image.Image, box: IBox, size: tuple[int, int]) -> Image.Image:
    crop = screenshot.crop(tuple(box)).convert("RGB")
    return crop if crop.size == size else lanczos(crop, size)


async def render(
    model: GroundingModel, screenshot: Image.Image, box: IBox, c: LensConfig, final: bool, normalized: bool
) -> Shown:
    """The crop ``box`` at the official display scale, resampled once, straight to the size the
    model sees for it (so the displayed pixels are the frame the model answers in)."""
    box = _clamp(box, *screenshot.size)
    w, h = max(1, box[2] - box[0]), max(1, box[3] - box[1])
    if final:
        s = display_scale(
            w, h, c.scale_mode, c.final_max_side, c.final_max_scale, c.final_min_short_side, c.final_min_scale
        )
    else:
        s = display_scale(w, h, c.scale_mode, c.max_side, c.max_scale, c.min_short_side, c.min_scale)
    seen = model.input_size((max(1, int(round(w * s))), max(1, int(round(h * s)))))
    image = await asyncio.to_thread(_resample, screenshot, box, seen)
    return Shown(image, Frame(tuple(box), seen[0] / w, seen[1] / h, normalized))


def _overlay(shown: Shown, bbox: list[float]) -> Image.Image:
    """``_render_crop_commit_overlay``: the proposed crop as a magenta rectangle."""
    img = shown.image.copy()
    x1, y1, x2, y2 = bbox
    if shown.frame.normalized and max(bbox) <= 1000:
        w, h = img.size
        x1, y1, x2, y2 = x1 * w / 1000, y1 * h / 1000, x2 * w / 1000, y2 * h / 1000
    draw = ImageDraw.Draw(img)
    draw.rectangle(
        [x1, y1, max(x1, x2), max(y1, y2)], outline="#ff00ff", width=max(4, round(max(img.size) / 300))
    )
    draw.text((max(0, x1 + 6), max(0, y1 + 6)), "proposed crop", fill="#ff00ff")
    return img


# ------------------------------------------------------------------ one sample
@dataclass
class _Sample:
    ledger: Ledger
    model: Any
    screenshot: Image.Image
    instruction: str
    config: LensConfig
    normalized: bool
    candidates: list[Candidate] = field(default_factory=list)
    hints: Hints | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def size(self) -> tuple[int, int]:
        return self.screenshot.size

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


def _entry(r: int, a: int, action: str, shown: Shown, parsed: dict[str, Any]) -> dict[str, Any]:
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


async def read_hints(s: _Sample, image: Image.Image, where: str, limit: int = 240) -> list[Candidate]:
    """The candidates of ``image`` (boxes in its pixels) from the sample's hint provider."""
    if s.hints is None:
        return []
    try:
        found = await asyncio.to_thread(s.hints, image)
    except Exception as e:  # noqa: BLE001 - perception is optional evidence, as in the code
        s.ledger.note(f"hints failed on the {where} ({type(e).__name__}: {e}): none used there")
        return []
    out = build_candidates(found, limit)
    s.ledger.step(stage="hints", where=where, read=len(found), candidates=len(out))
    return out


def _trace_box(b: Sequence[int] | None) -> Box | None:
    return Box(*b) if b else None


@dataclass
class GuiLens(BaseStrategy):
    name = "gui-lens"
    paper = "GUI-Lens iterative zoom (GUI-Agent-Harness, code Fzkuji/GUI-Agent-Harness @ 23e75e0)"
    call_budget = (
        "per round 1-7 crop requests, each with a gate (8 rounds), then 1-3 final clicks, each "
        "reviewed; ~10-16 typical"
    )
    needs_planner = True  # it talks to the grounder in free text (its chat)
    ignores_views = "GUI-Lens crops the screenshot at the official display scales"

    config: LensConfig | str = "sspro_stack_zoom"
    hints: Hints | None = None
    coords: str = "pixels"

    def __post_init__(self) -> None:
        if isinstance(self.config, str):
            if self.config not in PRESETS:
                raise ValueError(f"gui-lens: unknown config {self.config!r}; known: {', '.join(PRESETS)}")
            self.config = PRESETS[self.config]
        if not isinstance(self.config, LensConfig):
            raise ValueError(f"gui-lens: config must be a preset name or a LensConfig, got {self.config!r}")
        if self.coords not in ("pixels", "normalized"):
            raise ValueError(f"gui-lens: coords must be 'pixels' or 'normalized', got {self.coords!r}")
        super().__post_init__()

    async def answer(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str, views: ViewSource | None
    ) -> StrategyResult:
        s = _Sample(ledger, ledger.model, screenshot, instruction, self.config, self.coords == "normalized")
        ledger.step(stage="config", **asdict(self.config), coords=self.coords)
        if isinstance(s.model, ChatModel):
            s.hints = self.hints
            if self.hints is None:
                ledger.note(
                    "ran with no OCR/UI-element hints (none given): every evidence list reads '(none)'"
                )
            s.candidates = await read_hints(s, screenshot, "screenshot")
            point = await _ChatLens(s).locate()
        else:
            ledger.note(
                "ran with the grounding protocol (the model takes no free-text prompt): crop = "
                "propose_box, gate = act in the proposed crop, click = act, review = judge then act "
                "on the next wider crop; hints unused; a refused attempt is not asked again"
            )
            point = await _GroundLens(s).locate()
        return ledger.finish(point)


@dataclass
class GuiLensLegacy(GuiLens):
    """GUI-Lens with the config of GPT-5.5's 87.9 % on all of ScreenSpot-Pro (``legacy_baseline``)."""

    name = "gui-lens-legacy"
    paper = "GUI-Lens, config legacy_baseline (GPT-5.5's 87.9 %; Fzkuji/GUI-Agent-Harness @ 23e75e0)"
    call_budget = GuiLens.call_budget.replace("1-3 final clicks", "every final box (all) clicked")

    config: LensConfig | str = "legacy_baseline"


@dataclass
class GuiLensClaude(GuiLens):
    """GUI-Lens with the config of Claude Opus 4.7's 82.3 % (``sspro_stack_zoom_claude2000``)."""

    name = "gui-lens-claude"
    paper = (
        "GUI-Lens, config sspro_stack_zoom_claude2000 (Claude Opus 4.7's 82.3 %; "
        "Fzkuji/GUI-Agent-Harness @ 23e75e0)"
    )
    call_budget = "per round 1-7 crop requests, no gate (8 rounds), then 1-3 final clicks, each reviewed"

    config: LensConfig | str = "sspro_stack_zoom_claude2000"


# ------------------------------------------------------------------ the official protocol, in text
class _ChatLens:
    def __init__(self, s: _Sample):
        self.s = s

    async def ask(self, kind: str, image: Image.Image, prompt: str) -> tuple[dict[str, Any] | None, str]:
        """(the answer's JSON object, why there is none) for one request."""
        reply = await self.s.ledger.call(kind, image, self.s.model.chat(image, prompt))
        if reply is None:
            return None, f"ModelCallError: {self.s.ledger.result.calls[-1].error}"
        parsed = read_json(reply.text)
        return parsed, "" if parsed is not None else "ValueError: no JSON object in the reply"

    def crop_prompt(self, r: int, a: int, attempts: int, shown: Shown, rejected: list[dict]) -> str:
        s, c = self.s, self.s.config
        stage = s.committed()
        lines, _ = candidate_lines(
            s.candidates, shown.frame, c.candidate_limit, s.instruction, c.candidate_sort
        )
        frame = text("crop_frame").format(
            width=s.size[0],
            height=s.size[1],
            crop=list(shown.frame.box),
            scale_line=scale_line(shown.frame.box, shown.frame),
        )
        head = text("crop_head").format(
            task=s.instruction,
            target=s.instruction,
            frame=frame,
            round=r + 1,
            rounds=c.rounds,
            attempt=a + 1,
            attempts=attempts,
            stage=stage + 1,
            guidance=stage_guidance(stage, c.staged_crop),
            history=history_lines(s.history),
            rejections=rejection_lines(rejected),
        )
        block = text("crop_candidates").format(lines=lines or "(none)")
        intro, body = text("crop_intro"), text("crop_rules")
        if s.normalized:
            body = body + "\n\n" + text("norm_crop")
        if c.prompt_layout == "legacy":
            return head + "\n\n" + intro + "\n\n" + block + "\n\n" + body
        return intro + "\n\n" + body + "\n\n" + head + "\n\n" + block + "\n\n" + text("crop_tail")

    async def locate(self) -> Point | None:
        s, c = self.s, self.s.config
        current: IBox = [0, 0, s.size[0], s.size[1]]
        stop = False
        for r in range(c.rounds):
            rejected: list[dict[str, Any]] = []
            attempts = 1 + (c.crop_retry_limit if c.crop_retry else 0)
            for a in range(attempts):
                last = a + 1 >= attempts
                stage = s.committed()
                shown = await s.shown(current)
                parsed, why = await self.ask(
                    f"crop[r{r + 1}.{a + 1}]", shown.image, self.crop_prompt(r, a, attempts, shown, rejected)
                )
                if parsed is None:
                    rejected.append({"action": "exception", "reason": why})
                    s.ledger.step(
                        stage="crop",
                        round=r + 1,
                        attempt=a + 1,
                        crop=_trace_box(shown.frame.box),
                        action=None,
                        why=why,
                    )
                    continue
                action = action_of(parsed)
                e = _entry(r, a, action, shown, parsed)
                step = {
                    "stage": "crop",
                    "round": r + 1,
                    "attempt": a + 1,
                    "crop": _trace_box(shown.frame.box),
                    "action": action,
                }
                if action in _BACK_OUT or action not in ("crop", "final"):
                    e["fallback_box"] = restart_box(current, s.history, s.size)
                    why = parsed.get("reasoning", "") if action in _BACK_OUT else "invalid crop action"
                    rejected.append(
                        {
                            "action": action,
                            "bbox": parsed.get("bbox"),
                            "reasoning": why,
                            "fallback_box": e["fallback_box"],
                        }
                    )
                    s.ledger.step(**step, fallback=_trace_box(e["fallback_box"]))
                    if action in _BACK_OUT or last:
                        s.history.append(e)
                        current = e["fallback_box"]
                    if last:
                        break
                    continue
                if action == "final":
                    s.ledger.step(**step)
                    if c.crop_check and not any(x.get("next_box") for x in s.history):
                        rejected.append(
                            {
                                "action": action,
                                "bbox": parsed.get("bbox"),
                                "reasoning": "final requested before any committed crop",
                            }
                        )
                        if not last:
                            continue
                    s.history.append(e)
                    stop = True
                    break
                bbox = quad(parsed.get("bbox"))
                if bbox is not None and shown.frame.sx < 1.0:
                    bbox = normalize_bbox_to_display(bbox, shown.frame)
                    parsed = {**parsed, "bbox": bbox}
                nxt = next_box(bbox, shown.frame, s.size, c, stage) if bbox is not None else None
                if nxt is None:
                    e["rejected_next_box"] = parsed.get("bbox")
                    rejected.append(
                        {
                            "action": action,
                            "bbox": parsed.get("bbox"),
                            "reasoning": "bbox failed geometric checks",
                        }
                    )
                    s.ledger.step(**step, proposal=parsed.get("bbox"), next=None)
                    if not last:
                        continue
                    s.history.append(e)
                    current = restart_box(current, s.history, s.size)
                    break
                if s.check_now(r):
                    gate = await self.gate(r, a, stage, shown, bbox, nxt, parsed)
                    e["crop_check"] = gate
                    if gate["action"] != "accept":
                        rejected.append(
                            {
                                "action": "crop_check_reject",
                                "bbox": parsed.get("bbox"),
                                "reasoning": gate.get("reasoning", "crop check rejected crop"),
                            }
                        )
                        s.ledger.step(**step, proposal=bbox, next=_trace_box(nxt), gate=gate)
                        if not last:
                            continue
                        s.history.append(e)
                        full = c.crop_check_reject_mode == "restart_full"
                        current = (
                            [0, 0, s.size[0], s.size[1]] if full else restart_box(current, s.history, s.size)
                        )
                        break
                e["next_box"] = nxt
                e["area_fraction"] = (
                    round(_area(nxt) / _area(shown.frame.box), 4) if _area(shown.frame.box) else 1.0
                )
                s.history.append(e)
                s.ledger.step(**step, proposal=bbox, next=_trace_box(nxt), gate=e.get("crop_check"))
                current = nxt
                if nxt[2] - nxt[0] <= c.min_width or nxt[3] - nxt[1] <= c.min_height:
                    stop = True
                break
            if stop:
                break
        return await self.finish(current)

    async def gate(
        self, r: int, a: int, stage: int, shown: Shown, bbox: list[float], nxt: IBox, parsed: dict[str, Any]
    ) -> dict[str, Any]:
        """``_run_crop_check``: the commit gate's verdict on a proposed crop."""
        s, c = self.s, self.s.config
        inside, outside = partition_lines(s.candidates, shown.frame, nxt)
        frame = text("gate_frame").format(
            width=s.size[0],
            height=s.size[1],
            crop=list(shown.frame.box),
            scale=shown.frame.sx,
            proposal=parsed.get("bbox"),
            next=nxt,
        )
        head = text("gate_head").format(
            task=s.instruction,
            target=s.instruction,
            frame=frame,
            round=r + 1,
            attempt=a + 1,
            stage=stage + 1,
            guidance=stage_guidance(stage, c.staged_crop),
            inside=inside or "(none)",
            outside=outside or "(none)",
        )
        why = text("gate_rationale").format(
            element=parsed.get("target_visible_element", ""),
            reasoning=parsed.get("reasoning", ""),
            confidence=parsed.get("confidence", ""),
        )
        if c.prompt_layout == "legacy":
            prompt = head + "\n\n" + text("gate_rules") + "\n\n" + why + "\n\n" + text("gate_json")
        else:
            prompt = (
                text("gate_rules")
                + "\n\n"
                + text("gate_json")
                + "\n\n"
                + head
                + "\n\n"
                + why
                + "\n\n"
                + text("gate_json")
            )
        answer, failed = await self.ask(f"gate[r{r + 1}.{a + 1}]", _overlay(shown, bbox), prompt)
        if answer is None:
            return {"action": "reject", "confidence": 0.0, "reasoning": f"crop check failed: {failed}"}
        verdict = {
            "target_inside": flag(answer.get("target_inside")),
            "context_sufficient": flag(answer.get("context_sufficient")),
            "discarded_plausible_targets": flag(answer.get("discarded_plausible_targets")),
            "confidence": number(answer.get("confidence", 0)) or 0.0,
            "reasoning": answer.get("reasoning", ""),
        }
        accepted = (
            action_of(answer) == "accept"
            and verdict["target_inside"]
            and verdict["context_sufficient"]
            and not verdict["discarded_plausible_targets"]
        )
        return {"action": "accept" if accepted else "reject", **verdict}

    async def finish(self, current: IBox) -> Point | None:
        s, c = self.s, self.s.config
        boxes = final_boxes(current, s.history, s.size)
        if not c.final_recrop:
            boxes = boxes[:1]
        elif c.final_recrop_limit > 0:
            boxes = boxes[: c.final_recrop_limit]
        for i, box in enumerate(boxes):
            point = await self.click(box, i + 1, len(boxes))
            if point is not None:
                return point
        return keep_best(s, current)

    async def click(self, box: IBox, attempt: int, attempts: int) -> Point | None:
        """``_iterative_zoom_final_click``: one final click on ``box`` (None: try the next)."""
        s, c = self.s, self.s.config
        shown = await s.shown(box, final=True)
        f = shown.frame
        candidates = list(s.candidates)
        if c.final_candidate_detect and s.hints is not None:
            region = s.screenshot.crop(f.box)
            found = await read_hints(s, region, f"final crop {attempt}", limit=80)
            candidates += [x.moved(f.box[0], f.box[1]) for x in found]
        lines, scoped = candidate_lines(candidates, f, c.final_candidates, s.instruction, c.candidate_sort)
        frame = text("click_frame").format(width=s.size[0], height=s.size[1], crop=list(f.box), scale=f.sx)
        head = text("click_head").format(
            task=s.instruction,
            target=s.instruction,
            frame=frame,
            attempt=attempt,
            attempts=attempts,
            history=history_lines(s.history),
            lines=lines or "(none)",
        )
        rules = text("click_rules") + ("\n\n" + text("norm_click") if s.normalized else "")
        prompt = (
            head + "\n\n" + rules
            if c.prompt_layout == "legacy"
            else rules + "\n\n" + head + "\n\n" + text("click_tail")
        )
        parsed, why = await self.ask(f"click[f{attempt}]", shown.image, prompt)
        step = {"stage": "click", "attempt": attempt, "crop": _trace_box(f.box)}
        action = action_of(parsed) if parsed is not None else None
        if parsed is None or action != "click":
            s.ledger.step(**step, action=action, why=why or None)
            return None
        picked = str(parsed.get("candidate_id") or "").strip()
        chosen = next((cand for cid, cand in scoped if cid == picked), None) if picked else None
        lx, ly = _click_xy(parsed, s.normalized)
        x1, y1, x2, y2 = f.box
        cx = cy = None
        if s.normalized and lx is not None and ly is not None and 0 < lx <= 1000 and 0 < ly <= 1000:
            cx, cy = int(round(x1 + lx / 1000.0 * (x2 - x1))), int(round(y1 + ly / 1000.0 * (y2 - y1)))
        elif (
            lx is not None and ly is not None and 0 < lx <= shown.image.width and 0 < ly <= shown.image.height
        ):
            sx_, sy_ = shown.to_screen(lx, ly)
            cx, cy = int(round(sx_)), int(round(sy_))
        elif chosen is not None:
            cx, cy = (
                int(round((chosen.box[0] + chosen.box[2]) / 2)),
                int(round((chosen.box[1] + chosen.box[3]) / 2)),
            )
            lx, ly = (cx - x1) * f.sx, (cy - y1) * f.sy
        if cx is None or cy is None or cx <= 0 or cy <= 0 or cx > s.size[0] or cy > s.size[1]:
            s.ledger.step(**step, action=action, point=None, why="no usable point")
            return None
        review = None
        if c.final_recheck:
            proposed = {
                "cx": cx,
                "cy": cy,
                "local_x": lx,
                "local_y": ly,
                "target_visible_element": parsed.get("target_visible_element", ""),
                "reasoning": parsed.get("reasoning", ""),
            }
            review = await self.review(shown, proposed, attempt)
            if review.get("action") == "replace":
                cx, cy = review["cx"], review["cy"]
        s.ledger.step(**step, action=action, candidate=picked or None, point=Point(cx, cy), review=review)
        return Point(cx, cy)

    async def review(self, final: Shown, proposed: dict[str, Any], attempt: int) -> dict[str, Any]:
        """``_iterative_zoom_review_click``: keep the click, or move it to a point on a wider crop."""
        s = self.s
        crops: list[tuple[str, str, Shown | dict[str, Any], str]] = [("r0", "final upscaled crop", final, "")]
        seen = {final.frame.box}
        for e in reversed(s.history):
            key = tuple(e["crop_box"])
            if key in seen:
                continue
            seen.add(key)
            crops.append(
                (
                    f"r{len(crops)}",
                    f"wider crop from round {e.get('round')}",
                    e,
                    e.get("target_visible_element", ""),
                )
            )
            if len(crops) >= 4:
                break
        several = isinstance(s.model, MultiImageChat)
        if not several and len(crops) > 1:
            s.ledger.note(
                "review: the model takes one image per request, so only the final crop (r0) is attached"
            )
            crops = crops[:1]
        shown: list[Shown] = []
        for _, _, item, _ in crops:
            if isinstance(item, Shown):
                shown.append(item)
            else:
                b, (w, h) = item["crop_box"], item["seen"]
                img = await asyncio.to_thread(_resample, s.screenshot, b, (w, h))
                shown.append(Shown(img, Frame(tuple(b), w / (b[2] - b[0]), h / (b[3] - b[1]), s.normalized)))
        sources = "\n".join(
            f"{src}: {desc} original_box={list(sh.frame.box)} display_scale={sh.frame.sx:.4f} visible={vis}"
            for (src, desc, _, vis), sh in zip(crops, shown, strict=True)
        )
        prompt = text("review").format(
            task=s.instruction,
            target=s.instruction,
            width=s.size[0],
            height=s.size[1],
            cx=proposed["cx"],
            cy=proposed["cy"],
            local_x=proposed["local_x"],
            local_y=proposed["local_y"],
            element=proposed["target_visible_element"],
            reasoning=proposed["reasoning"],
            sources=sources,
            policy=text("review_policy"),
        )
        images = [sh.image for sh in shown]
        if several:
            reply = await s.ledger.call(f"review[f{attempt}]", images[0], s.model.chat_images(images, prompt))
        else:
            reply = await s.ledger.call(f"review[f{attempt}]", images[0], s.model.chat(images[0], prompt))
        parsed = read_json(reply.text) if reply is not None else None
        if parsed is None:
            return {"action": "keep", "reasoning": "review failed: no answer"}
        action = action_of(parsed)
        result: dict[str, Any] = {
            "action": action or "keep",
            "source": str(parsed.get("source") or ""),
            "target_visible_element": parsed.get("target_visible_element", ""),
            "reasoning": parsed.get("reasoning", ""),
        }
        if action != "replace":
            return result
        if breaks_control_type(s.instruction, proposed, result):
            return {
                **result,
                "action": "keep",
                "reasoning": "review replacement rejected: it would replace a direct editable control with a passive label/icon marker",
            }
        pick = next(
            (sh for (src, _, _, _), sh in zip(crops, shown, strict=True) if src == result["source"]), None
        )
        if pick is None:
            return {
                **result,
                "action": "keep",
                "reasoning": f"review replacement source not found: {result['source']}",
            }
        x, y = number(parsed.get("x", 0)), number(parsed.get("y", 0))
        if x is None or y is None:
            return {**result, "action": "keep", "reasoning": "review replacement had invalid coordinates"}
        if x <= 0 or y <= 0 or x > pick.image.width or y > pick.image.height:
            return {**result, "action": "keep", "reasoning": "review replacement outside selected crop"}
        px, py = pick.to_screen(x, y)
        cx, cy = int(round(px)), int(round(py))
        if cx <= 0 or cy <= 0 or cx > s.size[0] or cy > s.size[1]:
            return {**result, "action": "keep", "reasoning": "review replacement outside original image"}
        return {**result, "cx": cx, "cy": cy}


def _click_xy(parsed: dict[str, Any], normalized: bool) -> tuple[float | None, float | None]:
    p = parsed.get("point_2d")
    if normalized and isinstance(p, list) and len(p) >= 2:
        return number(p[0]), number(p[1])
    return number(parsed.get("x", 0)), number(parsed.get("y", 0))


def keep_best(s: _Sample, current: IBox) -> Point | None:
    """The exhaustion fall-back: the centre of the deepest committed crop (``keep_best``)."""
    if s.config.exhaustion_fallback != "keep_best":
        return None
    committed = [e["next_box"] for e in s.history if e.get("next_box")]
    b = committed[-1] if committed else current
    cx, cy = int((b[0] + b[2]) / 2), int((b[1] + b[3]) / 2)
    if 0 < cx <= s.size[0] and 0 < cy <= s.size[1]:
        s.ledger.note("every final click failed: the centre of the deepest committed crop (keep_best)")
        s.ledger.step(stage="keep_best", crop=_trace_box(b), point=Point(cx, cy))
        return Point(cx, cy)
    return None


# ------------------------------------------------------------------ the grounding protocol
class _GroundLens:
    """GUI-Lens's steps for a model that only grounds (class docstring of :class:`GuiLens`)."""

    def __init__(self, s: _Sample):
        self.s = s

    def query(self, shown: Shown) -> Query:
        return Query(self.s.instruction, view=shown.transform)

    async def locate(self) -> Point | None:
        s, c = self.s, self.s.config
        current: IBox = [0, 0, s.size[0], s.size[1]]
        refused: set[tuple[tuple[int, ...], int]] = set()  # (crop, stage) whose proposal failed
        for r in range(c.rounds):
            stage = s.committed()
            if (tuple(_clamp(current, *s.size)), stage) in refused:
                s.ledger.note(
                    "the crop loop ended early: its next request was one already refused "
                    "(the same request gets the same answer)"
                )
                break
            shown = await s.shown(current)
            reply = await s.ledger.call(
                f"box[r{r + 1}]", shown.image, s.model.propose_box(shown.image, self.query(shown), None)
            )
            box = reply.box if reply is not None else None
            e = _entry(r, 0, "crop" if box is not None else "recrop", shown, {})
            step = {
                "stage": "crop",
                "round": r + 1,
                "attempt": 1,
                "crop": _trace_box(shown.frame.box),
                "action": e["action"],
            }
            nxt = None
            if box is not None:
                bbox = [box.left, box.top, box.right, box.bottom]
                nxt = next_box(bbox, replace(shown.frame, normalized=False), s.size, c, stage)
                step["proposal"] = [round(v, 1) for v in bbox]
            if nxt is None:
                refused.add((shown.frame.box, stage))
                e["fallback_box"] = restart_box(current, s.history, s.size)
                s.history.append(e)
                s.ledger.step(**step, next=None, fallback=_trace_box(e["fallback_box"]))
                current = e["fallback_box"]
                continue
            if s.check_now(r):
                view = await s.shown(nxt)
                got = await s.ledger.call(
                    f"gate[r{r + 1}]", view.image, s.model.act(view.image, self.query(view), zoomed=True)
                )
                inside = reply_point(got)
                e["crop_check"] = {"action": "accept" if inside is not None else "reject"}
                if inside is None:
                    refused.add((shown.frame.box, stage))
                    s.history.append(e)
                    s.ledger.step(**step, next=_trace_box(nxt), gate=e["crop_check"])
                    full = c.crop_check_reject_mode == "restart_full"
                    current = (
                        [0, 0, s.size[0], s.size[1]] if full else restart_box(current, s.history, s.size)
                    )
                    continue
            e["next_box"] = nxt
            e["area_fraction"] = round(_area(nxt) / _area(shown.frame.box), 4)
            s.history.append(e)
            s.ledger.step(**step, next=_trace_box(nxt), gate=e.get("crop_check"))
            current = nxt
            if nxt[2] - nxt[0] <= c.min_width or nxt[3] - nxt[1] <= c.min_height:
                break
        boxes = final_boxes(current, s.history, s.size)
        if not c.final_recrop:
            boxes = boxes[:1]
        elif c.final_recrop_limit > 0:
            boxes = boxes[: c.final_recrop_limit]
        for i, box in enumerate(boxes):
            point = await self.click(box, i + 1)
            if point is not None:
                return point
        return keep_best(s, current)

    async def click(self, box: IBox, attempt: int) -> Point | None:
        s = self.s
        shown = await s.shown(box, final=True)
        reply = await s.ledger.call(
            f"click[f{attempt}]", shown.image, s.model.act(shown.image, self.query(shown), zoomed=True)
        )
        local = reply_point(reply)
        step = {"stage": "click", "attempt": attempt, "crop": _trace_box(shown.frame.box)}
        if local is None or not (0 < local.x <= shown.image.width and 0 < local.y <= shown.image.height):
            s.ledger.step(**step, point=None)
            return None
        px, py = shown.to_screen(local.x, local.y)
        point, review = Point(int(round(px)), int(round(py))), None
        if s.config.final_recheck:
            point, review = await self.review(shown, local, point, attempt)
        s.ledger.step(**step, point=point, review=review)
        return point

    async def review(
        self, shown: Shown, local: Point, point: Point, attempt: int
    ) -> tuple[Point, dict[str, Any]]:
        """Keep the click when the model's judge accepts it; else the point the next wider crop
        of the history gives, when it gives one."""
        s = self.s
        marked = await mark_for_model(s.model, shown.image, [local], [""])
        got = await s.ledger.call(
            f"judge[f{attempt}]", shown.image, s.model.judge(marked, self.query(shown), local)
        )
        verdict = got.verdict if got is not None and got.verdict else Verdict.UNKNOWN
        if verdict != Verdict.NO:
            return point, {"action": "keep", "verdict": verdict.value}
        wider = next((e for e in reversed(s.history) if _area(e["crop_box"]) > _area(shown.frame.box)), None)
        if wider is None:
            return point, {"action": "keep", "verdict": verdict.value, "reasoning": "no wider crop"}
        view = await s.shown(wider["crop_box"])
        again = await s.ledger.call(
            f"replace[f{attempt}]", view.image, s.model.act(view.image, self.query(view), zoomed=True)
        )
        p = reply_point(again)
        if p is None or not (0 < p.x <= view.image.width and 0 < p.y <= view.image.height):
            return point, {
                "action": "keep",
                "verdict": verdict.value,
                "reasoning": "the wider crop gave no point",
            }
        px, py = view.to_screen(p.x, p.y)
        return Point(int(round(px)), int(round(py))), {
            "action": "replace",
            "verdict": verdict.value,
            "source": list(view.frame.box),
        }
