"""Loading the official layout: filters, order, and one error listing every bad record."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from regionfocus.screenspot_pro.dataset import DatasetError, Selection, load_dataset

from .test_screenspot_helpers import DROP, edit_record, fresh_dataset


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return fresh_dataset(tmp_path / "data")


def _problems(root: Path) -> list[str]:
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    return e.value.problems


def test_loads_in_deterministic_order_with_natural_ids(data: Path):
    edit_record(data, "appa_windows", 0, id="appa_10")  # "appa_10" sorts after "appa_4"
    ids = [s.id for s in load_dataset(data)]
    assert ids == [
        "appa_1",
        "appa_2",
        "appa_3",
        "appa_4",
        "appa_10",
        "appb_0",
        "appb_1",
        "appb_2",
        "appb_3",
    ]
    first = load_dataset(data)[0]
    assert first.image_path == data / "images" / "appa_windows" / "screen.png"
    assert first.img_size == (1600, 1000) and first.task_filename == "appa_windows"


def test_filters_language_and_limit(data: Path):
    assert {s.group for s in load_dataset(data, Selection(groups=("cad",)))} == {"CAD"}
    assert [s.id for s in load_dataset(data, Selection(applications=("appc",)))] == ["appb_2", "appb_3"]
    icons = load_dataset(data, Selection(ui_type="icon"))
    assert icons and all(s.ui_type == "icon" for s in icons)
    assert [s.id for s in load_dataset(data, Selection(tasks=("appb_macos",)))][:1] == ["appb_0"]
    cn = load_dataset(data, Selection(language="cn"))
    assert cn[0].instruction.startswith("点击") and cn[0].language == "cn"
    assert len(load_dataset(data, Selection(limit=3))) == 3


def test_unknown_task_names_the_available_files(data: Path):
    with pytest.raises(DatasetError, match="unknown task 'nope'.*appa_windows"):
        load_dataset(data, Selection(tasks=("nope",)))


def test_missing_image_file(data: Path):
    edit_record(data, "appa_windows", 1, img_filename="appa_windows/gone.png")
    (p,) = _problems(data)
    assert "appa_windows.json[1]" in p and "missing image file" in p and "gone.png" in p


def test_bbox_outside_image(data: Path):
    edit_record(data, "appb_macos", 0, bbox=[1500, 900, 1700, 950])
    (p,) = _problems(data)
    assert "appb_0" in p and "outside the image 1600x1000" in p


def test_bbox_inverted(data: Path):
    edit_record(data, "appb_macos", 1, bbox=[300, 300, 200, 400])
    (p,) = _problems(data)
    assert "appb_1" in p and "inverted" in p


def test_img_size_not_matching_file(data: Path):
    edit_record(data, "appa_windows", 2, img_size=[3840, 2160])
    (p,) = _problems(data)
    assert "appa_2" in p and "3840x2160 does not match" in p and "(1600x1000)" in p


def test_image_size_read_from_header_without_decoding(data: Path):
    # A corrupt pixel stream with a valid header: validation must not decode it.
    path = data / "images" / "appa_windows" / "screen.png"
    raw = path.read_bytes()
    path.write_bytes(raw[:100])
    with Image.open(path) as im:
        assert im.size == (1600, 1000)
    assert len(load_dataset(data, Selection(tasks=("appa_windows",)))) == 5


def test_unknown_field_is_ignored_with_a_warning(data: Path):
    # The official script ignores fields it does not read (tests/test_dataset_tolerance.py
    # covers every tolerated problem); this used to stop the load.
    edit_record(data, "appa_windows", 3, colour="red")
    samples = load_dataset(data)
    assert len(samples) == 9
    (w,) = samples.warnings
    assert w.ids == ("appa_3",) and w.details == ("colour",)


def test_missing_field(data: Path):
    # A missing group is tolerated (the official script writes null); a missing bbox is not.
    edit_record(data, "appa_windows", 4, bbox=DROP)
    (p,) = _problems(data)
    assert "appa_4" in p and "missing field(s): bbox" in p


def test_duplicate_id(data: Path):
    edit_record(data, "appb_macos", 2, id="appa_0")
    (p,) = _problems(data)
    assert "duplicate id 'appa_0'" in p and "appa_windows.json[0]" in p


def test_bad_values(data: Path):
    edit_record(data, "appb_macos", 3, ui_type="button", img_size=[1600])
    p1, p2 = _problems(data)
    assert "ui_type must be one of text, icon" in p1
    assert "img_size must be [width, height]" in p2


def test_every_problem_listed_in_one_message(data: Path):
    edit_record(data, "appa_windows", 1, img_filename="appa_windows/gone.png")
    edit_record(data, "appa_windows", 3, colour="red")  # tolerated: not among the problems
    edit_record(data, "appb_macos", 0, bbox=[1500, 900, 1700, 950])
    edit_record(data, "appb_macos", 1, bbox=[300, 300, 200, 400])
    edit_record(data, "appb_macos", 2, id="appa_0", img_size=[800, 600])
    edit_record(data, "appb_macos", 3, instruction=DROP)
    with pytest.raises(DatasetError) as e:
        load_dataset(data, Selection(groups=("Dev",)))  # a filter never hides a broken record
    msg = str(e.value)
    assert msg.splitlines()[0].endswith("6 problem(s)")
    assert "colour" not in msg
    for needle in (
        "missing image file",
        "outside the image",
        "inverted",
        "duplicate id 'appa_0'",
        "800x600 does not match",
        "missing field(s): instruction",
    ):
        assert needle in msg, needle


def test_not_a_dataset(tmp_path: Path):
    with pytest.raises(DatasetError, match="no annotations/ folder"):
        load_dataset(tmp_path)
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations" / "x.json").write_text("{not json")
    with pytest.raises(DatasetError, match="x.json: cannot read as JSON"):
        load_dataset(tmp_path)
