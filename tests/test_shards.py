"""Sharded runs (``--shard I/N``) and ``merge``: N shards merged give the records of one run.

The ScreenSpot-Pro runs here are the real command with the colour-seeing test double as the
model (deterministic); WebVoyager's merge is checked on its run folders (records, per-task
folders) and its equality on a real browser run in the slow tier (test_shards_browser.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regionfocus.kit.runlog import read_records
from regionfocus.kit.shards import Shard, parse_shard, select
from regionfocus.screenspot_pro.cli import main

from .test_screenspot_helpers import ColourModel, fresh_dataset

# What differs between two runs of the same deterministic model: wall-clock and memory.
VOLATILE = {"seconds", "model_seconds", "latency_s", "wall_s", "peak_rss_mb"}


def stable(value):
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def record_set(run_dir: Path) -> set[str]:
    """The run's records, each as canonical JSON bytes without the volatile fields."""
    return {json.dumps(stable(r), sort_keys=True) for r in read_records(run_dir / "records.jsonl")}


def test_partition_is_stable_when_the_data_set_grows():
    ids = [f"s{i}" for i in range(400)]
    shards = [Shard(i, 4) for i in range(4)]
    parts = [set(select(ids, s, key=str)) for s in shards]
    assert set().union(*parts) == set(ids) and sum(map(len, parts)) == len(ids)
    assert all(60 < len(p) < 140 for p in parts)  # a hash, not a range: every shard gets some
    grown = [set(select(ids + [f"t{i}" for i in range(100)], s, key=str)) for s in shards]
    assert all(p <= g for p, g in zip(parts, grown, strict=True))  # no old id moved
    assert parse_shard("1/3") == Shard(1, 3)
    for bad in ("3/3", "1", "-1/2", "a/b"):
        with pytest.raises(Exception, match="--shard"):
            parse_shard(bad)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return fresh_dataset(tmp_path_factory.mktemp("ssp") / "data")


def _run(data: Path, out: Path, *extra: str) -> int:
    argv = ["--data", str(data), "--out", str(out), "--agent", "ocr", "--no-progress", *extra]
    return main(argv, model=ColourModel())


def test_two_shards_merged_equal_one_run(data: Path, tmp_path: Path, capsys):
    assert _run(data, tmp_path / "whole") == 0
    assert _run(data, tmp_path / "s0", "--shard", "0/2") == 0
    assert _run(data, tmp_path / "s1", "--shard", "1/2") == 0
    n0, n1 = (len(read_records(tmp_path / s / "records.jsonl")) for s in ("s0", "s1"))
    assert n0 and n1
    assert json.loads((tmp_path / "s1" / "config.json").read_text())["identity"]["shard"] == "1/2"
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "s1"), str(tmp_path / "s0")]) == 0
    assert record_set(tmp_path / "m") == record_set(tmp_path / "whole")
    assert len(record_set(tmp_path / "m")) == n0 + n1
    for name in ("results.json", "results_baseline.json"):  # the official files: the same
        assert (tmp_path / "m" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes()
    whole_cfg, merged_cfg = (json.loads((tmp_path / d / "config.json").read_text()) for d in ("whole", "m"))
    assert merged_cfg["identity"] == whole_cfg["identity"]  # the merged folder resumes unsharded
    assert (tmp_path / "m" / "report.html").exists() and "Overall" in (
        tmp_path / "m" / "summary.md"
    ).read_text()
    # merged, it is one run: the unsharded command resumes it with nothing left to do
    model = ColourModel()
    argv = ["--data", str(data), "--out", str(tmp_path / "m"), "--agent", "ocr", "--no-progress"]
    assert main(argv, model=model) == 0 and model.calls == []


def test_merge_refuses_other_settings_overlap_and_a_missing_shard(data: Path, tmp_path: Path, capsys):
    assert _run(data, tmp_path / "s0", "--shard", "0/2") == 0
    assert _run(data, tmp_path / "s1", "--shard", "1/2", "--proposer", "predict-region") == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "s0"), str(tmp_path / "s1")]) == 2
    assert "regionfocus.proposer: 'fixed'" in capsys.readouterr().err
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "s0")]) == 2
    assert "shard 1/2 missing" in capsys.readouterr().err
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "s0"), str(tmp_path / "s0")]) == 2
    assert "both shard 0/2: they overlap" in capsys.readouterr().err
    assert _run(data, tmp_path / "t1", "--shard", "1/3") == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "s0"), str(tmp_path / "t1")]) == 2
    assert "two different splits" in capsys.readouterr().err
    assert not (tmp_path / "m" / "records.jsonl").exists()


def _webvoyager_shard(root: Path, shard: str, ids: list[str], **settings) -> Path:
    from regionfocus.webvoyager.rundir import RunDir

    run = RunDir(root)
    run.open({"agent": "ocr", "max_steps": 10, "concurrency": 2, "shard": shard, **settings})
    for i in ids:
        (run.reset_task(f"task{i}") / "interact_messages.json").write_text(json.dumps([{"id": i}]))
        run.record(
            {"id": i, "web_name": "site", "folder": f"task{i}", "success": i.endswith("0"), "steps": 1}
        )
    run.close()
    return root


def test_webvoyager_merge_joins_records_and_task_folders(tmp_path: Path, capsys):
    from regionfocus.webvoyager.cli import main as wv_main

    s0 = _webvoyager_shard(tmp_path / "s0", "0/2", ["a0", "a1"])
    s1 = _webvoyager_shard(tmp_path / "s1", "1/2", ["b0"])
    assert wv_main(["merge", str(tmp_path / "m"), str(s0), str(s1)]) == 0
    merged = tmp_path / "m"
    assert {r["id"] for r in read_records(merged / "records.jsonl")} == {"a0", "a1", "b0"}
    assert json.loads((merged / "taskb0" / "interact_messages.json").read_text()) == [{"id": "b0"}]
    assert len(json.loads((merged / "results.json").read_text())) == 3
    assert json.loads((merged / "summary.json").read_text())["overall"]["success"] == 2
    assert "shard" not in json.loads((merged / "config.json").read_text())["identity"]
    capsys.readouterr()
    assert wv_main(["merge", str(tmp_path / "m2"), str(s1)]) == 2
    assert "shard 0/2 missing" in capsys.readouterr().err
    t1 = _webvoyager_shard(tmp_path / "t1", "1/2", ["b0"], max_steps=5)
    assert wv_main(["merge", str(tmp_path / "m3"), str(s0), str(t1)]) == 2
    assert "max_steps: 10" in capsys.readouterr().err
