"""DiMo-GUI: a text branch and an icon branch, each zooming around its own point; the model
then picks between the two.

Paper: H. Wu et al., "DiMo-GUI: Advancing Test-time Scaling in GUI Grounding via
Modality-Aware Visual Reasoning", arXiv:2507.00008 (EMNLP 2025). Code: vivo/DiMo-GUI @ ebcdda5c,
models/osatlas7b.py (``ground_only_positive_iterative_conquer``, ``iterative_narrowing``),
models/utils/region_traverser.py, run_ss_pro.sh (``--max_iter 5 --threshold 0.05``). Each branch
asks its official prompt (``prompts/dimo_text_prompt.txt`` / ``dimo_icon_prompt.txt``, the
instruction in its ``{}``) on the full screenshot, then crops around the point: half the width
and height of the current view (portrait screenshots: width/1.2, height/2), shifted inside the
view; ``max_steps`` (4) crops: the official ``max_iter`` 5 counts the full-screenshot
prediction. A branch stops when the point's distance from its view's centre, in view-normalised
coordinates over the half-diagonal (sqrt(0.5)), is below ``threshold`` (0.05) on ``settle`` (2)
consecutive predictions, the full screenshot's included. The two final points go to the
image-as-map choice (:func:`~regionfocus.strategies.compose.choose_on_map`).

Deviations from the official code (vivo/DiMo-GUI @ ebcdda5c): the official prompts are
OS-Atlas's (with an assistant prefill ``<|object_ref_start|>...<|box_start|>(``); here their
text goes as the instruction inside the model adapter's grounding prompt. Every view there is
resized to 999 x 999 before it is sent; here at its own pixels (``zoom``). The choice there is
always asked, as text: "Candidate 1 (text-based): <bbox> ... Just answer with '1' or '2'" on the
full screenshot; here only when the branches disagree (beyond ``merge_radius``), as the
image-as-map choice with numbered stars. After a stopping prediction the official code has
already moved its region and maps the point through the new one (off by the re-centring);
here the point is mapped through the view it was found in. The published eval_screenspot_pro.py
has the DiMo call commented out (it runs the plain baseline); the method is the function above.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

from ..geometry import Box, Point
from .base import Attempt, BaseStrategy, box_inside, full_box, ground_full, ground_view, strategy_prompt
from .compose import choose_on_map

TEXT_PROMPT = strategy_prompt("dimo_text_prompt.txt")
ICON_PROMPT = strategy_prompt("dimo_icon_prompt.txt")
HALF_DIAGONAL = math.sqrt(0.5)


def centre_distance(point: Point, view: Box) -> float:
    """The official ``calculate_relative_distance``: the point's distance from the view's centre
    in view-normalised coordinates, over the half-diagonal (0 at the centre, 1 at a corner)."""
    c = view.center
    return math.hypot((point.x - c.x) / view.width, (point.y - c.y) / view.height) / HALF_DIAGONAL


@dataclass
class DiMoGUI(BaseStrategy):
    name = "dimo-gui"
    paper = "Wu et al. 2025, DiMo-GUI (arXiv:2507.00008)"
    call_budget = "2 branches x (1 + up to 4 crops) + 1 choice"
    requires = "max_steps >= 0, settle >= 1, threshold >= 0"

    max_steps: int = 4  # official max_iter 5 counts the full-screenshot prediction
    settle: int = 2
    threshold: float = 0.05
    portrait_ratio: tuple[float, float] = (1 / 1.2, 0.5)
    text_prompt: str = TEXT_PROMPT
    icon_prompt: str = ICON_PROMPT
    merge_radius: float = 8.0
    zoom: str = "native"

    async def _branch(self, ledger, model, source, screenshot, instruction, branch) -> Point | None:
        template = self.text_prompt if branch == "text" else self.icon_prompt
        asked = template.format(instruction)
        view = full_box(screenshot.size)
        point = await ground_full(ledger, model, screenshot, asked, f"{branch}[0]")
        centred = int(point is not None and centre_distance(point, view) < self.threshold)
        ledger.step(branch=branch, step=0, point=point, centred=centred)
        rx, ry = self.portrait_ratio if screenshot.width < screenshot.height else (0.5, 0.5)
        for s in range(1, self.max_steps + 1):
            if point is None or centred >= self.settle:
                break
            view = box_inside(point, view.width * rx, view.height * ry, view)
            new, _ = await ground_view(
                ledger, model, source, screenshot, view, asked, self.zoom, f"{branch}[{s}]"
            )
            centred = centred + 1 if new is not None and centre_distance(new, view) < self.threshold else 0
            ledger.step(branch=branch, step=s, crop=view, point=new, centred=centred)
            if new is None:
                ledger.note(f"{branch} branch step {s}: no point; the previous point stands")
                break
            point = new
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
