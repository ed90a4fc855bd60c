"""The HTML report shell both harnesses fill: page skeleton, stylesheet, filters, thumbnails and
the overlay of a RegionFocus round drawn over a screenshot.

A harness contributes its own tables and per-sample panels; everything else is here, once.
Pages are self-contained (inline CSS and JS; images as data URLs or relative paths). Every
string that came from a model, a page or a data set must go through :func:`e` before it is put
into HTML; this module escapes everything it is given itself.

Overlays are SVG in *screenshot pixels* laid over the image (``viewBox`` = the part of the
screenshot the image shows), so one drawing serves a whole screen, a thumbnail or a crop.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

STAR_PINK = "#ff1493"
BOX_COLORS = ("#00aaff", "#ffaa00", "#00c878", "#aa50ff", "#ff3c3c")

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{padding:12px 20px;background:#2d2d44;color:#fff}header h1{margin:0;font-size:20px}
main{padding:12px 20px}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
td:first-child,th:first-child,.kv th,.kv td,.calls td{text-align:left}
.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;margin:1em 0}
.card.hidden{display:none}.meta{color:#666;margin:0}.inst{font-weight:600}
.imgs{display:flex;gap:8px;flex-wrap:wrap;align-items:flex-start}
.shot{position:relative;display:inline-block;max-width:100%}
.shot img{display:block;max-width:100%;border:1px solid #999}
.shot svg{position:absolute;left:0;top:0;width:100%;height:100%}
.overview{width:1200px}.crop{width:720px}.step-shot{width:560px;flex:none}
pre{white-space:pre-wrap;margin:0;max-width:70em;background:#f6f6f6;padding:4px;max-height:220px;overflow:auto}
.err{color:#b3261e}.ok{color:#0a7d32;font-weight:600}.bad{color:#b3261e;font-weight:600}.unk{color:#777}
.badge{font-size:12px;padding:1px 6px;border-radius:8px;background:#eee}
.wrong-right{background:#bfb}.right-wrong{background:#fbb}.right-right{background:#dfd}
.wrong-wrong{background:#fdd}.error{background:#f99}
.step{border-top:1px solid #eee;padding:8px 0;display:flex;gap:14px;flex-wrap:wrap}
.step .meta{flex:1;min-width:320px;color:#222}
.views img{height:150px;border:1px solid #aaa;margin:2px}
.legend span{margin-right:1em}.filters label{margin-right:1em}
"""

# Every <select data-filter="KEY"> hides the cards whose data-KEY differs from its value.
FILTER_JS = """
function applyFilters(){
  var sel=[].slice.call(document.querySelectorAll('select[data-filter]')),n=0;
  document.querySelectorAll('.card').forEach(function(c){
    var ok=sel.every(function(s){return !s.value||c.dataset[s.dataset.filter]===s.value;});
    c.classList.toggle('hidden',!ok); if(ok){n++;}
  });
  var shown=document.getElementById('shown'); if(shown){shown.textContent=n;}
}
document.querySelectorAll('select[data-filter]').forEach(function(s){s.addEventListener('change',applyFilters);});
applyFilters();
"""


def e(text: Any) -> str:
    """HTML-escaped text (quotes too: safe in attributes)."""
    return html.escape("" if text is None else str(text), quote=True)


def page(title: str, body: str, *, subtitle: str = "") -> str:
    """The whole self-contained page around ``body`` (which must already be escaped HTML)."""
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{e(title)}</h1>{e(subtitle)}</header><main>{body}</main>"
        f"<script>{FILTER_JS}</script></body></html>"
    )


def filter_bar(filters: Sequence[tuple[str, str, Sequence[str]]], total: int) -> str:
    """Selects that filter the cards: each (data key, label, values). The select for key ``k``
    has id ``f-k`` and matches the cards' ``data-k`` attribute."""
    parts = []
    for key, label, values in filters:
        opts = "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in values)
        parts.append(
            f'<label>{e(label)} <select id="f-{e(key)}" data-filter="{e(key)}">'
            f'<option value="">all</option>{opts}</select></label>'
        )
    return f'<p class=filters>{"".join(parts)} showing <span id="shown">{total}</span> of {total}</p>'


def data_attrs(**values: Any) -> str:
    """``data-k="v"`` attributes for a card, escaped."""
    return " ".join(f'data-{k}="{e(v)}"' for k, v in values.items())


def jpeg_data_url(image: Image.Image, quality: int = 75) -> str:
    buf = io.BytesIO()
    image.convert("RGB").save(buf, "JPEG", quality=quality, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def thumbnail(image: Image.Image, width: int) -> Image.Image:
    """``image`` at most ``width`` wide (never enlarged)."""
    s = min(1.0, width / image.width)
    size = (max(1, round(image.width * s)), max(1, round(image.height * s)))
    return image if s == 1.0 else image.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)


# ------------------------------------------------------------------------------ overlays
@dataclass
class Overlay:
    """What to draw over a screenshot, every coordinate in its pixels.

    ``boxes``: zoomed regions (x0, y0, x1, y1). ``candidates``: (point, label, chosen) drawn as
    pink numbered stars. ``history``: earlier failed points (grey stars). ``focal``: the focal
    point (cyan cross). ``marks``: (point, colour, label) rings, e.g. a baseline, a final point,
    an executed click. ``target``: a ground-truth box (green), drawn last so nothing hides it."""

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

    def svg(self, viewbox: tuple[float, float, float, float]) -> str:
        """The SVG for the part ``viewbox`` = (x, y, w, h) of the screenshot. Sizes follow the
        shown part, so marks stay readable on a crop as on a whole screen."""
        x, y, w, h = viewbox
        r = max(4.0, max(w, h) * 0.0095)
        out = [f'<svg viewBox="{x:.1f} {y:.1f} {w:.1f} {h:.1f}" preserveAspectRatio="none">']
        for i, b in enumerate(self.boxes):
            x0, y0, x1, y1 = (float(v) for v in b)
            out.append(
                f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" fill="none" '
                f'stroke="{BOX_COLORS[i % len(BOX_COLORS)]}" stroke-width="{r / 4:.1f}"/>'
            )
        for i, p in enumerate(self.history):
            out.append(_star(p, r, "#888", "#fff", 1) + _label(p, r, f"h{i + 1}", "#555"))
        for p, label, chosen in self.candidates:
            out.append(
                _star(p, r, STAR_PINK, "#000" if chosen else "#fff", 3 if chosen else 1)
                + _label(p, r, label, STAR_PINK)
            )
        if self.focal:
            fx, fy = (float(v) for v in self.focal)
            out.append(
                f'<path d="M{fx - r:.1f},{fy:.1f}H{fx + r:.1f}M{fx:.1f},{fy - r:.1f}V{fy + r:.1f}" '
                f'stroke="#00c8dc" stroke-width="{r / 4:.1f}"/>'
            )
        for p, colour, label in self.marks:
            px, py = (float(v) for v in p)
            out.append(
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{r * 0.9:.1f}" fill="none" stroke="{e(colour)}" '
                f'stroke-width="{r / 3:.1f}"/>' + (_label(p, r, label, colour) if label else "")
            )
        if self.target:
            x0, y0, x1, y1 = (float(v) for v in self.target)
            pad = r / 3
            out.append(
                f'<rect x="{x0 - pad:.1f}" y="{y0 - pad:.1f}" width="{x1 - x0 + 2 * pad:.1f}" '
                f'height="{y1 - y0 + 2 * pad:.1f}" fill="none" stroke="#00c800" stroke-width="{pad:.1f}"/>'
            )
        out.append("</svg>")
        return "".join(out)


def _star(p: Sequence[float], r: float, fill: str, stroke: str, width: float) -> str:
    x, y = float(p[0]), float(p[1])
    pts = []
    for i in range(10):
        rad = r if i % 2 == 0 else r * 0.45
        a = -math.pi / 2 + i * math.pi / 5
        pts.append(f"{x + rad * math.cos(a):.1f},{y + rad * math.sin(a):.1f}")
    return f'<polygon points="{" ".join(pts)}" fill="{fill}" stroke="{stroke}" stroke-width="{width}"/>'


def _label(p: Sequence[float], r: float, text: str, colour: str) -> str:
    return (
        f'<text x="{float(p[0]) + r:.1f}" y="{float(p[1]) - r:.1f}" font-size="{r * 1.3:.0f}" '
        f'fill="{e(colour)}" font-weight="bold" stroke="#fff" stroke-width="{r / 8:.1f}" '
        f'paint-order="stroke">{e(text)}</text>'
    )


def shot(
    src: str, overlay: Overlay, viewbox: tuple[float, float, float, float], *, cls: str = "", alt: str = ""
) -> str:
    """An image (``src``: a data URL or a relative path) with ``overlay`` over it."""
    return f'<div class="shot {e(cls)}"><img src="{e(src)}" alt="{e(alt)}">{overlay.svg(viewbox)}</div>'
