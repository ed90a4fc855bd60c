"""WebVoyager's ``--shard I/N`` and ``merge`` on real browser runs (MiniWoB++ with the OCR agent,
deterministic): two shards merged give the records, screenshots and official message files of
one run; shards run with other settings are refused with the key named."""

from __future__ import annotations

from pathlib import Path

import pytest

from regionfocus.webvoyager.cli import main

from .test_shards import VOLATILE, record_set

pytestmark = pytest.mark.slow

ARGV = ["--tasks", "miniwob:click-button,click-link", "--episodes-per-task", "2", "--agent", "ocr",
        "--viewport", "600x500", "--no-progress"]  # fmt: skip


def test_two_shards_merged_equal_one_run(tmp_path: Path, capsys, monkeypatch):
    # MiniWoB++'s reward is discounted by the episode's wall-clock time: volatile here too.
    monkeypatch.setattr("tests.test_shards.VOLATILE", VOLATILE | {"reward"})
    assert main([*ARGV, "--out", str(tmp_path / "whole")]) == 0
    assert main([*ARGV, "--out", str(tmp_path / "s0"), "--shard", "0/2"]) == 0
    assert main([*ARGV, "--out", str(tmp_path / "s1"), "--shard", "1/2"]) == 0
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "s0"), str(tmp_path / "s1")]) == 0
    whole, merged = record_set(tmp_path / "whole"), record_set(tmp_path / "m")
    assert len(whole) == 4 and merged == whole
    files = sorted(p.relative_to(tmp_path / "whole") for p in (tmp_path / "whole").glob("task*/*.*"))
    assert any(f.name == "interact_messages.json" for f in files) and any(f.suffix == ".png" for f in files)
    for f in files:
        if f.name != "trajectory.json":  # it carries each step's timings
            assert (tmp_path / "m" / f).read_bytes() == (tmp_path / "whole" / f).read_bytes(), f
    assert (tmp_path / "m" / "report.html").exists() and (tmp_path / "m" / "summary.md").exists()
    capsys.readouterr()
    assert main([*ARGV, "--out", str(tmp_path / "t1"), "--shard", "1/2", "--max-steps", "5"]) == 0
    assert main(["merge", str(tmp_path / "m2"), str(tmp_path / "s0"), str(tmp_path / "t1")]) == 2
    assert "max_steps: 10" in capsys.readouterr().err
