"""report.html of a grounding run: one self-contained page (templates/report.html on the
shared shell) with the tables and sections of summary.md, the strategies figure scaled to its
column, and every sample with its overlay (the legend drawn from the overlay's own colours,
:data:`regionfocus.kit.report_shell.COLOURS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image

from regionfocus.kit import prices, stats
from regionfocus.kit.report_shell import Overlay, data_url, jpeg_data_url, render, thumbnail

from . import strategies
from .rows import benchmark, enabled_in, peer_names, shown_rows, strategy_rows
from .summary import cost_items, outcome, price_table, pricing, regionfocus_items, run_stats
from .tables import app_table, groups_of, interval_table, paired_table, split_table, table1_cells

# The overlay kinds a sample's drawing can hold, in the legend's order.
LEGEND = ("target", "baseline", "final", "focal", "candidate", "history", "boxes")


def _overlay(rec: dict[str, Any]) -> Overlay:
    """The last RegionFocus round (boxes, candidates, focal point), the baseline and final
    points, and the ground-truth box, in screenshot pixels."""
    rounds = (rec.get("trace") or {}).get("rounds") or []
    out = Overlay.of_round(rounds[-1]) if rounds else Overlay()
    out.boxes = [b for rnd in rounds for b in rnd.get("boxes", [])]
    if rec["baseline"]["point"]:
        out.marks.append((rec["baseline"]["point"], "baseline", "B"))
    if rec["final"]["point"] and rec["final"]["point"] != rec["baseline"]["point"]:
        out.marks.append((rec["final"]["point"], "final", "F"))
    out.target = rec["sample"]["bbox"]
    return out


class _ImageCache:
    """Keeps the last screenshot decoded, and its thumbnail: consecutive samples (dataset
    order) usually share a screenshot."""

    def __init__(self, thumb_width: int) -> None:
        self.thumb_width = thumb_width
        self.path: str | None = None
        self.image: Image.Image | None = None
        self.thumb_url: str | None = None

    def get(self, path: str) -> tuple[Image.Image, str] | None:
        """(full screenshot, its thumbnail as a data URL), or None if unreadable."""
        if path != self.path:
            self.path, self.image, self.thumb_url = path, None, None
            try:
                with Image.open(path) as im:
                    self.image = im.convert("RGB")
            except (OSError, ValueError):
                return None
            self.thumb_url = jpeg_data_url(thumbnail(self.image, self.thumb_width), 65)
        if self.image is None or self.thumb_url is None:
            return None
        return self.image, self.thumb_url


def sample_images(rec: dict[str, Any], cache: _ImageCache) -> list[tuple[Any, ...]] | None:
    """The whole screen (thumbnail) and a magnified crop around the target, each with the
    overlay to draw over it (the arguments of shell.html's ``shot``); None when the screenshot
    is unreadable."""
    got = cache.get(rec["sample"]["img_path"])
    if got is None:
        return None
    full, thumb_url = got
    w, h = full.size
    overlay = _overlay(rec)
    # The crop: about 360x210 screenshot px around the target (more if the target is larger),
    # shown 720 px wide: a 10 px icon and the markers around it stay legible.
    x1, y1, x2, y2 = rec["sample"]["bbox"]
    cw, ch = min(w, max(360, round(3 * (x2 - x1)))), min(h, max(210, round(3 * (y2 - y1))))
    left = round(min(max(0, (x1 + x2) / 2 - cw / 2), w - cw))
    top = round(min(max(0, (y1 + y2) / 2 - ch / 2), h - ch))
    zoom = 720 / cw
    crop = full.crop((left, top, left + cw, top + ch)).resize(
        (round(cw * zoom), round(ch * zoom)), Image.Resampling.LANCZOS
    )
    return [
        (thumb_url, overlay, (0, 0, w, h), "overview", "screenshot with overlays"),
        (jpeg_data_url(crop, 80), overlay, (left, top, cw, ch), "crop", "region around the target"),
    ]


_OMITTED = "omitted"  # what the template shows instead of a screenshot left out
# Outcomes in the order their screenshots are worth the bytes when a report must leave some out.
_IMAGE_PRIORITY = ("error", "right→wrong", "wrong→right", "wrong→wrong", "right→right")


def images_for(records: Sequence[dict[str, Any]], max_images: int | None) -> set[str]:
    """Ids of the samples whose screenshots the report embeds: all of them up to
    ``max_images`` (None: no limit), else errors and flips first, then the rest, each in
    dataset order. Every image costs ~100-150 kB, and a full ScreenSpot-Pro run has 1,581."""
    if max_images is None or len(records) <= max_images:
        return {r["id"] for r in records}
    ranked = sorted(records, key=lambda r: _IMAGE_PRIORITY.index(outcome(r)))
    return {r["id"] for r in ranked[: max(0, max_images)]}


def html_report(
    records: Sequence[dict[str, Any]],
    config: dict[str, Any],
    *,
    thumb_width: int = 1200,
    max_images: int | None = 400,
    table: prices.PriceTable | None = None,
    figure_png: bytes | None = None,
) -> str:
    """One self-contained HTML page (templates/report.html on the shared shell: inline CSS, JS
    and data URLs, overlays as SVG). At most ``max_images`` samples carry screenshots (see
    :func:`images_for`), so the page stays a reasonable size. ``figure_png``: the strategies
    figure, shown at its column's width."""
    enabled = enabled_in(config)
    rows = strategy_rows(records, enabled)
    groups = groups_of(*(d for _, d in rows))
    table = table or price_table(config)
    comparison = strategies.comparison(records, pricing(config, table)) if peer_names(records) else []
    head, body = strategies.comparison_cells(comparison)
    cache = _ImageCache(thumb_width)
    shown = images_for(records, max_images)
    fmt = benchmark(config)
    s = run_stats(records)
    return render(
        __package__,
        "report.html",
        title=f"{fmt.title} run",
        splits=fmt.parser is not None and split_table(rows, fmt),
        records=records,
        groups=groups,
        table1=[(label, table1_cells(ds, groups)) for label, ds in rows],
        apps=fmt.parser is None and app_table(rows),
        intervals=interval_table(records, shown_rows(records, enabled)),
        paired=(stats.PAIRED_HEAD, paired_table(records, shown_rows(records, enabled))),
        how_to_read=stats.HOW_TO_READ,
        regionfocus=enabled and regionfocus_items(s),
        cost=cost_items(records, config, table, s),
        strategies=comparison
        and {
            "head": head,
            "body": body,
            "notes": strategies.comparison_notes(comparison),
            "figure": figure_png and data_url(figure_png, "image/png"),
        },
        legend=LEGEND,
        omitted=len(records) - len(shown),
        outcome=outcome,
        images_of=lambda r: sample_images(r, cache) if r["id"] in shown else _OMITTED,
    )
