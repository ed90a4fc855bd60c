"""GUI-RC (region consistency): sample n answers, let each vote for a square around its point
on a pixel grid, and answer the centre of the largest region with the most votes.

Paper: "Test-Time Reinforcement Learning for GUI Grounding via Region Consistency" (ZJU-REAL,
2025), GUI-RC being its training-free part. Code: ZJU-REAL/GUI-RCPO @ cd3bd513,
GUI-RC/evaluation.py: ``SAMPLE_NUM = 64`` answers at ``TEMPERATURE = 0.7``, top_p 0.95 (vLLM, one
request with n=64); an answer with four numbers is a box, with two a point expanded to a
``POINT_EXPAND_SIZE = 50`` px box, anything else votes nowhere; each box (truncated to whole
pixels, clipped to the image) adds 1 on an H x W grid; the mask of the maximum vote is labelled
(scipy.ndimage.label, 4-connectivity) and the answer is the centre of the bounding box of the
largest component (the first in scan order on a tie). Here the same, with OpenCV's 4-connected
labelling (same scan order); ``n``, ``temperature`` and ``box_side`` are its defaults. With a
deterministic model every vote lands on the same box: the answer is the point itself (noted).

Deviations from the official code (ZJU-REAL/GUI-RCPO @ cd3bd513): the official prompt is
Qwen2.5-VL's ``QUESTION_TEMPLATE`` ("You are a GUI analysis expert. ... outline the UI element
... exactly one bounding box in the format [x1, y1, x2, y2]"), asking for a box; here the model
adapter's sampling prompt, whose answer is a point (or a box where the adapter reads one).
top_p 0.95 is not sent (the sampling interface carries the temperature only); the backend's
default top_p applies.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from ..geometry import Box, Point
from .base import Attempt, BaseStrategy
from .sampling import draw_samples, point_box


def region_vote(boxes: list[Box], size: tuple[int, int]) -> tuple[Point | None, Box | None, int, list[Point]]:
    """(centre of the largest max-vote region, that region, its votes, centres of every
    max-vote region, largest first). Boxes are in image pixels, snapped to whole pixels."""
    ints = []
    for b in boxes:
        x1, y1 = max(0, int(b.left)), max(0, int(b.top))
        x2, y2 = min(size[0], int(b.right)), min(size[1], int(b.bottom))
        if x2 > x1 and y2 > y1:
            ints.append((x1, y1, x2, y2))
    if not ints:
        return None, None, 0, []
    ox, oy = min(b[0] for b in ints), min(b[1] for b in ints)
    grid = np.zeros((max(b[3] for b in ints) - oy, max(b[2] for b in ints) - ox), dtype=np.int32)
    for x1, y1, x2, y2 in ints:
        grid[y1 - oy : y2 - oy, x1 - ox : x2 - ox] += 1
    top = int(grid.max())
    count, _, stats, _ = cv2.connectedComponentsWithStats((grid == top).astype(np.uint8), connectivity=4)
    regions = sorted(range(1, count), key=lambda i: -int(stats[i, cv2.CC_STAT_AREA]))
    boxes_out = []
    for i in regions:
        x, y, w, h = (int(stats[i, k]) for k in range(4))
        boxes_out.append(Box(x + ox, y + oy, x + ox + w, y + oy + h))
    best = boxes_out[0]
    return best.center, best, top, [b.center for b in boxes_out]


@dataclass
class GuiRC(BaseStrategy):
    name = "gui-rc"
    paper = "GUI-RC: Test-Time RL for GUI Grounding via Region Consistency; ZJU-REAL/GUI-RCPO @ cd3bd513"
    call_budget = "1 request with n (64) samples"
    needs_sampling = True
    requires = "n >= 1, temperature > 0, box_side > 0"

    n: int = 64
    temperature: float = 0.7
    box_side: float = 50.0

    async def search(self, attempt: Attempt) -> Point | None:
        ledger, model, source, screenshot, instruction = attempt
        drawn = await draw_samples(ledger, model, screenshot, instruction, self.n, self.temperature)
        boxes = [
            b if b is not None else point_box(p, self.box_side, screenshot.size)
            for p, b in zip(drawn.points, drawn.boxes, strict=True)
        ]
        point, region, votes, centres = region_vote(boxes, screenshot.size)
        ledger.result.candidates = centres
        ledger.step(
            samples=drawn.points, region=region, votes=votes, point=point, degenerate=drawn.degenerate
        )
        return point
