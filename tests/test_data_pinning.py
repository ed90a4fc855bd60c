"""The data a run folder's records were scored against is pinned by content (issue 37, item 12).

The folder used to pin the data's path only: a resume after the annotations changed at the same
path (every box mirrored) finished with some records scored against the old boxes and some
against the new, and the same data at another path (a run folder moved to another machine) was
refused. Now each selected sample's record as loaded and its screenshot's size and bytes are
pinned (``RUN_DIR/data.json``): changed content exits 2 naming what changed, and the same content
at another path resumes. The runs are the real `regionfocus screenspot-pro` command (the model
a colour-seeing stand-in, tests/test_screenspot_helpers.py) and the real `regionfocus aitz run`.

`merge` used to write its folder without ``data.json``: the merged run, resumed, compared the
data's path only (changed data at the same path ran on, moved data was refused). It now carries
the shards' pins and refuses shards that pinned one sample with other content.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from regionfocus.kit.data_pin import DATA, DataPin, changes
from regionfocus.kit.runlog import RunFolder, RunFolderError
from regionfocus.kit.shards import merge_shards
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
    assert "differ (s1, s2, s3, s4, s5 and 4 more); changed: " in line  # the samples, by id
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


@pytest.fixture(scope="module")
def _merged_template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("merged")
    data = fresh_dataset(root / "data")
    for i in (0, 1):
        assert main(_argv(data, root / f"s{i}", "--shard", f"{i}/2"), model=ColourModel()) == 0
    assert main(["merge", str(root / "merged"), str(root / "s0"), str(root / "s1")]) == 0
    return root


@pytest.fixture
def merged_run(_merged_template: Path, tmp_path: Path, capsys) -> tuple[Path, Path]:
    """(data, folder merged from a 2-shard run over all 9 samples), a copy of its own; the
    shards beside them."""
    shutil.copytree(_merged_template, tmp_path, dirs_exist_ok=True)
    capsys.readouterr()
    return tmp_path / "data", tmp_path / "merged"


def test_merge_carries_the_shards_pins(merged_run, tmp_path: Path):
    data, out = merged_run
    shards = [DataPin.read(tmp_path / f"s{i}").samples for i in (0, 1)]
    assert shards[0] and shards[1] and not set(shards[0]) & set(shards[1])
    assert DataPin.read(out).samples == {**shards[0], **shards[1]}  # every sample of the run, as pinned
    assert len(_lines(out)) == 9


def test_a_merged_folder_resumed_over_changed_data_exits_2_naming_it(merged_run, capsys):
    data, out = merged_run
    _mirror_boxes(data, "appa_windows")
    before = _lines(out)
    assert main(_argv(data, out), model=ColourModel()) == 2
    err = capsys.readouterr().err
    assert "the data changed since its records were made" in err and "annotations appa_windows (" in err
    assert _lines(out) == before


def test_a_merged_folder_resumes_over_the_same_data_moved(merged_run, tmp_path: Path, capsys):
    data, out = merged_run
    moved = tmp_path / "elsewhere"
    shutil.move(data, moved)
    model = ColourModel()
    assert main(_argv(moved, out), model=model) == 0, capsys.readouterr().err
    assert model.calls == [] and len(_lines(out)) == 9  # nothing left to run, nothing refused


def test_merge_refuses_shards_that_pinned_one_sample_with_other_content(tmp_path: Path):
    # Two shards of one split cannot select one sample; folders that say so were edited or mixed,
    # and the merged folder could hold only one version of it.
    def shard(name: str, index: int, ids: list[str], ques: str) -> Path:
        pin = DataPin.of([(i, {"tasks.jsonl": {"ques": ques if i == "x" else i}}) for i in ids])
        with RunFolder(tmp_path / name, {"shard": f"{index}/2"}, {}, data=pin) as folder:
            folder.add({"id": ids[0]})
        return tmp_path / name

    a, b = shard("a", 0, ["a0", "x"], "find a flight"), shard("b", 1, ["b0", "x"], "find a hotel")
    with pytest.raises(
        RunFolderError, match=r"^x was run on other data in .*b than in .*a \(changed: tasks\.jsonl\)"
    ):
        merge_shards(tmp_path / "m", [a, b])
    assert not (tmp_path / "m" / "records.jsonl").exists() and not (tmp_path / "m" / DATA).exists()
    same = shard("c", 1, ["b0", "x"], "find a flight")  # the same content: one sample, one pin
    merge_shards(tmp_path / "m", [a, same])
    assert set(DataPin.read(tmp_path / "m").samples) == {"a0", "b0", "x"}
