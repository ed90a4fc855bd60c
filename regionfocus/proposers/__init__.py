"""Box proposers: where to look around a focal point.

The protocol and the light proposers (``fixed``, the paper's default; ``predict-region``, its
ablation) are in :mod:`.base`; the accessibility-tree, layout and SAM proposers each in their
own module. :func:`build_proposer` gives the one a :class:`~regionfocus.config.RegionFocusConfig`
names; SAM (torch) is imported only when asked for.
"""

from __future__ import annotations

from ..config import RegionFocusConfig
from .a11y import A11yProposer
from .base import BoxProposer, FixedRatioProposer, PredictRegionProposer, ProposalContext, enforce_min_size
from .layout import LayoutProposer

__all__ = [
    "A11yProposer",
    "BoxProposer",
    "FixedRatioProposer",
    "LayoutProposer",
    "PredictRegionProposer",
    "ProposalContext",
    "build_proposer",
    "enforce_min_size",
]


def build_proposer(config: RegionFocusConfig) -> BoxProposer:
    """The proposer a :class:`RegionFocusConfig` names (SAM imported lazily: it needs torch)."""
    fixed = FixedRatioProposer(config.ratios)
    if config.proposer == "fixed":
        return fixed
    if config.proposer == "predict-region":
        return PredictRegionProposer(config.min_box_size)
    if config.proposer == "a11y":
        return A11yProposer(min_size=config.min_box_size, ratios=config.ratios)
    if config.proposer == "layout":
        return LayoutProposer(min_size=config.min_box_size, fallback=fixed)
    if config.proposer == "sam":
        from .sam import SamProposer

        return SamProposer(
            checkpoint=config.sam_checkpoint,
            model_type=config.sam_model_type,
            margin=config.sam_margin,
            min_size=config.min_box_size,
            fallback=fixed,
        )
    raise ValueError(f"unknown proposer {config.proposer!r}")
