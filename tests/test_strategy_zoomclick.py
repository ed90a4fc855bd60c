"""ZoomClick when the full screenshot gives no point: the start the official code takes.

Princeton-AI2-Lab/ZoomClick @ 6a0c3633, grounding/eval_sspro_zoomclick.py,
``prezoom_first_iteration_distance``: with no direct point the start is ``patch_points_norm[0]``,
the first tile's point, and a silent tile's entry there is already its centre. So a silent first
tile is the start even when a later tile found the target. Until c089554 we started from the
first tile that answered; on the built-in set with the OCR stand-in (silent where it cannot read)
that gave 47.2 % against the official rule's 30.6 % (BENCHMARKS.md §7, "traced").
"""

from __future__ import annotations

from dataclasses import dataclass

from regionfocus.actions import click
from regionfocus.geometry import Box, Point
from regionfocus.model import ModelReply
from regionfocus.strategies import ZoomClick

from .test_strategies_core import GREEN, INSTR, TARGET, Seen, TargetModel, crops, exact, run, screen


@dataclass
class Reader(TargetModel):
    """Answers like the OCR stand-in: only on an image it sees at its own pixels (no wider than
    ``sight``) and only where it finds the target; anything else is no action."""

    async def act(self, image, query, *, zoomed=False):
        self.seen.append(Seen("act", image.size, query.instruction, image))
        p = self.locate(image, query.instruction) if self.input_size(image.size) == image.size else None
        if p is None:
            return ModelReply("no text matching", usage=self._usage(image))
        return ModelReply(f"click({p.x:.1f},{p.y:.1f})", action=click(p.x, p.y), usage=self._usage(image))


def test_no_full_image_point_and_a_silent_first_tile_start_at_that_tile_centre():
    res = run(ZoomClick(), Reader(), None)  # the target (1400, 300) is in tile 1 only
    assert [c.kind for c in res.calls] == [
        "baseline",
        "tile[0]",
        "tile[1]",
        "tile[2]",
        "tile[3]",
        "shrink[1]",
    ]
    pre = next(s for s in res.steps if s.get("stage") == "pre-zoom")
    assert pre["full"] is None
    assert [p is not None for p in pre["points"]] == [False, True, False, False]
    assert any(exact(p) for p in res.candidates)  # tile 1 found it ...
    # ... but the official start is patch_points_norm[0]: tile 0's centre, and the crop around
    # it (960 x 768, clipped) reads nothing, so that centre is the click
    assert [b.to_list() for b in crops(res)] == [[0, 0, 960, 654]]
    assert res.point == Point(480, 270)


def test_no_full_image_point_and_an_answering_first_tile_start_at_its_point():
    in_tile0 = Box(400, 300, 412, 312)
    img = screen(targets=((in_tile0, GREEN), (TARGET, GREEN)))  # tile 0 and tile 1 both hold it
    res = run(ZoomClick(), Reader(), None, image=img, instruction=INSTR)
    pre = next(s for s in res.steps if s.get("stage") == "pre-zoom")
    assert pre["full"] is None and pre["points"][0] is not None and pre["points"][1] is not None
    assert res.point.distance(in_tile0.center) <= 1
