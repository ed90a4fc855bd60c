"""Where the numbered stars of an image-as-map go: pure geometry, no pixels (``stars.py`` draws).

The map must be readable by a model that pairs each number with the star nearest to it. The
rule, applied to every drawing (choice maps, history stars, the judge's star):

* a star shrinks (never below half its size) so it does not cover a neighbour closer than two
  radii; its point is always drawn as a white dot in a pink disc;
* a tag sits on the first free position around its star, trying rings farther out, where it
  is *safe*: its own star is nearer to it than any other star by a margin (``Style.tie``), so
  pairing by distance gives the right star. Free means inside the image and clear of every
  star's full-size square and every tag, inset and inset source;
* a crowd whose stars would still overlap, or a star none of whose tag positions is safe,
  is shown in a magnified inset: the crowd's region of the screenshot, enlarged so that its
  stars are apart, framed in pink, placed as near the crowd as there is room and joined by a
  line to a pink frame round the crowd's region (where the points keep their dots). Its tags
  follow the same rule inside it. A star whose tag is unsafe joins its nearest neighbour's
  crowd, until every tag is safe or nothing changes;
* only when there is no room for an inset does a tag go wherever it is free, joined to its
  star by a leader line (the last resort: such a tag is legible but not pairable by distance).

Sizes are for the image's long side (``REFERENCE_LONG_SIDE``), with floors; the geometry is the
same in every frame up to scale, so a model-size copy is laid out in the screenshot's frame.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import ImageFont

from .geometry import Box, Point

REFERENCE_LONG_SIDE = 3840  # sizes below are given for a 3840x2160 screenshot
RADIUS_4K = 20.0  # the released code: 20 px (UI-TARS judge), 15 (UI-TARS choice), 12 and 8 (Qwen)
RADIUS_FLOOR = 10.0  # below a 1920 px long side the star stops shrinking
FONT_4K = 28.0  # DejaVu Sans Bold at 28 px: digits 21 px tall
FONT_FLOOR = 14.0  # digits 10 px tall: the size at 1920x1080, kept on smaller pages
MAX_ZOOM = 8  # an inset enlarges its crowd at most this much
INSET_SHARE = 0.45  # and is at most this share of the image's short side
DIGITS = "0123456789"

Rect = tuple[float, float, float, float]  # left, top, right, bottom


def _base(size: tuple[int, int], at_4k: float, floor: float) -> float:
    return max(floor, at_4k * max(size) / REFERENCE_LONG_SIDE)


def star_radius(size: tuple[int, int], scale: float = 1.0) -> int:
    """Outer radius in pixels: 20 px on a 3840-px-wide screenshot, proportional to the long
    side, never below 10 px (before ``scale``); ``scale`` multiplies it."""
    return max(2, round(_base(size, RADIUS_4K, RADIUS_FLOOR) * scale))


def label_px(size: tuple[int, int], scale: float = 1.0) -> int:
    """Font size of the number tags: 28 px at 4K (21 px digits), never below 14 px."""
    return max(6, round(_base(size, FONT_4K, FONT_FLOOR) * scale))


@lru_cache(maxsize=32)
def font(px: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    for name in ("DejaVuSans-Bold.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"):
        try:
            return ImageFont.truetype(name, px)
        except OSError:
            continue
    return ImageFont.load_default(size=px)  # Pillow >= 10.1 ships a scalable default


@dataclass(frozen=True)
class Style:
    """Every pixel size of one drawing, derived from the image size and ``scale``."""

    r: int  # star outer radius
    stroke: int  # star outline, leader and frame width
    core: int  # radius of the opaque pink disc at the point
    dot: int  # radius of the white dot at the point
    font_px: int
    pad_x: int  # text to the pink's edge, left and right
    pad_y: int  # text to the pink's edge, top and bottom
    ring: int  # white rim round a tag: it stays a tag over pink or busy UI
    gap: int  # star to its own tag, on the nearest ring
    margin: int  # least clearance between a tag and any other tag or star

    @property
    def tie(self) -> float:
        """How much nearer its own star a tag must be than any other."""
        return max(2.0, self.r / 4)

    @classmethod
    def of(cls, size: tuple[int, int], scale: float, reference: tuple[int, int] | None = None) -> Style:
        """The style of a drawing on an image of ``size``. ``reference``: the size of the
        screenshot the image stands for (a model-size copy of it): the star and tag are then
        sized for the screenshot and shrunk by ``size / reference``, so they look to the model
        exactly as a star drawn on the screenshot and resized with it would."""
        if reference is not None and tuple(reference) != tuple(size):
            # Every size of the screenshot's drawing, shrunk (or grown) with the image, so the
            # floors below apply to the screenshot, as they do when a drawn copy is resized.
            full = cls.of(reference, scale)
            k = max(size) / max(reference)
            return cls(
                r=max(2, round(full.r * k)),
                stroke=max(1, round(full.stroke * k)),
                core=max(1, round(full.core * k)),
                dot=round(full.dot * k),  # 0: a single white pixel
                font_px=max(6, round(full.font_px * k)),
                pad_x=max(1, round(full.pad_x * k)),
                pad_y=max(1, round(full.pad_y * k)),
                ring=round(full.ring * k),
                gap=max(1, round(full.gap * k)),
                margin=max(1, round(full.margin * k)),
            )
        r = star_radius(size, scale)
        font_px = label_px(size, scale)
        return cls(
            r=r,
            stroke=max(1, min(2, r // 4), round(r * 0.1)),
            core=max(2, round(r * 0.2)),
            dot=max(1, round(r * 0.08)),
            font_px=font_px,
            pad_x=max(3, round(font_px * 0.35)),
            pad_y=max(2, round(font_px * 0.2)),
            ring=max(1, round(font_px * 0.07)),
            gap=max(1, round(r * 0.15)),
            margin=max(1, round(r * 0.1)),
        )


def tag_size(label: str, style: Style) -> tuple[int, int]:
    """(width, height) of the tag holding ``label``, white rim included."""
    f = font(style.font_px)
    x0, _, x1, _ = f.getbbox(label)
    _, d0, _, d1 = f.getbbox(DIGITS)  # one height for every number, whatever its digits
    w = (x1 - x0) + 2 * (style.pad_x + style.ring)
    h = (d1 - d0) + 2 * (style.pad_y + style.ring)
    return int(math.ceil(w)), int(math.ceil(h))


def _rect(b: Box) -> Rect:
    return (b.left, b.top, b.right, b.bottom)


def _square(p: Point, r: float) -> Rect:
    """Every pixel a star of radius ``r`` (outline included) can touch."""
    return (p.x - r - 1, p.y - r - 1, p.x + r + 1, p.y + r + 1)


def _hits(a: Rect, obstacles: Sequence[Rect], m: float) -> bool:
    al, at, ar, ab = a
    return any(al < br + m and bl < ar + m and at < bb + m and bt < ab + m for bl, bt, br, bb in obstacles)


def _gap(p: Point, b: Rect) -> float:
    """Distance from ``p`` to the nearest point of ``b``."""
    return math.hypot(max(0.0, b[0] - p.x, p.x - b[2]), max(0.0, b[1] - p.y, p.y - b[3]))


def _safe(box: Rect, i: int, marks: Sequence[tuple[int, Point]], tie: float) -> bool:
    """Is every mark of candidate ``i`` nearer to ``box`` than any other mark, by ``tie``?"""
    own = min(_gap(p, box) for j, p in marks if j == i)
    return all(_gap(p, box) >= own + tie for j, p in marks if j != i)


def _ring_candidates(p: Point, r: int, w: int, h: int, gap: float, n: int) -> list[tuple[int, int]]:
    """Top-left corners of ``n`` tags around the star, each just outside the square of half-side
    ``r + gap`` centred on it, starting upper right and going clockwise."""
    half = r + 1 + gap
    out = []
    for j in range(n):
        a = -math.pi / 4 + 2 * math.pi * j / n
        ux, uy = math.cos(a), math.sin(a)
        k = max(abs(ux), abs(uy))
        sx, sy = ux / k, uy / k  # on the unit square's boundary: one of them is +-1
        ax, ay = p.x + half * sx, p.y + half * sy
        # sx = 1: tag to the right of the anchor; -1: to its left; 0: centred on it.
        left = ax - w * (1 - sx) / 2
        top = ay - h * (1 - sy) / 2
        # Round away from the star so rounding never brings the tag closer than ``gap``.
        left = math.ceil(left) if sx > 0.999 else math.floor(left) if sx < -0.999 else round(left)
        top = math.ceil(top) if sy > 0.999 else math.floor(top) if sy < -0.999 else round(top)
        out.append((int(left), int(top)))
    return out


def _free_anywhere(
    p: Point, w: int, h: int, size: tuple[int, int], obstacles: Sequence[Rect], m: float, step: int
) -> tuple[int, int] | None:
    """The free top-left corner on a grid over the whole image whose box is nearest ``p``."""
    W, H = size
    if w > W or h > H:
        return None
    xs = np.unique(np.append(np.arange(0, W - w + 1, step), W - w))
    ys = np.unique(np.append(np.arange(0, H - h + 1, step), H - h))
    gx, gy = np.meshgrid(xs, ys)
    gx, gy = gx.ravel().astype(float), gy.ravel().astype(float)
    free = np.ones(gx.shape, bool)
    for bl, bt, br, bb in obstacles:
        free &= ~((gx < br + m) & (bl < gx + w + m) & (gy < bb + m) & (bt < gy + h + m))
    if not free.any():
        return None
    gx, gy = gx[free], gy[free]
    dx = np.maximum(0, np.maximum(gx - p.x, p.x - (gx + w)))
    dy = np.maximum(0, np.maximum(gy - p.y, p.y - (gy + h)))
    i = int(np.argmin(dx * dx + dy * dy))  # first minimum: deterministic
    return int(gx[i]), int(gy[i])


@dataclass(frozen=True)
class Mark:
    """How one candidate is drawn (pixels of the laid-out frame)."""

    point: Point  # the candidate itself: always a white dot in a pink disc
    at: Point  # its numbered star: the point, or its place in an inset
    r: int  # that star's radius
    tag: Box | None  # None: an empty label
    leader: bool  # a line joins the tag to the star
    inset: int | None  # index of the inset showing it


@dataclass(frozen=True)
class Inset:
    """A crowd's region ``source`` shown ``zoom`` times larger at ``box``."""

    source: Box  # whole pixels; may pass the image's edges
    box: Box
    zoom: int


@dataclass(frozen=True)
class StarMap:
    marks: list[Mark]
    insets: list[Inset]


def _place_tags(
    size: tuple[int, int],
    order: Sequence[int],
    at: dict[int, Point],
    names: Sequence[str],
    style: Style,
    obstacles: list[Rect],
    marks: Sequence[tuple[int, Point]],
) -> tuple[dict[int, tuple[Rect, bool]], list[int]]:
    """Tags for the stars ``order`` at ``at``: {index: (box, leader)} and the indices for which
    no safe position exists (these get a free one, with a leader line). Rings are measured
    from the full-size star, whatever size it is drawn: a tag never covers where a star of
    the default size would be."""
    W, H = size
    placed: dict[int, tuple[Rect, bool]] = {}
    unsafe = []
    for i in order:
        if not names[i]:
            continue
        w, h = tag_size(names[i], style)
        taken = obstacles + [b for b, _ in placed.values()]
        step = max(2, round(0.6 * min(w, h)))
        first_free = None
        spot = None
        for ring in range(8):
            for left, top in _ring_candidates(at[i], style.r, w, h, style.gap + ring * step, 8 * (ring + 1)):
                box = (left, top, left + w, top + h)
                if left < 0 or top < 0 or left + w > W or top + h > H or _hits(box, taken, style.margin):
                    continue
                if _safe(box, i, marks, style.tie):
                    spot = (box, ring > 0)
                    break
                first_free = first_free or box
            if spot is not None:
                break
        if spot is None:
            unsafe.append(i)
            if first_free is None:
                xy = _free_anywhere(at[i], w, h, size, taken, style.margin, max(1, min(w, h) // 4))
                if xy is None:  # no room anywhere: the upper-right spot, clamped inside the image
                    xy = (
                        min(max(0, round(at[i].x) + 2), max(0, W - w)),
                        min(max(0, round(at[i].y) - h - 2), max(0, H - h)),
                    )
                first_free = (xy[0], xy[1], xy[0] + w, xy[1] + h)
            spot = (first_free, True)
        placed[i] = spot
    return placed, unsafe


def _inset(
    size: tuple[int, int],
    members: list[int],
    points: Sequence[Point],
    names: Sequence[str],
    style: Style,
    obstacles: list[Rect],
) -> tuple[Inset, dict[int, Point], dict[int, tuple[Rect, bool]]] | None:
    """The least enlargement of the crowd ``members`` whose tags are all safe inside it, placed
    nearest the crowd clear of ``obstacles``; None when there is no room."""
    pts = {i: points[i] for i in members}
    d = max(1.0, min(pts[a].distance(pts[b]) for a in members for b in members if a < b))
    tag = max((max(tag_size(names[i], style)) for i in members if names[i]), default=0)
    room = style.r + 1 + style.gap + tag + 2 * style.margin  # a star's tag fits beside it
    left, top = min(p.x for p in pts.values()), min(p.y for p in pts.values())
    right, bottom = max(p.x for p in pts.values()), max(p.y for p in pts.values())
    cap = INSET_SHARE * min(size)
    first = min(MAX_ZOOM, max(2, math.ceil((2 * style.r + 2 * style.margin) / d)))
    for zoom in range(first, MAX_ZOOM + 1):
        e = math.ceil(room / zoom)
        src = (math.floor(left) - e, math.floor(top) - e, math.ceil(right) + e, math.ceil(bottom) + e)
        w, h = (src[2] - src[0]) * zoom, (src[3] - src[1]) * zoom
        if max(w, h) > cap:
            return None
        inner = {i: Point((p.x - src[0]) * zoom, (p.y - src[1]) * zoom) for i, p in pts.items()}
        squares = [_square(p, style.r) for p in inner.values()]
        tags, unsafe = _place_tags((w, h), members, inner, names, style, squares, list(inner.items()))
        if unsafe:
            continue
        centre = Point((left + right) / 2, (top + bottom) / 2)
        xy = _free_anywhere(centre, w, h, size, obstacles + [src], room, max(4, min(w, h) // 8))
        if xy is None:
            return None
        x, y = xy
        moved = {i: Point(p.x + x, p.y + y) for i, p in inner.items()}
        shifted = {i: ((b[0] + x, b[1] + y, b[2] + x, b[3] + y), lead) for i, (b, lead) in tags.items()}
        return Inset(Box(*src), Box(x, y, x + w, y + h), zoom), moved, shifted
    return None


def plan(
    size: tuple[int, int], points: Sequence[Point], names: Sequence[str], style: Style, magnify: bool = True
) -> StarMap:
    """Lay out the stars and tags for ``points`` (see the module docstring for the rule).
    ``magnify=False``: no insets, for an image the model answers with a point on (an inset
    shows screen content twice, and a point on the copy is not where it seems)."""
    n = len(points)
    near = [
        min((points[i].distance(q) for j, q in enumerate(points) if j != i), default=math.inf)
        for i in range(n)
    ]
    least = max(2, round(style.r / 2))
    radii = {i: int(min(style.r, max(least, near[i] / 2))) for i in range(n)}
    crowd = list(range(n))  # union-find over candidates shown in one inset

    def root(i: int) -> int:
        while crowd[i] != i:
            crowd[i] = crowd[crowd[i]]
            i = crowd[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if points[i].distance(points[j]) < 2 * least:  # stars overlap even shrunk
                crowd[root(i)] = root(j)
    squares = [_square(p, style.r) for p in points]
    no_room: set[int] = set()
    while True:
        groups: dict[int, list[int]] = {}
        for i in range(n):
            groups.setdefault(root(i), []).append(i)
        insets: list[Inset] = []
        at = {i: p for i, p in enumerate(points)}
        tags: dict[int, tuple[Rect, bool]] = {}
        inset_of: dict[int, int] = {}
        busy: list[Rect] = []  # inset boxes and sources
        grew = False
        for members in groups.values():
            if not magnify or len(members) < 2 or not any(names[i] for i in members):
                continue
            made = _inset(size, members, points, names, style, squares + busy)
            if made is None:
                no_room.update(members)  # a larger crowd would need a larger inset
                continue
            ins, moved, inner_tags = made
            # A point in the region an inset shows is shown in it: the inset never shows its
            # place without its star.
            for j in range(n):
                if root(j) != root(members[0]) and _gap(points[j], _rect(ins.source)) <= style.r:
                    crowd[root(j)] = root(members[0])
                    grew = True
            if grew:
                break
            inset_of.update({i: len(insets) for i in members})
            insets.append(ins)
            at.update(moved)
            tags.update(inner_tags)
            busy += [_rect(ins.source), _rect(ins.box), *(b for b, _ in inner_tags.values())]
        if grew:
            continue
        marks = [(i, p) for i, p in enumerate(points)] + [(i, at[i]) for i in inset_of]
        plain = [i for i in range(n) if i not in inset_of]
        placed, unsafe = _place_tags(size, plain, at, names, style, squares + busy, marks)
        tags.update(placed)
        for i in unsafe:
            others = [j for j in range(n) if root(j) != root(i) and j not in no_room]
            if others and i not in no_room:
                j = min(others, key=lambda j: points[i].distance(points[j]))
                crowd[root(i)] = root(j)
                grew = True
        if not grew:
            break
    return StarMap(
        [
            Mark(
                points[i],
                at[i],
                style.r if i in inset_of else radii[i],
                Box(*tags[i][0]) if i in tags else None,
                tags[i][1] if i in tags else False,
                inset_of.get(i),
            )
            for i in range(n)
        ],
        insets,
    )


def extents(star_map: StarMap, style: Style) -> list[Box]:
    """For each candidate, a box holding every pixel drawn for it: its dot and star, its tag and
    leader, and for a candidate in an inset the whole inset, its source frame and the line
    joining them (frame pixels, may reach past the image's edges)."""
    out = []
    pad = style.stroke + 1
    for m in star_map.marks:
        rects = [_square(m.point, style.r + 1), _square(m.at, style.r + 1)]
        if m.tag is not None:
            rects.append(_rect(m.tag))
        if m.inset is not None:
            ins = star_map.insets[m.inset]
            for b in (ins.source, ins.box):
                rects.append((b.left - pad, b.top - pad, b.right + pad, b.bottom + pad))
        out.append(
            Box(
                math.floor(min(r[0] for r in rects)),
                math.floor(min(r[1] for r in rects)),
                math.ceil(max(r[2] for r in rects)),
                math.ceil(max(r[3] for r in rects)),
            )
        )
    return out
