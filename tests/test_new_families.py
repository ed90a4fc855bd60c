"""The grounding families (GUI-Owl 1.5, MAI-UI, UI-Venus 1.5, Holo2, GTA1): each request is the
official one, each answer in the model's own format reads back to the right pixels, and an
oracle answering in each family's own frame scores 100 % through `regionfocus screenspot-pro`.

The official texts are the files of prompts/official/ (SOURCES.md cites repository, path and
commit); the layouts asserted here (system or not, image before or after the text) are the
cited code's.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from regionfocus.adapters import get_adapter
from regionfocus.adapters.cli import main as adapters_main
from regionfocus.adapters.families.prompting import render
from regionfocus.adapters.families.resize import smart_resize
from regionfocus.adapters.serving import serve_command
from regionfocus.screenspot_pro.cli import main as screenspot_main

from .chat_server import ChatServer, Reply, request_images, request_text

GOLDEN = Path(__file__).parent / "golden" / "new_families.json"
FAMILIES = ("gui-owl-1.5", "mai-ui", "ui-venus-1.5", "holo2", "gta1")
INSTRUCTION = "open the Layers panel."


def _texts(message: dict) -> list[str]:
    return [p["text"] for p in message["content"] if p["type"] == "text"]


def _kinds(message: dict) -> list[str]:
    return [p["type"] for p in message["content"]]


def _show(family: str, capsys, size: str = "3840x2160") -> dict:
    assert (
        adapters_main(["show-prompt", "--agent", family, "--size", size, "--instruction", INSTRUCTION]) == 0
    )
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------ the official requests
def test_gui_owl_request_is_the_official_one(capsys):
    system, user = _show("gui-owl-1.5", capsys)["messages"]
    assert system["role"] == "system" and _texts(system) == [
        render("official/gui_owl15_screenspot_system.txt")
    ]
    assert "The screen's resolution is 1000x1000." in _texts(system)[0]
    assert _kinds(user) == ["image_url", "text"] and _texts(user) == [INSTRUCTION]


def test_mai_ui_request_is_the_official_one(capsys):
    system, user = _show("mai-ui", capsys)["messages"]
    (text,) = _texts(system)
    assert text == render("official/mai_ui_screenspot_system.txt")
    assert text.startswith("You are a GUI grounding agent. \n") and text.endswith("## Input instruction\n")
    assert _kinds(user) == ["text", "image_url"] and _texts(user) == [INSTRUCTION + "\n"]


def test_ui_venus_request_is_the_official_one(capsys):
    (user,) = _show("ui-venus-1.5", capsys)["messages"]
    assert _kinds(user) == ["image_url", "text"]
    # The evaluation cuts the instruction's final "." and the template adds ". " back.
    assert _texts(user) == [
        "Output the center point of the position corresponding to the following instruction: \n"
        "open the Layers panel. \n\nThe output should just be the coordinates of a point, in the format "
        "[x,y]. Additionally, if the task is infeasible (e.g., the task is not related to the image), "
        "the output should be [-1,-1]."
    ]


def test_holo2_request_is_the_official_one(capsys):
    body = _show("holo2", capsys)
    (user,) = body["messages"]
    assert _kinds(user) == ["image_url", "text"]
    (text,) = _texts(user)
    assert text.startswith(
        "Localize an element on the GUI image according to the provided target and output a click position.\n"
        "     * You must output a valid JSON following the format: {'properties': {'x': "
    )
    assert text.endswith(
        "'title': 'ClickCoordinates', 'type': 'object'}\n     Your target is:\n" + INSTRUCTION
    )
    assert body["chat_template_kwargs"] == {"thinking": False}  # the cookbook's thinking=False


def test_gta1_request_states_the_resized_size(capsys):
    body = _show("gta1", capsys)
    system, user = body["messages"]
    (image,) = [p for p in user["content"] if p["type"] == "image_url"]
    h, w = smart_resize(2160, 3840, 28, 3136, 4096 * 2160)
    assert (w, h) == (3836, 2156)
    assert _texts(system) == [render("official/gta1_readme_system.txt", height=h, width=w)]
    assert f"The image resolution is height {h} and width {w}." in _texts(system)[0]
    assert _kinds(user) == ["image_url", "text"] and _texts(user) == [INSTRUCTION]


@pytest.mark.parametrize(
    ("family", "checkpoint"),
    [
        ("gui-owl-1.5", "mPLUG/GUI-Owl-1.5-8B-Instruct"),
        ("mai-ui", "Tongyi-MAI/MAI-UI-8B"),
        ("ui-venus-1.5", "inclusionAI/UI-Venus-1.5-8B"),
        ("holo2", "Hcompany/Holo2-8B"),
        ("gta1", "Salesforce/GTA1-7B"),
    ],
)
def test_serve_command_names_the_public_checkpoint(family, checkpoint, capsys):
    assert serve_command(family).startswith(f"vllm serve {checkpoint} ")
    assert adapters_main(["serve-command", "--agent", family]) == 0
    assert capsys.readouterr().out.strip() == serve_command(family)


@pytest.mark.parametrize(
    ("family", "frame", "resize"),
    [
        ("gui-owl-1.5", "relative", [32, 196 * 32 * 32, 9800 * 32 * 32]),
        ("mai-ui", "relative", [32, 1024, 6553600]),
        # Two passes: qwen-vl-utils at its defaults, then the Qwen3-VL processor.
        ("ui-venus-1.5", "relative", [28, 4 * 28 * 28, 16384 * 28 * 28, 32, 65536, 16777216]),
        ("holo2", "relative", [32, 65536, 16777216]),
        ("gta1", "absolute", [28, 3136, 4096 * 2160]),
    ],
)
def test_frame_and_resize_are_the_sources(family, frame, resize):
    a = get_adapter(family)
    assert (a.frame, a.resize.identity()) == (frame, resize)


# ------------------------------------------------------------------ the official readers (issue 32)
# Each expected value is what the family's own evaluation code computes for the reply (file and
# lines cited; SOURCES.md names the commits). Where ours is more lenient (spaces, decimals), the
# official reader would give no point at all; SOURCES.md lists those.
def _point(family: str, answer: str, size: tuple[int, int]) -> tuple[float, float] | None:
    action = get_adapter(family).parse_action(answer, *size)
    if action is None or action.point is None:
        return None
    return round(action.point.x, 2), round(action.point.y, 2)


MAI_UI_REPLY = (
    "<grounding_think>The instruction asks for the Layers panel. The menu at position (1,1) is "
    "the application menu, not a panel. The Layers tab sits in the dock on the left, under the "
    'Properties tab.</grounding_think>\n<answer>\n{"coordinate": [345,395]}\n</answer>'
)


def test_mai_ui_reads_the_answer_not_the_reasoning():
    """Tongyi-MAI/MAI-UI evaluation/grounding/eval_server.py lines 35-41 (the first ``[x,y]`` of
    the reply, which the format puts in <answer>) and 101-104 (/1000 of the screenshot)."""
    assert _point("mai-ui", MAI_UI_REPLY, (3840, 2160)) == (1324.8, 853.2)  # not (3.84, 2.16)
    # No <answer> tag (a cut reply): the reasoning's places are still not the answer.
    cut = MAI_UI_REPLY.split("<answer>")[0] + '\n{"coordinate": [345,395]}'
    assert _point("mai-ui", cut, (3840, 2160)) == (1324.8, 853.2)
    assert (
        _point("mai-ui", "<grounding_think>At (1,1) there is a menu.</grounding_think>", (3840, 2160)) is None
    )
    # Lenient: the official regex wants no space after the comma.
    assert _point("mai-ui", '<answer>{"coordinate": [345, 395]}</answer>', (3840, 2160)) == (1324.8, 853.2)


@pytest.mark.parametrize(("size", "seen"), [((3840, 2160), (3840, 2144)), ((800, 600), (800, 576))])
def test_ui_venus_sees_the_image_its_evaluation_resizes_twice(size, seen):
    """inclusionAI/UI-Venus models/grounding/eval_screenspot_pro.py lines 107-114:
    process_vision_info (qwen-vl-utils >= 0.0.14, requirements.txt: vision_process.fetch_image,
    smart_resize at factor 14*2 = 28 within 4..16384 tokens), then the Qwen3-VL processor
    (factor 32). 3840x2160 -> 3836x2156 -> 3840x2144 (2156/32 = 67.4 -> 67); in one pass at
    factor 32, 2160/32 = 67.5 rounds to 68: 2176. 800x600 -> 812x588 -> 800x576."""
    a = get_adapter("ui-venus-1.5")
    assert a.input_size(size) == seen
    from regionfocus.adapters.backends.openai_http import OpenAIBackend
    from regionfocus.model import Query

    async def ask(url: str):
        backend = OpenAIBackend([url], model="m")
        try:
            adapter = get_adapter("ui-venus-1.5", backend=backend)
            return await adapter.act(Image.new("RGB", size, "white"), Query("open the Layers panel"))
        finally:
            await backend.aclose()

    with ChatServer(responder=Reply.text("[500,500]"), model="m") as srv:
        reply = asyncio.run(ask(srv.base_url))
        (image,) = request_images(srv.stats.bodies[-1])
    assert image.size == seen
    assert (reply.action.point.x, reply.action.point.y) == (size[0] / 2, size[1] / 2)


def test_gui_owl_reads_the_last_tool_call():
    """X-PLUG/MobileAgent Mobile-Agent-v3.5/grounding_and_kb/eval_grounding_benchmarks.py lines
    388-404: every ``[x, y]`` of the reply, ``coordinates[-1]``."""
    reply = (
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "mouse_move", "coordinate": [120, 340]}}\n'
        '</tool_call>\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
        '"coordinate": [512, 288]}}\n</tool_call>'
    )
    assert _point("gui-owl-1.5", reply, (2000, 1000)) == (1024.0, 288.0)  # not the move's (240, 340)


def test_ui_venus_reads_two_corner_points_as_their_centre():
    """inclusionAI/UI-Venus models/grounding/eval_screenspot_pro.py lines 151 and 160-162:
    ``[x1,y1],[x2,y2]`` is a box, its centre the point."""
    assert _point("ui-venus-1.5", "[100,200],[300,400]", (2000, 1000)) == (400.0, 300.0)
    assert _point("ui-venus-1.5", "[100, 200], [300, 400]", (2000, 1000)) == (400.0, 300.0)
    assert _point("ui-venus-1.5", "[100,200,300,400]", (2000, 1000)) == (400.0, 300.0)  # pattern1


def test_holo2_reads_its_schema_in_any_key_order_and_range():
    """hcompai/hai-cookbook holo2/holo_2_localization_huggingface.ipynb: ``ClickCoordinates``
    (x, y: int, ge=0, le=1000) read by ``model_validate_json``: keys in any order, a value
    outside 0-1000 rejected."""
    assert _point("holo2", '{"y": 404, "x": 552}', (2000, 1000)) == (1104.0, 404.0)
    assert _point("holo2", '{"x": 1200, "y": 404}', (2000, 1000)) is None  # would click outside
    assert _point("holo2", '{"x": 552, "y": -3}', (2000, 1000)) is None
    assert _point("holo2", '{"x": 552}', (2000, 1000)) is None
    assert _point("holo2", '{"x": "552", "y": "404"}', (2000, 1000)) == (1104.0, 404.0)  # pydantic's lax mode
    # Lenient: a decimal (the schema's int refuses 552.5).
    assert _point("holo2", '{"x": 552.5, "y": 404}', (2000, 1000)) == (1105.0, 404.0)


# ------------------------------------------------------------------ golden answers
def _golden_cases() -> list[tuple[str, dict]]:
    doc = json.loads(GOLDEN.read_text())
    return [(family, case) for family in FAMILIES for case in doc["families"][family]]


@pytest.mark.parametrize(("family", "case"), _golden_cases())
def test_golden_answers(family, case):
    """Answers written as the model writes them (its README, cookbook or evaluation's reader)."""
    adapter = get_adapter(family)
    w, h = case["size"]
    action = adapter.parse_action(case["answer"], w, h)
    if case["expect"] is None:
        assert action is None or action.point is None, case
        if "type" in case:
            assert action is not None and action.type.value == case["type"], case
        return
    assert action is not None and action.point is not None, case
    assert (round(action.point.x, 2), round(action.point.y, 2)) == tuple(case["expect"]), case


def test_golden_file_covers_every_family():
    doc = json.loads(GOLDEN.read_text())
    assert set(doc["families"]) == set(FAMILIES)
    assert all(len(doc["families"][f]) >= 2 for f in FAMILIES)


# ------------------------------------------------------------------ an oracle through the harness
SCREENS = {"photoshop_windows": (3840, 2160), "vscode_macos": (2560, 1600)}
# Small targets (16 px) at awkward places: a frame error of more than a few pixels misses.
TARGETS = [
    ("photoshop_windows", (3101, 211, 3117, 227)),
    ("photoshop_windows", (57, 1993, 73, 2009)),
    ("photoshop_windows", (1911, 1071, 1927, 1087)),
    ("vscode_macos", (2401, 95, 2417, 111)),
    ("vscode_macos", (333, 1517, 349, 1533)),
]


def _dataset(root: Path) -> Path:
    (root / "annotations").mkdir(parents=True)
    for task, size in SCREENS.items():
        (root / "images" / task).mkdir(parents=True)
        img = Image.new("RGB", size, (245, 246, 248))
        draw = ImageDraw.Draw(img)
        records = []
        for i, (t, bbox) in enumerate(TARGETS):
            if t != task:
                continue
            draw.rectangle((bbox[0], bbox[1], bbox[2] - 1, bbox[3] - 1), fill=(20, 120, 60))
            records.append(
                {"img_filename": f"{task}/screen.png", "bbox": list(bbox), "instruction": f"open item #{i}#",
                 "application": task.split("_")[0], "id": f"{task}_{i}", "platform": task.split("_")[1],
                 "img_size": list(size), "ui_type": "icon", "group": "Creative"}
            )  # fmt: skip
        img.save(root / "images" / task / "screen.png", compress_level=1)
        (root / "annotations" / f"{task}.json").write_text(json.dumps(records))
    return root


class Oracle:
    """The gold centre, in the family's own frame (of the image it received) and format."""

    def __init__(self, family: str):
        self.family = family
        self.errors: list[str] = []

    def __call__(self, body: dict) -> Reply:
        i = int(re.search(r"#(\d+)#", request_text(body)).group(1))
        task, (x1, y1, x2, y2) = TARGETS[i]
        sw, sh = SCREENS[task]
        (image,) = request_images(body)
        if self.family == "gta1":  # absolute pixels of the image received
            x, y = round((x1 + x2) / 2 * image.width / sw), round((y1 + y2) / 2 * image.height / sh)
        else:  # 0-1000 of the image received
            x, y = round((x1 + x2) / 2 * 1000 / sw), round((y1 + y2) / 2 * 1000 / sh)
        if self.family == "holo2" and body.get("chat_template_kwargs") != {"thinking": False}:
            self.errors.append("holo2 asked with thinking on")
        answer = {
            "gui-owl-1.5": '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
            f'"coordinate": [{x}, {y}]}}}}\n</tool_call>',
            "mai-ui": f'<grounding_think>The item sits there.</grounding_think>\n<answer>\n{{"coordinate": [{x},{y}]}}\n</answer>',
            "ui-venus-1.5": f"[{x},{y}]",
            "holo2": f'{{"x":{x},"y":{y}}}',
            "gta1": f"({x},{y})",
        }[self.family]
        return Reply.text(answer)


@pytest.mark.parametrize("family", FAMILIES)
def test_an_oracle_in_the_family_frame_scores_100_percent(tmp_path, family):
    data, out = _dataset(tmp_path / "data"), tmp_path / "run"
    oracle = Oracle(family)
    with ChatServer(responder=oracle, model="m") as srv:
        argv = ["--data", str(data), "--out", str(out), "--no-progress", "--no-regionfocus",
                "--agent", family, "--base-url", srv.base_url, "--model", "m"]  # fmt: skip
        assert screenspot_main(argv) == 0
    assert not oracle.errors, oracle.errors
    overall = json.loads((out / "results.json").read_text())["metrics"]["overall"]
    assert (overall["num_correct_action"], overall["num_total"]) == (len(TARGETS), len(TARGETS))
    assert overall["action_acc"] == 1.0
