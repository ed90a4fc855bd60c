"""ScreenSpot-Pro records the official harness runs on load here too (normalised, one warning
per kind of problem listing the sample ids); records it could not score stop the load, naming
every bad sample and its problem.

The official scoring below is copied as a fact, not as code to share: likaixin2000/
ScreenSpot-Pro-GUI-Grounding, eval_screenspot_pro.py, commit
bd8bbbb470fbc4fda2a4fa9ec90bd2572507794e, ``eval_sample_positive_gt``: the bbox is divided by
``img_size`` and the model's normalised point is correct iff x1 <= x <= x2 and y1 <= y <= y2.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from PIL import Image

from regionfocus import RegionFocusConfig
from regionfocus.kit.runlog import read_records
from regionfocus.screenspot_pro.dataset import (
    BBOX_TOLERANCE_PX,
    CLIPPED,
    EXTRA_FIELDS,
    INT_ID,
    NO_GROUP,
    NO_IMG_SIZE,
    OTHER_LANGUAGE,
    SCALED,
    UI_TYPE_CASE,
    UNKNOWN_GROUP,
    DatasetError,
    DatasetWarning,
    Selection,
    load_dataset,
)
from regionfocus.screenspot_pro.metrics import correctness
from regionfocus.screenspot_pro.runner import run_screenspot

from .test_screenspot_helpers import DROP, ColourModel, edit_record, expected_outcomes, fresh_dataset


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return fresh_dataset(tmp_path / "data")


def _records(root: Path, task: str) -> list[dict]:
    return json.loads((root / "annotations" / f"{task}.json").read_text())


def _problems(root: Path, selection: Selection | None = None) -> list[str]:
    with pytest.raises(DatasetError) as e:
        load_dataset(root, selection)
    return e.value.problems


def _by_kind(samples) -> dict[str, DatasetWarning]:
    kinds = [w.kind for w in samples.warnings]
    assert len(kinds) == len(set(kinds)), "one warning per kind"
    return {w.kind: w for w in samples.warnings}


def official_verdict(point_normalised: tuple[float, float] | None, record: dict) -> str:
    """eval_sample_positive_gt of the official script, on the record as annotated."""
    if point_normalised is None:
        return "wrong_format"
    w, h = record["img_size"]
    x1, y1, x2, y2 = record["bbox"]
    x, y = point_normalised
    return "correct" if (x1 / w <= x <= x2 / w and y1 / h <= y <= y2 / h) else "wrong"


# --------------------------------------------------------------------------- clean data


def test_clean_dataset_loads_without_warnings(data: Path, caplog):
    with caplog.at_level(logging.WARNING, logger="regionfocus.screenspot_pro.dataset"):
        samples = load_dataset(data)
    assert len(samples) == 9 and samples.warnings == []
    assert caplog.records == []
    assert all(s.repairs == () and "repairs" not in s.meta() for s in samples)


# --------------------------------------------------------------------------- tolerated


def test_extra_fields_are_ignored_one_warning_for_all(data: Path):
    edit_record(data, "appa_windows", 0, colour="red")
    edit_record(data, "appb_macos", 1, source="v2", colour="blue")
    samples = load_dataset(data)
    assert len(samples) == 9
    w = _by_kind(samples)[EXTRA_FIELDS]
    assert w.ids == ("appa_0", "appb_1") and w.details == ("colour", "source")
    assert "2 sample(s)" in str(w) and "colour, source" in str(w) and "appa_0, appb_1" in str(w)


def test_integer_id_becomes_a_string(data: Path):
    edit_record(data, "appa_windows", 2, id=7)
    samples = load_dataset(data)
    s = next(s for s in samples if s.id == "7")
    assert isinstance(s.id, str) and s.meta()["id"] == "7" and s.repairs == (INT_ID,)
    assert _by_kind(samples)[INT_ID].ids == ("7",)
    assert [x.id for x in samples][:5] == ["7", "appa_0", "appa_1", "appa_3", "appa_4"]  # natural order


def test_ui_type_case_is_normalised(data: Path):
    edit_record(data, "appa_windows", 1, ui_type="Icon")
    edit_record(data, "appb_macos", 0, ui_type=" TEXT ")
    samples = load_dataset(data)
    by_id = {s.id: s for s in samples}
    assert by_id["appa_1"].ui_type == "icon" and by_id["appb_0"].ui_type == "text"
    w = _by_kind(samples)[UI_TYPE_CASE]
    assert w.ids == ("appa_1", "appb_0") and w.details == ("' TEXT '", "'Icon'")
    assert "appa_1" in {s.id for s in load_dataset(data, Selection(ui_type="icon"))}


def test_missing_null_or_blank_group_is_unknown(data: Path):
    edit_record(data, "appa_windows", 0, group=DROP)
    edit_record(data, "appa_windows", 1, group=None)
    edit_record(data, "appb_macos", 2, group="  ")
    samples = load_dataset(data)
    assert [s.id for s in samples if s.group == UNKNOWN_GROUP] == ["appa_0", "appa_1", "appb_2"]
    assert _by_kind(samples)[NO_GROUP].ids == ("appa_0", "appa_1", "appb_2")
    picked = load_dataset(data, Selection(groups=(UNKNOWN_GROUP,)))
    assert [s.id for s in picked] == ["appa_0", "appa_1", "appb_2"]


def test_group_of_another_type_is_an_error(data: Path):
    edit_record(data, "appa_windows", 0, group=3)
    (p,) = _problems(data)
    assert "appa_0" in p and "group must be a string or null, got 3" in p


def test_other_language_instruction_may_be_null(data: Path):
    edit_record(data, "appa_windows", 3, instruction_cn=None)
    edit_record(data, "appb_macos", 3, instruction_cn=DROP)
    samples = load_dataset(data)  # English: instruction_cn is never read
    assert len(samples) == 9
    assert _by_kind(samples)[OTHER_LANGUAGE].ids == ("appa_3", "appb_3")
    # ... but a Chinese run cannot do without it
    p1, p2 = _problems(data, Selection(language="cn"))
    assert "appa_3" in p1 and "instruction_cn must be a non-empty string, got None" in p1
    assert "appb_3" in p2 and "missing field(s): instruction_cn" in p2


def test_english_instruction_may_be_missing_in_a_chinese_run(data: Path):
    edit_record(data, "appa_windows", 0, instruction=None)
    samples = load_dataset(data, Selection(language="cn"))
    assert _by_kind(samples)[OTHER_LANGUAGE].ids == ("appa_0",)
    (p,) = _problems(data)
    assert "appa_0" in p and "instruction must be a non-empty string, got None" in p


def test_bbox_a_pixel_past_the_edge_is_clipped_and_scores_as_officially(data: Path):
    # the default screen is 1600x1000
    edit_record(data, "appa_windows", 0, bbox=[1500, 900, 1601, 1001])
    edit_record(data, "appb_macos", 0, bbox=[-2, -BBOX_TOLERANCE_PX, 80, 60])
    samples = load_dataset(data)
    by_id = {s.id: s for s in samples}
    assert by_id["appa_0"].bbox == (1500, 900, 1600, 1000)
    assert by_id["appb_0"].bbox == (0, 0, 80, 60)
    assert by_id["appa_0"].meta()["bbox"] == [1500, 900, 1600, 1000]
    assert by_id["appa_0"].meta()["repairs"] == [CLIPPED]
    assert _by_kind(samples)[CLIPPED].ids == ("appa_0", "appb_0")
    # every point on the image gets the official verdict
    raw = {r["id"]: r for t in ("appa_windows", "appb_macos") for r in _records(data, t)}
    for sid in ("appa_0", "appb_0"):
        s = by_id[sid]
        for x in (0, 1, 79, 80, 81, 1499, 1500, 1599.5, 1600):
            for y in (0, 59, 60, 61, 899, 900, 1000):
                ours = correctness((x, y), s.bbox, s.img_size)
                assert ours == official_verdict((x / 1600, y / 1000), raw[sid]), (sid, x, y)


def test_bbox_tolerance_is_a_limit(data: Path):
    edit_record(data, "appa_windows", 0, bbox=[1500, 900, 1600 + BBOX_TOLERANCE_PX, 1000])
    assert load_dataset(data)[0].bbox == (1500, 900, 1600, 1000)
    edit_record(data, "appa_windows", 0, bbox=[1500, 900, 1600 + BBOX_TOLERANCE_PX + 0.5, 1000])
    (p,) = _problems(data)
    assert "appa_0" in p and "outside the image 1600x1000 by 4.5 px" in p


def test_missing_img_size_is_read_from_the_file(data: Path):
    edit_record(data, "appa_windows", 4, img_size=DROP)
    edit_record(data, "appb_macos", 0, img_size=None)
    samples = load_dataset(data)
    assert all(s.img_size == (1600, 1000) for s in samples)
    assert _by_kind(samples)[NO_IMG_SIZE].ids == ("appa_4", "appb_0")


def test_image_a_uniform_scale_of_img_size_scales_the_bbox_and_scores_as_officially(data: Path, tmp_path):
    # The screenshot of appb_macos was saved at half size; the annotations keep 1600x1000.
    path = data / "images" / "appb_macos" / "screen.png"
    with Image.open(path) as im:
        im.resize((800, 500), Image.Resampling.NEAREST).save(path)
    samples = load_dataset(data)
    by_id = {s.id: s for s in samples}
    assert by_id["appb_0"].img_size == (800, 500) and by_id["appb_0"].bbox == (100, 100, 140, 130)
    assert by_id["appa_0"].img_size == (1600, 1000)
    w = _by_kind(samples)[SCALED]
    assert w.ids == ("appb_0", "appb_1", "appb_2", "appb_3") and w.details == ("1600x1000 -> 800x500",)
    assert [k.kind for k in samples.warnings] == [SCALED]

    # A baseline run of the colour-seeing double sees the file; its verdicts are the official ones.
    run_dir = tmp_path / "run"
    asyncio.run(
        run_screenspot(samples, ColourModel(), RegionFocusConfig(), run_dir, enabled=False, progress=False)
    )
    recs = {r["id"]: r for r in read_records(run_dir / "records.jsonl")}
    raw = {r["id"]: r for r in _records(data, "appb_macos")}
    expected = expected_outcomes()
    for sid in raw:
        got = recs[sid]["baseline"]
        assert got["correctness"] == expected[sid][0], sid
        if recs[sid]["status"] == "error":  # the scripted "[error]" sample: no verdict to compare
            continue
        pred = got["point"]
        normalised = None if pred is None else (pred[0] / 800, pred[1] / 500)
        assert got["correctness"] == official_verdict(normalised, raw[sid]), sid


def test_scale_tolerance_allows_rounding_only(data: Path):
    path = data / "images" / "appb_macos" / "screen.png"
    with Image.open(path) as im:
        im.resize((1067, 667), Image.Resampling.NEAREST).save(path)  # 1600x1000 at 2/3, rounded
    samples = load_dataset(data, Selection(tasks=("appb_macos",)))
    assert samples[0].img_size == (1067, 667)
    assert samples[0].bbox == pytest.approx(
        (200 * 1067 / 1600, 200 * 667 / 1000, 280 * 1067 / 1600, 260 * 667 / 1000)
    )
    with Image.open(path) as im:
        im.resize((1067, 640), Image.Resampling.NEAREST).save(path)  # squashed: not a scale
    problems = _problems(data)
    assert len(problems) == 4
    assert all("img_size 1600x1000 does not match" in p and "(1067x640)" in p for p in problems)
    assert all("not a uniform scale" in p for p in problems)


def test_scale_tolerance_is_one_pixel_of_the_smaller_frame(data: Path):
    # annotated on a third-size copy (533.3x333.3 rounded) of the 1600x1000 file
    edit_record(data, "appa_windows", 0, img_size=[533, 333], bbox=[33, 33, 60, 53])
    s = load_dataset(data)[0]
    assert s.id == "appa_0" and s.img_size == (1600, 1000)
    assert s.bbox == pytest.approx((33 * 1600 / 533, 33 * 1000 / 333, 60 * 1600 / 533, 53 * 1000 / 333))
    assert correctness((100, 100), s.bbox, s.img_size) == "correct"
    assert official_verdict((100 / 1600, 100 / 1000), _records(data, "appa_windows")[0]) == "correct"
    edit_record(data, "appa_windows", 0, img_size=[533, 330])
    (p,) = _problems(data)
    assert "appa_0" in p and "img_size 533x330 does not match" in p


def test_each_kind_logs_one_line_listing_its_ids(data: Path, caplog):
    edit_record(data, "appa_windows", 0, colour="red", ui_type="Text")
    edit_record(data, "appa_windows", 1, id=11, group=None)
    edit_record(data, "appa_windows", 2, bbox=[300, 700, 380, 1002], instruction_cn=None)
    edit_record(data, "appb_macos", 0, group=DROP, colour="x", img_size=None)
    edit_record(data, "appb_macos", 1, ui_type="ICON", bbox=[1400, 848, 1407, 855])
    with caplog.at_level(logging.WARNING, logger="regionfocus.screenspot_pro.dataset"):
        samples = load_dataset(data)
    assert len(samples) == 9
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == len(samples.warnings) == 7
    expected = {
        EXTRA_FIELDS: ("appa_0", "appb_0"),
        UI_TYPE_CASE: ("appa_0", "appb_1"),
        INT_ID: ("11",),
        NO_GROUP: ("11", "appb_0"),
        CLIPPED: ("appa_2",),
        OTHER_LANGUAGE: ("appa_2",),
        NO_IMG_SIZE: ("appb_0",),
    }
    assert {w.kind: w.ids for w in samples.warnings} == expected
    for kind, ids in expected.items():
        (line,) = [ln for ln in lines if kind in ln]
        assert ", ".join(ids) in line and f"{len(ids)} sample(s)" in line
    by_id = {s.id: s for s in samples}
    assert by_id["11"].repairs == (INT_ID, NO_GROUP)
    # slicing and filtering keep working on the returned list
    assert len(samples[:2]) == 2 and isinstance(samples, list)


def test_warning_line_shortens_a_long_id_list():
    w = DatasetWarning("kind", tuple(f"s{i}" for i in range(100)))
    text = str(w)
    assert text.startswith("100 sample(s): kind: s0, s1") and text.endswith("s29 ... and 70 more")


# --------------------------------------------------------------------------- unusable


def test_missing_image_file_names_the_sample(data: Path):
    edit_record(data, "appb_macos", 2, img_filename="appb_macos/nowhere.png")
    (p,) = _problems(data)
    assert p.startswith("appb_macos.json[2] (id 'appb_2'): missing image file") and "nowhere.png" in p


def test_unreadable_image_file(data: Path):
    (data / "images" / "appb_macos" / "broken.png").write_bytes(b"not a png")
    edit_record(data, "appb_macos", 2, img_filename="appb_macos/broken.png")
    (p,) = _problems(data)
    assert "appb_2" in p and "unreadable image file" in p


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"bbox": DROP}, "missing field(s): bbox"),
        ({"bbox": None}, "bbox must be [x1, y1, x2, y2], got None"),
        ({"bbox": [1, 2, 3]}, "bbox must be [x1, y1, x2, y2], got [1, 2, 3]"),
        ({"bbox": ["1", 2, 3, 4]}, "bbox must be [x1, y1, x2, y2]"),
        ({"bbox": [10, 10, 5, 20]}, "is inverted"),
        ({"bbox": [-20, 0, 10, 10]}, "lies outside the image 1600x1000 by 20 px"),
        ({"img_size": [1600]}, "img_size must be [width, height] in whole pixels"),
        ({"img_size": [1600, 900]}, "img_size 1600x900 does not match"),
        ({"id": None}, "id must be a non-empty string or an integer, got None"),
        ({"id": 1.5}, "id must be a non-empty string or an integer, got 1.5"),
        ({"id": DROP}, "missing field(s): id"),
        ({"application": DROP, "platform": ""}, "missing field(s): application"),
        ({"platform": ""}, "platform must be a non-empty string, got ''"),
        ({"ui_type": "button"}, "ui_type must be one of text, icon, got 'button'"),
        ({"ui_type": None}, "ui_type must be one of text, icon, got None"),
        ({"instruction": "   "}, "instruction must be a non-empty string"),
    ],
)
def test_unusable_record_is_named_with_its_problem(data: Path, change, needle):
    edit_record(data, "appa_windows", 3, **change)
    problems = _problems(data)
    assert problems and all(p.startswith("appa_windows.json[3]") for p in problems)
    assert any(needle in p for p in problems), problems


def test_integer_id_colliding_with_a_string_id(data: Path):
    edit_record(data, "appa_windows", 0, id="5")
    edit_record(data, "appb_macos", 0, id=5)
    (p,) = _problems(data)
    assert "appb_macos.json[0] (id '5'): duplicate id '5' (first seen at appa_windows.json[0])" == p


def test_every_bad_sample_is_listed_and_tolerated_ones_are_not(data: Path):
    edit_record(data, "appa_windows", 0, colour="red", group=None)  # tolerated
    edit_record(data, "appa_windows", 1, img_filename="appa_windows/gone.png")
    edit_record(data, "appa_windows", 2, bbox=DROP)
    edit_record(data, "appb_macos", 0, bbox=[1500, 900, 1700, 950])
    edit_record(data, "appb_macos", 1, img_size=[800, 700])
    problems = _problems(data, Selection(groups=("CAD",)))  # a filter never hides a bad record
    assert [p.split(":")[0] for p in problems] == [
        "appa_windows.json[1] (id 'appa_1')",
        "appa_windows.json[2] (id 'appa_2')",
        "appb_macos.json[0] (id 'appb_0')",
        "appb_macos.json[1] (id 'appb_1')",
    ]
