"""regionfocus: visual test-time scaling for GUI agents.

When a wrapped agent is probably wrong, RegionFocus proposes a focal point, zooms into boxes
around it, gathers one candidate per box and lets the model choose among candidates drawn as
numbered pink stars on the screenshot ("image-as-map").
"""

from .a11y import A11yElement, compress, linearize
from .actions import Action, ActionType
from .agent import LiveDecision, RegionFocusAgent, StaticPrediction
from .config import RegionFocusConfig
from .geometry import DEFAULT_RATIOS, Box, Point, ViewTransform, fixed_ratio_boxes
from .model import Avoid, GroundingModel, ModelReply, Option, Query, Usage, Verdict
from .orchestrator import RegionFocus
from .proposers.a11y import A11yProposer
from .proposers.base import BoxProposer, FixedRatioProposer, PredictRegionProposer, ProposalContext
from .stars import draw_boxes, draw_stars
from .trace import CallRecord, Candidate, RefineResult
from .triggers import Effect
from .views import StaticViews, View, ViewSource, crop_view
from .wrapper import FocusWrapper, Observed

__all__ = [
    "A11yElement",
    "A11yProposer",
    "Action",
    "ActionType",
    "Avoid",
    "Box",
    "BoxProposer",
    "CallRecord",
    "Candidate",
    "DEFAULT_RATIOS",
    "Effect",
    "FixedRatioProposer",
    "FocusWrapper",
    "GroundingModel",
    "LiveDecision",
    "ModelReply",
    "Observed",
    "Option",
    "Point",
    "PredictRegionProposer",
    "ProposalContext",
    "Query",
    "RefineResult",
    "RegionFocus",
    "RegionFocusAgent",
    "RegionFocusConfig",
    "StaticPrediction",
    "StaticViews",
    "Usage",
    "Verdict",
    "View",
    "ViewSource",
    "ViewTransform",
    "compress",
    "crop_view",
    "draw_boxes",
    "draw_stars",
    "fixed_ratio_boxes",
    "linearize",
]
__version__ = "0.1.0"
