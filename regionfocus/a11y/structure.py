"""Phase 3 of A11y-Compressor (§3.3, App. D): reading order, regions, blocks."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..geometry import Box
from .elements import REGION_ORDER, A11yElement, _by_id, landmark_of, union_box


@dataclass(frozen=True)
class StructureParams:
    """App. D.5: ``min_gap`` (40 px floor of G_base), ``gap_quantile`` (the lower 70 %),
    ``multipliers`` (3, 4, 8), ``max_blocks`` (50), ``many_blocks`` (10) and
    ``max_single_frac`` (0.5). Chosen: ``row_tolerance`` (fraction of the row's first element
    height within which centres share a row, JA §3.3 step 2), the layout fallbacks for pages
    without landmarks (``header_frac``: a top band holding ``min_links`` links is HEADER;
    ``nav_frac``: such a left column is NAVIGATION)."""

    min_gap: float = 40.0
    gap_quantile: float = 0.7
    multipliers: tuple[float, ...] = (3.0, 4.0, 8.0)
    max_blocks: int = 50
    many_blocks: int = 10
    max_single_frac: float = 0.5
    row_tolerance: float = 0.5
    header_frac: float = 0.1
    nav_frac: float = 0.2
    min_links: int = 3


@dataclass
class Region:
    """A functional region (App. D.2): its name, elements in reading order, their union box,
    and its blocks (D.3: lists of elements, split at gaps above Θ and before headings)."""

    name: str
    elements: list[A11yElement]
    box: Box | None
    blocks: list[list[A11yElement]] = field(default_factory=list)


def reading_order(
    elements: Sequence[A11yElement], p: StructureParams = StructureParams()
) -> list[A11yElement]:
    """App. D.1 with JA §3.3 step 2: rows top to bottom by centre y (centres within
    ``row_tolerance`` x the row's first height share a row), left to right within a row."""
    items = sorted((e for e in elements if e.box is not None), key=lambda e: (e.box.center.y, e.box.center.x))
    rows: list[list[A11yElement]] = []
    for e in items:
        if rows:
            head = rows[-1][0]
            if e.box.center.y - head.box.center.y <= p.row_tolerance * max(head.box.height, 1.0):
                rows[-1].append(e)
                continue
        rows.append([e])
    return [e for row in rows for e in sorted(row, key=lambda e: e.box.center.x)]


def _split(
    ordered: Sequence[A11yElement], theta: float, row_tolerance: float = 0.5
) -> list[list[A11yElement]]:
    """Blocks of ``ordered``: a new one after a vertical gap above ``theta``, and at a heading
    that opens a new row (headings side by side, as in a grid of cards, share the row's block)."""
    blocks: list[list[A11yElement]] = []
    for e in ordered:
        if blocks:
            prev = blocks[-1][-1]
            gap = e.box.center.y - prev.box.center.y
            new_row = gap > row_tolerance * max(prev.box.height, 1.0)
            if gap <= theta and not (e.role == "heading" and new_row):
                blocks[-1].append(e)
                continue
        blocks.append([e])
    return blocks


def block_threshold(ordered: Sequence[A11yElement], p: StructureParams = StructureParams()) -> float:
    """App. D.5: Θ = G_base · N, G_base = max(median of the lower 70 % of vertical gaps between
    neighbours, 40 px); N the first of 3, 4, 8 that does not over-segment (> 50 blocks, or
    > 10 blocks more than half of them single), else 8."""
    gaps = sorted(
        b.box.center.y - a.box.center.y
        for a, b in zip(ordered, ordered[1:], strict=False)
        if b.box.center.y - a.box.center.y > 0
    )
    lower = gaps[: max(1, math.ceil(len(gaps) * p.gap_quantile))] if gaps else []
    base = max(statistics.median(lower) if lower else 0.0, p.min_gap)
    for n in p.multipliers:
        blocks = _split(ordered, base * n, p.row_tolerance)
        singles = sum(1 for b in blocks if len(b) == 1)
        if len(blocks) > p.max_blocks or (
            len(blocks) > p.many_blocks and singles > p.max_single_frac * len(blocks)
        ):
            continue
        return base * n
    return base * p.multipliers[-1]


def assign_regions(
    elements: Sequence[A11yElement],
    viewport: tuple[int, int],
    tree: Sequence[A11yElement] = (),
    p: StructureParams = StructureParams(),
) -> dict[str, list[A11yElement]]:
    """App. D.2 for web pages: the nearest landmark names the region (``LANDMARK_REGIONS``);
    without one, an element in the top ``header_frac`` band goes to HEADER and one in the left
    ``nav_frac`` column to NAVIGATION when that band/column holds ``min_links`` links and the
    page has no landmark of that kind; the rest is CONTENT. ``tree``: all nodes (ancestors)."""
    W, H = viewport
    by_id = _by_id([*tree, *elements])
    named = {id(e): landmark_of(e, by_id) for e in elements}
    present = set(named.values())
    loose = [e for e in elements if e.role == "link" and not named[id(e)]]
    links_top = sum(1 for e in loose if e.box.center.y < p.header_frac * H)
    links_left = sum(1 for e in loose if e.box.center.x < p.nav_frac * W)
    out: dict[str, list[A11yElement]] = {}
    for e in elements:
        region = named[id(e)]
        if not region:
            c = e.box.center
            if "HEADER" not in present and links_top >= p.min_links and c.y < p.header_frac * H:
                region = "HEADER"
            elif "NAVIGATION" not in present and links_left >= p.min_links and c.x < p.nav_frac * W:
                region = "NAVIGATION"
            else:
                region = "CONTENT"
        out.setdefault(region, []).append(e)
    return out


def structure(
    modal: Sequence[A11yElement],
    background: Sequence[A11yElement],
    viewport: tuple[int, int],
    tree: Sequence[A11yElement] = (),
    params: StructureParams = StructureParams(),
) -> list[Region]:
    """Phase 3 (§3.3, Eq. 3-4): R = f_region(B'), then O = f_struct(R, M'): the MODAL region
    first (when M' is not empty), then the background regions in ``REGION_ORDER``, each in
    reading order and cut into blocks. ``tree``: every node, so landmarks dropped by phase 2
    are still found as ancestors."""
    regions: list[Region] = []
    groups: list[tuple[str, list[A11yElement]]] = []
    if modal:
        groups.append(("MODAL", list(modal)))
    by_region = assign_regions([e for e in background if e.box is not None], viewport, tree, params)
    groups += [(name, by_region[name]) for name in REGION_ORDER if name in by_region]
    for name, members in groups:
        ordered = reading_order(members, params)
        if not ordered:
            continue
        theta = block_threshold(ordered, params)
        blocks = _split(ordered, theta, params.row_tolerance)
        regions.append(Region(name, ordered, union_box(e.box for e in ordered), blocks))
    return regions


def element_groups(regions: Sequence[Region]) -> list[tuple[str, Box]]:
    """Every block of every region as (region name, union box): the element groups a
    proposer can cut views from, in observation order."""
    out = []
    for r in regions:
        for b in r.blocks:
            box = union_box(e.box for e in b if e.box is not None)
            if box is not None:
                out.append((r.name, box))
    return out
