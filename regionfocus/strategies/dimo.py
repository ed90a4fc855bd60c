"""DiMo-GUI: a text branch and an icon branch, each zooming around its own point; the model
then picks between the two.

Paper: H. Wu et al., "DiMo-GUI: Advancing Test-time Scaling in GUI Grounding via
Modality-Aware Visual Reasoning", arXiv:2507.00008 (EMNLP 2025). The public repository's
README (wuhang03/DiMo-GUI, found with the search tools) describes runs with a ``max_iter``
parameter; its code was not in the index, so the details below follow the issue text and are
parameters: each branch grounds the full screenshot with its modality hint appended to the
instruction, then repeatedly crops half the width and height of the current view around the
point (shifted inside the view) and grounds again, up to ``max_steps`` (5) crops; a branch
stops early when its point has landed within ``center_frac`` of the crop's size from the crop's
centre on ``settle`` (2) consecutive crops (the zoom has stopped moving). The two final points
go to the image-as-map choice (:func:`~regionfocus.strategies.compose.choose_on_map`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..geometry import Point
from .base import Attempt, BaseStrategy, box_inside, full_box, ground_full, ground_view, strategy_prompt
from .compose import choose_on_map

TEXT_HINT = strategy_prompt("dimo_text_hint.txt")
ICON_HINT = strategy_prompt("dimo_icon_hint.txt")


@dataclass
class DiMoGUI(BaseStrategy):
    name = "dimo-gui"
    paper = "Wu et al. 2025, DiMo-GUI (arXiv:2507.00008)"
    call_budget = "2 branches x (1 + up to 5 crops) + 1 choice"
    requires = "max_steps >= 0, settle >= 1, 0 <= center_frac <= 0.5"

    max_steps: int = 5
    settle: int = 2
    center_frac: float = 0.1
    text_hint: str = TEXT_HINT
    icon_hint: str = ICON_HINT
    merge_radius: float = 8.0
    zoom: str = "native"

    async def _branch(self, ledger, model, source, screenshot, instruction, branch) -> Point | None:
        hint = self.text_hint if branch == "text" else self.icon_hint
        asked = f"{instruction}\n{hint}" if hint else instruction
        point = await ground_full(ledger, model, screenshot, asked, f"{branch}[0]")
        ledger.step(branch=branch, step=0, point=point)
        view, centred = full_box(screenshot.size), 0
        for s in range(1, self.max_steps + 1):
            if point is None:
                break
            view = box_inside(point, view.width / 2, view.height / 2, view)
            new, _ = await ground_view(
                ledger, model, source, screenshot, view, asked, self.zoom, f"{branch}[{s}]"
            )
            c = view.center
            near = new is not None and (
                abs(new.x - c.x) <= self.center_frac * view.width
                and abs(new.y - c.y) <= self.center_frac * view.height
            )
            centred = centred + 1 if near else 0
            ledger.step(branch=branch, step=s, crop=view, point=new, centred=centred)
            if new is None:
                ledger.note(f"{branch} branch step {s}: no point; the previous point stands")
                break
            point = new
            if centred >= self.settle:
                break
        return point

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        text_point, icon_point = await asyncio.gather(
            self._branch(ledger, model, source, screenshot, instruction, "text"),
            self._branch(ledger, model, source, screenshot, instruction, "icon"),
        )
        ledger.result.candidates = [p for p in (text_point, icon_point) if p is not None]
        point, method = await choose_on_map(
            ledger, screenshot, instruction, [text_point, icon_point], merge_radius=self.merge_radius
        )
        ledger.step(stage="pick", method=method, point=point)
        return point
