"""ScreenSpot-Pro scoring against hand-computed fixtures (official keys and semantics)."""

from __future__ import annotations

import pytest

from regionfocus.screenspot_pro.metrics import correctness, detail, evaluate, metric_block

BOX = [10, 20, 30, 40]
SIZE = [100, 200]


@pytest.mark.parametrize(
    "point, expected",
    [
        ((10, 20), "correct"),  # top-left corner: edges inclusive
        ((30, 40), "correct"),  # bottom-right corner
        ((30, 20), "correct"),
        ((20, 30), "correct"),
        ((9.999, 30), "wrong"),
        ((30.001, 30), "wrong"),
        ((20, 19.999), "wrong"),
        ((20, 40.001), "wrong"),
        ((-5, -5), "wrong"),
        (None, "wrong_format"),
    ],
)
def test_point_in_box_edges_inclusive(point, expected):
    assert correctness(point, BOX, SIZE) == expected


def test_compared_in_coordinates_normalised_by_the_annotated_size():
    # A 4K screenshot with awkward ratios: the hit test divides both sides by img_size.
    size = [3840, 2160]
    box = [1234, 777, 1250, 790]
    assert correctness((1234, 777), box, size) == "correct"
    assert correctness((1250, 790), box, size) == "correct"
    assert correctness((1250.01, 790), box, size) == "wrong"
    # The official script scores on normalised values: the same numbers with another size
    # must give the same verdict (a pixel/normalised mix-up would not).
    assert correctness((0.5, 0.5), [0.4, 0.4, 0.6, 0.6], [1, 1]) == "correct"


def _d(ui_type, verdict, group="Dev", app="vscode", platform="windows"):
    meta = {
        "id": f"{app}_{ui_type}_{verdict}",
        "img_path": "images/x.png",
        "group": group,
        "platform": platform,
        "application": app,
        "lang": "en",
        "instruction": "click it",
        "ui_type": ui_type,
        "task_filename": f"{app}_{platform}",
        "bbox": BOX,
    }
    pred = None if verdict == "wrong_format" else [1.0, 2.0]
    return detail(meta, pred, "raw", verdict)


def test_metric_block_hand_computed():
    details = [
        _d("text", "correct"),
        _d("text", "wrong"),
        _d("icon", "correct"),
        _d("icon", "wrong_format"),
        _d("icon", "wrong"),  # e.g. an error sample: still in the denominator
    ]
    m = metric_block(details)
    assert m == {
        "num_correct_action": 2,
        "num_total": 5,
        "wrong_format_num": 1,
        "action_acc": 2 / 5,
        "text_acc": 1 / 2,
        "icon_acc": 1 / 3,
    }


def test_empty_subsets_do_not_divide_by_zero():
    assert metric_block([]) == {
        "num_correct_action": 0,
        "num_total": 0,
        "wrong_format_num": 0,
        "action_acc": 0,
        "text_acc": 0,
        "icon_acc": 0,
    }
    only_text = metric_block([_d("text", "correct")])
    assert only_text["icon_acc"] == 0 and only_text["text_acc"] == 1.0
    doc = evaluate([])
    assert doc["details"] == [] and doc["metrics"]["overall"]["num_total"] == 0
    assert doc["metrics"]["leaderboard_simple_style"] == {}


def test_official_document_structure_and_keys():
    details = [
        _d("text", "correct", "Dev", "vscode", "windows"),
        _d("icon", "wrong", "Dev", "vscode", "windows"),
        _d("icon", "correct", "CAD", "autocad", "windows"),
        _d("text", "wrong_format", "CAD", "solidworks", "macos"),
    ]
    doc = evaluate(details)
    assert set(doc) == {"details", "metrics"}
    m = doc["metrics"]
    assert list(m) == [
        "fine_grained",
        "seeclick_style",
        "leaderboard_simple_style",
        "leaderboard_detailed_style",
        "overall",
    ]
    assert set(m["leaderboard_simple_style"]) == {"group:CAD", "group:Dev"}
    assert m["leaderboard_simple_style"]["group:Dev"]["action_acc"] == 0.5
    assert m["leaderboard_simple_style"]["group:CAD"]["wrong_format_num"] == 1
    assert set(m["leaderboard_detailed_style"]) == {"app:autocad", "app:solidworks", "app:vscode"}
    assert set(m["seeclick_style"]) == {
        "plat:macos inst_style:instruction gt_type:positive",
        "plat:windows inst_style:instruction gt_type:positive",
    }
    assert m["seeclick_style"]["plat:windows inst_style:instruction gt_type:positive"]["num_total"] == 3
    assert "plat:windows app:vscode inst_style:instruction gt_type:positive" in m["fine_grained"]
    assert m["overall"]["num_correct_action"] == 2 and m["overall"]["num_total"] == 4
    keys = {
        "id",
        "img_path",
        "group",
        "platform",
        "application",
        "lang",
        "instruction_style",
        "prompt_to_evaluate",
        "gt_type",
        "ui_type",
        "task_filename",
        "pred",
        "raw_response",
        "bbox",
        "correctness",
    }
    assert all(set(d) == keys for d in doc["details"])
    for block in (m["overall"], *m["fine_grained"].values()):
        assert set(block) == {
            "num_correct_action",
            "num_total",
            "wrong_format_num",
            "action_acc",
            "text_acc",
            "icon_acc",
        }
