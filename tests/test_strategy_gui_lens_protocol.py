"""GUI-Lens as its published runs ran (issue 38, items 1-4), against the official code
(Fzkuji/GUI-Agent-Harness @ 23e75e0): each preset's coordinates whatever the family, the review's
several crops in one request through every family's adapter, reruns of a sample after no verified
target or a failed call (a failed call is not a rejected crop), and answers read as the code reads
them (``parse_json``'s order, the gate's ``bool()``) where a preset reproduces a published run;
``gui-lens-m3``, the one official config asking for 0-1000, asks every family for 0-1000.
The scripted chat model is ``tests/test_strategy_gui_lens.py``'s, which answers from the image."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from unittest.mock import patch

import pytest
from PIL import Image

from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.base import ChatResponse
from regionfocus.adapters.registry import families
from regionfocus.agent import StaticPrediction
from regionfocus.geometry import Box
from regionfocus.kit.flags import strategy_names
from regionfocus.model import Usage
from regionfocus.screenspot_pro.strategies import perception_options, run_peers
from regionfocus.strategies import STRATEGIES, GuiLens, get_strategy
from regionfocus.strategies.cli import strategies_command
from regionfocus.strategies.gui_lens import PRESETS, next_box
from regionfocus.strategies.gui_lens_geometry import normalize_bbox_to_display
from regionfocus.strategies.gui_lens_text import Frame, flag, read_json, text

from .test_adapters_prompts import images_in
from .test_strategy_gui_lens import GREEN, INSTR, SCREEN, TARGET, LensVLM, LensVLMImages, kind_of, run

LENS = [n for n in STRATEGIES if n.startswith("gui-lens")]
PIXEL_PRESETS = ["gui-lens", "gui-lens-legacy", "gui-lens-claude"]  # every published run's
HOSTED = {"openai": ("openai", "gpt-5.5"), "claude": ("anthropic", "claude-opus-4-7")}


def quick(config, **changes):
    """``config`` with fewer rounds and, for the fill-scaled legacy preset, crops drawn at most
    1024 px long (its 2048/4096 px renders cost seconds): what a test checks stays the preset's."""
    small = {"max_side": 1024, "final_max_side": 1024} if config.scale_mode == "fill" else {}
    return replace(config, **{"crop_retry_limit": 0, **small, **changes})


def peers(name: str, model, options=None):
    pred = StaticPrediction(baseline=None, final=None, verdict=None, trigger=None)
    got = asyncio.run(
        run_peers([name], model, SCREEN, INSTR, pred, {name: {"hints": None, **(options or {})}})
    )
    res = got[name]
    assert not isinstance(res, BaseException), res
    return res


def over_the_wire(strategy: str, family: str, lens: LensVLM, shot=SCREEN, instruction=INSTR):
    """``strategy`` through the ScreenSpot-Pro command's own path (``run_peers``, with the
    harness's options but no hints) and ``family``'s adapter, against a local server speaking
    that family's wire format (a served family: ``tests/chat_server.py``, OpenAI's chat
    completions; a hosted one: its provider's API through its SDK, ``tests/provider_servers.py``),
    ``lens`` answering what arrives. Returns the result and each request as the server decoded
    it: (kind, text, images)."""
    from regionfocus.adapters.backends.openai_http import OpenAIBackend

    from .chat_server import ChatServer, Reply, request_images, request_text
    from .provider_servers import ProviderServer, Said

    asked: list[tuple[str, str, list[Image.Image]]] = []

    def answer(text: str, images: list[Image.Image]) -> str:
        asked.append((kind_of(text), text, images))
        return lens.answer(text, images).text

    async def go(adapter):
        pred = StaticPrediction(baseline=None, final=None, verdict=None, trigger=None)
        try:
            got = await run_peers([strategy], adapter, shot, instruction, pred, {strategy: {"hints": None}})
        finally:
            await adapter.backend.aclose()
        return got[strategy]

    if family in HOSTED:
        from regionfocus.adapters.families.hosted import build_hosted

        provider, model = HOSTED[family]
        key = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
        with (
            patch.dict(os.environ, {key: os.environ.get(key) or "sk-local-0000"}),
            ProviderServer(provider, lambda req: Said(answer(req.text, req.images))) as srv,
        ):
            return asyncio.run(go(build_hosted(family, model=model, base_url=srv.base_url))), asked
    with ChatServer(lambda b: Reply.text(answer(request_text(b), request_images(b)))) as srv:
        adapter = get_adapter(family, backend=OpenAIBackend([srv.base_url], model="m", max_retries=0))
        return asyncio.run(go(adapter)), asked


# ------------------------------------------------------------------ 1. coordinates by preset
@pytest.mark.parametrize("name", PIXEL_PRESETS)
def test_each_preset_asks_for_its_published_runs_coordinates_on_a_0_1000_family(name):
    """The harness used to give every family whose frame is not pixels (GPT's 0-1 among them)
    the 0-1000 override; the published runs (coords_normalized off) sent pixels."""
    gpt_like = LensVLM(frame="relative")  # an adapter's frame that is not pixels; it answers in pixels
    assert "coords" not in perception_options(name, gpt_like)
    short = quick(get_strategy(name).config, rounds=2)  # the preset's coords kept
    res = peers(name, gpt_like, {"config": short})
    prompts = [a.prompt for a in gpt_like.asked]
    assert not any("COORDINATE FORMAT OVERRIDE" in p for p in prompts)
    assert {"stage": "config"}.items() <= res.steps[0].items() and res.steps[0]["coords"] == "pixels"
    assert TARGET.contains(res.point)


def test_the_one_normalised_config_asks_for_0_1000_whatever_the_family():
    pixels_family = LensVLM(frame="normalized")  # a pixel-frame adapter, as the preset decides
    res = run(GuiLens(config=replace(PRESETS["sspro_stack_zoom_m3"], rounds=3)), pixels_family)
    assert text("norm_crop") in pixels_family.asked[0].prompt
    assert TARGET.contains(res.point)
    # an explicit override still works, and says so
    res = run(
        GuiLens(config=replace(PRESETS["sspro_stack_zoom"], rounds=3), coords="normalized"),
        LensVLM(frame="normalized"),
    )
    assert "ran with normalized coordinates where its config asks for pixels (coords=)" in res.notes


def test_gui_lens_m3_is_a_strategy_name_listed_with_its_protocol(capsys):
    assert LENS == [*PIXEL_PRESETS, "gui-lens-m3"]  # a new preset's coordinates get a test here
    assert get_strategy("gui-lens-m3").config == PRESETS["sspro_stack_zoom_m3"]
    assert STRATEGIES["gui-lens-m3"].needs_planner  # like every GUI-Lens: not in 'all'
    assert strategy_names("regionfocus,gui-lens-m3") == ("regionfocus", "gui-lens-m3")
    assert strategies_command([]) == 0
    block = capsys.readouterr().out.split("\ngui-lens-m3 ")[1]
    protocol = block.split("protocol: ")[1]
    assert protocol.startswith("configs/sspro_stack_zoom_m3.yaml") and "with no published run" in protocol
    for part in (
        "coordinates 0-1000 of the displayed crop",
        "1 image per request (the review: the final crop and up to 3 wider ones in one request)",
        "reruns up to 2 per sample after no verified target or a failed call",
        "harness the official runner through OpenProgram's providers",
    ):
        assert part in protocol


def test_the_screenspot_pro_command_takes_strategy_gui_lens_m3(tmp_path: Path, capsys):
    """The names reach the command's own --strategy: gui-lens-m3 passes it (the run stops
    later, at the data that is not there), a misspelt one is refused naming gui-lens-m3."""
    from regionfocus.screenspot_pro.cli import main

    argv = ["--data", str(tmp_path / "absent"), "--out", str(tmp_path / "run"), "--agent", "qwen2.5-vl",
            "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--no-preflight"]  # fmt: skip
    assert main([*argv, "--strategy", "gui-lens-m3"]) == 2
    err = capsys.readouterr().err
    assert "--strategy" not in err and str(tmp_path / "absent") in err
    assert main([*argv, "--strategy", "gui-lens-m4"]) == 2
    err = capsys.readouterr().err
    assert "--strategy: unknown 'gui-lens-m4'" in err and "gui-lens-m3" in err.split("known:")[1]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("family", ["qwen2.5-vl", "openai", "claude"])
def test_gui_lens_m3_asks_every_family_for_0_1000_over_its_wire(family):
    """Pixel-frame families (Qwen2.5-VL served, Claude through its SDK) and GPT's 0-1 alike:
    every crop and click request that reaches the server carries the official override, and the
    0-1000 answers map back: each proposed crop holds the target (the gate accepts it), and the
    click lands on it."""
    lens = LensVLMImages(frame="normalized")
    res, asked = over_the_wire("gui-lens-m3", family, lens)
    kinds = [k for k, _, _ in asked]
    rounds = len(kinds) // 2 - 1
    assert rounds >= 3 and kinds == ["crop", "gate"] * rounds + ["click", "review"]
    for kind, prompt, _ in asked:
        if kind in ("crop", "click"):
            assert text(f"norm_{kind}") in prompt, (kind, prompt[-400:])
    gates = [s["gate"]["action"] for s in res.steps if s.get("stage") == "crop"]
    assert gates == ["accept"] * rounds
    assert res.steps[0]["coords"] == "normalized" and not any("(coords=)" in n for n in res.notes)
    assert TARGET.contains(res.point), res.steps


def test_a_0_1000_crop_on_a_display_rounded_below_its_pixels_is_read_as_0_1000():
    """Qwen2.5-VL's multiples of 28 show a 1072x619 crop at 1064x616 (a scale under 1), where
    the official code's Claude heuristic reads a bbox past the displayed size as screenshot
    pixels: a 0-1000 bbox (y up to 950) was moved off the crop, and the gate rejected it."""
    frame = Frame((848, 0, 1920, 619), 1064 / 1072, 616 / 619, normalized=True)
    assert normalize_bbox_to_display([482, 33, 982, 950], frame) == [482, 33, 982, 950]
    nxt = next_box([482, 33, 982, 950], frame, (1920, 1080), PRESETS["sspro_stack_zoom_m3"], 1)
    assert nxt is not None and Box(848, 0, 1920, 619).contains(Box(*nxt).center)
    # the heuristic itself stands: pixels past a downscaled crop, and any bbox past 1000
    pixels = replace(frame, normalized=False)
    assert normalize_bbox_to_display([1200, 100, 1500, 400], pixels) != [1200, 100, 1500, 400]
    assert normalize_bbox_to_display([1200, 100, 1500, 400], frame) != [1200, 100, 1500, 400]


# ------------------------------------------------------------------ 2. the review's crops
class Recording:
    """A chat backend that keeps each request's messages and answers "keep"."""

    def __init__(self):
        self.requests: list[list[dict]] = []

    async def complete(self, messages, **kw):
        self.requests.append(messages)
        return ChatResponse(text='{"action": "keep"}', usage=Usage(prompt_tokens=10, completion_tokens=3))


@pytest.mark.parametrize("family", families())
def test_every_family_puts_several_images_in_one_request_where_its_chat_puts_one(family):
    backend = Recording()
    options = {
        "model": "claude-opus-4-7"
        if family == "claude"
        else "gpt-5.5"
        if family == "openai"
        else "gemini-2.5-flash"
    }
    adapter = get_adapter(
        family, backend=backend, **(options if family in ("claude", "openai", "gemini") else {})
    )
    crops = [
        Image.new("RGB", size, colour)
        for size, colour in (((1280, 720), "red"), ((900, 500), "green"), ((640, 360), "blue"))
    ]
    asyncio.run(adapter.chat(crops[0], "review this"))
    asyncio.run(adapter.chat_images(crops, "review this"))
    one, several = backend.requests
    assert len(images_in(one)) == 1 and len(images_in(several)) == 3
    # the same request with the one image replaced by all of them, in order, each at its own size
    assert [im.size for im in images_in(several)] == [adapter.input_size(c.size) for c in crops]
    assert [im.getpixel((0, 0)) for im in images_in(several)] == [(255, 0, 0), (0, 128, 0), (0, 0, 255)]

    def strip(msgs):  # each message's parts by type (a plain string content as itself)
        return [
            [p.get("type") for p in m["content"]] if isinstance(m["content"], list) else [m["content"]]
            for m in msgs
        ]

    first, rest = strip(one), strip(several)
    assert rest == [[t for p in parts for t in (["image"] * 3 if p == "image" else [p])] for parts in first]


def test_the_review_gets_the_final_and_three_wider_crops_through_an_adapter():
    backend = Recording()
    answers = LensVLM()

    async def complete(messages, **kw):
        backend.requests.append(messages)
        prompt = "\n".join(
            p["text"]
            for m in messages
            if isinstance(m["content"], list)
            for p in m["content"]
            if p.get("type") == "text"
        )
        return ChatResponse(
            text=answers.answer(prompt, images_in(messages)).text, usage=Usage(prompt_tokens=10)
        )

    backend.complete = complete
    adapter = get_adapter("qwen2.5-vl", backend=backend)
    res = run(GuiLens(), adapter)
    (review,) = [a for a in answers.asked if a.kind == "review"]
    assert len(review.images) == 4 and "r3: wider crop" in review.prompt
    step = next(s for s in res.steps if s.get("stage") == "click")
    assert step["review"]["images"] == 4
    call = next(c for c in res.calls if c.kind.startswith("review"))
    # the four images are costed together
    assert call.image_tokens == sum(adapter.image_tokens(im.size) for im in review.images)
    assert not any("one image per request" in n for n in res.notes)
    assert TARGET.contains(res.point)


def test_a_model_with_one_image_per_request_says_so_in_the_result():
    res = run(GuiLens(), LensVLM())
    step = next(s for s in res.steps if s.get("stage") == "click")
    assert step["review"]["images"] == 1
    assert any(
        n.startswith("review: LensVLM takes one image per request (no chat_images)") for n in res.notes
    )


# ------------------------------------------------------------------ 3. reruns
@dataclass
class Flaky(LensVLMImages):
    """Its ``fail_at``-th request (1-based) fails as a provider error does."""

    fail_at: int = 3

    def answer(self, prompt, images):
        if len(self.asked) + 1 == self.fail_at:
            self.asked.append(type(self.asked[0])("error", prompt, images))
            raise ConnectionError("HTTP 503 from the provider")
        return super().answer(prompt, images)


def test_a_failed_call_ends_the_run_and_the_sample_is_run_again():
    model = Flaky(fail_at=3)
    res = run(GuiLens(), model)
    kinds = [c.kind for c in res.calls]
    # crop, gate, then the failed crop: no further attempt in that run (it is no rejected crop)
    assert kinds[:3] == ["crop[r1.1]", "gate[r1.1]", "crop[r2.1]"] and res.calls[2].error
    assert kinds[3] == "rerun1:crop[r1.1]" and all(k.startswith("rerun1:") for k in kinds[3:])
    assert next(s for s in res.steps if s.get("stage") == "run")["run"] == 1
    assert (
        "rerun 1 after run 1 ended with a failed call (crop[r2.1]: ConnectionError: HTTP 503 from the provider)"
        in res.notes
    )
    assert TARGET.contains(res.point)
    # rejections of a run never list the failure as an attempt of the model
    assert not any("action=exception" in a.prompt for a in model.asked)


def test_no_verified_target_reruns_up_to_the_presets_limit_then_the_baseline_stands():
    model = LensVLMImages()
    model.script["crop"] = lambda p, img: '{"action": "recrop", "bbox": null, "reasoning": "lost"}'
    model.script["click"] = lambda p, img: '{"action": "recrop", "reasoning": "still lost"}'
    cfg = quick(PRESETS["legacy_baseline"], rounds=1)  # no keep_best there
    res = run(GuiLens(config=cfg), model)
    assert model.kinds() == ["crop", "click"] * 3 and res.action is None
    assert [s["outcome"] for s in res.steps if s.get("stage") == "run"] == ["no verified target"] * 3
    assert any(n.startswith("ran with up to 2 reruns") for n in res.notes)
    model.asked.clear()
    run(GuiLens(config=replace(cfg, reruns=0)), model)
    assert model.kinds() == ["crop", "click"]


def test_the_config_step_and_the_listing_name_the_reruns(capsys):
    @dataclass
    class Down(LensVLMImages):
        def answer(self, prompt, images):
            raise ConnectionError("HTTP 503")

    res = run(GuiLens(config="legacy_baseline"), Down())
    assert [c.kind for c in res.calls] == ["crop[r1.1]", "rerun1:crop[r1.1]", "rerun2:crop[r1.1]"]
    assert res.action is None and "every run ended without a point" in res.notes[-2]
    assert res.steps[0]["reruns"] == 2 and res.steps[0]["reading"] == "official"
    assert strategies_command([]) == 0
    out = capsys.readouterr().out
    block = out.split("gui-lens-legacy ")[1].split("\ngui-lens-claude")[0]
    assert "protocol:" in block and "reruns up to 2 per sample" in block and "displayed-crop pixels" in block
    claude = out.split("gui-lens-claude ")[1]
    assert "Claude Code" in claude and "not the Messages API" in claude


# ------------------------------------------------------------------ 4. reading answers
def test_the_published_presets_read_the_gate_as_the_code_does():
    """``bool(parsed.get("target_inside"))`` there: a quoted "false" is true."""
    quoted = (
        '{"action": "accept", "target_inside": "false", "context_sufficient": "true", '
        '"discarded_plausible_targets": ""}'
    )
    for name, accepted in (("gui-lens-legacy", True), ("gui-lens", False)):
        model = LensVLMImages()
        model.script["gate"] = lambda p, img: quoted
        res = run(
            get_strategy(name, config=replace(get_strategy(name).config, rounds=1, crop_retry_limit=0)), model
        )
        gate = next(s["gate"] for s in res.steps if s.get("gate"))
        assert gate["action"] == ("accept" if accepted else "reject") and gate["target_inside"] is accepted
    assert flag("false", official=True) and not flag("false") and flag("yes") and not flag(0, official=True)


def test_json_is_read_in_parse_jsons_order_where_the_code_is_reproduced():
    two = '{"thinking": "the toolbar"} {"action": "final"}'
    assert read_json(two, official=True) == {"thinking": "the toolbar"} and read_json(two) == {
        "action": "final"
    }
    assert read_json('[{"action": "crop"}]', official=True) is None  # a list fails there
    assert read_json('[{"action": "crop"}]') == {"action": "crop"}
    fenced = 'I pick {this}.\n```json\n{"action": "crop", "bbox": [1, 2, 3, 4]}\n```'
    assert read_json(fenced, official=True) == {"action": "crop", "bbox": [1, 2, 3, 4]}
    assert read_json('x {"a": "}", "b": {"c": 1}} y', official=True) == {"a": "}", "b": {"c": 1}}
    # stricter than the code in both readings: no NaN
    assert read_json('{"action": "crop", "bbox": [NaN, 1, 2, 3]}', official=True) is None


def test_a_first_object_without_an_action_is_an_invalid_crop_under_the_official_reading():
    for name, first_kind in (("gui-lens-legacy", "invalid"), ("gui-lens", "crop")):
        model = LensVLMImages()
        real = model.crop
        model.script["crop"] = lambda p, img, real=real: '{"thinking": "toolbar"}\n' + real(p, img)
        res = run(
            get_strategy(name, config=quick(get_strategy(name).config, rounds=2, crop_retry_limit=1)), model
        )
        first = next(s for s in res.steps if s.get("stage") == "crop")
        assert (first["action"] == "") if first_kind == "invalid" else (first["action"] == "crop")
        assert TARGET.contains(res.point)


@pytest.mark.slow  # the whole command: OCR hints, the run folder, the reports (seconds of CPU)
def test_the_screenspot_pro_command_runs_gui_lens_m3_with_0_1000_requests(tmp_path: Path):
    """``regionfocus screenspot-pro --strategy gui-lens-m3`` with a pixel-frame family served
    over HTTP (Qwen2.5-VL): the baseline in the family's own prompt, every GUI-Lens crop and
    click request with the 0-1000 override, the row scored and written out like any other."""
    from regionfocus.kit.runlog import read_records
    from regionfocus.screenspot_pro.cli import main

    from .chat_server import ChatServer, Reply, request_images, request_text
    from .test_screenspot_helpers import Target, make_dataset
    from .test_strategies_mvp_router import colour_responder

    data = make_dataset(tmp_path / "data", {"appg_macos": [Target("appg_0", GREEN, (1195, 295, 1215, 315))]})
    lens = LensVLMImages(frame="normalized")

    def responder(body):
        if "computer_use" in request_text(body):  # the baseline, in Qwen2.5-VL's own tool prompt
            return colour_responder(body)
        return Reply.text(lens.answer(request_text(body), request_images(body)).text)

    out = tmp_path / "run"
    with ChatServer(responder, model="m") as srv:
        argv = ["--data", str(data), "--out", str(out), "--no-progress", "--agent", "qwen2.5-vl",
                "--base-url", srv.base_url, "--model", "m", "--strategy", "gui-lens-m3"]  # fmt: skip
        assert main(argv) == 0
    (rec,) = read_records(out / "records.jsonl")
    row = rec["strategies"]["gui-lens-m3"]
    assert row["error"] is None and row["correctness"] == "correct"
    assert [c["kind"] for c in row["trace"]["calls"]][:2] == ["crop[r1.1]", "gate[r1.1]"]
    assert row["trace"]["steps"][0]["coords"] == "normalized"
    asked = {a.kind: a.prompt for a in lens.asked}
    assert text("norm_crop") in asked["crop"] and text("norm_click") in asked["click"]
    assert all(text("norm_crop") in a.prompt for a in lens.asked if a.kind == "crop")
    official = json.loads((out / "results_gui-lens-m3.json").read_text())
    assert [d["correctness"] for d in official["details"]] == ["correct"]
