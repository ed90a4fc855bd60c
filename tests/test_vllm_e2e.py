"""End to end against a real vLLM (CPU) server serving the tiny trained Qwen2.5-VL
(tests/tiny_trained.py): it ends its replies and answers each family's request in that
family's own format (where it points is only roughly where the green square is: a few CPU
minutes teach the formats, not the eye).

So these tests check what a user of the real thing relies on: replies finish
(``finish_reason: "stop"``) and so are answers; Qwen2.5-VL's ``computer_use`` tool call,
UI-TARS-1.5's ``Action: click(point='<point>x y</point>')`` and GTA1's ``(x,y)`` parse into the
points they write, mapped from each family's frame to pixels of the screenshot; a RegionFocus
round and whole harness runs are recorded call by call, scored and resumed. The server side is
read from vLLM's own /metrics counters, not from our client's bookkeeping.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import statistics
import time
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from regionfocus import Action, ActionType, Avoid, Option, Point, Query, RegionFocus, Verdict
from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.openai_http import BackendError, OpenAIBackend
from tests.tiny_trained import draw_target

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.timeout(1800)]

# The tiny model's processor keeps images up to 256 * 28^2 px as they are (tests/tiny_qwen.py);
# adapters resize to at most that, so the server never resizes again (docs/ARCHITECTURE.md §5).
TINY_MAX_PIXELS = 256 * 28 * 28
FAMILIES = ("qwen2.5-vl", "uitars-1.5", "gta1")
# Each family's answer to its grounding request, as the family writes it (tests/tiny_trained.py).
GROUNDING_FORMATS = {
    "qwen2.5-vl": r'<tool_call>\n\{"name": "computer_use", "arguments": \{"action": "left_click", '
    r'"coordinate": \[\d+, \d+\]\}\}\n</tool_call>',
    "uitars-1.5": r"Action: click\(point='<point>\d+ \d+</point>'\)",
    "gta1": r"\(\d+,\d+\)",
}
# ... and to the computer-use (agent) request.
AGENT_FORMATS = {
    "qwen2.5-vl": GROUNDING_FORMATS["qwen2.5-vl"],
    "uitars-1.5": r"Thought: .+\nAction: click\(point='<point>\d+ \d+</point>'\)",
    "gta1": GROUNDING_FORMATS["gta1"],
}
TARGET = (820, 420, 940, 540)  # the green square on a 1280x800 screen


def screen(width: int, height: int, target: tuple[int, int, int, int] | None = None) -> Image.Image:
    """A plain UI-like screenshot: a title bar, a few labelled buttons, and the green square."""
    img = Image.new("RGB", (width, height), (245, 245, 245))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, width, height // 10], fill=(40, 60, 120))
    for i, label in enumerate(("Open", "Save", "Submit", "Cancel")):
        x = 20 + i * (width // 5)
        d.rectangle([x, height // 4, x + width // 6, height // 4 + height // 12], fill=(200, 210, 230))
        d.text((x + 6, height // 4 + 4), label, fill=(0, 0, 0))
    if target is not None:
        draw_target(img, target)
    return img


def written(text: str) -> tuple[int, int]:
    """The point an answer writes (its last two numbers: no other digits in these formats)."""
    x, y = (int(v) for v in re.findall(r"\d+", text)[-2:])
    return x, y


def mapped(model, size: tuple[int, int], xy: tuple[float, float]) -> Point:
    """``xy`` in the family's frame (pixels of the image it saw) in pixels of an image of ``size``."""
    w, h = model.input_size(size)
    return Point(xy[0] * size[0] / w, xy[1] * size[1] / h)


def inside(p: Point | None, size: tuple[int, int]) -> bool:
    return p is not None and 0 <= p.x <= size[0] and 0 <= p.y <= size[1]


def image_tokens(size: tuple[int, int]) -> int:
    """Qwen2.5-VL: 14-px patches merged 2x2, so one token per 28x28 px of the image it sees."""
    return (size[0] // 28) * (size[1] // 28)


def data_url(image: Image.Image) -> str:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def requests_served(server, main, argv: list[str]) -> int:
    """Run a harness command that must succeed; how many requests the vLLM server finished."""
    before = server.requests_finished()
    assert main(argv) == 0
    return server.requests_finished() - before


@pytest.fixture
async def backend(vllm_server):
    b = OpenAIBackend(base_urls=[vllm_server.base_url], model=vllm_server.model, timeout=120, max_retries=1)
    yield b
    await b.aclose()


@pytest.fixture
async def raw(vllm_server):
    """The OpenAI SDK itself, for what our client refuses to take as an answer (a cut reply)."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=vllm_server.base_url, api_key="none", max_retries=0, timeout=120)
    yield client
    await client.close()


async def ask_raw(raw, vllm_server, image: Image.Image, text: str, **options):
    content = [{"type": "image_url", "image_url": {"url": data_url(image)}}, {"type": "text", "text": text}]
    return await raw.chat.completions.create(
        model=vllm_server.model, messages=[{"role": "user", "content": content}], temperature=0, **options
    )


def user(image: Image.Image, text: str) -> list[dict]:
    return [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}]


# ---------------------------------------------------------------------------------- replies
async def test_replies_end_with_stop_and_the_prompt_is_the_one_it_learned(vllm_server, raw, backend):
    wide, square = screen(448, 280, (300, 150, 360, 210)), screen(224, 224, (120, 130, 176, 186))
    a = await ask_raw(raw, vllm_server, wide, "click the Save button", max_tokens=64)
    b = await ask_raw(raw, vllm_server, square, "click the Save button", max_tokens=64)
    for r in (a, b):
        # a plain question with an image is answered "(x,y)", then the end token
        assert r.choices[0].finish_reason == "stop", r
        assert re.fullmatch(r"\(\d+,\d+\)", r.choices[0].message.content), r.choices[0].message.content
        assert 1 <= r.usage.completion_tokens < 64
    # Same text, two images: the prompts differ by exactly the image tokens of the sizes sent,
    # so the engine saw each image unresized ...
    assert a.usage.prompt_tokens - b.usage.prompt_tokens == image_tokens(wide.size) - image_tokens(
        square.size
    )
    # ... and the server's prompt is, token for token, the one the model was trained on.
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(vllm_server.model_dir)
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "click the Save button"}]}
    ]
    prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert len(processor(text=[prompt], images=[wide])["input_ids"][0]) == a.usage.prompt_tokens

    # A reply made to run past its end token stops at the server's cap ("length") ...
    capped = await ask_raw(
        raw, vllm_server, square, "Describe.", max_tokens=500, extra_body={"ignore_eos": True}
    )
    assert capped.choices[0].finish_reason == "length"
    assert capped.usage.completion_tokens == vllm_server.max_new_tokens
    # ... and our client takes such a reply for no answer (a failed call), the model's own for one.
    with pytest.raises(BackendError, match="did not finish its reply"):
        await backend.complete(user(square, "x"), max_tokens=500, ignore_eos=True)
    done = await backend.complete(user(square, "click the Save button"))
    assert done.text == b.choices[0].message.content and done.usage.error is None


@pytest.mark.parametrize("family", FAMILIES)
async def test_each_family_answers_in_its_own_format(backend, family):
    model = get_adapter(family, backend=backend, max_tokens=64, max_pixels=TINY_MAX_PIXELS)
    shot = screen(1280, 800, TARGET)
    assert model.input_size(shot.size) == (560, 336)
    reply = await model.act(shot, Query("click the green square"))
    assert reply.usage.error is None and 1 <= reply.usage.completion_tokens < 64  # finished
    assert re.fullmatch(GROUNDING_FORMATS[family], reply.text), reply.text
    # read in the family's format, mapped from the 560x336 image it saw to the 1280x800 screen
    assert reply.point == mapped(model, shot.size, written(reply.text)) and inside(reply.point, shot.size)
    live = await model.act(shot, Query("click the green square", mode="agent"))
    assert live.usage.error is None and re.search(AGENT_FORMATS[family], live.text), live.text
    assert live.point == mapped(model, shot.size, written(live.text))


@pytest.mark.parametrize("family", ["qwen2.5-vl", "uitars-1.5"])
async def test_round_requests_over_http(backend, family):
    model = get_adapter(family, backend=backend, max_tokens=64, max_pixels=TINY_MAX_PIXELS)
    shot = screen(1280, 800, TARGET)
    query = Query("click the green square")
    on_target, off_target = Point(880, 480), Point(200, 650)
    options = [
        Option(1, Action(ActionType.CLICK, point=on_target), on_image=True),
        Option(2, Action(ActionType.CLICK, point=off_target), on_image=True),
    ]
    view = shot.crop((640, 300, 1120, 660))
    replies = {
        "focal": await model.propose_point(shot, query, Avoid([])),
        "focal-avoid": await model.propose_point(shot, query, Avoid([off_target], on_image=False)),
        "zoom": await model.locate_in_view(view, query),
        "judge": await model.judge(await model.annotate(shot, [on_target]), query, on_target),
        "judge-own": await model.judge(
            await model.annotate(shot, [off_target]), Query(query.instruction, mode="agent"), off_target
        ),
        "choose": await model.choose(await model.annotate(shot, [on_target, off_target]), query, options),
        "region": await model.propose_box(shot, query, None),
    }
    for kind, r in replies.items():
        assert r.usage.error is None, kind  # finished: an answer, not a cut reply
        assert 1 <= r.usage.completion_tokens < 64, kind
    for kind, size in (("focal", shot.size), ("focal-avoid", shot.size), ("zoom", view.size)):
        r = replies[kind]
        assert r.point == mapped(model, size, written(r.text)) and inside(r.point, size), (kind, r.text)
    assert replies["judge"].verdict in (Verdict.YES, Verdict.NO), replies["judge"].text
    assert replies["judge-own"].verdict in (Verdict.YES, Verdict.NO), replies["judge-own"].text
    assert replies["choose"].choice == 1, replies["choose"].text
    assert replies["region"].box is not None, replies["region"].text


async def test_regionfocus_round_records_every_call(vllm_server, backend):
    model = get_adapter("qwen2.5-vl", backend=backend, max_tokens=64, max_pixels=TINY_MAX_PIXELS)
    shot = screen(1280, 800, TARGET)
    before = vllm_server.server.requests_finished()
    result = await RegionFocus(model).refine(shot, Query("click the green square"), trigger="test")
    served = vllm_server.server.requests_finished() - before

    kinds = [c.kind for c in result.calls]
    assert served == len(result.calls), "every request the server answered is in the trace"
    assert kinds[0] == "focal" and inside(result.focal, shot.size)
    n_views = len(result.boxes)
    assert n_views >= 2 and len(result.views) == n_views
    assert sorted(k for k in kinds if k.startswith("candidate")) == sorted(
        f"candidate[{i}]" for i in range(n_views)
    )
    for c in result.calls:
        assert c.error is None and c.prompt_tokens and c.completion_tokens, c
    # every view's answer was a point: a candidate from each, and one action chosen among them
    assert {v for cand in result.candidates for v in cand.views} == set(range(n_views))
    assert result.action is not None and inside(result.action.point, shot.size), result.to_dict()
    assert ("choose" in kinds) == (len(result.merged) > 1)
    if len(result.merged) > 1:
        assert result.choice_method == "model", result.choice_method  # "Selected point: 1"
    json.dumps(result.to_dict())


async def test_concurrent_requests_overlap_on_the_server(vllm_server, raw):
    """Continuous batching: 8 requests in flight take far less than 8x one request."""
    img = screen(448, 280, (300, 150, 360, 210))
    n, tokens = 8, vllm_server.max_new_tokens  # long enough that decoding, which batches, dominates

    async def one(i: int):
        r = await ask_raw(
            raw,
            vllm_server,
            img,
            f"Task {i}: click Submit.",
            max_tokens=tokens,
            extra_body={"ignore_eos": True},
        )
        assert r.usage.completion_tokens == tokens
        return r

    await one(-1)  # warm-up (prefix cache, first-call allocations)
    singles = []
    for i in range(3):
        t0 = time.perf_counter()
        await one(i)
        singles.append(time.perf_counter() - t0)
    single = statistics.median(singles)

    # Server-side proof of batching: the time the server spent running these requests (prefill
    # plus decode, queueing excluded), summed over requests, exceeds the wall time only if
    # several ran at once. Polling the running-requests gauge races with 0.1 s requests.
    async def batch(first: int) -> float:
        """The server-side overlap of ``n`` requests sent at once (its own counters)."""
        before = await asyncio.to_thread(vllm_server.server.metrics)
        t0 = time.perf_counter()
        await asyncio.gather(*(one(first + i) for i in range(n)))
        together = time.perf_counter() - t0
        after = await asyncio.to_thread(vllm_server.server.metrics)
        key = "vllm:request_inference_time_seconds_sum"
        running = after[key] - before.get(key, 0.0)
        done = (
            after["vllm:e2e_request_latency_seconds_count"] - before["vllm:e2e_request_latency_seconds_count"]
        )
        assert done == n
        print(
            f"\nvLLM concurrency: single {single:.3f} s, {n} together {together:.3f} s, "
            f"ratio {together / (n * single):.2f}, server-side overlap {running / together:.2f}"
        )
        return running / together

    # The server's own counter proves the overlap; wall times are printed, not asserted. On a
    # machine busy with other work the server's intake can admit the requests one by one (seen
    # with both cores taken by another test run), so a batch is tried up to three times.
    overlaps = []
    for attempt in range(3):
        overlaps.append(await batch(100 + attempt * n))
        if overlaps[-1] >= 1.5:
            break
    assert max(overlaps) >= 1.5, f"requests ran {overlaps} at a time on average: no batching"


# ---------------------------------------------------------------------------------- harnesses
def green_dataset(root: Path, n: int) -> Path:
    """A ScreenSpot-Pro folder (the official layout) of ``n`` 1600x1000 screens, one green square
    each, in two annotation files."""
    (root / "annotations").mkdir(parents=True)
    for task in ("greena_windows", "greenb_macos"):
        (root / "images" / task).mkdir(parents=True)
        records = []
        for i in range(n // 2):
            side = 110 + 20 * i
            x0, y0 = 150 + 310 * i, 180 + 170 * (i % 4) + (60 if task.startswith("greenb") else 0)
            bbox = [x0, y0, x0 + side, y0 + side]
            screen(1600, 1000, tuple(bbox)).save(root / "images" / task / f"s{i}.png")
            records.append(
                {
                    "img_filename": f"{task}/s{i}.png",
                    "bbox": bbox,
                    "instruction": "click the green square",
                    "application": task[:6],
                    "id": f"{task}_{i}",
                    "platform": task.split("_")[1],
                    "img_size": [1600, 1000],
                    "ui_type": "icon",
                    "group": "Dev",
                    "instruction_cn": "点击绿色方块",
                }
            )
        (root / "annotations" / f"{task}.json").write_text(json.dumps(records, ensure_ascii=False))
    return root


@pytest.mark.parametrize("family", ["qwen2.5-vl", "uitars-1.5"])
def test_screenspot_pro_run_scores_baseline_and_round_and_resumes(vllm_server, tmp_path, family):
    from regionfocus.screenspot_pro.cli import main

    data, out, n = green_dataset(tmp_path / "data", 6), tmp_path / "run", 6
    # Zoomed views at the size the tiny model sees, not upsampled: the same rounds with a
    # fraction of the image bytes to encode and decode on two CPU cores.
    config = tmp_path / "rf.toml"
    config.write_text("[regionfocus]\nview_target = [448, 252]\n")
    argv = [
        "--data", str(data),
        "--agent", family,
        "--trigger", "always",
        "--config", str(config),
        "--concurrency", str(n),
        "--out", str(out),
        "--no-progress",
    ]  # fmt: skip

    def run(args: list[str]) -> int:
        # The family's adapter over the server, at the tiny model's pixel budget (the flags know
        # no budget: a real model takes a 1600x1000 screen as it is, the tiny one would be
        # shrunk again by the server, into a frame the adapter does not know).
        backend = OpenAIBackend(base_urls=[vllm_server.base_url], model=vllm_server.model, max_retries=1)
        return main(args, model=get_adapter(family, backend=backend, max_pixels=TINY_MAX_PIXELS))

    served = requests_served(vllm_server.server, run, argv)

    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == n
    assert served == sum(r["n_calls"] for r in records), "every server request is recorded in a sample"
    for r in records:
        assert r["n_failed_calls"] == 0, r  # every reply finished
        assert r["trigger"] is not None and r["rounds"] >= 1  # --trigger always: a round on each
        for row in ("baseline", "final"):  # an answer in the family's format, scored
            assert r[row]["point"] is not None and r[row]["correctness"] in ("correct", "wrong"), r[row]
            bbox = r["sample"]["bbox"]
            x, y = r[row]["point"]
            inside_box = bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]
            assert (r[row]["correctness"] == "correct") == inside_box, r[row]
    results = json.loads((out / "results.json").read_text())
    assert sorted(d["id"] for d in results["details"]) == sorted(r["sample"]["id"] for r in records)
    assert {d["correctness"] for d in results["details"]} <= {"correct", "wrong"}
    print(f"\nScreenSpot-Pro on vLLM ({family}): {served} requests, metrics {results['metrics']}")

    # Resume: the same command again answers from the run folder, with no new model calls.
    assert requests_served(vllm_server.server, run, argv) == 0
    assert len((out / "records.jsonl").read_text().splitlines()) == n


def test_webvoyager_miniwob_run_through_regionfocus_and_resume(vllm_server, tmp_path):
    """Two MiniWoB++ tasks in Chromium with UI-TARS-1.5's computer-use prompt: every step's
    answer finishes and parses (the model clicks where it sees the most green, or the centre),
    and ``--trigger always`` sends every step through a RegionFocus round."""
    from regionfocus.webvoyager.cli import main

    out = tmp_path / "wv"
    argv = [
        "--tasks", "miniwob:click-button,click-link",
        "--agent", "uitars-1.5",
        "--base-url", vllm_server.base_url,
        "--model", vllm_server.model,
        "--max-steps", "2",
        "--trigger", "always",
        "--viewport", "504x392",  # 18x14 patches of 28 px: within the tiny model's pixel budget
        "--concurrency", "2",
        "--out", str(out),
        "--no-progress",
    ]  # fmt: skip
    served = requests_served(vllm_server.server, main, argv)

    results = json.loads((out / "results.json").read_text())
    assert len(results) == 2
    assert {t for t in ("click-button", "click-link") for r in results if t in r["id"]} == {
        "click-button",
        "click-link",
    }
    assert served == sum(r["model_calls"] for r in results), "every server request is recorded in a task"
    for r in results:
        assert r["error"] is None, r["error"]
        assert 1 <= r["steps"] <= 2
        assert r["success"] in (True, False) and r["reward"] is not None
        assert r["regionfocus_rounds"] >= 1 and sum(r["triggers"].values()) >= 1, r
        assert r["model_errors"] == 0

    assert requests_served(vllm_server.server, main, argv) == 0, "a finished run makes no new model calls"
    assert json.loads((out / "results.json").read_text()) == results
