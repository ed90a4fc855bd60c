"""Accessibility box proposer: where to look, read from the page's own structure.

Instead of fixed fractions of the screen (the RegionFocus paper's default), the boxes around the
focal point come from A11y-Compressor's semantic structure (Takeshita et al., §3.3 and App. D;
see :mod:`regionfocus.a11y`): the open modal first, when there is one (it is what the user can
act on, §3.1), then the element group (a ``[BLOCK]`` of a region, App. D.3) that holds the focal
point or lies nearest to it, the functional region around it (NAVIGATION, CONTENT, ...), and
the next nearest groups.

Use: ``A11yProposer().propose(ctx)`` with ``ctx.elements`` set to the screen's tree (boxes in
screenshot pixels, e.g. from ``regionfocus.webvoyager.a11y_tree.snapshot``). With no tree it returns the
fixed-ratio boxes and says so: ``last_note``, and a ``proposer:a11y-fallback`` record in
``ctx.replies`` (no model was called; the record only carries the note into the trace).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..a11y import PHASES, A11yElement, compress, element_groups
from ..checks import require
from ..geometry import DEFAULT_RATIOS, Box, Point, fixed_ratio_boxes
from ..model import ModelReply, Usage
from .base import ProposalContext, enforce_min_size


def _gap(box: Box, p: Point) -> float:
    """Distance from ``p`` to ``box`` (0 inside)."""
    dx = max(box.left - p.x, 0.0, p.x - box.right)
    dy = max(box.top - p.y, 0.0, p.y - box.bottom)
    return (dx * dx + dy * dy) ** 0.5


class A11yProposer:
    """Boxes from the accessibility tree's regions and groups around the focal point.

    ``max_boxes``: at most this many (4, as many as the paper's fixed ratios). ``margin``: px
    added on every side of a group or region (a view should show the target's surroundings).
    ``min_size``: px, the smallest side of a box (a lone button would be a sliver). ``max_frac``:
    boxes covering more of the screen than this are left out (a view of the whole screen adds
    nothing). ``ratios``: the fixed-ratio fallback. ``phases``: A11y-Compressor phases used to
    build the structure (the full pipeline by default).
    """

    name = "a11y"

    def __init__(
        self,
        max_boxes: int = 4,
        margin: float = 16.0,
        min_size: float = 96.0,
        max_frac: float = 0.9,
        ratios: Sequence[tuple[float, float]] = DEFAULT_RATIOS,
        phases: Sequence[str] = PHASES,
    ):
        self.max_boxes, self.margin, self.min_size, self.max_frac = int(max_boxes), margin, min_size, max_frac
        self.ratios = tuple(tuple(r) for r in ratios)
        self.phases = tuple(phases)
        self.last_note = ""
        require(self, "max_boxes >= 1, 0 < max_frac <= 1")

    async def propose(self, ctx: ProposalContext) -> list[Box]:
        size = ctx.screenshot.size
        focal = ctx.focal or Point(size[0] / 2, size[1] / 2)
        boxes = self.boxes_for(ctx.elements, focal, size, ctx.query.instruction) if ctx.elements else []
        if not boxes:
            why = "no accessibility tree" if not ctx.elements else "no element group on screen"
            self.last_note = f"{why}: fixed-ratio boxes"
            ctx.replies.append(
                ("proposer:a11y-fallback", ModelReply(self.last_note, usage=Usage(endpoint="none")))
            )
            return fixed_ratio_boxes(focal, size, self.ratios)
        return boxes

    def boxes_for(
        self, elements: Sequence[A11yElement], focal: Point, size: tuple[int, int], instruction: str = ""
    ) -> list[Box]:
        """The boxes for ``focal`` (screenshot pixels) on a screen of ``size`` = (W, H) whose
        tree is ``elements``; sets ``last_note`` to where each box came from."""
        structured = compress(elements, instruction, phases=self.phases, viewport=size)
        groups = element_groups(structured.regions)
        regions = [(r.name, r.box) for r in structured.regions if r.box is not None]
        picks: list[tuple[str, Box]] = []
        modal = next((b for n, b in regions if n == "MODAL"), None)
        if modal is not None:
            picks.append(("modal", modal))
        by_gap = sorted(groups, key=lambda g: (_gap(g[1], focal), g[1].area))
        if by_gap:
            picks.append((f"group in {by_gap[0][0]}", by_gap[0][1]))
        home = [r for r in regions if r[0] != "MODAL" and r[1].contains(focal)]
        if not home and regions:
            home = [min(regions, key=lambda r: _gap(r[1], focal))]
        picks += [(f"region {n}", b) for n, b in sorted(home, key=lambda r: r[1].area)[:1]]
        picks += [(f"near group in {n}", b) for n, b in by_gap[1:]]
        out: list[Box] = []
        notes: list[str] = []
        limit, m = self.max_frac * size[0] * size[1], self.margin
        for why, b in picks:
            box = enforce_min_size(Box(b.left - m, b.top - m, b.right + m, b.bottom + m), self.min_size, size)
            if box.area > limit or any(box.iou(o) > 0.85 for o in out):
                continue
            out.append(box)
            notes.append(why)
            if len(out) == self.max_boxes:
                break
        self.last_note = "; ".join(notes)
        return out
