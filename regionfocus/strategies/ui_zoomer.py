"""UI-Zoomer: sample n answers with token log-probabilities; when they agree (spatial
consensus plus token confidence above a threshold) answer the vote winner, else crop a square
sized from the spread of the samples and predict once more.

Paper: F. Tang, B. Chen et al., "UI-Zoomer: Uncertainty-Driven Adaptive Zoom-In for GUI
Grounding", arXiv:2604.14113 (2026). Code: ZJU-REAL/UI-Zoomer @ 2c112506, UI-Zoomer/uizoomer.py
(``process_single_image``, ``get_density_gaussian_crop_box``) with the settings of
scripts/UI-Zoomer_on_ScreenSpotPro/run_uizoomer_sspro.sh (``--num_samples 8
--gating_threshold 1.5 --sigma_scale 2.5``). ``n`` (8) samples at temperature 0.9 (fixed in
the code); a sample's confidence is exp(mean token log-prob); consensus = mean pairwise IoU of
the sample boxes (a point becomes a ``box_side`` px square). The official gate is
consensus + mean confidence > 1.5, here ``iou_weight`` (0.5) * consensus + (1 - ``iou_weight``)
* confidence > ``threshold`` (0.75), the same test (consensus alone when the backend gives no
log-probabilities, noted). Passed: each sample gets a vote from every other whose box overlaps
its box at IoU > 0.5; the most voted wins, ties (and no votes at all) going to the most
confident; the answer is its box's centre. Else the crop: keep the 75 % of samples nearest
the median centre (at least one), sigma^2 per axis = Var of their centres + mean (extent/4)^2,
a square of side max over the axes of 2 * ``k_sigma`` (2.5) * sigma, at least ``min_side``
(512) px, centred on their mean centre and shifted inside the image; one greedy answer there;
if it names nothing, the most confident sample's point. The crop is upsampled there (at least
1M pixels), so here ``zoom`` "fill".

Deviations from the official code (ZJU-REAL/UI-Zoomer @ 2c112506): the official prompt is
UI-Venus's "Outline the position corresponding to the instruction: {}. The output should be
only [x1,y1,x2,y2]." (boxes from every sample); here the model adapter's sampling prompt, and a
point-only answer votes as a ``box_side`` square. The screenshot there is resized to 2M-4.8M
pixels and the crop to 1M-4M (multiples of 28) before sending; here the adapter's processor
sizes the screenshot and "fill" upsamples the crop toward it. With no sample naming a box the
official answer is the image centre; here no point. The argparse default sigma_scale is 3.5;
the published run uses 2.5, taken here.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from itertools import combinations

from ..geometry import Box, Point
from .base import Attempt, BaseStrategy, box_inside, full_box, ground_view
from .sampling import draw_samples, point_box


def mean_pairwise_iou(boxes: list[Box]) -> float:
    pairs = list(combinations(boxes, 2))
    return 1.0 if not pairs else sum(a.iou(b) for a, b in pairs) / len(pairs)


def vote_winner(boxes: list[Box], confs: list[float | None]) -> int:
    """The official gate-passed choice: votes from every other box overlapping at IoU > 0.5,
    the most voted (ties and no votes: the most confident, then the first)."""
    votes = [sum(1 for j, o in enumerate(boxes) if j != i and b.iou(o) > 0.5) for i, b in enumerate(boxes)]
    top = max(votes)
    tied = [i for i, v in enumerate(votes) if v == top]
    return max(tied, key=lambda i: (confs[i] or 0.0, -i))


def spread_square(
    boxes: list[Box], k_sigma: float, min_side: float
) -> tuple[Point, float, tuple[float, float]]:
    """(centre, side, per-axis sigma) of the official density-filtered Gaussian crop: the 75 %
    of boxes whose centres are nearest the median centre; sigma^2 = Var of those centres plus
    the mean of (extent / 4)^2; side = max(2 k sigma_x, 2 k sigma_y, min_side)."""
    med = Point(statistics.median(b.center.x for b in boxes), statistics.median(b.center.y for b in boxes))
    kept = sorted(boxes, key=lambda b: b.center.distance(med))[: max(1, int(len(boxes) * 0.75))]
    sx, sy = (
        math.sqrt(statistics.pvariance(c) + sum((e / 4) ** 2 for e in extent) / len(extent))
        for c, extent in (
            ([b.center.x for b in kept], [b.width for b in kept]),
            ([b.center.y for b in kept], [b.height for b in kept]),
        )
    )
    centre = Point(statistics.fmean(b.center.x for b in kept), statistics.fmean(b.center.y for b in kept))
    return centre, max(2 * k_sigma * sx, 2 * k_sigma * sy, min_side), (sx, sy)


@dataclass
class UIZoomer(BaseStrategy):
    name = "ui-zoomer"
    paper = "Tang, Chen et al. 2026, UI-Zoomer (arXiv:2604.14113); ZJU-REAL/UI-Zoomer @ 2c112506"
    call_budget = "1 request with n (8) samples + 1 crop when uncertain"
    needs_sampling = True
    requires = "n >= 1, temperature > 0, 0 <= iou_weight <= 1, box_side > 0, k_sigma > 0, min_side > 0"

    n: int = 8
    temperature: float = 0.9  # fixed in the official process_single_image
    threshold: float = 0.75  # official: consensus + confidence > 1.5
    iou_weight: float = 0.5
    box_side: float = 50.0
    k_sigma: float = 2.5  # the published run's --sigma_scale
    min_side: float = 512.0
    zoom: str = "fill"  # the official crop is upsampled to at least 1M pixels

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        size = screenshot.size
        drawn = await draw_samples(ledger, model, screenshot, instruction, self.n, self.temperature)
        if not drawn.points:
            return None
        boxes = [
            b if b is not None else point_box(p, self.box_side, size)
            for p, b in zip(drawn.points, drawn.boxes, strict=True)
        ]
        consensus = mean_pairwise_iou(boxes)
        confs = [c for c in drawn.confidences if c is not None]
        confidence = sum(confs) / len(confs) if confs else None
        if confidence is None:
            score = consensus
            if not drawn.degenerate:
                ledger.note(
                    "no token log-probabilities from the backend: the gate uses spatial consensus only"
                )
        else:
            score = self.iou_weight * consensus + (1 - self.iou_weight) * confidence
        best = vote_winner(boxes, drawn.confidences)
        point = boxes[best].center if drawn.boxes[best] is not None else drawn.points[best]
        ledger.result.candidates = [point]
        step = {"samples": drawn.points, "consensus": consensus, "confidence": confidence, "score": score}
        if score > self.threshold:
            ledger.step(**step, gate="accept", winner=point)
            return point
        centre, side, sigma = spread_square(boxes, self.k_sigma, self.min_side)
        crop = box_inside(centre, side, side, full_box(size))
        new, _ = await ground_view(ledger, model, source, screenshot, crop, instruction, self.zoom, "zoom")
        ledger.step(**step, gate="zoom", sigma=sigma, crop=crop, point=new)
        if new is not None:
            return new
        ledger.note("no point in the zoomed crop: the most confident sample stands")
        top = max(range(len(boxes)), key=lambda i: (drawn.confidences[i] or 0.0, -i))
        return boxes[top].center if drawn.boxes[top] is not None else drawn.points[top]
