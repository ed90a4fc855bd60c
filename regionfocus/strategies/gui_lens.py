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

Presets (``config=``, :mod:`.gui_lens_config`): "sspro_stack_zoom" (default; the design-ablation
"full" arm, 88.7 % for GPT-5.5 on 300 samples), "legacy_baseline" (the config of GPT-5.5's 87.9 %
on all 1581 samples: fill scaling, the legacy prompt order, no ranking of hints, an 85 % area cap,
all final boxes), "sspro_stack_zoom_claude2000" (Claude Opus 4.7's 82.3 %: crops shown at most
2000 px long, no gate) and "sspro_stack_zoom_m3" (the one config asking for 0-1000); the last
three are also registered on their own, ``gui-lens-legacy``, ``gui-lens-claude`` and
``gui-lens-m3``, so ``--strategy`` reaches them. Any field of :class:`LensConfig` can be changed with
``dataclasses.replace``.

Each preset sends what its published run sent, whatever family runs it: its coordinates
(``coords``: every published config asks for displayed pixels, the code's
``coords_normalized`` off; only the M3 config asks for 0-1000), its reruns (``reruns``: the
runner's ``--retry-provider-errors 2``: a sample with no verified target, or whose model call
failed, is run again up to twice, each run's calls named ``rerun<n>:``; a failed call ends its
run, as ``reraise_if_fatal`` lets a provider error out of the locator: it is not a rejected
crop) and, for the two published runs, the code's reading of answers (``reading="official"``:
``parse_json``'s order and the gate's ``bool()``, so a quoted "false" is true there). Where the
strict reading (the default preset's) differs: the first object naming an ``action`` is taken
(there: the whole reply, a fenced block, then the first object), a quoted boolean counts by its
word, a reply that is a JSON list reads its first object (there: the attempt fails). Both
readings are stricter than the code in two ways: NaN and Infinity are no numbers (there
``json.loads`` takes them and the arithmetic fails later) and a reply is read up to 32 KB; and
more lenient in one: a ``confidence`` that is no number reads 0 (there ``float()`` raises and
the sample fails). The published numbers came through other harnesses than ours: GPT-5.5's
through OpenProgram's ``openai-codex`` provider, Claude's through Claude Code (provider
``claude-code``), not the APIs called here.

The protocol. Every request above is free text with JSON answers: a model offering ``chat``
(:class:`~regionfocus.strategies.protocol.ChatModel`) gets the official texts exactly
(``prompts/gui_lens/``); every crop is rendered straight at the size the model sees
(``input_size``), so its pixels are the frame of the answer, and a family that writes 0-1000
gets the official normalised-coordinate override when its config asks for it (as the
preset says, whatever the adapter's frame; ``coords=`` overrides it, noted). The hints come from ``hints`` (a callable: image -> list of
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
(:class:`~.gui_lens_review.MultiImageChat`: every VLM adapter, the hosted ones included); through
``chat`` (one image) only the final crop is attached and listed (noted, naming the model). Crops are resampled once with Lanczos to the size the model sees; their scale is
kept per axis (the prompts print the horizontal one, as the code prints its single scale).
The gate's magenta rectangle of a 0-1000 answer is drawn where it points (the code draws the
raw numbers as pixels). Not reproduced: the knobs every published ScreenSpot-Pro config leaves
off (reasoning-first, crop-local coordinates, accumulated context, refusal, the final verifier,
candidate de-duplication, "target_pixels" scaling, the legacy crop-first pipeline), the
UI-Vision "element" prompts, a target string's own "(x, y)" taken as the answer, the runner's
post-hoc snap of red/yellow swatch instructions to a coloured blob, and the per-call 180 s
timeout (the backend's timeouts apply). A run the reruns do not rescue leaves the baseline
standing (there: no answer); the baseline itself is not used.

The parts, by job: :mod:`.gui_lens_config` (settings, presets, protocols),
:mod:`.gui_lens_geometry` (scales and boxes), :mod:`.gui_lens_sample` (one run's state and
calls), :mod:`.gui_lens_crop` (the crop loop), :mod:`.gui_lens_gate` (the commit gate),
:mod:`.gui_lens_review` (the final click and the review), :mod:`.gui_lens_ground` (the grounding
protocol), :mod:`.gui_lens_text` (the texts written and read).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from PIL import Image

from ..views import ViewSource
from .base import BaseStrategy
from .gui_lens_config import PRESETS, LensConfig, protocol
from .gui_lens_crop import ChatLens
from .gui_lens_geometry import display_scale, final_boxes, next_box
from .gui_lens_ground import GroundLens
from .gui_lens_review import MultiImageChat
from .gui_lens_sample import CallFailed, Hints, Sample, read_hints
from .protocol import ChatModel, Ledger, StrategyResult

__all__ = [
    "PRESETS",
    "GuiLens",
    "GuiLensClaude",
    "GuiLensLegacy",
    "GuiLensM3",
    "LensConfig",
    "MultiImageChat",
    "display_scale",
    "final_boxes",
    "next_box",
]


@dataclass
class GuiLens(BaseStrategy):
    name = "gui-lens"
    paper = "GUI-Lens iterative zoom (GUI-Agent-Harness, code Fzkuji/GUI-Agent-Harness @ 23e75e0)"
    call_budget = (
        "per round 1-7 crop requests, each with a gate (8 rounds), then 1-3 final clicks, each "
        "reviewed; ~10-16 typical; up to 2 reruns of a sample with no verified target or a failed call"
    )
    protocol = protocol(PRESETS["sspro_stack_zoom"])
    needs_planner = True  # it talks to the grounder in free text (its chat)
    ignores_views = "GUI-Lens crops the screenshot at the official display scales"

    config: LensConfig | str = "sspro_stack_zoom"
    hints: Hints | None = None
    coords: str | None = None  # None: the config's (the preset's); else an override, noted

    def __post_init__(self) -> None:
        if isinstance(self.config, str):
            if self.config not in PRESETS:
                raise ValueError(f"gui-lens: unknown config {self.config!r}; known: {', '.join(PRESETS)}")
            self.config = PRESETS[self.config]
        if not isinstance(self.config, LensConfig):
            raise ValueError(f"gui-lens: config must be a preset name or a LensConfig, got {self.config!r}")
        if self.coords not in (None, "pixels", "normalized"):
            raise ValueError(f"gui-lens: coords must be 'pixels' or 'normalized', got {self.coords!r}")
        super().__post_init__()

    async def answer(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str, views: ViewSource | None
    ) -> StrategyResult:
        c = self.config
        assert isinstance(c, LensConfig)
        coords = self.coords or c.coords
        if coords != c.coords:
            ledger.note(f"ran with {coords} coordinates where its config asks for {c.coords} (coords=)")
        ledger.step(stage="config", **{**asdict(c), "coords": coords})
        chat = isinstance(ledger.model, ChatModel)
        candidates = []
        if chat:
            if self.hints is None:
                ledger.note(
                    "ran with no OCR/UI-element hints (none given): every evidence list reads '(none)'"
                )
            candidates = await read_hints(ledger, self.hints, screenshot, "screenshot")
        else:
            ledger.note(
                "ran with the grounding protocol (the model takes no free-text prompt): crop = "
                "propose_box, gate = act in the proposed crop, click = act, review = judge then act "
                "on the next wider crop; hints unused; a refused attempt is not asked again"
            )
        if c.reruns:
            ledger.note(
                f"ran with up to {c.reruns} reruns of a sample with no verified target or a failed call "
                f"(the official runner's --retry-provider-errors {c.reruns})"
            )
        point = None
        for run in range(1 + c.reruns):
            s = Sample(ledger, ledger.model, screenshot, instruction, c, coords == "normalized", run=run)
            if chat:
                s.hints, s.candidates = self.hints, candidates
            try:
                point = await (ChatLens(s) if chat else GroundLens(s)).locate()
                outcome = None if point is not None else "no verified target"
            except CallFailed as e:
                outcome = f"a failed call ({e})"
            if outcome is None:
                break
            ledger.step(stage="run", run=run + 1, outcome=outcome)
            if run == c.reruns:
                ledger.note(f"every run ended without a point; the last: {outcome}")
            elif not chat and outcome == "no verified target":
                ledger.note("no rerun: the grounding protocol would send the same requests again")
                break
            else:
                ledger.note(f"rerun {run + 1} after run {run + 1} ended with {outcome}")
        return ledger.finish(point)


@dataclass
class GuiLensLegacy(GuiLens):
    """GUI-Lens with the config of GPT-5.5's 87.9 % on all of ScreenSpot-Pro (``legacy_baseline``)."""

    name = "gui-lens-legacy"
    paper = "GUI-Lens, config legacy_baseline (GPT-5.5's 87.9 %; Fzkuji/GUI-Agent-Harness @ 23e75e0)"
    call_budget = GuiLens.call_budget.replace("1-3 final clicks", "every final box (all) clicked")
    protocol = protocol(PRESETS["legacy_baseline"])

    config: LensConfig | str = "legacy_baseline"


@dataclass
class GuiLensClaude(GuiLens):
    """GUI-Lens with the config of Claude Opus 4.7's 82.3 % (``sspro_stack_zoom_claude2000``)."""

    name = "gui-lens-claude"
    paper = (
        "GUI-Lens, config sspro_stack_zoom_claude2000 (Claude Opus 4.7's 82.3 %, run through "
        "Claude Code, not the Messages API; Fzkuji/GUI-Agent-Harness @ 23e75e0)"
    )
    call_budget = (
        "per round 1-7 crop requests, no gate (8 rounds), then 1-3 final clicks, each reviewed; "
        "up to 2 reruns of a sample with no verified target or a failed call"
    )
    protocol = protocol(PRESETS["sspro_stack_zoom_claude2000"])

    config: LensConfig | str = "sspro_stack_zoom_claude2000"


@dataclass
class GuiLensM3(GuiLens):
    """GUI-Lens with the one official ScreenSpot-Pro config asking for 0-1000
    (``sspro_stack_zoom_m3``): every family is asked for 0-1000, as the config asks."""

    name = "gui-lens-m3"
    paper = (
        "GUI-Lens, config sspro_stack_zoom_m3 (0-1000 coordinates, written for MiniMax-M3 and the "
        "Qwen family; no published run; Fzkuji/GUI-Agent-Harness @ 23e75e0)"
    )
    protocol = protocol(PRESETS["sspro_stack_zoom_m3"])

    config: LensConfig | str = "sspro_stack_zoom_m3"
