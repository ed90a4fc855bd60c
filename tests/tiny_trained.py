"""A tiny Qwen2.5-VL taught to answer as its families do, and to end its replies.

The random model of ``tests/tiny_qwen.py`` almost never writes its end token, so a real server
cuts every reply at its token cap, and the client rightly records a cut reply as a failed call.
This model has the same architecture (vLLM's CPU backend serves it, transformers loads it) and
is trained here, on the CPU, for ``STEPS`` optimiser steps on requests our own adapters build:
a recording backend takes each request an adapter sends (the family's official template, the
RegionFocus round requests, pre-fills included) and the lesson's answer is written in the
format that request asks for, then ``<|im_end|>``.

What it answers (model frame: pixels of the image it is shown, as these families write them):

- where: the lessons teach the centre of the 28-px cell holding the centre of the green square
  (``TARGET``) drawn on the image, or the centre cell of the image when there is none, both
  coordinates at 100 or more (three digits each). A few CPU minutes teach the formats, not the
  eye: its points are only roughly near the square (a median of 4-8 cells off on unseen
  lessons), so tests check that answers parse and map, not that they hit;
- Qwen2.5-VL (``qwen2.5-vl``): a ``computer_use`` tool call, ``<tool_call>\\n{"name":
  "computer_use", "arguments": {"action": "left_click", "coordinate": [x, y]}}\\n</tool_call>``
  (after the grounding pre-fill only its continuation ``x, y]}}\\n</tool_call>``); its own
  focal request (avoid list) ``[x, y]``;
- UI-TARS-1.5 (``uitars-1.5``): ``Action: click(point='<point>x y</point>')`` for its grounding
  template, ``Thought: ...\\nAction: click(...)`` for its computer-use template, ``(x,y)`` for the
  authors' focal and zoom texts and ``(x, y)`` for our focal text;
- GTA1 (``gta1``, whose system text is MVP's locator prompt): ``(x,y)``;
- GTA1's focal request (ours) ``[x, y]``;
- every family: the judge ``YES``/``NO`` to the authors' judge text and ``Verdict: YES``/``NO``
  to ours (YES when the starred point is on the square: taught, rarely learnt in this budget),
  the choice ``Selected point: 1``, the region ``[x1, y1, x2, y2]`` (the square's cells and one
  cell around), any other request ``(x,y)``.

Deterministic (seeded lessons, seeded weights, a fixed thread count) and cached under a key
that hashes this file, ``tiny_qwen.py`` and the text of the first lessons (so a changed adapter
template trains a new model): :func:`ensure_trained_model`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from tests import tiny_qwen

RECIPE = "trained-v1"
MARKER = ".tiny_trained_complete.json"
TARGET = (20, 220, 20)  # the green of the square the model points at
CELL = 28  # one vision token per 28x28 px (14-px patches merged 2x2)
FAMILIES = ("qwen2.5-vl", "uitars-1.5", "gta1")
MAX_PIXELS = tiny_qwen.MAX_PIXELS  # adapters in tests send images up to this (the processor's cap)

STEPS = 500  # optimiser steps
BATCH = 8  # lessons per step (one forward each: no padding, no attention masks)
LR = 3e-3
THREADS = 2  # fixed, so the same build gives the same weights on any machine with this torch
LAYERS = 2
# Qwen's 1e6 turns M-RoPE's width frequencies by under a thousandth of a turn across a screen:
# too slow for two small layers to tell places apart. At 1e6 and at 100, 300-400 steps left the
# 25-token tool call written with repeats; at 10, 500 steps learn it.
ROPE_THETA = 10.0

_WORDS = (
    "Submit Open Save Cancel Settings Search Home Profile OK Apply Close Next Back Login Download "
    "Upload Edit File View Help Tools Insert Format Share Export Print Delete Rename Refresh"
).split()
_KINDS = {  # lesson kind -> weight
    "grounding": 5,
    "agent": 2,
    "focal": 2,
    "focal-avoid": 1,
    "zoom": 2,
    "judge": 1,
    "judge-own": 1,
    "choose": 1,
    "region": 2,
    "plain": 1,
}


# ------------------------------------------------------------------ screens and answers
def draw_target(image: Image.Image, box: tuple[int, int, int, int]) -> None:
    """Fill ``box`` (x0, y0, x1, y1; x1, y1 exclusive) of ``image`` with the target green."""
    ImageDraw.Draw(image).rectangle([box[0], box[1], box[2] - 1, box[3] - 1], fill=TARGET)


def lesson_screen(rng: random.Random, target: bool = True) -> tuple[Image.Image, tuple | None]:
    """A screen with a few labelled panels and, when ``target``, one green square on it, 16-84
    px wide at the size the model sees. Most are drawn small, at that size (6-16 cells a side,
    at most 3:1); a third up to 3x larger, for the adapter to shrink as it shrinks a real
    screenshot (to its full pixel budget: 256 cells, up to about 28 on a side). Fewer big
    images: the vision tower's patches are most of a lesson's cost."""
    while True:
        w, h = rng.randint(6, 16), rng.randint(6, 16)
        if max(w / h, h / w) <= 3:
            break
    scale = rng.uniform(1.0, 3.0) if rng.random() < 0.35 else 1.0
    W, H = round(w * CELL * scale), round(h * CELL * scale)
    dark = rng.random() < 0.3
    bg = tuple(rng.randint(20, 70) if dark else rng.randint(200, 255) for _ in range(3))
    image = Image.new("RGB", (W, H), bg)
    draw = ImageDraw.Draw(image)
    palette = [(40, 60, 120), (200, 210, 230), (120, 120, 120), (230, 230, 230), (60, 60, 60)]
    palette += [(180, 40, 40), (90, 40, 140), (240, 200, 60), (30, 120, 220)]
    for _ in range(rng.randint(0, 8)):
        x0, y0 = rng.randint(0, W - 10), rng.randint(0, H - 8)
        x1, y1 = min(W, x0 + rng.randint(10, W // 2 + 10)), min(H, y0 + round(rng.randint(8, 60) * scale))
        colour = rng.choice(palette)
        draw.rectangle([x0, y0, x1, y1], fill=colour)
        if rng.random() < 0.6:
            ink = (0, 0, 0) if sum(colour) > 380 else (255, 255, 255)
            draw.text((x0 + 3, y0 + 2), rng.choice(_WORDS), fill=ink)
    if not target:
        return image, None
    side = round(rng.randint(16, min(84, w * CELL - 4, h * CELL - 4)) * scale)
    x0, y0 = rng.randint(0, W - side), rng.randint(0, H - side)
    box = (x0, y0, x0 + side, y0 + side)
    draw_target(image, box)
    return image, box


def in_model_frame(box: tuple | None, size: tuple[int, int], seen: tuple[int, int]) -> tuple | None:
    """``box`` on an image of ``size`` in pixels of the ``seen`` image the model is sent."""
    if box is None:
        return None
    sx, sy = seen[0] / size[0], seen[1] / size[1]
    return box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy


def answer_point(box: tuple | None, size: tuple[int, int]) -> tuple[int, int]:
    """Where the model points on an image of ``size`` with the target at ``box`` (or none)."""
    cx, cy = (size[0] / 2, size[1] / 2) if box is None else ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
    return int(cx // CELL) * CELL + CELL // 2, int(cy // CELL) * CELL + CELL // 2


def answer_box(box: tuple | None, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """The region answer: the target's cells and one cell around (the whole image with none)."""
    if box is None:
        return 0, 0, size[0], size[1]
    x0, y0 = (int(box[0] // CELL) - 1) * CELL, (int(box[1] // CELL) - 1) * CELL
    x1, y1 = (math.ceil(box[2] / CELL) + 1) * CELL, (math.ceil(box[3] / CELL) + 1) * CELL
    return max(0, x0), max(0, y0), min(size[0], x1), min(size[1], y1)


def tool_call(x: int, y: int) -> str:
    args = f'{{"action": "left_click", "coordinate": [{x}, {y}]}}'
    return f'<tool_call>\n{{"name": "computer_use", "arguments": {args}}}\n</tool_call>'


# ------------------------------------------------------------------ lessons
@dataclass
class Lesson:
    """One request as an adapter sent it and the answer taught for it."""

    family: str
    kind: str
    messages: list
    continue_final: bool  # the request pre-fills the assistant turn (the answer continues it)
    answer: str
    size: tuple[int, int] = (0, 0)  # the image given to the adapter
    target: tuple | None = None  # the green square on it (its pixels), if any
    reply: object = None  # what the adapter made of the answer (a ModelReply; None for "plain")


class _Recorder:
    """A ChatBackend that keeps the request and answers with the lesson's answer (so the
    adapter's own code path, pre-fill included, produces the request it would send)."""

    def __init__(self) -> None:
        self.answer = ""
        self.sent: tuple[list, dict] | None = None

    async def complete(self, messages, *, max_tokens: int = 512, temperature: float = 0.0, **extra):
        from regionfocus.adapters.backends.base import ChatResponse

        self.sent = (messages, extra)
        return ChatResponse(self.answer)

    async def aclose(self) -> None:
        pass


def _instruction(rng: random.Random) -> str:
    verb = rng.choice(["click", "open", "select", "press", "tap on", "go to"])
    return f"{verb} the {rng.choice(_WORDS)}{rng.choice(['', ' button', ' icon', ' menu', ' tab', ' link'])}"


async def _lesson(rng: random.Random, recorder: _Recorder, adapters: dict) -> Lesson:
    from regionfocus import Action, ActionType, Avoid, Option, Point, Query
    from regionfocus.stars import draw_stars

    family = rng.choice(FAMILIES)
    kind = rng.choices(list(_KINDS), list(_KINDS.values()))[0]
    adapter = adapters[family]
    while True:  # every coordinate three digits: one way to write a number, learnt sooner
        image, drawn = lesson_screen(rng, target=rng.random() < 0.9)
        seen = adapter.input_size(image.size)
        box = in_model_frame(drawn, image.size, seen)
        x, y = answer_point(box, seen)
        if min(x, y) >= 100:
            break
    query = Query(_instruction(rng))
    qwen, uitars = family == "qwen2.5-vl", family == "uitars-1.5"
    xy = f"({x},{y})"
    point_tag = f"Action: click(point='<point>{x} {y}</point>')"
    if kind == "grounding":
        recorder.answer = f"{x}, {y}]}}}}\n</tool_call>" if qwen else point_tag if uitars else xy
        reply = await adapter.act(image, query)
    elif kind == "agent":
        thought = "Thought: The green square is the target, so I click it.\n"
        recorder.answer = tool_call(x, y) if qwen else thought + point_tag if uitars else xy
        reply = await adapter.act(image, Query(query.instruction, mode="agent"))
    elif kind == "focal":  # the authors' focal text where the family has one, else ours
        recorder.answer = tool_call(x, y) if qwen else xy if uitars else f"[{x}, {y}]"
        reply = await adapter.propose_point(image, query, Avoid([]))
    elif kind == "focal-avoid":  # ours, with a point to avoid listed in text
        recorder.answer = f"({x}, {y})" if uitars else f"[{x}, {y}]"
        away = Point(rng.uniform(0, image.width), rng.uniform(0, image.height))
        reply = await adapter.propose_point(image, query, Avoid([away], on_image=False))
    elif kind == "zoom":
        recorder.answer = tool_call(x, y) if qwen else xy
        reply = await adapter.locate_in_view(image, query)
    elif kind in ("judge", "judge-own"):
        if drawn is not None and rng.random() < 0.5:
            star = Point(rng.uniform(drawn[0] + 1, drawn[2] - 1), rng.uniform(drawn[1] + 1, drawn[3] - 1))
        else:
            star = Point(rng.uniform(0, image.width), rng.uniform(0, image.height))
        hit = drawn is not None and drawn[0] <= star.x < drawn[2] and drawn[1] <= star.y < drawn[3]
        verdict = "YES" if hit else "NO"
        # The authors' text (grounding mode, where the family has one) asks for YES or NO; ours
        # for a "Verdict:" line.
        official = kind == "judge" and "judge" in adapter.round_prompts
        recorder.answer = verdict if official else f"Verdict: {verdict}"
        asked = query if kind == "judge" else Query(query.instruction, mode="agent")
        reply = await adapter.judge(draw_stars(image, [star]), asked, star)
    elif kind == "choose":
        n = rng.randint(2, 4)
        points = [Point(rng.uniform(0, image.width), rng.uniform(0, image.height)) for _ in range(n)]
        starred = draw_stars(image, points, [str(i + 1) for i in range(n)])
        options = [Option(i + 1, Action(ActionType.CLICK, point=p), True) for i, p in enumerate(points)]
        recorder.answer = "Selected point: 1"
        asked = query if rng.random() < 0.7 else Query(query.instruction, mode="agent")
        reply = await adapter.choose(starred, asked, options)
    elif kind == "region":
        recorder.answer = "[{}, {}, {}, {}]".format(*answer_box(box, seen))
        near = adapter.from_model(x, y, image.size) if rng.random() < 0.5 else None
        reply = await adapter.propose_box(image, query, near)
    else:  # a plain question with no template of ours, the image at the model's size
        reply = None
        recorder.answer = xy
        shown = await adapter.model_image(image)
        parts = [{"type": "image", "image": shown}, {"type": "text", "text": query.instruction}]
        recorder.sent = ([{"role": "user", "content": parts}], {})
    messages, extra = recorder.sent
    continued = bool(extra.get("continue_final_message"))
    return Lesson(family, kind, messages, continued, recorder.answer, image.size, drawn, reply)


def lessons(seed: int, n: int):
    """The first ``n`` lessons of the stream seeded by ``seed``, one at a time."""
    from regionfocus.adapters import get_adapter

    rng, recorder = random.Random(seed), _Recorder()
    adapters = {f: get_adapter(f, backend=recorder, max_tokens=64, max_pixels=MAX_PIXELS) for f in FAMILIES}
    loop = asyncio.new_event_loop()
    try:
        for _ in range(n):
            yield loop.run_until_complete(_lesson(rng, recorder, adapters))
    finally:
        loop.close()


def _texts(lesson: Lesson) -> list[str]:
    out = []
    for m in lesson.messages:
        content = m["content"]
        parts = [content] if isinstance(content, str) else [p.get("text", "") for p in content]
        out.extend(t for t in parts if t)
    return [*out, lesson.answer]


def recipe_key(seed: int = 0) -> str:
    """The cache key: this file, the random builder it reuses, and the text of the first lessons
    (an adapter whose template changed asks for a new model)."""
    h = hashlib.sha256()
    for path in (Path(__file__), Path(tiny_qwen.__file__)):
        h.update(path.read_bytes())
    for lesson in lessons(seed, 48):
        h.update(json.dumps([lesson.family, lesson.kind, lesson.continue_final, _texts(lesson)]).encode())
    return h.hexdigest()[:12]


# ------------------------------------------------------------------ training
def _encode(processor, lesson: Lesson):
    """(model inputs of the prompt as the server renders it, the answer's token ids + end)."""
    text = processor.apply_chat_template(
        lesson.messages,
        tokenize=False,
        add_generation_prompt=not lesson.continue_final,
        continue_final_message=lesson.continue_final,
    )
    images = [
        part["image"]
        for m in lesson.messages
        if isinstance(m["content"], list)
        for part in m["content"]
        if part.get("type") == "image"
    ]
    inputs = processor(text=[text], images=images or None, return_tensors="pt")
    answer = processor.tokenizer.encode(lesson.answer + "<|im_end|>", add_special_tokens=False)
    return inputs, answer


def _lesson_loss(model, inputs, answer):
    """Cross-entropy of the answer's tokens (the head runs on those positions only)."""
    import torch

    ids = torch.cat([inputs["input_ids"][0], torch.tensor(answer[:-1])])[None]
    kinds = inputs.get("mm_token_type_ids")
    extra = {}
    if kinds is not None:  # the answer's tokens are text
        text = torch.zeros(len(answer) - 1, dtype=kinds.dtype)
        extra["mm_token_type_ids"] = torch.cat([kinds[0], text])[None]
    if "pixel_values" in inputs:
        extra.update(pixel_values=inputs["pixel_values"], image_grid_thw=inputs["image_grid_thw"])
    hidden = model.model(input_ids=ids, **extra).last_hidden_state[0]
    n = inputs["input_ids"].shape[1]
    return torch.nn.functional.cross_entropy(model.lm_head(hidden[n - 1 :]), torch.tensor(answer))


def _check(model, processor, seed: int, n: int) -> dict:
    """Greedy answers to ``n`` unseen lessons: how many are exactly the lesson's answer."""
    import torch

    exact, misses = 0, []
    for lesson in lessons(seed, n):
        inputs, answer = _encode(processor, lesson)
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=len(answer) + 8, do_sample=False)
        got = out[0, inputs["input_ids"].shape[1] :].tolist()
        if got == answer:
            exact += 1
        elif len(misses) < 4:
            misses.append([lesson.family, lesson.kind, processor.tokenizer.decode(got), lesson.answer])
    return {"exact": exact, "of": n, "misses": misses}


def build(out_dir: str | os.PathLike[str], *, seed: int = 0, steps: int = STEPS, log=print) -> Path:
    """Train and write the model folder at ``out_dir`` (atomically; a complete one is reused)."""
    out = Path(out_dir)
    if tiny_qwen.complete(out, MARKER, RECIPE):
        return out
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    torch.set_num_threads(THREADS)
    torch.manual_seed(seed)
    t0, c0 = time.perf_counter(), time.process_time()
    corpus = "\n".join(dict.fromkeys(t for lesson in lessons(seed + 1, 300) for t in _texts(lesson)))
    tokenizer = tiny_qwen._train_tokenizer(out, vocab_size=2048, corpus=tiny_qwen._CORPUS + corpus)
    processor = tiny_qwen.tiny_processor(tokenizer)
    config = tiny_qwen.tiny_config(tokenizer, initializer_range=0.02, rope_theta=ROPE_THETA, layers=LAYERS)
    model = Qwen2_5_VLForConditionalGeneration(config)
    model.train()
    params = list(model.parameters())
    optimiser = torch.optim.AdamW(params, lr=LR, weight_decay=0.0)
    warmup = max(1, steps // 15)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser,
        lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)),
    )
    stream = lessons(seed, steps * BATCH)
    losses = []
    for step in range(steps):
        total = 0.0
        for _ in range(BATCH):
            loss = _lesson_loss(model, *_encode(processor, next(stream))) / BATCH
            loss.backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimiser.step()
        optimiser.zero_grad(set_to_none=True)
        schedule.step()
        losses.append(total)
        if step % 25 == 0 or step == steps - 1:
            log(f"[tiny-trained] step {step}/{steps} loss {total:.3f} ({time.perf_counter() - t0:.0f} s)")
    stream.close()
    model.eval()
    train_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    check = _check(model, processor, seed + 2, 24)
    log(f"[tiny-trained] {train_s:.0f} s ({cpu_s:.0f} CPU s); exact answers {check['exact']}/{check['of']}")
    tiny_qwen.set_generation_config(model, tokenizer)

    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".tiny_trained_", dir=out.parent))
    try:
        meta = {
            "recipe": RECIPE,
            "seed": seed,
            "steps": steps,
            "train_s": round(train_s, 1),
            "cpu_s": round(cpu_s, 1),
            "last_losses": [round(v, 4) for v in losses[-10:]],
            "check": check,
        }
        tiny_qwen.save_folder(work, model, processor, MARKER, meta)
        tiny_qwen.move_into_place(work, out)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return out


def ensure_trained_model(cache: str | os.PathLike[str], *, log=print) -> Path:
    """The cached model folder under ``cache`` (``tiny-trained-<key>``), trained if missing.
    Builders in several processes at once take turns: the later ones reuse the first's folder."""
    cache = Path(cache)
    out = cache / f"tiny-trained-{recipe_key()}"
    if tiny_qwen.complete(out, MARKER, RECIPE):
        return out
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "tiny-trained.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return build(out, log=log)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def model_meta(folder: str | os.PathLike[str]) -> dict:
    """What the build recorded (its times, last losses, the check of unseen lessons)."""
    return json.loads((Path(folder) / MARKER).read_text())


if __name__ == "__main__":  # python -m tests.tiny_trained CACHE_DIR: prints the folder
    with contextlib.redirect_stdout(sys.stderr):
        folder = ensure_trained_model(sys.argv[1])
    print(folder)
