"""The test-time strategies beside RegionFocus, under one protocol
(:class:`regionfocus.strategies.protocol.Strategy`; what they share is in :mod:`.base`), and
their registry (listed by the ``regionfocus strategies`` command, :mod:`.cli`).

``STRATEGIES`` maps a name to a :class:`StrategyInfo` (the paper, the call budget, whether the
strategy needs sampling or a planner, the protocol of the published run it reproduces); ``get_strategy(name, **options)`` builds one;
``register_strategy`` adds another (a plug-in's own strategy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .chain_of_ground import ChainOfGround
from .compose import MapChoice, Triggered, choose_on_map
from .dimo import DiMoGUI
from .focusing import IterativeFocusing
from .gui_lens import GuiLens, GuiLensClaude, GuiLensLegacy, GuiLensM3
from .gui_rc import GuiRC
from .mega_gui import MegaGuiZoom
from .mvp import MVP, MVPGrid
from .narrowing import IterativeNarrowing
from .protocol import Strategy
from .regionfocus import RegionFocusStrategy
from .reground import ReGround
from .screenseeker import ScreenSeekeR
from .ui_zoomer import UIZoomer
from .zoom_consistency import ZoomConsistencyRouter
from .zoomclick import ZoomClick

# What a deterministic model (temperature 0, or the OCR agent) does to each sampling strategy.
DEGENERATES = {
    "ui-zoomer": "one sample: consensus is 1, the gate always accepts, the baseline stands",
    "gui-rc": "one sample: every vote is the same box, the answer is the baseline point",
}


@dataclass(frozen=True)
class StrategyInfo:
    """A registered strategy: ``factory(**options)`` builds it; the rest is for listings."""

    name: str
    factory: Callable[..., Strategy]
    paper: str
    call_budget: str
    needs_sampling: bool
    needs_planner: bool
    deterministic: str = "unaffected"
    protocol: str = ""  # what it sends, for a strategy that reproduces a published run

    @classmethod
    def of(cls, factory: Any) -> StrategyInfo:
        return cls(
            factory.name,
            factory,
            factory.paper,
            factory.call_budget,
            bool(factory.needs_sampling),
            bool(factory.needs_planner),
            DEGENERATES.get(factory.name, "unaffected"),
            getattr(factory, "protocol", ""),
        )


STRATEGIES: dict[str, StrategyInfo] = {
    info.name: info
    for info in map(
        StrategyInfo.of,
        (
            RegionFocusStrategy,
            IterativeNarrowing,
            IterativeFocusing,
            ReGround,
            ZoomClick,
            DiMoGUI,
            ChainOfGround,
            UIZoomer,
            GuiRC,
            ScreenSeekeR,
            MegaGuiZoom,
            MVP,
            MVPGrid,
            ZoomConsistencyRouter,
            GuiLens,
            GuiLensLegacy,
            GuiLensClaude,
            GuiLensM3,
        ),
    )
}


def register_strategy(info: StrategyInfo, *, replace: bool = False) -> None:
    """Add ``info`` under ``info.name``; re-registering a name needs ``replace=True``."""
    if not isinstance(info.name, str) or not info.name.strip():
        raise ValueError(f"strategy name must be a non-empty string, got {info.name!r}")
    if info.name in STRATEGIES and not replace:
        raise ValueError(f"strategy {info.name!r} is already registered; pass replace=True to override it")
    STRATEGIES[info.name] = info


def get_strategy(name: str, **options: Any) -> Strategy:
    """The strategy registered as ``name``, built with ``options`` (its constructor's keywords)."""
    info = STRATEGIES.get(name)
    if info is None:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(sorted(STRATEGIES))}")
    try:
        return info.factory(**options)
    except TypeError as e:
        raise ValueError(f"strategy {name!r}: bad options {sorted(options)}: {e}") from None


__all__ = [
    "DEGENERATES",
    "STRATEGIES",
    "ChainOfGround",
    "DiMoGUI",
    "GuiLens",
    "GuiLensClaude",
    "GuiLensLegacy",
    "GuiLensM3",
    "GuiRC",
    "IterativeFocusing",
    "IterativeNarrowing",
    "MVP",
    "MVPGrid",
    "MapChoice",
    "MegaGuiZoom",
    "ReGround",
    "RegionFocusStrategy",
    "ScreenSeekeR",
    "StrategyInfo",
    "Triggered",
    "UIZoomer",
    "ZoomClick",
    "ZoomConsistencyRouter",
    "choose_on_map",
    "get_strategy",
    "register_strategy",
]
