"""GUI-Lens's settings (:class:`LensConfig`), the official ScreenSpot-Pro configs as presets, and
the protocol each preset reproduces: the coordinates its prompts ask for, the images a request
carries, the reruns of a sample, and the harness its published number came through.

Sources: Fzkuji/GUI-Agent-Harness @ 23e75e00db54486c6f3baf155979ad0f12471172,
``benchmarks/screenspot_pro/configs/*.yaml`` (the fields), ``run_screenspot_pro.py``
(``--retry-provider-errors``, default 2, and ``should_retry_result``: a sample is run again after a
provider error or when the locator returns no verified target), and the summaries the published
numbers come from (``results/gpt_5_5/full_summary.json`` and ``full_report.md``: provider
``openai-codex``; ``results/claude_opus_4_7/full1581_summary.json``: provider ``claude-code``),
and ``benchmarks/screenspot_pro/README.md`` (which config each model's numbers ran).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..checks import require


@dataclass(frozen=True)
class LensConfig:
    """The official ``ScreenSpotLocatorConfig`` fields GUI-Lens runs with (their names without
    ``iterative_``/``enable_``); defaults are ``configs/sspro_stack_zoom.yaml``. Beside them:
    ``coords`` (the config's ``coords_normalized``: "normalized" asks for 0-1000 of the displayed
    crop, "pixels" for its pixels), ``reruns`` (the runner's ``--retry-provider-errors``) and
    ``reading`` ("official": answers read as the code reads them, ``parse_json`` and ``bool()``;
    "strict": ours, listed in :mod:`.gui_lens_text`)."""

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
    coords: str = "pixels"
    reruns: int = 2
    reading: str = "strict"

    name = "gui-lens config"

    def __post_init__(self) -> None:
        require(
            self,
            "rounds >= 1, max_side >= 0, max_scale >= 0, min_short_side >= 0, min_scale >= 0, "
            "final_max_side >= 0, final_max_scale >= 0, final_min_short_side >= 0, "
            "final_min_scale >= 0, candidate_limit >= 0, max_area_pct >= 0, padding_pct >= 0, "
            "min_width >= 1, min_height >= 1, final_candidates >= 0, crop_retry_limit >= 0, "
            "final_recrop_limit >= 0, stage1_min_area_pct >= 0, stage2_min_area_pct >= 0, reruns >= 0",
        )
        for key, allowed in (
            ("scale_mode", ("preserve", "fill")),
            ("prompt_layout", ("cache", "legacy")),
            ("candidate_sort", ("none", "relevance", "confidence")),
            ("crop_check_mode", ("every", "last_only", "off")),
            ("crop_check_reject_mode", ("widen", "restart_full")),
            ("exhaustion_fallback", ("none", "keep_best")),
            ("coords", ("pixels", "normalized")),
            ("reading", ("official", "strict")),
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
        reading="official",
    ),
    "sspro_stack_zoom_claude2000": LensConfig(
        max_side=2000,
        min_scale=0.3,
        final_max_side=2000,
        final_min_scale=0.3,
        crop_check_mode="off",
        reading="official",
    ),
    # The one ScreenSpot-Pro config that asks for 0-1000 (coords_normalized: true), written for
    # MiniMax-M3 and the Qwen family; otherwise sspro_stack_zoom.
    "sspro_stack_zoom_m3": LensConfig(coords="normalized"),
}

# The published run each preset reproduces, in the words that follow its config's name in the
# listing, and the harness that run came through.
PUBLISHED: dict[str, tuple[str, str]] = {
    "sspro_stack_zoom": (
        "as in GPT-5.5's 88.7 % on a 300-sample slice (the design ablation's full arm)",
        "OpenProgram's openai-codex provider (here: the family's own API)",
    ),
    "legacy_baseline": (
        "as in GPT-5.5's 87.9 % (1390/1581), stitched from three runs",
        "OpenProgram's openai-codex provider, not the OpenAI API (here: the Responses API)",
    ),
    "sspro_stack_zoom_claude2000": (
        "as in Claude Opus 4.7's 82.3 % (1301/1581)",
        "Claude Code (provider claude-code), not the Messages API (here: the Messages API)",
    ),
    # benchmarks/screenspot_pro/README.md lines 69-70, 79 and 103-105: MiniMax-M3's harness
    # numbers ran sspro_stack_zoom in pixels, normalised coordinates having lost inside the pipeline.
    "sspro_stack_zoom_m3": (
        "(the one official config asking for 0-1000), with no published run: MiniMax-M3's 47.4 % "
        "(1581) and 47.6 % (300) ran sspro_stack_zoom in pixels",
        "the official runner through OpenProgram's providers (here: the family's own API)",
    ),
}


def preset_name(config: LensConfig) -> str | None:
    """The preset ``config`` equals, None for a changed one."""
    return next((n for n, c in PRESETS.items() if c == config), None)


def protocol(config: LensConfig) -> str:
    """What a run with ``config`` sends, in the words of the strategies listing: coordinates,
    images per request, reruns, answers' reading and, for a preset, the harness it reproduces."""
    coords = "0-1000 of the displayed crop" if config.coords == "normalized" else "displayed-crop pixels"
    reruns = (
        f"up to {config.reruns} per sample after no verified target or a failed call"
        if config.reruns
        else "none"
    )
    parts = [
        f"coordinates {coords}",
        "1 image per request (the review: the final crop and up to 3 wider ones in one request)",
        f"reruns {reruns}",
        f"answers read {'as the official code reads them' if config.reading == 'official' else 'strictly'}",
    ]
    name = preset_name(config)
    if name is not None:
        run, harness = PUBLISHED[name]
        parts.insert(0, f"configs/{name}.yaml {run}")
        parts.append(f"harness {harness}")
    return "; ".join(parts)
