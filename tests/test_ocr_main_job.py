"""benchmarks/main_job.py on a small rendered set: it builds, runs the real CLI with the OCR agent
and prints its breakdown with counts that add up (no timing is checked)."""

from __future__ import annotations

import pytest

from benchmarks.main_job import main

pytestmark = pytest.mark.slow  # Chromium and OCR of 4K screens


def test_main_job_prints_the_breakdown_and_the_table(tmp_path, capsys):
    assert main(["--screens", "2", "--limit", "3", "--concurrency", "3", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "+ RegionFocus" in out  # the run's Table 1
    rows = [
        [c.strip() for c in ln.strip().strip("|").split("|")]
        for ln in out.splitlines()
        if ln.startswith("| ")
    ]
    parts = {r[0]: r for r in rows}
    for part in ("build the data set", "OCR engine reads", "rest of the run", "total"):
        assert part in parts
    reads = int(parts["OCR engine reads"][3])
    cache = next(r for r in rows if r[0].isdigit())  # reads, hits, kept, bound
    assert int(cache[0]) == reads >= 1
    assert int(cache[1]) >= 1  # three targets of one screenshot: read once, then found
