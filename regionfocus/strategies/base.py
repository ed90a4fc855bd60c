"""What the strategies that look for one point share: the opening of ``run`` (a ledger of calls
and steps, the source of views at the strategy's zoom) and its close (the final point as the
final action). Such a strategy writes only :meth:`BaseStrategy.search`."""

from __future__ import annotations

from typing import NamedTuple

from PIL import Image

from ..actions import Action
from ..geometry import Point
from ..model import GroundingModel
from ..strategy import Ledger, StrategyResult, view_source
from ..views import ViewSource


class Attempt(NamedTuple):
    """One sample as a strategy's search sees it: the ledger its calls go through, the
    model, the source of views, the screenshot and the instruction."""

    ledger: Ledger
    model: GroundingModel
    source: ViewSource
    screenshot: Image.Image
    instruction: str


class BaseStrategy:
    """``zoom``: how a crop is shown to the model ("native": at its own pixels; see
    :func:`regionfocus.strategy.view_target`); ``crops``: False for a strategy that never looks
    at a part of the screen (true-zoom views given to it are then noted as ignored).
    Subclasses set ``name`` and the listing fields."""

    name = "strategy"
    zoom = "native"
    crops = True

    async def run(
        self,
        model: GroundingModel,
        screenshot: Image.Image,
        instruction: str,
        baseline: Action | None,
        *,
        views: ViewSource | None = None,
    ) -> StrategyResult:
        ledger = Ledger(self.name, model, baseline)
        if views is not None and not self.crops:
            ledger.note(f"views ignored: {self.name} never crops")
        source = view_source(model, screenshot, views, self.zoom)
        return ledger.finish(await self.search(Attempt(ledger, model, source, screenshot, instruction)))

    async def search(self, attempt: Attempt) -> Point | None:
        """The final point in screenshot pixels (None: none found), every call through ``ledger``."""
        raise NotImplementedError
