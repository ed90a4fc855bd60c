"""records.jsonl as a contract: a hand-edited log (records are read and merged by people and
scripts) either reads as the clean run did or stops `report` and a resume with exit 2 naming
the file, the line and the field; never a traceback, never a quietly different number.

The run is a real `regionfocus screenspot-pro` run over the helpers' data set (the colour double
stands in for the VLM only); each edit is one a person could make in an editor.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from regionfocus.aitz.cli import main as aitz_main
from regionfocus.kit.runlog import SCHEMA_VERSION, read_records
from regionfocus.screenspot_pro.cli import main
from regionfocus.webvoyager.cli import main as wv_main
from regionfocus.webvoyager.rundir import RunDir

from .test_aitz_cli import GOLD, StepModel, _tag_episodes
from .test_coat_aitz import sample  # noqa: F401 - the AITZ-shaped episodes as a fixture
from .test_screenspot_helpers import ColourModel, fresh_dataset


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return fresh_dataset(tmp_path_factory.mktemp("contract") / "data")


def _argv(data: Path, out: Path) -> list[str]:
    return ["--data", str(data), "--out", str(out), "--agent", "ocr", "--no-progress"]


@pytest.fixture(scope="module")
def clean(data: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "clean"
    assert main(_argv(data, out), model=ColourModel()) == 0
    return out


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]


def _write(run: Path, records: list[dict]) -> None:
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def _overall(run: Path) -> tuple[str, str]:
    """(baseline, + RegionFocus) overall accuracy as summary.md's Table 1 prints it."""
    table = (run / "summary.md").read_text().split("## Table 1 layout")[1].split("\n## ")[0]
    rows = {
        line.split("|")[1].strip(): line.rstrip(" |").split("|")[-1].strip()
        for line in table.splitlines()
        if line.startswith("| ")
    }
    return rows["baseline"], rows["+ RegionFocus"]


def _set(line: int, **fields):
    def edit(recs: list[dict]) -> list[dict]:
        recs[line - 1].update(fields)
        return recs

    return edit


def _drop(line: int, key: str):
    def edit(recs: list[dict]) -> list[dict]:
        del recs[line - 1][key]
        return recs

    return edit


def _conflicting_duplicate(recs: list[dict]) -> list[dict]:
    """A later copy of line 2 (a finished sample) whose final answer is scored the other way:
    before, the later line silently won (66.7 -> 55.6 %)."""
    later = json.loads(json.dumps(recs[1]))
    later["final"]["correctness"] = "wrong" if later["final"]["correctness"] == "correct" else "correct"
    return [*recs, later]


def _stranger(recs: list[dict]) -> list[dict]:
    """A record of a sample the run never selected (pasted from another run): before, it joined
    the denominator (n = 10 of 9)."""
    other = json.loads(json.dumps(recs[0]))
    other["id"] = other["sample"]["id"] = "appz_7"
    return [*recs, other]


HAND_EDITS = {
    "schema_version null": (_set(2, schema_version=None), 2, "schema_version is null, expected an integer"),
    "integer id": (_set(3, id=3), 3, "id is 3, expected a string"),
    "no baseline": (_drop(4, "baseline"), 4, "baseline is missing"),
    "conflicting later duplicate": (_conflicting_duplicate, 10, "id 'appa_2' was already recorded at line 2"),
    "status skipped": (
        _set(5, status="skipped"),
        5,
        'status is "skipped", expected one of ok, partial, error',
    ),
    "status null with an error": (
        _set(6, status=None, error="server down"),
        6,
        "status is null, expected one of ok, partial, error",
    ),
    "id not in the data set": (_stranger, 10, "id 'appz_7' is not one of the 9 ids this run selected"),
    "schema_version 2b": (_set(1, schema_version="2b"), 1, 'schema_version is "2b", expected an integer'),
}


@pytest.mark.parametrize("name", list(HAND_EDITS))
def test_a_hand_edit_that_breaks_a_record_stops_report_and_resume_naming_file_line_field(
    name: str, clean: Path, data: Path, tmp_path: Path, capsys
):
    edit, line, problem = HAND_EDITS[name]
    run = tmp_path / "run"
    shutil.copytree(clean, run)
    _write(run, edit(_lines(run)))
    before = (run / "records.jsonl").read_bytes(), (run / "config.json").read_bytes()
    capsys.readouterr()

    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"records.jsonl: line {line}, field {problem}" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1

    model = ColourModel()
    assert main(_argv(data, run), model=model) == 2  # the resume refuses before any call
    err = capsys.readouterr().err
    assert f"records.jsonl: line {line}, field {problem}" in err, err
    assert model.calls == []
    assert ((run / "records.jsonl").read_bytes(), (run / "config.json").read_bytes()) == before


def test_an_exact_duplicate_line_reads_as_the_clean_run(clean: Path, data: Path, tmp_path: Path, capsys):
    run = tmp_path / "run"
    shutil.copytree(clean, run)
    recs = _lines(run)
    _write(run, [*recs, recs[3]])  # a line pasted twice: one record
    assert main(["report", str(run)]) == 0
    assert _overall(run) == _overall(clean) == ("44.4", "66.7")
    assert "9 samples finished" in capsys.readouterr().out


def test_new_records_carry_the_logs_schema_version(clean: Path):
    assert SCHEMA_VERSION == 2
    assert {r["schema_version"] for r in _lines(clean)} == {SCHEMA_VERSION}


def test_a_retried_error_is_replaced_not_refused(clean: Path, data: Path, tmp_path: Path, capsys):
    """The one legitimate second record of an id: --retry-errors after an error."""
    run = tmp_path / "run"
    shutil.copytree(clean, run)
    model = ColourModel(broken=False)  # the server is back
    assert main([*_argv(data, run), "--retry-errors"], model=model) == 0
    ids = [r["id"] for r in _lines(run)]
    assert ids.count("appb_2") == 2 and len(ids) == 10
    assert {r["id"]: r["status"] for r in read_records(run / "records.jsonl")}["appb_2"] == "ok"
    assert main(["report", str(run)]) == 0
    assert "9 samples finished: 0 error(s)" in capsys.readouterr().out


def test_webvoyager_report_names_a_broken_task_record(tmp_path: Path, capsys):
    rd = RunDir(tmp_path)
    rd.open({"agent": "ocr", "regionfocus_enabled": True}, selected=["A--0", "A--1"])
    for i in ("A--0", "A--1"):
        rd.record({"id": i, "web_name": "A", "folder": f"task{i}", "steps": 2, "success": True})
    rd.close()
    recs = _lines(tmp_path)
    recs[1]["steps"] = "two"  # by hand
    _write(tmp_path, recs)
    assert wv_main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert 'records.jsonl: line 2, field steps is "two", expected an integer' in err
    assert "Traceback" not in err


def test_aitz_resume_names_a_broken_episode_record(sample, capsys):  # noqa: F811
    _tag_episodes(sample)
    out = sample.with_name(sample.name + "-run")  # beside the data: its files are not episodes
    argv = ["run", str(sample), "--out", str(out), "--agent", "ocr", "--no-progress"]
    assert aitz_main(argv, model=StepModel(dict(GOLD))) == 0
    recs = _lines(out)
    del recs[0]["steps"][1]["prediction"]  # by hand
    _write(out, recs)
    capsys.readouterr()
    model = StepModel(dict(GOLD))
    assert aitz_main(argv, model=model) == 2 and model.queries == []
    err = capsys.readouterr().err
    assert "records.jsonl: line 1, field steps.1.prediction is missing" in err
    assert "Traceback" not in err
