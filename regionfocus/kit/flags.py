"""The RegionFocus switches shared by every harness command, and how they become a config;
``--strategy``, the same comma list in every harness."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from ..config import PROPOSERS, RegionFocusConfig
from ..strategies import STRATEGIES
from .command import default_out

REGIONFOCUS = "regionfocus"
# Short names users type (the issue and the papers say "narrowing", "DiMo").
STRATEGY_ALIASES = {"narrowing": "iterative-narrowing", "focusing": "iterative-focusing", "dimo": "dimo-gui"}


def whole(minimum: int = 1, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number within [minimum, maximum], checked where the flag is
    parsed (whatever else the command line says), so a nonsense count never reaches a run."""

    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            n = None
        if n is None or n < minimum or (maximum is not None and n > maximum):
            bound = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
            raise argparse.ArgumentTypeError(f"must be a whole number {bound}, got {value!r}")
        return n

    parse.__name__ = "whole number"  # argparse names the type in its own messages
    return parse


def _finite(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        return math.nan


def positive(value: str) -> float:
    """An argparse ``type``: a finite number > 0 (seconds, a scale)."""
    x = _finite(value)
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {value!r}")
    return x


def non_negative(value: str) -> float:
    """An argparse ``type``: a finite number >= 0 (a temperature)."""
    x = _finite(value)
    if not (math.isfinite(x) and x >= 0):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {value!r}")
    return x


def add_out_argument(group: argparse._ArgumentGroup, harness: str) -> None:
    """``--out RUN_DIR``: optional in every harness, defaulting to :func:`default_out`."""
    group.add_argument(
        "--out",
        metavar="RUN_DIR",
        help=f"run folder, created or resumed (default: {default_out(harness, '<agent>')})",
    )


def add_strategy_argument(group: argparse._ArgumentGroup, how_they_run: str) -> None:
    """``--strategy NAMES``: what the names are is shared; ``how_they_run`` is the harness's own
    sentence on how several of them run."""
    group.add_argument(
        "--strategy",
        metavar="NAMES",
        help="test-time strategies, comma-separated: names of `regionfocus strategies` (or narrowing, "
        "focusing, dimo), 'all' for every one that needs no second model; default regionfocus. "
        + how_they_run,
    )


def strategy_names(spec: str | None) -> tuple[str, ...]:
    """The names ``--strategy`` gives ("a,b", or "all": every registered strategy that needs no
    second model), in order, once each. None or empty: RegionFocus alone, the default."""
    if not spec:
        return (REGIONFOCUS,)
    names = [STRATEGY_ALIASES.get(s.strip().lower(), s.strip().lower()) for s in spec.split(",") if s.strip()]
    if names == ["all"]:
        return tuple(n for n, info in STRATEGIES.items() if not info.needs_planner)
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        raise ValueError(
            f"--strategy: unknown {', '.join(map(repr, unknown)) or repr(spec)}; known: "
            f"{', '.join(STRATEGIES)} (or 'all'; `regionfocus strategies` lists them)"
        )
    return tuple(dict.fromkeys(names))


def add_regionfocus_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("RegionFocus (defaults reproduce the paper)")
    g.add_argument("--no-regionfocus", action="store_true", help="run the wrapped agent alone (the baseline)")
    g.add_argument("--config", metavar="FILE", help="TOML file with a [regionfocus] table; flags override it")
    g.add_argument(
        "--proposer", choices=PROPOSERS, help="boxes around the focal point (default: fixed ratios)"
    )
    g.add_argument(
        "--aggregation",
        choices=("image", "text"),
        help="candidates as numbered stars (image) or listed in text",
    )
    g.add_argument(
        "--history", choices=("image", "text"), help="tried points as stars (image) or listed in text"
    )
    g.add_argument(
        "--text-history",
        action="store_true",
        help="the paper's text ablation: history AND aggregation in text (same as --history text "
        "--aggregation text)",
    )
    g.add_argument(
        "--star-baseline",
        action="store_true",
        default=None,
        help="static mode: star the rejected baseline point in round 1 and tell the model to look "
        "elsewhere (the pre-0.2 behaviour; the paper stars only failed RegionFocus attempts)",
    )
    g.add_argument(
        "--star-agent-failures",
        action="store_true",
        default=None,
        help="live mode: also star the base agent's own no-effect and repeated actions (the paper "
        "stars only RegionFocus choices that had no effect)",
    )
    g.add_argument(
        "--star-scale",
        type=positive,
        metavar="S",
        help="star and label size multiplier (default 1: about 20 px radius on a 3840x2160 screenshot)",
    )
    g.add_argument(
        "--max-rounds-per-screen",
        type=whole(1),
        metavar="N",
        help="live mode: RegionFocus rounds per screen (default: no cap; the step limit binds)",
    )
    g.add_argument(
        "--max-rounds-per-task",
        type=whole(1),
        metavar="N",
        help="live mode: RegionFocus rounds per task (default: no cap; the step limit binds)",
    )
    g.add_argument(
        "--rounds",
        type=whole(1),
        dest="rounds_per_sample",
        metavar="N",
        help="static mode: rounds per rejected sample (default 1; --no-regionfocus runs none)",
    )
    g.add_argument(
        "--trigger",
        choices=("judge", "always", "never", "no-target"),
        dest="static_trigger",
        help="static mode: when RegionFocus runs (default: when the self-judge rejects); "
        "no-target (live mode, opt-in, beside the default triggers): also run it before executing a "
        "click that lands on no interactive element of the page's accessibility tree",
    )
    g.add_argument(
        "--judge-unknown",
        choices=("reject", "accept"),
        help="what an unreadable judge verdict means (default: reject)",
    )
    g.add_argument("--sam-checkpoint", metavar="PATH", help="segment-anything checkpoint for --proposer sam")
    g.add_argument("--sam-model-type", metavar="TYPE", help="vit_b, vit_l or vit_h (default vit_b)")


def config_from_args(args: argparse.Namespace) -> RegionFocusConfig:
    """The resolved config: defaults, then the --config file, then explicit flags."""
    cfg = RegionFocusConfig.from_toml(args.config) if getattr(args, "config", None) else RegionFocusConfig()
    if getattr(args, "static_trigger", None) == "no-target":  # a live trigger, not a static mode
        args.static_trigger = None
        cfg = cfg.replace(no_target_trigger=True)
    if getattr(args, "text_history", False):
        for flag in ("history", "aggregation"):
            if getattr(args, flag, None) == "image":
                raise ValueError(f"--text-history contradicts --{flag} image")
        cfg = cfg.replace(history="text", aggregation="text")
    keys = (
        "proposer",
        "aggregation",
        "history",
        "rounds_per_sample",
        "static_trigger",
        "judge_unknown",
        "sam_checkpoint",
        "sam_model_type",
        "star_baseline",
        "star_agent_failures",
        "star_scale",
        "max_rounds_per_screen",
        "max_rounds_per_task",
    )
    return cfg.replace(**{k: getattr(args, k, None) for k in keys})
