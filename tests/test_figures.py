"""The reports' figures (regionfocus/kit/figures.py): what is plotted reads back as given,
intervals included; no two texts overlap or leave the canvas, however crowded the points;
a cost that spans decades gets a log axis; a panel only where there is data; PNG, SVG and
PDF side by side, the SVG naming each point and interval by id.

Overlap is checked here on the renderer's own text boxes, independently of the module's check.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

from regionfocus.kit import figures
from regionfocus.kit.runlog import atomic_write_bytes


def plotted(fig: Figure) -> dict[str, dict[str, float]]:
    """Each point's x, y and interval as the figure holds them, by ``PANEL:LABEL``."""
    out: dict[str, dict[str, float]] = {}
    for ax in fig.axes:
        for line in ax.lines:
            gid = line.get_gid() or ""
            if gid.startswith("point:"):
                ((x, y),) = line.get_xydata()
                out.setdefault(gid.removeprefix("point:"), {}).update(x=float(x), y=float(y))
        for coll in ax.collections:
            gid = coll.get_gid() or ""
            if gid.startswith("interval:"):
                ((a, b),) = coll.get_segments()
                out.setdefault(gid.removeprefix("interval:"), {}).update(
                    bar=(float(a[0]), float(a[1]), float(b[0]), float(b[1]))
                )
    return out


def text_boxes(fig: Figure) -> list[tuple[str, object]]:
    """Every text the canvas draws with its box in pixels (tick labels inside their axis's view)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - 1e-9 * abs(hi) <= tick.get_loc() <= hi + 1e-9 * abs(hi):
                    hidden |= {tick.label1, tick.label2}
    return [
        (t.get_text(), Text.get_window_extent(t, renderer))
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t not in hidden
    ]


def assert_readable(fig: Figure) -> None:
    boxes = text_boxes(fig)
    w, h = fig.canvas.get_width_height()
    for text, b in boxes:
        assert b.x0 >= -0.5 and b.y0 >= -0.5 and b.x1 <= w + 0.5 and b.y1 <= h + 0.5, (
            f"{text!r} leaves the canvas"
        )
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1 :]:
            inter = a.intersection(a, b)
            assert inter is None or inter.width <= 0 or inter.height <= 0, f"{ta!r} overlaps {tb!r}"


def _panel(key: str, xs: list[float], ys: list[float], unit: str = "") -> figures.Panel:
    return figures.Panel(
        key,
        f"{key} per sample",
        tuple(
            figures.Point(f"s{i}", x, y, max(0.0, y - 7), min(100.0, y + 8), *figures.style(i))
            for i, (x, y) in enumerate(zip(xs, ys, strict=True))
        ),
        unit,
    )


def test_points_and_intervals_read_back_and_costs_spanning_decades_get_a_log_axis():
    calls = _panel("calls", [1.0, 4.1, 6.2], [19.4, 47.2, 37.5])
    tokens = _panel("tokens", [40.0, 6150.0, 9300.0], [19.4, 47.2, 37.5])
    usd = _panel("usd", [0.003, 0.0123, 0.0186], [19.4, 47.2, 37.5], unit="usd")
    fig = figures.accuracy_against_cost(
        [calls, tokens, usd], title="t\nmodel m · data d · n = 144", ylabel="acc"
    )
    got = plotted(fig)
    for panel in (calls, tokens, usd):
        for p in panel.points:
            row = got[f"{panel.key}:{p.label}"]
            assert row["x"] == pytest.approx(p.x) and row["y"] == pytest.approx(p.y)
            assert row["bar"] == pytest.approx((p.x, p.low, p.x, p.high))  # the interval, vertical at x
    scales = {ax.get_xlabel(): ax.get_xscale() for ax in fig.axes}
    assert scales == {
        "calls per sample": "linear",
        "tokens per sample (log scale)": "log",  # 40 to 9,300: more than two decades
        "usd per sample": "linear",
    }
    assert fig.axes[0].get_ylabel() == "acc" and fig.texts[0].get_text().endswith("n = 144")
    # Every point is labelled beside itself, in its panel.
    labels = [t.get_gid() for ax in fig.axes for t in ax.texts]
    assert sorted(labels) == sorted(f"label:{k}:s{i}" for k in ("calls", "tokens", "usd") for i in range(3))
    assert_readable(fig)
    assert figures.text_problems(fig) == []


def test_crowded_points_keep_their_labels_apart_or_name_them_in_a_legend():
    # Twelve strategies within a point of each other on both axes: no label may touch another
    # or a point; what has no room is named by the legend (colour and marker per strategy).
    n = 12
    crowded = _panel("calls", [3 + 0.01 * i for i in range(n)], [40 + 0.3 * i for i in range(n)])
    fig = figures.accuracy_against_cost([crowded], title="crowded", ylabel="acc")
    assert_readable(fig)
    inline = {t.get_text() for t in fig.axes[0].texts}
    legend = fig.legends[0] if fig.legends else None
    named = {t.get_text() for t in legend.get_texts()} if legend else set()
    assert inline | named == {f"s{i}" for i in range(n)}
    assert len(inline) == n or legend is not None  # a label with no room is in the legend


def test_panels_only_where_there_is_data():
    fig = figures.accuracy_against_cost(
        [_panel("calls", [1.0, 7.3], [20.0, 42.9]), figures.Panel("tokens", "tokens", ())],
        title="t",
        ylabel="a",
    )
    assert len(fig.axes) == 1 and fig.axes[0].get_xlabel() == "calls per sample"
    with pytest.raises(ValueError, match="no panel"):
        figures.accuracy_against_cost([figures.Panel("usd", "usd", ())], title="t", ylabel="a")


def test_the_overlap_check_finds_overlapping_and_clipped_text():
    fig = figures.rates_with_intervals([("a", 50.0, 40.0, 60.0)], title="t", xlabel="x")
    assert figures.text_problems(fig) == []
    fig.text(0.5, 0.5, "one")
    fig.text(0.5, 0.5, "two")
    fig.text(0.99, 0.5, "runs off the right edge")
    problems = figures.text_problems(fig)
    assert "'one' overlaps 'two'" in problems and "'runs off the right edge' leaves the canvas" in problems


def test_rates_read_back_and_names_are_never_tex():
    rows = [("$x$ <b>", 0.0, 0.0, 65.8), ("click-link", 25.0, 4.6, 69.9), ("overall", 53.3, 30.1, 75.2)]
    fig = figures.rates_with_intervals(
        rows, title="success", xlabel="success", key="success", total_last=True
    )
    got = plotted(fig)
    for label, rate, low, high in rows:
        row = got[f"success:{label}"]
        assert row["x"] == pytest.approx(rate) and row["bar"][0::2] == pytest.approx((low, high))
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "$x$ <b>" in ticks  # drawn as written, not as TeX math
    lo, hi = fig.axes[0].get_xlim()
    assert (
        lo
        < 0
        < 100
        < figures.rates_with_intervals([("a", 100.0, 90.0, 100.0)], title="t", xlabel="x")
        .axes[0]
        .get_xlim()[1]
    )  # a point at 0 % or 100 % is drawn whole
    assert_readable(fig)


def test_png_svg_and_pdf_side_by_side(tmp_path: Path):
    fig = figures.accuracy_against_cost([_panel("calls", [1.0, 5.0], [20.0, 40.0])], title="t", ylabel="a")
    written = figures.save(fig, tmp_path / "strategies", atomic_write_bytes)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "strategies.pdf",
        "strategies.png",
        "strategies.svg",
    ]
    assert written["png"] == (tmp_path / "strategies.png").read_bytes()
    with Image.open(io.BytesIO(written["png"])) as im:
        assert im.size == (round(fig.get_figwidth() * figures.DPI), round(fig.get_figheight() * figures.DPI))
    assert written["pdf"].startswith(b"%PDF")
    ids = {el.get("id") for el in ET.fromstring(written["svg"]).iter()}
    assert {"point:calls:s0", "point:calls:s1", "interval:calls:s0", "interval:calls:s1"} <= ids
    assert figures.encode(fig, "svg") == written["svg"]  # the same bytes when rebuilt


def test_webvoyager_success_per_site_is_drawn_from_its_summary(tmp_path: Path):
    """The browsing harness's figure: each site's success with its interval, then overall, the
    numbers summary.json holds; the page shows it and draws its legend from the overlay table."""
    from regionfocus.webvoyager.report import write_report
    from regionfocus.webvoyager.rundir import RunDir

    rd = RunDir(tmp_path)
    rd.open({"agent": "ocr", "regionfocus_enabled": True, "viewport": [600, 400]})
    for site, right, n in (("click-button", 3, 5), ("click-link", 0, 2), ("enter-text", 4, 4)):
        for i in range(n):
            rd.record({"id": f"{site}--{i}", "web_name": site, "kind": "miniwob", "success": i < right,
                       "steps": 0, "folder": f"task{site}--{i}", "error": None, "triggers": {}})  # fmt: skip
    rd.record(
        {
            "id": "x--0",
            "web_name": "x",
            "kind": "miniwob",
            "success": None,
            "steps": 0,
            "folder": "taskx--0",
            "error": "crashed",
            "triggers": {},
        }
    )  # fmt: skip (not scored: no row)
    page = write_report(tmp_path).read_text()
    summary = json.loads((tmp_path / "summary.json").read_text())
    svg = ET.parse(tmp_path / "success.svg")
    ids = {el.get("id") for el in svg.iter()}
    for site, s in [*summary["sites"].items(), ("overall", summary["overall"])]:
        assert (f"point:success:{site}" in ids) == bool(s["scored"]), site
    assert (tmp_path / "success.pdf").read_bytes().startswith(b"%PDF")
    assert 'src="data:image/png;base64,' in page.split("<figure class=plot>")[1]
    from regionfocus.kit.report_shell import BOX_COLOURS, COLOURS

    legend = page.split("<p class=legend>")[1].split("</p>")[0]
    assert COLOURS["action"] in legend and all(c in legend for c in BOX_COLOURS)


def test_crowded_tick_labels_are_thinned():
    from matplotlib.ticker import MaxNLocator

    fig = figures.rates_with_intervals([("a", 50.0, 40.0, 60.0)], title="t", xlabel="x")
    fig.axes[0].xaxis.set_major_locator(MaxNLocator(nbins=60))  # a tick every 2 %: labels collide
    assert any("overlaps" in p for p in figures.text_problems(fig))
    figures.thin_ticks(fig)
    assert figures.text_problems(fig) == [] and len(fig.axes[0].get_xticks()) > 2
