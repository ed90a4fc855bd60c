"""UI-Zoomer: sample n answers with token log-probabilities; when they agree (spatial
consensus plus token confidence above a threshold) answer the majority, else crop a square
sized from the spread of the samples and predict once more.

Paper: F. Tang, B. Chen et al., "UI-Zoomer: Uncertainty-Driven Adaptive Zoom-In for GUI
Grounding", arXiv:2604.14113 (2026): a confidence-aware gate fuses spatial consensus among
stochastic candidates with token-level generation confidence; the crop radius comes from the
law of total variance (inter-sample spread of the centres plus intra-sample box extent). No
public code found with the search tools; chosen and parameters: consensus = mean pairwise IoU
of the sample boxes (a point becomes a ``box_side`` px square), confidence = mean over samples of
exp(mean token log-prob), gate score = ``iou_weight`` * consensus + (1 - ``iou_weight``) *
confidence (consensus alone when the backend gives no log-probabilities, noted), threshold
``threshold``; the majority is the largest cluster of points within ``box_side``/2 of its first
member, answered by the member nearest the cluster mean; the crop is a square of side
2 * ``k_sigma`` * sigma around the mean, sigma^2 = the larger per-axis total variance
(Var of centres + mean box extent^2/12), at least ``min_side`` px, shifted inside the image.
A deterministic model gives one sample: consensus 1, the answer stands (noted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

from ..geometry import Box, Point
from .base import Attempt, BaseStrategy, box_inside, full_box, ground_view
from .sampling import draw_samples, point_box


def mean_pairwise_iou(boxes: list[Box]) -> float:
    pairs = list(combinations(boxes, 2))
    return 1.0 if not pairs else sum(a.iou(b) for a, b in pairs) / len(pairs)


def majority(points: list[Point], radius: float) -> tuple[Point, int]:
    """The point answering the largest cluster (greedy, in order), and the cluster size."""
    clusters: list[list[Point]] = []
    for p in points:
        for c in clusters:
            if p.distance(c[0]) <= radius:
                c.append(p)
                break
        else:
            clusters.append([p])
    best = max(clusters, key=len)  # first of equals: earlier samples win ties
    mx, my = sum(p.x for p in best) / len(best), sum(p.y for p in best) / len(best)
    return min(best, key=lambda p: p.distance(Point(mx, my))), len(best)


def spread_sigma(boxes: list[Box]) -> tuple[Point, float]:
    """(mean centre, sigma) with sigma^2 the larger per-axis total variance: the variance of
    the box centres plus the mean within-box variance of a uniform box (extent^2 / 12)."""
    n = len(boxes)
    cx = [b.center.x for b in boxes]
    cy = [b.center.y for b in boxes]
    mx, my = sum(cx) / n, sum(cy) / n
    var_x = sum((x - mx) ** 2 for x in cx) / n + sum(b.width**2 for b in boxes) / (12 * n)
    var_y = sum((y - my) ** 2 for y in cy) / n + sum(b.height**2 for b in boxes) / (12 * n)
    return Point(mx, my), math.sqrt(max(var_x, var_y))


@dataclass
class UIZoomer(BaseStrategy):
    name = "ui-zoomer"
    paper = "Tang, Chen et al. 2026, UI-Zoomer (arXiv:2604.14113)"
    call_budget = "1 request with n (8) samples + 1 crop when uncertain"
    needs_sampling = True
    requires = "n >= 1, temperature > 0, 0 <= iou_weight <= 1, box_side > 0, k_sigma > 0, min_side > 0"

    n: int = 8
    temperature: float = 0.7
    threshold: float = 0.5
    iou_weight: float = 0.5
    box_side: float = 50.0
    k_sigma: float = 2.0
    min_side: float = 512.0
    zoom: str = "native"

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
        point, votes = majority(drawn.points, self.box_side / 2)
        ledger.result.candidates = [point]
        step = {"samples": drawn.points, "consensus": consensus, "confidence": confidence, "score": score}
        if score >= self.threshold:
            ledger.step(**step, gate="accept", majority=point, votes=votes)
            return point
        centre, sigma = spread_sigma(boxes)
        side = max(self.min_side, 2 * self.k_sigma * sigma)
        crop = box_inside(centre, side, side, full_box(size))
        new, _ = await ground_view(ledger, model, source, screenshot, crop, instruction, self.zoom, "zoom")
        ledger.step(**step, gate="zoom", sigma=sigma, crop=crop, point=new)
        if new is None:
            ledger.note("no point in the zoomed crop: the majority answer stands")
        return new or point
