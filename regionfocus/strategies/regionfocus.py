"""RegionFocus as one strategy: the static prediction of
:meth:`regionfocus.agent.RegionFocusAgent.predict` (self-judge, then a RegionFocus round on
rejection), unchanged, with its calls costed like every other strategy's.

Paper: "Visual Test-time Scaling for GUI Agent Grounding" (RegionFocus), arXiv:2505.00684.
The baseline a caller already has is reused rather than asked again: the wrapped model's first
grounding request on the unaltered screenshot returns it (the agent's own code path is untouched
and no request is sent; the supplied answer is not counted as a call of this strategy).

Code: tiangeluo/RegionFocus @ f69575db, models/qwen25vl_RegionFocus.py and
models/uitars_RegionFocus.py (``ground_with_regionfocus``). Same as there (the defaults of
:class:`~regionfocus.config.RegionFocusConfig`): the judge is asked whenever the baseline named
a point, with a pink star on it; on rejection one focal point, re-asked up a temperature ladder
while unparseable; boxes of the ratios (0.5, 0.5), (0.3, 0.3), (0.4, 0.8), (0.8, 0.4) of the
screenshot around it, shifted (not shrunk) into the image; each cropped and Lanczos-upsampled
keeping its aspect, asked greedily; the zoomed points (not the baseline's) drawn as numbered
pink stars for a "Selected point: N" choice, none asked for a single point.

Deviations from the official code (tiangeluo/RegionFocus @ f69575db). Deliberate (the released
code's defects, docs/ARCHITECTURE.md section 2, tests/test_reference_defects.py): the verdict is
read from a final "Verdict: YES/NO" line, not by substring ("YES"/"CORRECT" and no "NO" anywhere);
candidates within ``merge_radius`` (8 px) are merged, not drawn as overlapping stars; an
unreadable choice is asked once more (``choice_retries`` 1) and then settled by rule, not taken
as candidate 1; stars are scaled to stay legible at 4K (there: ``sizes`` 12 judge / 8 choice for
Qwen2.5-VL, 20 / 15 for UI-TARS). Prompts: UI-TARS (1.0, which the code serves, and 1.5) and
Qwen2.5-VL send the authors' focal, judge and selection texts byte-exact
(adapters/families/prompts/official/``rf_official_*``, laid out as there: image then text;
Qwen2.5-VL's after its computer_use system prompt, stating the size of the image sent rather than
the screenshot's, except the judge). Ours remain where the code has none: stars or listed points
to avoid (rounds after the first), a choice retry, text options, live tasks, and families it does
not cover. A view's candidate request is the adapters' ``locate_in_view``: the authors' zoom
text where their code has one. The judge's verdict, read as above, is also read from their
answer format ("YES"/"NO" first, "Answer: ...", or a trailing "Answer YES"). The focal ladder there is per family: UI-TARS 0, 0.3, 0.7 (top_p 0.95),
our default ``focal_retry_temperatures``; Qwen2.5-VL 0, 0.3, 0.5, 0.7, 0.9 (top_p 0.9); top_p
is not sent here. A view there is upsampled to fit the screenshot's own size (Qwen2.5-VL, then
its processor's max_pixels 12845056) or a 1440 x 1440 box (UI-TARS); here to the size the model
sees for the whole screenshot, at most ``max_zoom`` (4) times. A zoomed answer outside the view
is clamped to the view's edge there, to the screenshot here.
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
