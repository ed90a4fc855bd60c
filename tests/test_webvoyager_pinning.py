"""WebVoyager run folders pin their tasks by content (``RUN_DIR/data.json``), as ScreenSpot-Pro's
and AITZ's pin their data (tests/test_data_pinning.py).

A WebVoyager folder used to pin the task file's path only: a resume after a task's question or
start URL was edited in that file ran the remaining tasks from the new file beside records made
with the old one. Now each selected task is pinned (a task file's task by its record, a
MiniWoB++ episode by its seed and its page's bytes); a resume whose recorded tasks changed is
refused naming them, before any task runs, and the same tasks at another path resume.
`merge` carries the shards' pins. The fast tests open the folder the way the command does
(``RunDir.open`` with :func:`tasks_pin` of tasks read by the real loaders); the slow one is the
real command in Chromium.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from regionfocus.kit.command import ALL_FAILED
from regionfocus.kit.data_pin import DATA, DataPin
from regionfocus.kit.runlog import RunFolderError, read_records
from regionfocus.kit.shards import Shard, select
from regionfocus.webvoyager.cli import main
from regionfocus.webvoyager.rundir import RunDir
from regionfocus.webvoyager.tasks import load_tasks, tasks_pin

TASKS = [
    {"web_name": "Site", "id": "Site--0", "ques": "Find a flight to Oslo.", "web": "http://127.0.0.1:9/a"},
    {"web_name": "Site", "id": "Site--1", "ques": "Find a hotel in Oslo.", "web": "http://127.0.0.1:9/b"},
    {"web_name": "Site", "id": "Site--2", "ques": "Find a car in Oslo.", "web": "http://127.0.0.1:9/c"},
    {"web_name": "Other", "id": "Other--0", "ques": "Find a train.", "web": "http://127.0.0.1:9/d"},
]
ANSWERS = {"Site": {"answers": [{"id": 0, "type": "golden", "ans": "SK4711"}]}}


def _write(path: Path, tasks: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def _edited(tasks: list[dict], task_id: str, **fields) -> list[dict]:
    return [{**t, **fields} if t["id"] == task_id else t for t in tasks]


def _open(root: Path, tasks_file: Path, answers: Path | None = None, **config) -> RunDir:
    """The folder opened as the command opens it: the file's tasks, pinned by content."""
    tasks = load_tasks(tasks_file, answers)
    run = RunDir(root)
    identity = {"agent": "ocr", "tasks": str(tasks_file), "answers": answers and str(answers), **config}
    run.open(identity, selected=[t.id for t in tasks], data=tasks_pin(tasks, str(tasks_file), answers))
    return run


def _record(run: RunDir, *ids: str) -> None:
    for i in ids:
        run.record({"id": i, "web_name": i.split("--")[0], "folder": f"task{i}", "steps": 1, "triggers": {}})


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path]:
    """(task file, run folder holding records of Site--0, Site--1 and Other--0)."""
    tasks_file = _write(tmp_path / "data" / "tasks.jsonl", TASKS)
    run = _open(tmp_path / "run", tasks_file)
    _record(run, "Site--0", "Site--1", "Other--0")
    run.close()
    return tasks_file, tmp_path / "run"


def test_a_resume_over_edited_tasks_is_refused_naming_them(recorded):
    tasks_file, root = recorded
    edits = _edited(_edited(TASKS, "Site--0", ques="Find a flight to Bergen."), "Other--0", web="http://x/")
    _write(tasks_file, edits)
    log, pin = (root / "records.jsonl").read_bytes(), (root / DATA).read_bytes()
    with pytest.raises(RunFolderError) as refused:
        _open(root, tasks_file)
    line = str(refused.value)
    assert "the data changed since its records were made" in line and "\n" not in line
    assert "2 of the 3 recorded sample(s) differ (Site--0, Other--0); changed: tasks.jsonl (2)" in line
    assert "Site--1" not in line and "--out DIR" in line
    assert (root / "records.jsonl").read_bytes() == log and (root / DATA).read_bytes() == pin


def test_the_same_tasks_elsewhere_resume_and_an_unrecorded_task_may_change(recorded, tmp_path: Path):
    tasks_file, root = recorded
    moved = _write(tmp_path / "moved" / "tasks.jsonl", _edited(TASKS, "Site--2", ques="Find a boat."))
    run = _open(root, moved)  # Site--2 has no record yet: it runs with today's question
    assert sorted(run.folder.done) == ["Other--0", "Site--0", "Site--1"]
    run.close()
    assert json.loads((root / "config.json").read_text())["identity"]["tasks"] == str(moved)


def test_changed_reference_answers_are_named_by_their_file(tmp_path: Path):
    tasks_file = _write(tmp_path / "tasks.jsonl", TASKS)
    answers = tmp_path / "reference_answer.json"
    answers.write_text(json.dumps(ANSWERS))
    run = _open(tmp_path / "run", tasks_file, answers)
    _record(run, "Site--0", "Site--1")
    run.close()
    answers.write_text(json.dumps({"Site": {"answers": [{"id": 0, "type": "golden", "ans": "SK4712"}]}}))
    with pytest.raises(RunFolderError, match=r"differ \(Site--0\); changed: reference_answer\.json \(1\)"):
        _open(tmp_path / "run", tasks_file, answers)


def test_a_folder_from_before_pins_compares_the_path_then_pins(recorded, tmp_path: Path):
    tasks_file, root = recorded
    (root / DATA).unlink()  # written by a release without task pins
    moved = _write(tmp_path / "moved.jsonl", TASKS)
    with pytest.raises(RunFolderError, match="tasks: "):
        _open(root, moved)  # nothing to tell the content by: the path decides, as before
    _open(root, tasks_file).close()
    assert set(DataPin.read(root).samples) == {t["id"] for t in TASKS}


def test_a_miniwob_episode_is_pinned_by_its_seed_and_its_page(tmp_path: Path):
    from regionfocus.webvoyager.miniwob import miniwob_tasks

    (task,) = miniwob_tasks("miniwob:click-button", episodes=1, seed=3)
    page = Path(task.web.removeprefix("file://"))
    copy = tmp_path / "elsewhere" / page.name
    copy.parent.mkdir()
    shutil.copyfile(page, copy)
    moved = replace(task, web=copy.as_uri())
    pin = tasks_pin([task], "miniwob:click-button")
    assert pin.samples == tasks_pin([moved], "miniwob:click-button").samples  # the page, not its path
    assert list(pin.samples[task.id]) == ["miniwob/click-button.html"]
    assert pin.location_keys == ()  # the spec names the tasks: it is compared as before
    assert tasks_pin([replace(task, seed=4)], "x").samples != pin.samples
    copy.write_text(copy.read_text().replace("</body>", "<p>another release</p></body>"))
    assert tasks_pin([moved], "x").samples != pin.samples


def test_merge_carries_the_pins_and_the_merged_folder_refuses_edited_tasks(tmp_path: Path, capsys):
    tasks_file = _write(tmp_path / "tasks.jsonl", TASKS)
    tasks = load_tasks(tasks_file)
    shards = []
    for i in (0, 1):
        mine = select(tasks, Shard(i, 2))
        run = RunDir(tmp_path / f"s{i}")
        identity = {"agent": "ocr", "tasks": str(tasks_file), "answers": None, "shard": f"{i}/2"}
        run.open(identity, selected=[t.id for t in mine], data=tasks_pin(mine, str(tasks_file)))
        _record(run, *(t.id for t in mine))
        run.close()
        shards.append(str(tmp_path / f"s{i}"))
    assert main(["merge", str(tmp_path / "m"), *shards]) == 0
    assert set(DataPin.read(tmp_path / "m").samples) == {t["id"] for t in TASKS}
    _write(tasks_file, _edited(TASKS, "Site--1", web="http://127.0.0.1:9/moved"))
    with pytest.raises(RunFolderError, match=r"differ \(Site--1\); changed: tasks\.jsonl \(1\)"):
        _open(tmp_path / "m", tasks_file)


# --------------------------------------------------------------------------- the command, in Chromium


@pytest.mark.slow  # Chromium
def test_the_command_refuses_a_resume_over_an_edited_task_file(tmp_path: Path, capsys):
    """The real command: every task's start URL is a loopback address the page policy refuses,
    so each task is recorded (as an error) at once and no model is needed."""
    tasks_file = _write(tmp_path / "data" / "tasks.jsonl", TASKS)
    out = tmp_path / "run"
    argv = [
        "--tasks",
        str(tasks_file),
        "--agent",
        "ocr",
        "--max-steps",
        "1",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert main(argv) == ALL_FAILED  # what the page policy makes of every task
    assert len(read_records(out / "records.jsonl")) == 4
    capsys.readouterr()
    before = (out / "records.jsonl").read_bytes()
    _write(tasks_file, _edited(TASKS, "Site--2", ques="Find a boat in Oslo."))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("regionfocus webvoyager: error: ") and "\n" not in err, err
    assert "1 of the 4 recorded sample(s) differ (Site--2); changed: tasks.jsonl (1)" in err
    assert (out / "records.jsonl").read_bytes() == before  # no task ran against the new question
    moved = tmp_path / "copy" / "tasks.jsonl"
    moved.parent.mkdir()
    shutil.move(tmp_path / "data" / "tasks.jsonl", moved)
    _write(moved, TASKS)  # the tasks the folder ran, at another path: resumed, nothing to run
    assert main([*argv[:1], str(moved), *argv[2:]]) == ALL_FAILED
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("4 tasks finished")
    assert (out / "records.jsonl").read_bytes() == before
