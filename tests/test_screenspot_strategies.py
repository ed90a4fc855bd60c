"""`regionfocus screenspot-pro --strategy ...`: the baseline once, every strategy from it on the
same samples, official results per strategy, the comparison and its plot, resumable.

The model is the colour-seeing double of the other harness tests: it finds the target by its
colour on whatever image it is given, so a strategy's crops and mappings must be right for its
point to be right.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image

from regionfocus.kit.flags import strategy_names as resolve
from regionfocus.kit.runlog import read_records
from regionfocus.screenspot_pro.cli import main
from regionfocus.screenspot_pro.report import load_run, table_for_run, write_reports
from regionfocus.screenspot_pro.strategies import comparison

from .test_screenspot_helpers import ColourModel, fresh_dataset

PEERS = ("iterative-narrowing", "zoomclick")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("strategies")
    data = fresh_dataset(root / "data")
    out = root / "run"
    argv = ["--data", str(data), "--out", str(out), "--agent", "ocr", "--no-progress",
            "--strategy", ",".join(("regionfocus", *PEERS))]  # fmt: skip
    assert main(argv, model=ColourModel()) == 0
    return out


def test_every_strategy_has_official_results_and_a_row(run: Path):
    recs = read_records(run / "records.jsonl")
    assert len(recs) == 9
    ok = [r for r in recs if r["status"] == "ok"]
    for r in ok:
        assert set(r["strategies"]) == set(PEERS)
        assert r["cost"]["baseline"]["requests"] == 1 and r["cost"]["regionfocus"]["requests"] >= 2
        for name in PEERS:
            row = r["strategies"][name]
            # each peer pays the baseline's request plus its own, and says which images it sent
            assert row["cost"]["requests"] > 1 and row["trace"]["calls"]
            assert all(c["image_size"] for c in row["trace"]["calls"])
    for name in ("baseline", *PEERS):
        doc = json.loads((run / f"results_{name}.json").read_text())
        assert doc["metrics"]["overall"]["num_total"] == 9  # errors stay in the denominator
        assert {d["id"] for d in doc["details"]} == {r["id"] for r in recs}
    # Peers refine around the baseline: where it was right they stay right (their crops hold the
    # target and their points map back to the screenshot); where the double doubts every zoomed
    # view ("[doubt]") they follow it off the target, as a model would lead them.
    for r in ok:
        doubt = "[doubt]" in r["sample"]["instruction"]
        for name in PEERS:
            got = r["strategies"][name]["correctness"]
            if r["baseline"]["correctness"] == "correct":
                assert got == ("wrong" if doubt else "correct"), (r["id"], name)
    zoomclick = next(r for r in ok if r["id"] == "appa_0")["strategies"]["zoomclick"]["trace"]
    assert any("768 px floor" in n for n in zoomclick["notes"])  # its stopping rule, as specified
    summary = (run / "summary.md").read_text()
    assert "## Strategies" in summary
    table = summary.split("## Strategies")[1]
    for name in ("baseline", "regionfocus", *PEERS):
        assert f"| {name} |" in table
    with Image.open(run / "strategies.png") as im:
        assert im.size[0] > 500
    page = (run / "report.html").read_text()
    assert "<h2>Strategies</h2>" in page and 'alt="accuracy with 95 % intervals against cost' in page


def test_resuming_with_other_strategies_stops_with_the_diff(run: Path, capsys):
    data = json.loads((run / "config.json").read_text())["identity"]["data"]
    argv = [
        "--data",
        data,
        "--out",
        str(run),
        "--agent",
        "ocr",
        "--no-progress",
        "--strategy",
        "regionfocus,reground",
    ]
    assert main(argv, model=ColourModel()) == 2
    err = capsys.readouterr().err
    assert "strategies" in err and "reground" in err and "--out" in err


def test_strategy_names_are_checked():
    assert resolve(None) == ("regionfocus",)
    assert resolve("RegionFocus, narrowing,dimo") == ("regionfocus", "iterative-narrowing", "dimo-gui")
    assert "screenseeker" not in resolve("all") and "zoomclick" in resolve("all")  # needs a planner
    with pytest.raises(ValueError, match="unknown 'zoomklick'"):
        resolve("regionfocus,zoomklick")


def test_text_tokens_say_na_when_the_servers_usage_leaves_images_out(run: Path):
    """Some servers count only the text in ``prompt_tokens``: prompt minus image tokens would go
    negative. The cell says n/a and a note says why, in summary.md and in report.html."""
    from regionfocus.screenspot_pro.strategies import comparison, comparison_markdown

    recs = read_records(run / "records.jsonl")
    for r in recs:  # what such a server's usage leaves in the records
        zoomclick = (r.get("strategies") or {}).get("zoomclick") or {}
        for cost in ((r.get("cost") or {}).get("regionfocus"), zoomclick.get("cost")):
            if cost and cost.get("image_tokens"):
                cost["prompt_tokens"] = 5 * cost["requests"]  # the words of the prompt only
    rows = {row["strategy"]: row for row in comparison(recs)}
    assert rows["zoomclick"]["text_tokens"] is None and rows["regionfocus"]["text_tokens"] is None
    assert rows["baseline"]["text_tokens"] > 0  # its usage was left as the server counted it
    table = comparison_markdown(list(rows.values()))
    zoom_row = next(ln for ln in table.splitlines() if ln.startswith("| zoomclick |"))
    assert "| n/a |" in zoom_row and "-" not in zoom_row.replace("–", "")
    assert "text tok of zoomclick: n/a" in table and "leaves the images out" in table


# ------------------------------------------------------------------------------ reports (issue 39)
@pytest.fixture(scope="module")
def priced(run: Path, tmp_path_factory) -> Path:
    """The run as a hosted model's with a price (the double's calls are the run's --model)."""
    out = tmp_path_factory.mktemp("priced") / "run"
    shutil.copytree(run, out)
    config = json.loads((out / "config.json").read_text())
    config["identity"]["model"] = "gpt-5.4-mini"
    (out / "config.json").write_text(json.dumps(config))
    write_reports(out)
    return out


def _strategies_table(run: Path) -> dict[str, dict[str, str]]:
    """summary.md's strategies table: per strategy, its cells by column."""
    text = (run / "summary.md").read_text().split("## Strategies")[1]
    lines = [
        [c.strip() for c in ln.strip().strip("|").split("|")]
        for ln in text.splitlines()
        if ln.startswith("| ")
    ]
    return {cells[0]: dict(zip(lines[0], cells, strict=True)) for cells in lines[1:]}


def test_the_figure_plots_the_summarys_numbers(priced: Path):
    from regionfocus.screenspot_pro.figure import strategies_figure
    from regionfocus.screenspot_pro.summary import price_table, pricing

    from .test_figures import assert_readable, plotted

    table = _strategies_table(priced)
    assert set(table) == {"baseline", "regionfocus", *PEERS}
    recs, config = load_run(priced), json.loads((priced / "config.json").read_text())
    fig = strategies_figure(
        comparison(recs, pricing(config, price_table(config))), config, "ScreenSpot-Pro", 9
    )
    got = plotted(fig)
    for name, cells in table.items():
        low, high = (float(x) for x in cells["95 % CI"].split("–"))
        for panel in ("calls", "tokens", "usd"):  # every panel: the same accuracy and interval
            p = got[f"{panel}:{name}"]
            assert f"{p['y']:.1f}" == cells["overall"], (panel, name)
            assert (f"{p['bar'][1]:.1f}", f"{p['bar'][3]:.1f}") == (f"{low:.1f}", f"{high:.1f}"), (
                panel,
                name,
            )
        assert f"{got[f'calls:{name}']['x']:.2f}" == cells["calls"]
        assert got[f"tokens:{name}"]["x"] == pytest.approx(
            float(cells["image tok"]) + float(cells["text tok"]), abs=1.0
        )
        assert f"${got[f'usd:{name}']['x']:.4g}" == cells["$/sample"]
    title = fig.texts[0].get_text()
    assert "gpt-5.4-mini" in title and "n = 9" in title and "ScreenSpot-Pro" in title
    assert [ax.get_xlabel().split(" (")[0] for ax in fig.axes] == [
        "model calls per sample",
        "tokens per sample",
        "USD per sample",
    ]
    assert fig.axes[0].get_ylabel().startswith("accuracy")
    assert_readable(fig)
    # The files beside the page: the same figure as PNG, SVG (points and intervals by id) and PDF.
    ids = {el.get("id") for el in ET.parse(priced / "strategies.svg").iter()}
    assert {
        f"{kind}:{panel}:{name}"
        for kind in ("point", "interval")
        for panel in ("calls", "usd")
        for name in table
    } <= ids
    assert (priced / "strategies.pdf").read_bytes().startswith(b"%PDF")
    with Image.open(priced / "strategies.png") as im:
        assert im.size == (round(fig.get_figwidth() * 150), round(fig.get_figheight() * 150))


def test_every_strategy_is_on_the_terminal_table_and_in_compare(run: Path, capsys):
    rows = [ln.split("|")[0].strip() for ln in table_for_run(run).splitlines()[3:]]
    assert rows == ["baseline", "+ RegionFocus", *PEERS]
    assert main(["compare", str(run), str(run)]) == 0
    out = capsys.readouterr().out
    header = next(ln for ln in out.splitlines() if "A base" in ln).split()
    names = ["base", "+RF", *PEERS]
    assert header == [x for side in "AB" for name in names for x in (side, name)] + ["n"]
    assert any(ln.startswith("A zoomclick") and "B zoomclick" in ln for ln in out.splitlines())  # paired


def test_a_model_without_a_price_or_tokens_shows_a_dash(run: Path, tmp_path: Path):
    """The OCR stand-in's records: calls without tokens or a model name. Its cost in money and
    tokens is unknown, shown "–" in every table, never $0 or 0 tokens, and drawn in no panel."""
    out = tmp_path / "ocr"
    shutil.copytree(run, out)
    recs = read_records(out / "records.jsonl")
    for r in recs:
        costs = [
            *(r.get("cost") or {}).values(),
            *((s or {}).get("cost") for s in (r.get("strategies") or {}).values()),
        ]
        for c in filter(None, costs):
            c.update(
                by_model={}, prompt_tokens=None, completion_tokens=None, cached_tokens=None, image_tokens=0
            )
        r.update(prompt_tokens=0, completion_tokens=0)
    (out / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    write_reports(out)
    summary, page = (out / "summary.md").read_text(), (out / "report.html").read_text()
    assert "$0" not in summary and "$0" not in page
    assert {cells["$/sample"] for cells in _strategies_table(out).values()} == {"–"}
    assert "- Tokens: – prompt, – completion" in summary and "USD:" not in summary
    ids = {el.get("id") or "" for el in ET.parse(out / "strategies.svg").iter()}
    assert "point:calls:zoomclick" in ids and not any(
        i.startswith(("point:tokens", "point:usd")) for i in ids
    )


def _colours(svg: str) -> dict[str, set[str]]:
    """The colours an SVG fragment draws with, by element: rect, circle, polygon, path."""
    out: dict[str, set[str]] = {}
    for tag, attrs in re.findall(r"<(rect|circle|polygon|path) ([^>]*)>", svg):
        for attr in ("stroke", "fill"):
            m = re.search(rf'{attr}="(#[0-9a-f]{{6}})"', attrs)
            if m and m.group(1) not in ("#ffffff", "#000000", "#fff", "#000"):
                out.setdefault(tag, set()).add(m.group(1))
    return out


def test_the_page_legend_is_the_overlays_colours_and_the_summarys_sections_are_on_it(priced: Path):
    page = (priced / "report.html").read_text()
    legend = page.split("<p class=legend>")[1].split("</p>")[0]
    keyed = dict(re.findall(r'<span data-key="(\w+)">(.*?)</span>', legend, re.S))
    drawn = {k: _colours(v) for k, v in keyed.items()}
    cards = "".join(page.split("<h2>Samples</h2>")[1].split("<p class=legend>")[1:])
    used = _colours("".join(re.findall(r"<svg viewBox=.*?</svg>", cards, re.S)))
    in_legend = {c for by_tag in drawn.values() for cs in by_tag.values() for c in cs}
    assert used and all(c in in_legend for cs in used.values() for c in cs), (used, drawn)
    # Each kind drawn as the overlay draws it: boxes and the target as rectangles, points as rings.
    boxes, target = drawn["boxes"]["rect"], drawn["target"]["rect"]
    assert len(boxes) == 4 and used["rect"] <= boxes | target
    points = drawn["baseline"]["circle"] | drawn["final"]["circle"]
    assert not boxes & (target | points | drawn["focal"]["path"] | drawn["candidate"]["polygon"])
    # summary.md's sections, on the page too.
    for section in ("Table 1 layout", "Per application", "RegionFocus", "Cost per sample", "Strategies"):
        assert f"<h2>{section}</h2>" in page
    assert "Trigger rate: 5/9" in page and "USD: baseline $" in page and "gpt-5.4-mini: $0.75 input" in page
    figure = page.split("<figure class=plot>")[1].split("</figure>")[0]
    assert 'src="data:image/png;base64,' in figure
    assert all(f'href="strategies.{s}"' in figure for s in ("png", "svg", "pdf"))


@pytest.mark.slow  # a real Chromium
def test_the_page_fits_a_1400_px_window(priced: Path):
    from playwright.sync_api import sync_playwright

    from regionfocus.kit.chromium import launch_options, resolve_browser

    with sync_playwright() as pw:
        browser = pw.chromium.launch(**launch_options(resolve_browser(None)))
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto((priced / "report.html").as_uri())
            assert page.evaluate("document.documentElement.scrollWidth") <= 1400
            img = page.evaluate(
                "(() => { const i = document.querySelector('figure.plot img'); const r = i.getBoundingClientRect();"
                " return [i.naturalWidth, r.width, r.right, i.parentElement.clientWidth]; })()"
            )
            natural, shown, right, column = img
            assert shown <= column and right <= 1400 and shown == pytest.approx(min(natural, column), abs=1)
        finally:
            browser.close()
