"""The data a run folder's records were scored against is pinned by content (issue 37, item 12).

The folder used to pin the data's path only: a resume after the annotations changed at the same
path (every box mirrored) finished with some records scored against the old boxes and some
against the new, and the same data at another path (a run folder moved to another machine) was
refused. Now each selected sample's record as loaded and its screenshot's size and bytes are
pinned (``RUN_DIR/data.json``): changed content exits 2 naming what changed, and the same content
at another path resumes. The runs are the real `regionfocus screenspot-pro` command (the model
a colour-seeing stand-in, tests/test_screenspot_helpers.py) and the real `regionfocus aitz run`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from regionfocus.kit.data_pin import DATA, DataPin, changes
from regionfocus.kit.runlog import RunFolder, RunFolderError
from regionfocus.screenspot_pro.cli import main

from .test_screenspot_helpers import SCREEN, ColourModel, fresh_dataset


def _argv(data: Path, out: Path, *extra: str) -> list[str]:
    # The agent alone (no rounds): what is pinned does not depend on the method, and it is fast.
    return [
        "--data",
        str(data),
        "--out",
        str(out),
        "--agent",
        "ocr",
        "--no-progress",
        "--no-regionfocus",
        *extra,
    ]


def _lines(out: Path) -> list[str]:
    return (out / "records.jsonl").read_text().splitlines()


def _mirror_boxes(data: Path, task: str) -> None:
    path = data / "annotations" / f"{task}.json"
    recs = json.loads(path.read_text())
    for r in recs:
        x1, y1, x2, y2 = r["bbox"]
        r["bbox"] = [SCREEN[0] - x2, y1, SCREEN[0] - x1, y2]
    path.write_text(json.dumps(recs))


@pytest.fixture
def half_run(tmp_path: Path, capsys) -> tuple[Path, Path]:
    """(data, run folder) after a run that finished the first 6 of the 9 samples."""
    data, out = fresh_dataset(tmp_path / "data"), tmp_path / "run"
    assert main(_argv(data, out, "--limit", "6"), model=ColourModel()) == 0
    assert len(_lines(out)) == 6 and (out / DATA).exists()
    capsys.readouterr()
    return data, out


def test_a_resume_over_changed_annotations_exits_2_naming_them(half_run, capsys):
    data, out = half_run
    _mirror_boxes(data, "appa_windows")  # the edit: every box mirrored, same path
    before = _lines(out)
    assert main(_argv(data, out), model=ColourModel()) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the "9 samples from" line
    assert err.startswith("regionfocus screenspot-pro: error: ") and "\n" not in err
    assert "the data changed since its records were made" in err
    # appa_windows holds 5 of the 6 recorded samples; appb_macos's one is unchanged
    assert "5 of the 6 recorded sample(s) differ" in err and "annotations appa_windows (5)" in err
    assert "appb_macos" not in err and "--out DIR" in err
    assert _lines(out) == before  # nothing was scored against the new boxes


def test_a_swapped_screenshot_of_the_same_size_is_named(half_run, capsys):
    data, out = half_run
    shot = data / "images" / "appb_macos" / "screen.png"
    Image.new("RGB", SCREEN, (0, 0, 0)).save(shot)  # the same size, another picture
    assert main(_argv(data, out), model=ColourModel()) == 2
    err = capsys.readouterr().err
    assert "images/appb_macos/screen.png (1)" in err and "annotations" not in err


def test_the_same_data_at_another_path_resumes(half_run, tmp_path: Path, capsys):
    data, out = half_run
    moved = tmp_path / "elsewhere" / "ScreenSpot-Pro"
    shutil.copytree(data, moved)
    shutil.rmtree(data)  # the folder is on another machine now
    first = _lines(out)
    assert main(_argv(moved, out), model=ColourModel()) == 0, capsys.readouterr().err
    lines = _lines(out)
    assert lines[:6] == first and len(lines) == 9  # the 6 kept, the other 3 run
    config = json.loads((out / "config.json").read_text())
    assert config["identity"]["data"] == str(moved.resolve())  # where it is now


def test_a_folder_from_before_pins_compares_the_path_as_before(half_run, tmp_path: Path, capsys):
    data, out = half_run
    (out / DATA).unlink()  # written by a release without content pins
    moved = tmp_path / "moved"
    shutil.copytree(data, moved)
    assert main(_argv(moved, out), model=ColourModel()) == 2  # nothing to tell the content by
    assert "data:" in capsys.readouterr().err
    assert main(_argv(data, out), model=ColourModel()) == 0  # the same path resumes, and is pinned now
    assert DataPin.read(out) is not None


def test_changes_names_the_sources_and_counts_the_recorded_samples():
    before = DataPin.of((f"s{i}", {f"file{i % 7}": i, "images/x.png": [1, 2]}) for i in range(20))
    after = DataPin.of((f"s{i}", {f"file{i % 7}": -i, "images/x.png": [1, 2]}) for i in range(20))
    assert changes(before, before, [f"s{i}" for i in range(20)]) is None
    line = changes(before, after, [f"s{i}" for i in range(1, 10)])  # s0 is unrecorded
    assert line.startswith("9 of the 9 recorded sample(s) differ") and "and 2 more source(s)" in line
    assert "images/x.png" not in line
    # a sample not pinned then, or not selected now, is no change
    assert changes(DataPin.of([]), after, ["s1"]) is None


def test_the_kit_refuses_changed_content_whatever_the_harness(tmp_path: Path):
    pin = DataPin.of([("a", {"tasks.jsonl": {"ques": "find a flight"}})], location_keys=("tasks",))
    with RunFolder(tmp_path, {"tasks": "/one/tasks.jsonl"}, {}, data=pin) as folder:
        folder.add({"id": "a"})
    moved = {"tasks": "/two/tasks.jsonl"}
    RunFolder(tmp_path, moved, {}, data=pin).close()  # moved, same content: resumes
    edited = DataPin.of([("a", {"tasks.jsonl": {"ques": "find a hotel"}})], location_keys=("tasks",))
    with pytest.raises(RunFolderError, match=r"tasks\.jsonl \(1\)"):
        RunFolder(tmp_path, moved, {}, data=edited)
