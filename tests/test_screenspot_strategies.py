"""`regionfocus screenspot-pro --strategy ...`: the baseline once, every strategy from it on the
same samples, official results per strategy, the comparison and its plot, resumable.

The model is the colour-seeing double of the other harness tests: it finds the target by its
colour on whatever image it is given, so a strategy's crops and mappings must be right for its
point to be right.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from regionfocus.kit.flags import strategy_names as resolve
from regionfocus.kit.runlog import read_records
from regionfocus.screenspot_pro.cli import main

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
