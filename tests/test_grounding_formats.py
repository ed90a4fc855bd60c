"""ScreenSpot-v2, OSWorld-G and UI-Vision folders through `regionfocus screenspot-pro --data`.

Each test builds a small folder in the benchmark's official layout (screenshots drawn with PIL,
JSON written here), runs the whole command against the local chat-completions server with the
real UI-TARS 1.5 adapter and HTTP backend, and checks the scores against the numbers the
benchmark's official rule gives on that folder, counted by hand in each test. The server is
scripted per instruction: the gold point in the model's own frame (pixels of the image it
received), a point beside the target, a refusal (``finished``) or prose with no action.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image, ImageDraw

from regionfocus.screenspot_pro.cli import main
from regionfocus.screenspot_pro.dataset import DatasetError
from regionfocus.screenspot_pro.formats import detect
from regionfocus.screenspot_pro.metrics import CORRECT, WRONG, WRONG_FORMAT, judge

from .chat_server import ChatServer, Reply, request_images, request_text

SIZE = (400, 300)  # every screenshot; the server answers in the frame of the image it received


class Scripted:
    """UI-TARS 1.5 answering each instruction ("... #07#") as ``plan[7]`` says: a point in
    screenshot pixels (sent back in the received image's pixels), "decline" or "mute"."""

    def __init__(self, plan: dict[int, tuple[float, float] | str]):
        self.plan = plan

    def __call__(self, body: dict) -> Reply:
        answer = self.plan[int(re.search(r"#(\d+)#", request_text(body)).group(1))]
        if answer == "decline":
            return Reply.text(
                "Thought: nothing like it here.\nAction: finished(content='not on this screen')"
            )
        if answer == "mute":
            return Reply.text("I cannot tell where that is.")
        (image,) = request_images(body)
        x, y = answer[0] * image.width / SIZE[0], answer[1] * image.height / SIZE[1]
        return Reply.text(f"Thought: there.\nAction: click(point='<point>{x:.1f} {y:.1f}</point>')")


def _screens(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(names):
        im = Image.new("RGB", SIZE, (250, 250, 250))
        ImageDraw.Draw(im).rectangle((20 + 10 * i, 20, 120, 60), outline=(30, 30, 30), width=2)
        im.save(folder / name)


def _run(data: Path, out: Path, plan: dict, *extra: str) -> dict:
    with ChatServer(responder=Scripted(plan), model="uitars") as srv:
        argv = ["--data", str(data), "--out", str(out), "--no-progress", "--no-regionfocus",
                "--agent", "uitars-1.5", "--base-url", srv.base_url, "--model", "uitars", *extra]  # fmt: skip
        assert main(argv) == 0
    return json.loads((out / "results.json").read_text())


def _pct(block: dict) -> float:
    return round(100 * block["action_acc"], 1)


# ----------------------------------------------------------------------------- ScreenSpot-v2
def _v2_folder(root: Path) -> Path:
    _screens(root / "screenspotv2_image", "m.png", "d.png", "w.png")
    rec = lambda i, img, bbox, kind: {  # noqa: E731 - one line per record reads best
        "img_filename": img, "bbox": bbox, "instruction": f"open #{i}#", "data_type": kind, "data_source": "src",
    }  # fmt: skip
    files = {
        "mobile": [rec(0, "m.png", [20, 20, 100, 40], "text"), rec(1, "m.png", [200, 100, 40, 40], "icon"),
                   rec(2, "m.png", [200, 200, 40, 40], "icon")],
        "desktop": [rec(3, "d.png", [20, 20, 100, 40], "text"), rec(4, "d.png", [300, 50, 40, 30], "text"),
                    rec(5, "d.png", [200, 200, 40, 40], "icon")],
        "web": [rec(6, "w.png", [20, 20, 100, 40], "icon"), rec(7, "w.png", [200, 100, 40, 40], "text"),
                rec(8, "w.png", [100, 200, 60, 40], "text")],
    }  # fmt: skip
    for split, recs in files.items():
        (root / f"screenspot_{split}_v2.json").write_text(json.dumps(recs))
    return root


def test_screenspot_v2_scores_as_its_script(tmp_path: Path):
    data = _v2_folder(tmp_path / "ScreenSpot-v2")
    assert detect(data).name == "screenspot-v2"
    plan = {0: (70, 40), 1: (150, 150), 2: "mute", 3: (70, 40), 4: (320, 65), 5: (100, 100),
            6: (70, 40), 7: "decline", 8: (130, 220)}  # fmt: skip
    doc = _run(data, tmp_path / "run", plan)
    # SeeClick's screenspot_test.py: bbox [x, y, w, h] -> [x, y, x+w, y+h] (sample 4 is inside
    # [300, 50, 340, 80] only when read so), point inside with edges; no point = wrong format.
    # mobile: 0 right (text), 1 beside (icon), 2 no action (icon) -> 1/3, text 1/1, icon 0/2.
    # desktop: 3, 4 right (text), 5 beside (icon) -> 2/3, text 2/2, icon 0/1.
    # web: 6 right (icon), 7 declines (no point, text), 8 right (text) -> 2/3, text 1/2, icon 1/1.
    m = doc["metrics"]
    assert {k: _pct(b) for k, b in m["splits"].items()} == {
        "mobile text": 100.0, "mobile icon": 0.0, "desktop text": 100.0, "desktop icon": 0.0,
        "web text": 50.0, "web icon": 100.0, "mobile": 33.3, "desktop": 66.7, "web": 66.7,
    }  # fmt: skip
    assert m["overall"] == {
        "num_correct_action": 5,
        "num_total": 9,
        "wrong_format_num": 2,
        "action_acc": 5 / 9,
    }
    assert m["splits"]["mobile"]["wrong_format_num"] == 1 and m["splits"]["web"]["wrong_format_num"] == 1
    assert [d["id"] for d in doc["details"]][:3] == ["desktop_0", "desktop_1", "desktop_2"]
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert (
        summary.startswith("# ScreenSpot-v2 run")
        and "| baseline | 100.0 | 0.0 | 100.0 | 0.0 | 50.0 |" in summary
    )
    assert json.loads((tmp_path / "run" / "config.json").read_text())["identity"]["format"] == "screenspot-v2"


# ----------------------------------------------------------------------------- OSWorld-G
def _osworld_g_folder(root: Path) -> Path:
    _screens(root / "images", "a.png", "b.png")
    triangle = [200, 40, 300, 40, 200, 140]
    rec = lambda i, box_type, coords, img="a.png", size=SIZE: {  # noqa: E731
        "id": f"g{i}", "image_path": img, "instruction": f"Select #{i}#", "image_size": list(size),
        "box_type": box_type, "box_coordinates": coords, "GUI_types": ["Button"],
    }  # fmt: skip
    records = [
        rec(1, "bbox", [40, 40, 60, 30]),
        rec(2, "bbox", [40, 100, 60, 30]),
        rec(3, "polygon", [2 * v for v in triangle], "b.png", (800, 600)),  # annotated at twice the size
        rec(4, "polygon", triangle, "b.png"),
        rec(5, "refusal", [-1, -1, -1, -1]),
        rec(6, "refusal", [-1, -1, -1, -1]),
        rec(7, "refusal", [-1, -1, -1, -1]),
        rec(8, "bbox", [40, 160, 60, 30]),
        rec(9, "bbox", [40, 220, 60, 30]),
    ]
    (root / "OSWorld-G.json").write_text(json.dumps(records))
    (root / "OSWorld-G_refined.json").write_text(
        json.dumps([{**records[0], "instruction": "Select #1# (refined)"}])
    )
    classified = {
        "text_matching": [{"id": "g1"}, {"id": "g8"}],
        "element_recognition": [{"id": "g2"}, {"id": "g8"}],
        "layout_understanding": [{"id": "g3"}],
        "fine_grained_manipulation": [{"id": "g4"}],
        "refusal": [{"id": "g5"}, {"id": "g6"}, {"id": "g7"}],
    }
    (root / "classification_result.json").write_text(json.dumps({"classified": classified}))
    return root


def test_osworld_g_scores_polygons_refusals_and_categories(tmp_path: Path):
    data = _osworld_g_folder(tmp_path / "benchmark")
    plan = {1: (70, 55), 2: (150, 150), 3: (220, 60), 4: (290, 130), 5: "decline", 6: (50, 50),
            7: "mute", 8: "decline", 9: (70, 235)}  # fmt: skip
    doc = _run(data, tmp_path / "run", plan)
    # OSWorld-G's rule: bbox [x, y, w, h] with edges; polygon by ray casting (4 is inside the
    # triangle's bounding box, not the triangle); a refusal item right only when the answer
    # names no point (5), not for a point (6) nor an answer that does not parse (7); elsewhere
    # a refusal is wrong (8). Right: 1, 3, 5, 9 of 9. Per category (a sample counts in each
    # that lists it, "unclassified" when none does):
    m = doc["metrics"]
    assert m["overall"]["num_correct_action"] == 4 and m["overall"]["num_total"] == 9
    assert {k: (b["num_correct_action"], b["num_total"]) for k, b in m["splits"].items()} == {
        "text_matching": (1, 2), "element_recognition": (0, 2), "layout_understanding": (1, 1),
        "fine_grained_manipulation": (0, 1), "refusal": (1, 3), "unclassified": (1, 1),
    }  # fmt: skip
    details = {d["id"]: d for d in doc["details"]}
    assert details["g7"]["correctness"] == WRONG_FORMAT and details["g8"]["correctness"] == WRONG_FORMAT
    assert details["g6"]["correctness"] == WRONG
    # the default is OSWorld-G.json; the refined file is its own task
    assert len(details) == 9 and details["g1"]["prompt_to_evaluate"] == "Select #1#"
    refined = _run(data, tmp_path / "refined", plan, "--task", "OSWorld-G_refined")
    assert [d["prompt_to_evaluate"] for d in refined["details"]] == ["Select #1# (refined)"]

    oracle = {**plan, 2: (70, 115), 4: (220, 60), 6: "decline", 7: "decline", 8: (70, 175)}
    assert _run(data, tmp_path / "oracle", oracle)["metrics"]["overall"]["action_acc"] == 1.0


def test_osworld_g_run_folder_pins_the_benchmark(tmp_path: Path, capsys):
    data = _osworld_g_folder(tmp_path / "benchmark")
    plan = dict.fromkeys(range(1, 10), "decline")
    run = tmp_path / "run"
    first = _run(data, run, plan)
    assert json.loads((run / "config.json").read_text())["identity"]["format"] == "osworld-g"
    assert main(["report", str(run)]) == 0  # rebuilt from the folder alone, scored the same way
    assert json.loads((run / "results.json").read_text()) == first
    assert "| refusal (n=3) |" in capsys.readouterr().out
    page = (run / "report.html").read_text()
    assert "<title>OSWorld-G run" in page and "fine_grained_manipulation (n=1)" in page


# ----------------------------------------------------------------------------- UI-Vision
def _ui_vision_folder(root: Path) -> Path:
    _screens(root / "images" / "element_grounding", "u.png")
    ann = root / "annotations" / "element_grounding"
    ann.mkdir(parents=True)
    rec = lambda i, bbox, size=SIZE: {  # noqa: E731
        "image_path": "element_grounding/u.png", "prompt_to_evaluate": f"Click #{i}#", "element_type": "icon",
        "platform": "GIMP", "category": "Creativity", "bbox": bbox, "image_size": list(size),
    }  # fmt: skip
    files = {
        "basic": [rec(0, [20, 20, 120, 60]), rec(1, [120, 160, 20, 120])],  # 1: corners in the other order
        "functional": [rec(2, [200, 20, 260, 60]), rec(3, [400, 200, 480, 260], (800, 600))],
        "spatial": [rec(4, [20, 200, 80, 260]), rec(5, [300, 200, 360, 260]), rec(6, [300, 20, 360, 60])],
    }
    for split, recs in files.items():
        (ann / f"element_grounding_{split}.json").write_text(json.dumps(recs))
    return root


def test_ui_vision_scores_each_split_and_their_mean(tmp_path: Path):
    data = _ui_vision_folder(tmp_path / "ui-vision")
    plan = {0: (70, 40), 1: (70, 140), 2: (100, 100), 3: (220, 115), 4: (50, 230), 5: "mute", 6: (100, 100)}
    doc = _run(data, tmp_path / "run", plan)
    # eval_uivision.py: corners swapped when given in the other order (1 is right), box over
    # image_size (3 is annotated at twice the file's size), edges included, no point wrong
    # format; per file: basic 2/2, functional 1/2, spatial 1/3; README "Final Avg" = their mean.
    m = doc["metrics"]
    assert {k: b["num_correct_action"] for k, b in m["splits"].items()} == {
        "basic": 2,
        "functional": 1,
        "spatial": 1,
    }
    assert m["splits"]["spatial"]["wrong_format_num"] == 1
    assert m["overall"]["num_correct_action"] == 4 and m["overall"]["num_total"] == 7
    assert m["mean_of_splits"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert "| baseline | 100.0 | 50.0 | 33.3 | 57.1 | 61.1 |" in (tmp_path / "run" / "summary.md").read_text()


# ----------------------------------------------------------------------------- detection, rules
def test_a_folder_of_no_known_benchmark_is_refused_with_the_list(tmp_path: Path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["--data", str(tmp_path / "empty"), "--out", str(tmp_path / "o"), "--agent", "ocr"]) == 2
    err = capsys.readouterr().err
    assert "no benchmark recognised" in err
    for name in ("ScreenSpot-Pro", "ScreenSpot-v2", "OSWorld-G", "UI-Vision"):
        assert name in err
    both = _v2_folder(tmp_path / "both")
    (both / "OSWorld-G.json").write_text("[]")
    assert main(["--data", str(both), "--out", str(tmp_path / "o"), "--agent", "ocr"]) == 2
    assert "more than one benchmark" in capsys.readouterr().err
    assert (
        main(["--data", str(_v2_folder(tmp_path / "v2")), "--out", str(tmp_path / "o"), "--language", "cn"])
        == 2
    )
    assert "English only" in capsys.readouterr().err


def test_target_rules_at_the_edges():
    box = SimpleNamespace(refusal=False, polygon=(), bbox=(10.0, 10.0, 20.0, 30.0), img_size=(400, 300))
    assert judge(box, (20, 30)) == CORRECT and judge(box, (20.5, 30)) == WRONG  # edges included
    assert judge(box, None, declined=True) == WRONG_FORMAT  # a refusal is no answer where a target is
    # Ray casting as OSWorld-G's script has it: of a square's edges, the top one counts, the bottom not.
    square = SimpleNamespace(
        refusal=False, polygon=(0, 0, 10, 0, 10, 10, 0, 10), bbox=(0, 0, 10, 10), img_size=SIZE
    )
    assert (
        judge(square, (5, 0)) == CORRECT
        and judge(square, (5, 10)) == WRONG
        and judge(square, (5, 5)) == CORRECT
    )
    absent = SimpleNamespace(refusal=True, polygon=(), bbox=(0, 0, *SIZE), img_size=SIZE)
    assert judge(absent, (-1, -1)) == CORRECT  # the script's own sign for "not there"
    assert judge(absent, (-1, 5)) == WRONG and judge(absent, None) == WRONG_FORMAT
    assert judge(absent, None, declined=True) == CORRECT


def test_readers_list_every_bad_record_before_any_call(tmp_path: Path):
    data = _osworld_g_folder(tmp_path / "benchmark")
    records = json.loads((data / "OSWorld-G.json").read_text())
    records[2]["box_coordinates"] = [1, 2, 3, 4, 5]  # odd: no vertex list
    del records[0]["box_coordinates"]
    records[4]["image_path"] = "../outside.png"
    records[5]["box_type"] = "circle"
    (data / "OSWorld-G.json").write_text(json.dumps(records))
    with pytest.raises(DatasetError) as e:
        detect(data).load(data)
    assert e.value.problems == [
        "OSWorld-G.json[0] (id 'g1'): missing field(s): box_coordinates",
        "OSWorld-G.json[2] (id 'g3'): box_coordinates of a polygon need 3 or more (x, y) vertices, got 5 numbers",
        f"OSWorld-G.json[4] (id 'g5'): image_path '../outside.png' is outside images/ (names must be relative to "
        f"{data.resolve() / 'images'})",
        "OSWorld-G.json[5] (id 'g6'): box_type must be bbox, polygon or refusal, got 'circle'",
    ]
    v2 = _v2_folder(tmp_path / "v2")
    recs = json.loads((v2 / "screenspot_web_v2.json").read_text())
    recs[0]["bbox"] = [390, 20, 40, 20]  # 30 px past the right edge once read as [x, y, w, h]
    (v2 / "screenspot_web_v2.json").write_text(json.dumps(recs))
    with pytest.raises(
        DatasetError,
        match=r"screenspot_web_v2.json\[0\] \(id 'web_0'\): bbox \[390, 20, 430, 40\] lies outside",
    ):
        detect(v2).load(v2)
