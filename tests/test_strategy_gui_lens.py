"""GUI-Lens (regionfocus/strategies/gui_lens.py) with a scripted chat model that answers its
requests the way a chat VLM does, from the image it is sent: it finds a green target by colour,
writes prose around a JSON answer, proposes crops in the displayed crop's pixels (or 0-1000, or
the screenshot's pixels when the crop was shown smaller, as Claude does), and judges the magenta
rectangle of the commit gate by what it holds. So the crop sequence, the gate, the staged area
floors, the mapping back to screenshot pixels and the call budget are really exercised."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw

from regionfocus.geometry import Box, Point
from regionfocus.model import ModelReply, Usage, Verdict
from regionfocus.strategies import STRATEGIES, GuiLens, get_strategy
from regionfocus.strategies.cli import strategies_command
from regionfocus.strategies.gui_lens import PRESETS, LensConfig, display_scale, final_boxes, next_box
from regionfocus.strategies.gui_lens_text import Frame, Hint, build_candidates, read_json, text

W, H = 1920, 1080
GREEN = (30, 160, 90)
TARGET = Box(1395, 295, 1415, 315)
INSTR = "click the save button"


def screen(size=(W, H), target=TARGET) -> Image.Image:
    img = Image.new("RGB", size, (236, 237, 239))
    ImageDraw.Draw(img).rectangle((target.left, target.top, target.right - 1, target.bottom - 1), fill=GREEN)
    return img


SCREEN = screen()


def blob(img: Image.Image, colour, tol=30) -> tuple[float, float, float, float] | None:
    """The bounding box of ``colour`` (within ``tol`` per channel) in ``img``, None if absent."""
    arr = np.asarray(img.convert("RGB"))
    lo = np.array([max(0, c - tol) for c in colour], dtype=np.uint8)
    hi = np.array([min(255, c + tol) for c in colour], dtype=np.uint8)
    x, y, w, h = cv2.boundingRect(cv2.inRange(arr, lo, hi))
    return None if w == 0 else (float(x), float(y), float(x + w), float(y + h))


def kind_of(prompt: str) -> str:
    if "This is a commit gate" in prompt:
        return "gate"
    if "This is a review gate" in prompt:
        return "review"
    if "Choose the exact center of the requested clickable target" in prompt:
        return "click"
    assert "Choose the next smaller crop" in prompt, prompt[:200]
    return "crop"


@dataclass
class Asked:
    kind: str
    prompt: str
    images: list[Image.Image]


@dataclass
class LensVLM:
    """A chat model. ``shrink``: the side of its proposed crop as a fraction of the displayed
    crop, centred on the target; ``final_px``: a target this wide on screen is clicked at once
    ("final"); ``frame``: "pixels" (of the displayed crop), "normalized" (0-1000) or "original"
    (screenshot pixels, the Claude habit the code corrects); ``sees``: its input size;
    ``script``: kind -> callable(prompt, image) answering instead (a scripted turn)."""

    shrink: float = 0.5
    final_px: float = 150.0
    frame: str = "pixels"
    sees: Callable[[tuple[int, int]], tuple[int, int]] | None = None
    script: dict[str, Callable[[str, Image.Image], str]] = field(default_factory=dict)
    asked: list[Asked] = field(default_factory=list)

    def input_size(self, size):
        return self.sees(size) if self.sees else size

    def kinds(self) -> list[str]:
        return [a.kind for a in self.asked]

    async def act(self, image, query, *, zoomed=False):
        raise AssertionError("a chat model is asked in text only")

    async def chat(self, image, text):
        return self.answer(text, [image])

    def answer(self, prompt: str, images: list[Image.Image]) -> ModelReply:
        kind = kind_of(prompt)
        self.asked.append(Asked(kind, prompt, images))
        usage = Usage(latency_s=0.001, prompt_tokens=900, completion_tokens=60)
        if kind in self.script:
            return ModelReply(self.script[kind](prompt, images[0]), usage=usage)
        return ModelReply(getattr(self, kind)(prompt, images[0]), usage=usage)

    def out(self, x: float, y: float, image: Image.Image, box: list[int] | None = None) -> list[float]:
        if self.frame == "normalized":
            return [round(x / image.width * 1000), round(y / image.height * 1000)]
        if self.frame == "original":
            return [
                box[0] + x * (box[2] - box[0]) / image.width,
                box[1] + y * (box[3] - box[1]) / image.height,
            ]
        return [round(x, 1), round(y, 1)]

    def crop(self, prompt, image):
        t = blob(image, GREEN)
        if t is None:
            return 'I do not see it here.\n{"action": "recrop", "bbox": [0, 0, 0, 0], "reasoning": "not visible"}'
        on_screen = re.search(r"Current crop in original coordinates: \[(\d+), (\d+), (\d+), (\d+)\]", prompt)
        box = [int(v) for v in on_screen.groups()]
        if box[2] - box[0] <= self.final_px:
            ans = {
                "action": "final",
                "bbox": [0, 0, 0, 0],
                "target_visible_element": "Save",
                "reasoning": "clear",
            }
            return f"The target is clear now.\n```json\n{json.dumps(ans)}\n```"
        cx, cy = (t[0] + t[2]) / 2, (t[1] + t[3]) / 2
        bw, bh = image.width * self.shrink, image.height * self.shrink
        x1 = min(max(cx - bw / 2, 0), image.width - bw)
        y1 = min(max(cy - bh / 2, 0), image.height - bh)
        bbox = self.out(x1, y1, image, box) + self.out(x1 + bw, y1 + bh, image, box)
        ans = {"action": "crop", "bbox": bbox, "target_visible_element": "Save button", "confidence": 0.8,
               "reasoning": "the toolbar holding Save"}  # fmt: skip
        return f"The Save button sits in the top toolbar, so I keep that region.\n{json.dumps(ans)}"

    def gate(self, prompt, image):
        rect, t = blob(image, (255, 0, 255), tol=0), blob(image, GREEN)
        inside = t is not None and rect is not None and rect[0] <= t[0] and t[2] <= rect[2] and rect[1] <= t[1] and t[3] <= rect[3]  # fmt: skip
        verdict = "accept" if inside else "reject"
        return (
            f'{{"action": "{verdict}", "target_inside": {str(inside).lower()}, "context_sufficient": true, '
            f'"discarded_plausible_targets": false, "confidence": 0.9, "reasoning": "checked the rectangle"}}'
        )

    def click(self, prompt, image):
        t = blob(image, GREEN)
        if t is None:
            return '{"action": "recrop", "candidate_id": "", "x": 0, "y": 0, "reasoning": "not here"}'
        cx, cy = (t[0] + t[2]) / 2, (t[1] + t[3]) / 2
        # screenshot pixels ("original") are a crop habit; a click is in the displayed crop's
        x, y = [round(cx, 1), round(cy, 1)] if self.frame == "original" else self.out(cx, cy, image)
        key = f'"point_2d": [{x}, {y}]' if self.frame == "normalized" else f'"x": {x}, "y": {y}'
        return f'Clicking the centre of the Save button.\n{{"action": "click", "candidate_id": "", {key}, "target_visible_element": "Save", "confidence": 0.9, "reasoning": "centre"}}'  # fmt: skip

    def review(self, prompt, image):
        return '{"action": "keep", "source": "r0", "x": 0, "y": 0, "target_visible_element": "Save", "confidence": 0.9, "reasoning": "right"}'  # fmt: skip


@dataclass
class LensVLMImages(LensVLM):
    """The same model taking several images in one request (the review's crops)."""

    async def chat_images(self, images, text):
        return self.answer(text, list(images))


def run(strategy, model, shot=SCREEN, instruction=INSTR, baseline=None):
    return asyncio.run(strategy.run(model, shot, instruction, baseline))


def crops(res) -> list[Box]:
    """The committed crops: proposals that passed the gate (or met none)."""
    return [
        Box.from_list(s["next"])
        for s in res.steps
        if s.get("stage") == "crop"
        and s.get("next")
        and (s.get("gate") or {}).get("action", "accept") == "accept"
    ]


# ------------------------------------------------------------------ the crop sequence
def test_crops_narrow_through_the_gate_and_the_click_maps_back_to_the_screenshot():
    model = LensVLM()
    res = run(GuiLens(), model)
    assert TARGET.contains(res.point) and res.point == Point(1405, 305)
    seq = crops(res)
    assert len(seq) >= 3
    for a, b in zip([Box(0, 0, W, H), *seq], seq, strict=False):
        assert b.area < a.area and a.contains(b.center)  # each committed crop is smaller, inside
        assert b.left <= TARGET.left and TARGET.right <= b.right  # and keeps the target
    # The model proposes a quarter of the screen; padded 8 % per side (the code's padding).
    first = [s for s in res.steps if s.get("stage") == "crop"][0]
    assert first["proposal"] == [925.0, 35.0, 1885.0, 575.0]
    assert first["next"] == [848, 0, 1920, 618]
    # Requests alternate: each proposal passes the gate before the next crop; then click, review.
    kinds = model.kinds()
    assert kinds[: 2 * len(seq)] == ["crop", "gate"] * len(seq)
    assert kinds[2 * len(seq) :] == ["crop", "click", "review"] or kinds[2 * len(seq) :] == [
        "click",
        "review",
    ]
    assert [c.kind for c in res.calls][:2] == ["crop[r1.1]", "gate[r1.1]"]
    # The final crop is enlarged to a 640 px short side; the click is in its displayed pixels.
    click = [a for a in model.asked if a.kind == "click"][0]
    assert min(click.images[0].size) == 640
    assert "DISPLAYED FINAL CROP" in click.prompt


def test_first_committed_crops_keep_the_staged_area_floors():
    model = LensVLM(shrink=0.1)  # the model jumps straight at a tiny box
    res = run(GuiLens(), model)
    seq = crops(res)
    assert seq[0].area >= 0.20 * W * H - 2 * (W + H)  # stage 1: at least 20 % of the screenshot
    assert seq[1].area >= 0.08 * seq[0].area - 2 * (seq[0].width + seq[0].height)  # stage 2: 8 %
    assert seq[2].width == 240  # from stage 3 only the 240 x 80 minimum holds
    assert TARGET.contains(res.point)


def test_stops_when_the_crop_is_narrow_enough_and_clicks_the_current_crop():
    res = run(GuiLens(), LensVLM(shrink=0.3))
    last = crops(res)[-1]
    assert last.width <= 240 or last.height <= 80
    click = [s for s in res.steps if s.get("stage") == "click"][0]
    assert click["crop"] == last.to_list() and click["attempt"] == 1


# ------------------------------------------------------------------ the verification gate
def test_a_rejected_proposal_is_retried_with_the_rejection_in_the_next_request_then_widens():
    model = LensVLM(shrink=0.2)
    model.script["gate"] = lambda p, img: (
        'No: the rectangle cut off the toolbar.\n{"action": "reject", "target_inside": true, '
        '"context_sufficient": false, "discarded_plausible_targets": false, "confidence": 0.4, '
        '"reasoning": "too tight"}'
    )
    cfg = replace(PRESETS["sspro_stack_zoom"], rounds=2, crop_retry_limit=2)
    res = run(GuiLens(config=cfg), model)
    # 2 rounds x 3 attempts, each proposal gated; nothing committed, so the click is on the
    # whole screenshot (the only final box), then reviewed: the call budget, exactly.
    assert model.kinds() == ["crop", "gate"] * 6 + ["click", "review"]
    assert len(res.calls) == 14 and res.totals()["requests"] == 14
    second = model.asked[2].prompt
    assert "Attempt: 2/3" in second
    assert "attempt 1: action=crop_check_reject bbox=" in second and "reason=too tight" in second
    assert "Previous crop decisions:\n(none)" in second  # a rejected attempt is not a decision
    assert crops(res) == []
    assert TARGET.contains(res.point)
    click = [s for s in res.steps if s.get("stage") == "click"][0]
    assert click["crop"] == [0, 0, W, H]


def test_the_gate_reads_a_quoted_yes_and_rejects_a_rectangle_that_lost_the_target():
    model = LensVLM()
    calls = {"n": 0}

    def gate(prompt, image):
        calls["n"] += 1
        if calls["n"] == 1:  # the first proposal is judged wrong: the target fell outside
            return '{"action": "accept", "target_inside": false, "context_sufficient": true}'
        return '{"action": "Accept", "target_inside": "true", "context_sufficient": "yes", "discarded_plausible_targets": "false"}'  # fmt: skip

    model.script["gate"] = gate
    res = run(GuiLens(), model)
    first, second = [s for s in res.steps if s.get("stage") == "crop"][:2]
    assert first["gate"]["action"] == "reject" and first["next"] == second["next"]
    assert second["gate"]["action"] == "accept" and second["attempt"] == 2
    assert TARGET.contains(res.point)


def test_final_before_any_committed_crop_is_refused_while_the_gate_is_on():
    model = LensVLM(final_px=10_000)  # it would click on the whole screenshot at once
    res = run(GuiLens(config=replace(PRESETS["sspro_stack_zoom"], rounds=1, crop_retry_limit=1)), model)
    assert model.kinds() == ["crop", "crop", "click", "review"]
    assert (
        "action=final bbox=[0, 0, 0, 0] reason=final requested before any committed crop"
        in model.asked[1].prompt
    )
    assert TARGET.contains(res.point)
    # Without the gate the same answer ends the loop at once (crop_check off).
    model = LensVLM(final_px=10_000)
    run(GuiLens(config=replace(PRESETS["sspro_stack_zoom"], crop_check=False)), model)
    assert model.kinds() == ["crop", "click", "review"]


def test_a_model_that_always_backs_out_costs_rounds_times_attempts_then_keep_best():
    model = LensVLM()
    model.script["crop"] = lambda p, img: '{"action": "recrop", "bbox": null, "reasoning": "lost"}'
    model.script["click"] = lambda p, img: '{"action": "recrop", "reasoning": "still lost"}'
    cfg = replace(PRESETS["sspro_stack_zoom"], rounds=3, crop_retry_limit=2)
    res = run(GuiLens(config=cfg), model)
    assert model.kinds() == ["crop"] * 9 + ["click"]  # no gate without a proposal; one final box
    assert res.point == Point(W // 2, H // 2)  # keep_best: the centre of the (whole) current crop
    assert any("keep_best" in n for n in res.notes)
    assert "attempt 2: action=recrop bbox=None reason=lost" in model.asked[2].prompt
    # The legacy config has no keep_best: the baseline stands.
    res = run(
        GuiLens(config=replace(PRESETS["legacy_baseline"], rounds=1, crop_retry_limit=0)),
        model,
        baseline=None,
    )
    assert res.action is None and "no point found: the baseline stands" in res.notes


def test_unreadable_and_failed_answers_count_as_the_codes_exceptions():
    model = LensVLM()
    model.script["crop"] = lambda p, img: "I think it is the Save button near the top right."
    res = run(GuiLens(config=replace(PRESETS["sspro_stack_zoom"], rounds=1, crop_retry_limit=1)), model)
    assert model.kinds() == ["crop", "crop", "click", "review"]
    assert "reason=ValueError: no JSON object in the reply" in model.asked[1].prompt
    assert TARGET.contains(res.point)


# ------------------------------------------------------------------ frames
def test_a_family_writing_0_1000_gets_the_official_override_and_is_mapped_back():
    model = LensVLM(frame="normalized")
    res = run(GuiLens(coords="normalized"), model)
    assert text("norm_crop") in model.asked[0].prompt
    click = [a for a in model.asked if a.kind == "click"][0]
    assert text("norm_click") in click.prompt
    assert TARGET.contains(res.point)


def test_crops_go_out_at_the_size_the_model_sees_and_a_downscaled_one_says_so():
    # A provider that fits images into 1568 px (Claude's long edge): the crop is rendered at that
    # size, the request says it is shown smaller, and a bbox in screenshot pixels is read.
    def cap(size):
        s = min(1.0, 1568 / max(size))
        return round(size[0] * s), round(size[1] * s)

    model = LensVLM(sees=cap, frame="original")
    target = Box(2790, 590, 2830, 630)
    res = run(GuiLens(config="sspro_stack_zoom_claude2000"), model, shot=screen((3840, 2160), target))
    first = model.asked[0]
    assert first.images[0].size == (1568, 882)
    assert "[Image: original 3840x2160, displayed at 1568x882. Multiply coordinates by 2.45 to map to original image.]" in first.prompt  # fmt: skip
    assert "gate" not in model.kinds()  # the Claude config has no gate
    assert crops(res)[0].contains(target.center)
    assert target.contains(res.point)
    assert all(c.image_size == c.seen_size for c in res.calls)


# ------------------------------------------------------------------ hints
HINTS = [
    Hint("Open", Box(100, 40, 160, 64), "rapidocr", "text", 0.95),
    Hint("Save", Box(1393, 320, 1417, 330), "rapidocr", "text", 0.91),
    Hint("", Box(1390, 290, 1420, 320), "opencv", "button", 1.0),
]


def test_hints_are_listed_in_displayed_pixels_ranked_by_the_target():
    model = LensVLM()
    read: list[tuple[int, int]] = []

    def hints(image):
        read.append(image.size)
        return HINTS if image.size == (W, H) else [Hint("Save", Box(10, 50, 54, 70), "rapidocr", "text", 0.9)]

    res = run(GuiLens(hints=hints), model)
    first = model.asked[0].prompt
    lines = first.split("shown in displayed-crop\ncoordinates:\n")[1].split("\n\n")[0].splitlines()
    assert lines[0] == (
        "z0: Save source=rapidocr type=text display_bbox=[1393, 320, 1417, 330] "
        "display_center=[1405, 325] original_center=(1405,325)"
    )
    assert lines[1].startswith("z1: (unlabeled) source=opencv type=button")
    assert lines[2].startswith("z2: Open source=rapidocr type=text")
    # In the second crop the boxes are in that crop's displayed pixels.
    second = [a for a in model.asked if a.kind == "crop"][1].prompt
    crop1 = crops(res)[0]
    assert f"display_bbox=[{1393 - int(crop1.left)}, {320 - int(crop1.top)}" in second
    assert "Open" not in second.split("coordinates:\n")[-1]  # outside the crop
    gate = [a for a in model.asked if a.kind == "gate"][0].prompt
    assert "INSIDE the proposed magenta crop:\nSave source=rapidocr" in gate
    assert "OUTSIDE the\nproposed magenta crop:\nOpen source=rapidocr" in gate
    # The final crop is read again; its hints are moved into screenshot pixels.
    fin = [s for s in res.steps if s.get("stage") == "click"][0]["crop"]
    click = [a for a in model.asked if a.kind == "click"][0].prompt
    assert f"original_center=({int(fin[0]) + 32},{int(fin[1]) + 60})" in click
    assert read[0] == (W, H) and len(read) == 2
    assert not any("hints" in n for n in res.notes)


def test_without_hints_the_strategy_runs_and_says_so():
    model = LensVLM()
    res = run(GuiLens(), model)
    assert "Detected OCR/component candidates inside this crop, shown in displayed-crop\ncoordinates:\n(none)" in model.asked[0].prompt  # fmt: skip
    assert any(n.startswith("ran with no OCR/UI-element hints") for n in res.notes)
    assert TARGET.contains(res.point)


def test_hints_that_fail_leave_a_note_not_an_error():
    def broken(image):
        raise RuntimeError("no OCR engine")

    res = run(GuiLens(hints=broken), LensVLM())
    assert any("hints failed on the screenshot (RuntimeError: no OCR engine)" in n for n in res.notes)
    assert TARGET.contains(res.point)


def test_build_candidates_keeps_the_codes_order_dedup_and_caps():
    hints = [Hint(f"t{i}", Box(10 * i, 5, 10 * i + 8, 15), "rapidocr", "text", 0.9) for i in range(1, 200)]
    hints += [Hint("", Box(1000, 1000, 1040, 1040), "opencv", "button", s) for s in (0.2, 0.9)]
    cands = build_candidates(hints)
    assert len([c for c in cands if c.kind == "text"]) == 160  # the first 160 lines
    buttons = [c for c in cands if c.kind == "button"]
    assert len(buttons) == 1 and buttons[0].confidence == 0.9  # same box twice: the more confident
    assert build_candidates([Hint("x", Box(0, 0, 0, 0), "o", "text")]) == []  # centre not positive


# ------------------------------------------------------------------ review
def test_the_review_may_move_the_click_to_a_point_on_a_wider_crop():
    model = LensVLMImages()

    def review(prompt, image):
        r1 = re.search(r"r1: wider crop from round \d+ original_box=\[(\d+), (\d+), (\d+), (\d+)\] display_scale=([\d.]+)", prompt)  # fmt: skip
        x1, y1, _, _, s = (float(v) for v in r1.groups())
        x, y = (1408 - x1) * s, (310 - y1) * s  # a point it prefers, on r1
        return f'{{"action": "replace", "source": "r1", "x": {x:.2f}, "y": {y:.2f}, "target_visible_element": "Save button", "reasoning": "the button itself"}}'  # fmt: skip

    model.script["review"] = review
    res = run(GuiLens(), model)
    asked = [a for a in model.asked if a.kind == "review"][0]
    assert len(asked.images) == 4 and "r3: wider crop" in asked.prompt  # final + 3 wider crops
    assert res.point == Point(1408, 310)
    assert [s for s in res.steps if s.get("stage") == "click"][0]["review"]["action"] == "replace"


def test_the_review_keeps_an_editable_control_over_a_passive_label():
    model = LensVLMImages()
    model.script["click"] = lambda p, img: LensVLM.click(model, p, img).replace(
        '"Save"', '"volume slider thumb"', 1
    )
    model.script["review"] = lambda p, img: (
        '{"action": "replace", "source": "r0", "x": 5, "y": 5, "target_visible_element": "Volume label", '
        '"reasoning": "the label names the setting"}'
    )
    res = run(GuiLens(), model, instruction="adjust the volume")
    review = [s for s in res.steps if s.get("stage") == "click"][0]["review"]
    assert review["action"] == "keep" and "passive label" in review["reasoning"]
    assert TARGET.contains(res.point)


def test_through_single_image_chat_the_review_attaches_the_final_crop_only():
    model = LensVLM()
    res = run(GuiLens(), model)
    asked = [a for a in model.asked if a.kind == "review"][0]
    assert len(asked.images) == 1
    assert "Attached crop sources:\nr0: final upscaled crop original_box=" in asked.prompt
    assert "r1:" not in asked.prompt
    assert any("only the final crop (r0)" in n for n in res.notes)


# ------------------------------------------------------------------ the texts and the geometry
PROMPT_SHA256 = {
    "click_frame": "230c651efadbbbe0",
    "click_head": "69815ce4b76efce9",
    "click_rules": "e870ee7ff2ee01c6",
    "click_tail": "a10498e708c0c3d5",
    "crop_candidates": "67ae029e6074417f",
    "crop_frame": "042dcdd9d0b15798",
    "crop_head": "c05423d54df8995d",
    "crop_intro": "bb3c56597e2cac14",
    "crop_rules": "56c50e42ffbc255c",
    "crop_tail": "c89c3be792c6136c",
    "gate_frame": "b485a959f89c2eaa",
    "gate_head": "32741da4cbaee7a5",
    "gate_json": "95404b8a31a9ba91",
    "gate_rationale": "f9ae06b2288ffd9c",
    "gate_rules": "97fb509b3ffc4df9",
    "norm_click": "dd8d43790282059d",
    "norm_crop": "ebb3f321979f99e7",
    "review": "a8117c392bbba7b7",
    "review_policy": "b729e4e1754ed551",
    "scale_down": "e43314c63888e7f6",
    "scale_up": "2cbdd8cc1274a7f1",
    "stage1": "b0bccd28a83f0c66",
    "stage2": "f8ff7d732bd60cd5",
    "stage3": "b7608a320ff583bf",
    "stage4": "2370447126dd7644",
    "stage_off": "45390b6ca83e09cf",
}


def test_prompt_files_are_the_official_texts_and_listed_in_sources():
    folder = Path(__file__).parents[1] / "regionfocus" / "strategies" / "prompts" / "gui_lens"
    assert {p.stem for p in folder.glob("*.txt")} == set(PROMPT_SHA256)
    for name, digest in PROMPT_SHA256.items():
        assert hashlib.sha256((folder / f"{name}.txt").read_bytes()).hexdigest()[:16] == digest, name
    sources = (folder.parent / "SOURCES.md").read_text()
    assert "Fzkuji/GUI-Agent-Harness" in sources and "23e75e00db54486c6f3baf155979ad0f12471172" in sources
    assert all(f"`{n}.txt`" in sources or n.startswith("stage") for n in PROMPT_SHA256)


def test_the_two_layouts_order_the_same_texts_as_the_code():
    for layout in ("cache", "legacy"):
        model = LensVLM()
        run(GuiLens(config=replace(PRESETS["sspro_stack_zoom"], prompt_layout=layout, rounds=1)), model)
        crop, gate, click = (
            next(a.prompt for a in model.asked if a.kind == k) for k in ("crop", "gate", "click")
        )
        if layout == "cache":  # the rules first (the code's cached prefix), the request after
            assert crop.startswith(text("crop_intro") + "\n\n" + text("crop_rules") + "\n\nTask: " + INSTR)
            assert crop.endswith(text("crop_tail"))
            assert gate.startswith(text("gate_rules") + "\n\n" + text("gate_json") + "\n\nTask: ")
            assert click.startswith(text("click_rules") + "\n\nTask: ") and click.endswith(text("click_tail"))
        else:  # the request, the intro, the evidence, then the rules
            assert crop.startswith(
                "Task: " + INSTR + "\nTarget: " + INSTR + "\nOriginal screenshot size: 1920x1080"
            )
            i, c, r = (
                crop.index(s) for s in (text("crop_intro"), "Detected OCR/component", text("crop_rules"))
            )
            assert i < c < r and crop.endswith(text("crop_rules"))
            assert gate.endswith("confidence=0.8\n\n" + text("gate_json"))
            assert click.endswith(text("click_rules"))


def test_display_scales_follow_the_codes_policies():
    # preserve: native pixels, a small crop enlarged to a 512 px short side, at most 5x.
    assert display_scale(3840, 2160, "preserve", 0, 5, 512, 1.0) == 1.0
    assert display_scale(240, 80, "preserve", 0, 5, 512, 1.0) == 5.0
    assert display_scale(400, 256, "preserve", 0, 8, 640, 1.0) == 2.5
    # fill (legacy_baseline): every crop to a 2048 px long side, the 4K screenshot shrunk.
    assert display_scale(3840, 2160, "fill", 2048, 5, 512, 0.1) == pytest.approx(2048 / 3840)
    assert display_scale(1024, 600, "fill", 2048, 5, 512, 0.1) == 2.0
    # claude2000: never above 2000 px long, never below 0.3.
    assert display_scale(3840, 2160, "preserve", 2000, 5, 512, 0.3) == pytest.approx(2000 / 3840)


def test_next_box_and_final_boxes_follow_the_codes_geometry():
    cfg, big = LensConfig(), (3840, 2160)
    full = Frame((0, 0, *big), 1.0, 1.0)
    assert next_box([0, 0, *big], full, big, cfg, 0) is None  # not smaller
    assert next_box([10, 10, 5, 50], full, big, cfg, 0) is None  # corners out of order
    tiny = next_box([1000, 1000, 1010, 1004], full, big, cfg, 3)
    assert tiny == [885, 962, 1125, 1042]  # padded, then grown to 240 x 80 about its centre
    half = Frame((1000, 500, 2000, 1000), 2.0, 2.0)
    assert next_box([0, 0, 1000, 500], half, big, cfg, 3) == [960, 480, 1540, 770]
    assert next_box([0, 0, 1000, 500], replace(half, normalized=True), big, cfg, 3) == [920, 480, 2080, 770]
    hist = [{"crop_box": [0, 0, *big], "fallback_box": None}, {"crop_box": [100, 100, 900, 600]}]
    assert final_boxes([200, 200, 500, 400], hist, big) == [[200, 200, 500, 400], [100, 100, 900, 600], [0, 0, *big]]  # fmt: skip


def test_read_json_skips_prose_fences_and_non_finite_numbers():
    assert read_json('Sure.\n```json\n{"action": "crop", "bbox": [1, 2, 3, 4]}\n```') == {
        "action": "crop",
        "bbox": [1, 2, 3, 4],
    }
    assert read_json('{"note": 1} then {"action": "final"}') == {"action": "final"}
    assert read_json('{"action": "crop", "bbox": [NaN, 1, 2, 3]}') is None
    assert read_json("no json here") is None and read_json(None) is None


# ------------------------------------------------------------------ the grounding protocol
@dataclass
class Grounder:
    """A model with no chat (the OCR agent's shape): it boxes and grounds the green target by
    colour, and judges by it; counts its calls."""

    asked: list[str] = field(default_factory=list)
    verdict: Verdict = Verdict.YES

    def input_size(self, size):
        return size

    async def propose_box(self, image, query, focal):
        self.asked.append("box")
        t = blob(image, GREEN)
        if t is None:
            return ModelReply("nothing")
        cx, cy = (t[0] + t[2]) / 2, (t[1] + t[3]) / 2
        w, h = 0.3 * image.width, 0.3 * image.height
        x1, y1 = min(max(cx - w / 2, 0), image.width - w), min(max(cy - h / 2, 0), image.height - h)
        return ModelReply("box", box=Box(x1, y1, x1 + w, y1 + h))

    async def act(self, image, query, *, zoomed=False):
        self.asked.append("act")
        t = blob(image, GREEN)
        if t is None:
            return ModelReply("no match")
        return ModelReply("click", point=Point((t[0] + t[2]) / 2, (t[1] + t[3]) / 2))

    async def judge(self, image, query, point):
        self.asked.append("judge")
        return ModelReply(self.verdict.value, verdict=self.verdict)


def test_a_model_without_chat_runs_every_step_through_the_grounding_protocol():
    model = Grounder()
    res = run(GuiLens(hints=lambda im: HINTS), model)
    assert any(n.startswith("ran with the grounding protocol") for n in res.notes)
    n = len(crops(res))
    assert n >= 2 and model.asked == ["box", "act"] * n + ["act", "judge"]
    assert TARGET.contains(res.point)
    assert not any(s.get("stage") == "hints" for s in res.steps)  # hints are text: unused


def test_the_grounding_review_replaces_a_rejected_click_from_the_next_wider_crop():
    model = Grounder(verdict=Verdict.NO)
    res = run(GuiLens(), model)
    assert model.asked[-3:] == ["act", "judge", "act"]
    review = [s for s in res.steps if s.get("stage") == "click"][0]["review"]
    assert review["action"] == "replace" and TARGET.contains(res.point)


def test_the_grounding_gate_widens_and_a_refused_request_is_not_asked_again():
    model = Grounder()
    real = model.act

    async def act(image, query, *, zoomed=False):  # the first proposed crop does not show it
        if "act" not in model.asked:
            model.asked.append("act")
            return ModelReply("no match")
        return await real(image, query, zoomed=zoomed)

    model.act = act
    res = run(GuiLens(), model)
    gates = [s["gate"]["action"] for s in res.steps if s.get("stage") == "crop"]
    assert gates == ["reject"] and crops(res) == []
    # Widened back to the whole screenshot, round 2 would send round 1's request again: a
    # deterministic model would answer it the same, so the loop ends and the click follows.
    assert model.asked == ["box", "act", "act", "judge"]
    assert any("already refused" in n for n in res.notes)
    assert TARGET.contains(res.point)


# ------------------------------------------------------------------ registry
def test_registered_listed_and_configured_by_name(capsys):
    assert "gui-lens" in STRATEGIES and STRATEGIES["gui-lens"].needs_planner
    assert strategies_command([]) == 0
    out = capsys.readouterr().out
    assert "gui-lens" in out and "Fzkuji/GUI-Agent-Harness" in out
    s = get_strategy("gui-lens", config="legacy_baseline")
    assert s.config.scale_mode == "fill" and s.config.final_recrop_limit == 0
    # The published runs' configs under their own names, for --strategy.
    assert get_strategy("gui-lens-legacy").config == PRESETS["legacy_baseline"]
    assert get_strategy("gui-lens-claude").config.crop_check_mode == "off"
    assert "gui-lens-legacy" in out and "87.9 %" in out and "gui-lens-claude" in out
    with pytest.raises(ValueError, match="unknown config 'best'"):
        get_strategy("gui-lens", config="best")
    with pytest.raises(ValueError, match="coords must be"):
        get_strategy("gui-lens", coords="relative")
    with pytest.raises(ValueError, match="rounds >= 1"):
        LensConfig(rounds=0)
    with pytest.raises(ValueError, match="scale_mode must be one of"):
        LensConfig(scale_mode="target_pixels")


# ------------------------------------------------------------------ a served family, over HTTP
@pytest.fixture(scope="module")
def lens_server():
    from tests.chat_server import ChatServer, Reply, request_images, request_text

    state = {"model": LensVLM()}

    def responder(body):
        images = request_images(body)
        reply = state["model"].answer(request_text(body), images)
        return Reply.text(reply.text)

    with ChatServer(responder) as srv:
        yield srv, state


@pytest.mark.slow
@pytest.mark.parametrize("family", ["qwen2.5-vl", "qwen3-vl"])
def test_a_served_family_over_http_sees_each_crop_at_its_own_size(lens_server, family):
    """Qwen2.5-VL (pixels of the resized image) and Qwen3-VL (0-1000, with the one official
    config that asks for 0-1000: the harness never picks coordinates from the adapter) through
    their adapters and the OpenAI backend: every crop reaches the server at the size it was
    rendered (no second resize), the review's four crops in one request, and the click maps back."""
    from regionfocus.adapters.backends.openai_http import OpenAIBackend
    from regionfocus.adapters.families.qwen import Qwen3Adapter, Qwen25Adapter
    from regionfocus.screenspot_pro.strategies import perception_options
    from tests.chat_server import request_images

    srv, state = lens_server
    cls = Qwen25Adapter if family == "qwen2.5-vl" else Qwen3Adapter
    model = cls(OpenAIBackend([srv.base_url], model="m", max_retries=0))
    options = perception_options("gui-lens", model)
    assert callable(options["hints"]) and "coords" not in options
    options["hints"] = None  # the perception itself has its own test; here the frames matter
    if family == "qwen3-vl":
        options["config"] = "sspro_stack_zoom_m3"
    state["model"] = LensVLM(frame="normalized" if family == "qwen3-vl" else "pixels")
    srv.reset_stats()
    res = asyncio.run(get_strategy("gui-lens", **options).run(model, SCREEN, INSTR, None))
    sent = [request_images(b)[0].size for b in srv.stats.bodies]
    assert sent == [tuple(c.image_size) for c in res.calls] == [tuple(c.seen_size) for c in res.calls]
    assert sent[0] == model.input_size((W, H)) != (W, H)  # the screenshot, smart_resized once
    assert TARGET.contains(res.point), res.steps
    assert all(c.prompt_tokens and c.endpoint == srv.base_url for c in res.calls)
    kinds = state["model"].kinds()
    assert kinds[:2] == ["crop", "gate"] and kinds[-2:] == ["click", "review"]
    assert len(request_images(srv.stats.bodies[-1])) == len(state["model"].asked[-1].images) > 1


# ------------------------------------------------------------------ the real perception and agent
def _page() -> tuple[Image.Image, Box]:
    from PIL import ImageFont

    img = Image.new("RGB", (900, 300), (248, 248, 250))
    d = ImageDraw.Draw(img)
    font = ImageFont.truetype("DejaVuSans.ttf", 20)
    d.text((40, 40), "Quarterly report settings", font=font, fill=(30, 30, 30))
    button = Box(600, 200, 720, 240)
    d.rectangle((600, 200, 719, 239), outline=(90, 90, 90), width=2, fill=(225, 228, 232))
    d.text((632, 208), "Save", font=font, fill=(20, 20, 20))
    return img, button


def test_the_harness_hints_are_ocr_lines_and_detected_controls_read_once_per_image():
    from regionfocus.adapters.perception.hints import PerceptionHints, shared_hints

    img, button = _page()
    hints = PerceptionHints()
    got = hints(img)
    texts = {h.label: h for h in got if h.kind == "text"}
    assert {"Quarterly report settings", "Save"} <= set(texts)
    assert texts["Save"].source == "rapidocr" and button.contains(texts["Save"].box.center)
    controls = [h for h in got if h.kind != "text"]
    assert any(h.box.contains(texts["Save"].box.center) and h.source == "opencv" for h in controls)
    again = hints(img.copy())  # another image object, the same pixels: no second read
    assert again == got and hints.reads == 1
    assert shared_hints() is shared_hints()
    # As GUI-Lens lists them: the OCR line first, then the control.
    cands = build_candidates(got)
    assert [c.kind for c in cands][: len(texts)] == ["text"] * len(texts)


@pytest.mark.slow
def test_the_ocr_agent_runs_gui_lens_through_the_grounding_protocol():
    from PIL import ImageFont

    from regionfocus.adapters.agents.ocr import OcrAgent

    img = Image.new("RGB", (1920, 1080), (245, 246, 248))
    d = ImageDraw.Draw(img)
    for i, w in enumerate(["File", "Edit", "View", "Insert", "Format", "Tools", "Help"]):
        d.text((30 + 110 * i, 20), w, font=ImageFont.truetype("DejaVuSans.ttf", 22), fill=(20, 20, 20))
    small = ImageFont.truetype("DejaVuSans.ttf", 9)  # too small to read through the agent's budget
    for i, w in enumerate(["Import", "Export", "Share", "Print", "Close", "Rename", "Delete", "Archive"]):
        d.text((1500 + 50 * (i % 4), 700 + 20 * (i // 4)), w, font=small, fill=(40, 40, 40))
    target = Box(*d.textbbox((1550, 700), "Export", font=small))
    res = run(GuiLens(), OcrAgent(), shot=img, instruction='click "Export"')
    assert target.contains(res.point), [c.text for c in res.calls]
    assert [c.kind for c in res.calls][:2] == ["box[r1]", "gate[r1]"] and res.calls[-1].kind.startswith(
        "judge"
    )
    assert len(crops(res)) >= 2 and any(n.startswith("ran with the grounding protocol") for n in res.notes)


@pytest.mark.slow
def test_the_cli_runs_gui_lens_with_the_ocr_agent_on_built_data(tmp_path):
    from regionfocus.screenspot_pro.cli import main

    data, out = tmp_path / "data", tmp_path / "run"
    assert main(["build-sample", str(data), "--screens", "1"]) == 0
    argv = ["--data", str(data), "--agent", "ocr", "--strategy", "gui-lens", "--limit", "2"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for r in records:
        row = r["strategies"]["gui-lens"]
        assert row["error"] is None and row["correctness"] in ("correct", "wrong")
        assert row["trace"]["calls"][0]["kind"] == "box[r1]"
        assert any(n.startswith("ran with the grounding protocol") for n in row["trace"]["notes"])
    official = json.loads((out / "results_gui-lens.json").read_text())
    assert len(official["details"]) == 2 and "overall" in official["metrics"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("provider", "model"), [("anthropic", "claude-opus-4-7"), ("gemini", "gemini-2.5-flash")]
)
def test_a_hosted_family_runs_gui_lens_through_its_sdk(provider, model, monkeypatch):
    """Claude (pixels of the image it saw) and Gemini (0-1000, run with the config that asks
    for 0-1000) through their providers' SDKs against a local server speaking each wire format:
    every crop arrives at the size that model sees, the review's crops in one request, and the
    click maps back."""
    from regionfocus.adapters.families.hosted import build_hosted
    from regionfocus.screenspot_pro.strategies import perception_options

    from .provider_servers import ProviderServer, Said

    monkeypatch.setenv(
        "ANTHROPIC_API_KEY" if provider == "anthropic" else "GEMINI_API_KEY", "sk-test-0123456789"
    )
    lens = LensVLM(frame="pixels" if provider == "anthropic" else "normalized")
    with ProviderServer(provider, lambda req: Said(lens.answer(req.text, req.images).text)) as srv:
        adapter = build_hosted(
            "claude" if provider == "anthropic" else "gemini", model=model, base_url=srv.base_url
        )
        options = {**perception_options("gui-lens", adapter), "hints": None}
        assert "coords" not in options
        if provider == "gemini":
            options["config"] = "sspro_stack_zoom_m3"

        async def go():
            try:
                return await get_strategy("gui-lens", **options).run(adapter, SCREEN, INSTR, None)
            finally:
                await adapter.backend.aclose()

        res = asyncio.run(go())
        sent = [a.images[0].size for a in lens.asked]
    assert sent == [tuple(c.image_size) for c in res.calls]
    assert sent[0] == adapter.input_size((W, H))
    assert TARGET.contains(res.point), res.steps
    assert lens.kinds()[:2] == ["crop", "gate"] and lens.kinds()[-2:] == ["click", "review"]
    assert len(lens.asked[-1].images) > 1  # the review's crops, in one request
    assert all(c.prompt_tokens is not None and c.error is None for c in res.calls)
