"""The HTML report shell both harnesses fill: a jinja2 environment over the harness's own
templates and the shared ``templates/shell.html`` (page skeleton, stylesheet, filters, tables,
and the overlay of a RegionFocus round drawn over a screenshot).

Pages are self-contained (inline CSS and JS; images as data URLs or relative paths). The
environment escapes every value it is given (autoescape), so a model's, a page's or a data
set's text never needs escaping by hand; StrictUndefined makes a missing field an error
rather than an empty cell.

Overlays are SVG in *screenshot pixels* laid over the image (``viewBox`` = the part of the
screenshot the image shows), so one drawing serves a whole screen, a thumbnail or a crop.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined
from PIL import Image

# What an overlay draws, each in one colour: shell.html's ``svg`` draws with these and its
# ``legend`` shows them with the same drawing macros, so a legend cannot disagree with the marks.
COLOURS = {
    "target": "#00c800",  # the ground-truth box
    "baseline": "#e61e1e",  # the agent's own point (ring "B")
    "final": "#145aff",  # the point after RegionFocus (ring "F")
    "action": "#e61e1e",  # an executed action's point (live runs)
    "focal": "#00c8dc",  # the focal point (cross)
    "candidate": "#ff1493",  # candidate stars, the model's image-as-map
    "history": "#888888",  # earlier points without effect (grey stars)
}
# The zoomed regions of a round, in turn: orange, purple, brown, olive. None is a colour of
# COLOURS, so a box never reads as the ground truth, a point or a candidate.
BOX_COLOURS = ("#ff8c00", "#8c3cdc", "#8b5a2b", "#9a9a00")
LEGEND = {
    "target": "ground truth",
    "baseline": "B baseline point",
    "final": "F final point",
    "action": "executed action",
    "focal": "focal point",
    "candidate": "candidates (black outline: chosen)",
    "history": "earlier tries without effect",
    "boxes": "RegionFocus views, in turn",
}


@cache
def templates(package: str) -> Environment:
    """The environment of ``package``'s ``templates/`` folder, which can import ``shell.html``."""
    env = Environment(
        loader=ChoiceLoader([PackageLoader(package), PackageLoader(__package__)]),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=lambda v: "" if v is None else v,  # a missing answer shows as nothing, not "None"
    )
    env.filters["num"] = lambda v, digits=1: f"{float(v):.{digits}f}"
    env.globals.update(star_points=star_points, colours=COLOURS, box_colours=BOX_COLOURS, legend_text=LEGEND)
    return env


def render(package: str, name: str, **context: Any) -> str:
    return templates(package).get_template(name).render(**context)


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def jpeg_data_url(image: Image.Image, quality: int = 75) -> str:
    buf = io.BytesIO()
    image.convert("RGB").save(buf, "JPEG", quality=quality, optimize=True)
    return data_url(buf.getvalue(), "image/jpeg")


def thumbnail(image: Image.Image, width: int) -> Image.Image:
    """``image`` at most ``width`` wide (never enlarged)."""
    s = min(1.0, width / image.width)
    size = (max(1, round(image.width * s)), max(1, round(image.height * s)))
    return image if s == 1.0 else image.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)


# ------------------------------------------------------------------------------ overlays
@dataclass
class Overlay:
    """What to draw over a screenshot (shell.html's ``shot``), every coordinate in its pixels.

    ``boxes``: zoomed regions (x0, y0, x1, y1). ``candidates``: (point, label, chosen) drawn as
    pink numbered stars. ``history``: earlier failed points (grey stars). ``focal``: the focal
    point (cyan cross). ``marks``: (point, kind, label) rings, ``kind`` a key of :data:`COLOURS`
    (a baseline, a final point, an executed action). ``target``: a ground-truth box, drawn last
    so nothing hides it."""

    boxes: list[Sequence[float]] = field(default_factory=list)
    candidates: list[tuple[Sequence[float], str, bool]] = field(default_factory=list)
    history: list[Sequence[float]] = field(default_factory=list)
    focal: Sequence[float] | None = None
    marks: list[tuple[Sequence[float], str, str]] = field(default_factory=list)
    target: Sequence[float] | None = None

    @classmethod
    def of_round(cls, rnd: dict[str, Any] | None) -> Overlay:
        """The overlay of one RegionFocus round as its trace records it (``RefineResult.to_dict``)."""
        out = cls()
        if not rnd:
            return out
        out.boxes = [b for b in rnd.get("boxes") or []]
        out.history = [p for p in rnd.get("history") or []]
        for c in rnd.get("merged") or []:
            point = (c.get("action") or {}).get("point")
            if point:
                number = c.get("number")
                out.candidates.append(
                    (point, str(number or ""), number is not None and number == rnd.get("choice"))
                )
        out.focal = rnd.get("focal")
        return out


def star_points(p: Sequence[float], r: float) -> str:
    """The SVG points of a five-pointed star of radius ``r`` around ``p``."""
    x, y = float(p[0]), float(p[1])
    pts = []
    for i in range(10):
        rad = r if i % 2 == 0 else r * 0.45
        a = -math.pi / 2 + i * math.pi / 5
        pts.append(f"{x + rad * math.cos(a):.1f},{y + rad * math.sin(a):.1f}")
    return " ".join(pts)
