"""RegionFocus as one strategy: the static prediction of
:meth:`regionfocus.agent.RegionFocusAgent.predict` (self-judge, then a RegionFocus round on
rejection), unchanged, with its calls costed like every other strategy's.

Paper: "Visual Test-time Scaling for GUI Agent Grounding" (RegionFocus), arXiv:2505.00684.
The baseline a caller already has is reused rather than asked again: the wrapped model's first
grounding request on the unaltered screenshot returns it (the agent's own code path is untouched
and no request is sent; the supplied answer is not counted as a call of this strategy).
"""

from __future__ import annotations

from typing import Any

from PIL import Image

from ..actions import Action
from ..agent import RegionFocusAgent, StaticPrediction
from ..config import RegionFocusConfig
from ..model import GroundingModel, ModelReply, Query
from ..views import ViewSource
from .base import BaseStrategy
from .protocol import CostedCall, Ledger, StrategyResult, costed

SUPPLIED = "(baseline supplied by the caller)"


class _Primed:
    """``model``, except that its first ``act`` on ``screenshot`` (unzoomed) answers ``baseline``."""

    def __init__(self, model: GroundingModel, screenshot: Image.Image, baseline: Action | None):
        self._model, self._screenshot, self._baseline, self._used = model, screenshot, baseline, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        return self._model.input_size(size)

    async def act(self, image: Image.Image, query: Query, *, zoomed: bool = False) -> ModelReply:
        if not self._used and image is self._screenshot and not zoomed:
            self._used = True
            point = self._baseline.point if self._baseline is not None else None
            return ModelReply(SUPPLIED, action=self._baseline, point=point)
        return await self._model.act(image, query, zoomed=zoomed)


def prediction_costs(pred: StaticPrediction, size: tuple[int, int], model: Any) -> list[CostedCall]:
    """Every call of a static prediction (baseline, judge, RegionFocus rounds) with its cost: a
    candidate request by the size of its view, the others by the screenshot's ``size``."""
    out = [costed(rec, size, model) for rec in pred.calls]
    for rnd in pred.rounds:
        view_sizes = [tuple(v["size"]) for v in rnd.views]
        for rec in rnd.calls:
            size_of: tuple[int, int] | None = size
            if rec.kind.startswith("candidate["):
                n = int(rec.kind[len("candidate[") : -1])
                size_of = view_sizes[n] if n < len(view_sizes) else None
            out.append(costed(rec, size_of, model))
    return out


class RegionFocusStrategy(BaseStrategy):
    name = "regionfocus"
    paper = "RegionFocus: Visual Test-time Scaling for GUI Agent Grounding (arXiv:2505.00684)"
    call_budget = "1 judge; if rejected 1 focal + 4 views + 1 choice (fewer when views agree)"
    ignores_views = "the static RegionFocus prediction crops the screenshot"

    def __init__(self, config: RegionFocusConfig | None = None):
        self.config = config or RegionFocusConfig()

    async def answer(
        self, ledger: Ledger, screenshot: Image.Image, instruction: str, views: ViewSource | None
    ) -> StrategyResult:
        model, baseline = ledger.model, ledger.result.baseline
        pred = await RegionFocusAgent(_Primed(model, screenshot, baseline), self.config).predict(
            screenshot, instruction
        )
        ledger.result.calls += [
            c for c in prediction_costs(pred, screenshot.size, model) if c.text != SUPPLIED
        ]
        for i, rnd in enumerate(pred.rounds):
            ledger.step(round=i + 1, **{k: v for k, v in rnd.to_dict().items() if k != "calls"})
        ledger.step(verdict=pred.verdict.value if pred.verdict else None, trigger=pred.trigger)
        result = ledger.result
        result.candidates = [
            c.action.point for r in pred.rounds for c in r.merged if c.action.point is not None
        ]
        result.action = pred.final
        result.wall_s = pred.wall_s
        return result
