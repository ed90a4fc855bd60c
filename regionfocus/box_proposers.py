"""The box proposer a :class:`~regionfocus.config.RegionFocusConfig` names.

Kept apart from :mod:`regionfocus.proposals` (the protocol and the light proposers) so that the
heavier proposers, which build on that module, are imported from here without a cycle; SAM
(torch) is imported only when asked for.
"""

from __future__ import annotations

from .config import RegionFocusConfig
from .layout import LayoutProposer
from .proposals import BoxProposer, FixedRatioProposer, PredictRegionProposer
from .proposals_a11y import A11yProposer


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
