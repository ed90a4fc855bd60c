"""The whole CLI on a small set rendered by Chromium (`build-sample --screens 2`) with the real
OCR agent: no test double anywhere. Slow (a browser and OCR of 4K screens), so one run shared
by the assertions and a small --limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regionfocus.screenspot_pro.cli import main
from regionfocus.screenspot_pro.dataset import load_dataset
from regionfocus.screenspot_pro.metrics import correctness

pytestmark = pytest.mark.slow

LIMIT = 2


@pytest.fixture(scope="module")
def ocr_run(tmp_path_factory) -> tuple[Path, Path, str]:
    base = tmp_path_factory.mktemp("ssp-ocr")
    data = base / "data"
    assert main(["build-sample", str(data), "--screens", "2"]) == 0
    out = base / "run"
    argv = ["--data", str(data), "--agent", "ocr", "--out", str(out), "--no-progress"]
    argv += ["--limit", str(LIMIT), "--concurrency", "2"]
    assert main(argv) == 0
    return data, out, " ".join(argv)


def test_built_sample_is_valid_official_layout(ocr_run):
    data, _, _ = ocr_run
    samples = load_dataset(data)
    assert len(samples) >= 2 and {s.img_size for s in samples} == {(3840, 2160)}


def test_ocr_run_writes_consistent_official_results(ocr_run):
    data, out, _ = ocr_run
    first = [s.id for s in load_dataset(data)][:LIMIT]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in records) == sorted(first)
    for name, row in (("results.json", "final"), ("results_baseline.json", "baseline")):
        doc = json.loads((out / name).read_text())
        assert doc["metrics"]["overall"]["num_total"] == LIMIT
        for d in doc["details"]:
            rec = next(r for r in records if r["id"] == d["id"])
            assert d["pred"] == rec[row]["point"]
            if rec["status"] == "ok":  # the scoring rule, re-applied to what was written
                assert d["correctness"] == correctness(d["pred"], d["bbox"], rec["sample"]["img_size"])
    for r in records:
        assert r["n_calls"] >= 1 and r["seconds"] > 0
        assert (r["trigger"] is not None) == bool(r["trace"]["rounds"])
    assert "Table 1 layout" in (out / "summary.md").read_text()


def test_rerun_is_a_no_op_and_report_rebuilds(ocr_run, capsys):
    data, out, _ = ocr_run
    before = (out / "records.jsonl").read_text()
    argv = ["--data", str(data), "--agent", "ocr", "--out", str(out), "--no-progress", "--limit", str(LIMIT)]
    assert main(argv) == 0  # everything already recorded: no sample runs again
    assert (out / "records.jsonl").read_text() == before
    assert main(["report", str(out)]) == 0
    assert "+ RegionFocus" in capsys.readouterr().out
