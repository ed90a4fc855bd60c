"""TransformersBackend for real, on a tiny randomly initialised Qwen2.5-VL built in the test
session (tests/tiny_qwen.py), and a whole RegionFocus round through it: the model's random text
is the malformed-output test for the Qwen adapter and the orchestrator."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from PIL import Image, ImageDraw

from tests.tiny_qwen import build_tiny_qwen25vl

pytest.importorskip("torch")
pytest.importorskip("transformers")

from regionfocus.adapters.backends.transformers_local import TransformersBackend  # noqa: E402

pytestmark = pytest.mark.slow

CAP = 24  # new tokens per call: random text never stops early, so this bounds every call


@pytest.fixture(scope="session")
def tiny_qwen_dir(tmp_path_factory):
    t0 = time.perf_counter()
    path = build_tiny_qwen25vl(tmp_path_factory.mktemp("models") / "tiny-qwen25vl")
    print(f"tiny Qwen2.5-VL built in {time.perf_counter() - t0:.2f}s")
    return path


@pytest.fixture(scope="session")
def hf_backend(tiny_qwen_dir):
    backend = TransformersBackend(tiny_qwen_dir, max_new_tokens=CAP)
    t0 = time.perf_counter()
    backend.load()
    print(f"tiny Qwen2.5-VL loaded in {time.perf_counter() - t0:.2f}s")
    return backend


def screenshot(size=(448, 336)) -> Image.Image:
    img = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(img)
    d.rectangle((300, 250, 420, 300), fill=(30, 120, 220))
    d.text((320, 265), "Submit", fill="white")
    d.text((20, 20), "Settings  Profile  Search", fill="black")
    return img


def ask(text: str, image: Image.Image | None = None) -> list[dict]:
    parts = ([{"type": "image", "image": image}] if image is not None else []) + [
        {"type": "text", "text": text}
    ]
    return [{"role": "user", "content": parts}]


def test_build_is_cached_and_deterministic(tiny_qwen_dir, tmp_path):
    stamp = (tiny_qwen_dir / "model.safetensors").stat().st_mtime_ns
    assert build_tiny_qwen25vl(tiny_qwen_dir) == tiny_qwen_dir
    assert (tiny_qwen_dir / "model.safetensors").stat().st_mtime_ns == stamp  # reused, not rebuilt
    again = build_tiny_qwen25vl(tmp_path / "again")
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (again / name).read_bytes() == (tiny_qwen_dir / name).read_bytes(), name


async def test_complete_with_image_records_tokens_and_latency(hf_backend):
    out = await hf_backend.complete(ask("Click the Submit button.", screenshot()), max_tokens=200)
    assert isinstance(out.text, str)
    assert out.usage.completion_tokens is not None and 1 <= out.usage.completion_tokens <= CAP
    # 448x336 at 14-px patches merged 2x2: 16*12 = 192 image tokens plus the chat text.
    assert out.usage.prompt_tokens > 192
    assert out.usage.latency_s > 0
    assert out.usage.endpoint == f"hf:{hf_backend.model_path}"
    print(f"per-call latency {out.usage.latency_s:.3f}s for {out.usage.completion_tokens} new tokens")


async def test_images_kept_at_the_adapter_size(hf_backend):
    # 560x476 is over the tiny processor's own max_pixels (256*28*28): it would shrink it if
    # allowed to resize. The backend must keep the adapter's size: 20*17 = 340 image tokens,
    # against 10*8 = 80 for a 280x224 image with the same text.
    big = await hf_backend.complete(ask("Where?", Image.new("RGB", (560, 476), "gray")), max_tokens=1)
    small = await hf_backend.complete(ask("Where?", Image.new("RGB", (280, 224), "gray")), max_tokens=1)
    assert big.usage.prompt_tokens - small.usage.prompt_tokens == 340 - 80


async def test_greedy_and_seeded_sampling_are_repeatable(hf_backend):
    msgs = ask("Describe the screen.", screenshot().resize((224, 168)))
    a = await hf_backend.complete(msgs, temperature=0.0, max_tokens=12)
    b = await hf_backend.complete(msgs, temperature=0.0, max_tokens=12)
    assert a.text == b.text
    s1 = await hf_backend.complete(msgs, temperature=1.5, seed=1, max_tokens=12)
    s2 = await hf_backend.complete(msgs, temperature=1.5, seed=1, max_tokens=12)
    assert s1.text == s2.text  # same seed, same sample


async def test_unaligned_image_is_processed_with_a_warning(hf_backend, caplog):
    out = await hf_backend.complete(ask("Where?", Image.new("RGB", (301, 199), "gray")), max_tokens=2)
    assert out.usage.completion_tokens >= 1
    assert "not multiples of 28" in caplog.text


async def test_bad_messages_are_named(hf_backend):
    with pytest.raises(ValueError, match="unsupported content part type 'audio'"):
        await hf_backend.complete([{"role": "user", "content": [{"type": "audio"}]}])


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        TransformersBackend(tmp_path / "nope")


def test_module_import_does_not_import_torch():
    code = "import sys, regionfocus.adapters.backends; assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_regionfocus_round_on_random_text(hf_backend):
    """A whole round through the Qwen2.5-VL adapter on the tiny model: every call is made and
    recorded, unparseable answers become None actions, and nothing raises."""
    from regionfocus import RegionFocus
    from regionfocus.adapters import get_adapter
    from regionfocus.model import Query

    adapter = get_adapter("qwen2.5-vl", backend=hf_backend, max_tokens=CAP)
    shot = screenshot()
    result = await RegionFocus(adapter).refine(shot, Query("Click the Submit button"))

    kinds = [c.kind for c in result.calls]
    assert kinds[0] == "focal"
    candidate_calls = [c for c in result.calls if c.kind.startswith("candidate[")]
    assert len(candidate_calls) == len(result.boxes) == len(result.views) >= 1
    for call in result.calls:
        assert call.error is None, call
        assert call.endpoint == f"hf:{hf_backend.model_path}"
        assert 1 <= call.completion_tokens <= CAP and call.prompt_tokens > 0
    # Which views proposed a candidate follows from parsing each raw answer, nothing else.
    index = {int(c.kind[len("candidate[") : -1]): c for c in candidate_calls}
    assert sorted(index) == list(range(len(result.boxes)))
    proposed_views = sorted(v for cand in result.candidates for v in cand.views)
    assert proposed_views == sorted(i for i, c in index.items() if _parses(adapter, c.text))
    if not result.candidates:
        assert result.action is None and result.choice_method == "none"
    else:
        assert result.action is not None and result.choice is not None
    print(f"round: {len(result.calls)} calls in {result.wall_s:.2f}s; candidates={len(result.candidates)}")


def _parses(adapter, text: str) -> bool:
    # Size is irrelevant to whether the text parses; any positive size will do.
    return adapter.parse_action(text, 100, 100) is not None


async def test_every_request_kind_survives_random_text(hf_backend):
    """judge / choose / propose_box / propose_point on random answers: no exception, and the
    parsed fields are either absent or well-formed."""
    from regionfocus import Avoid, Option, Point, Query, Verdict
    from regionfocus.actions import click
    from regionfocus.adapters import get_adapter

    adapter = get_adapter("qwen2.5-vl", backend=hf_backend, max_tokens=CAP)
    shot, query = screenshot(), Query("Click the Submit button")
    judged = await adapter.judge(shot, query, Point(360, 275))
    assert judged.verdict in (Verdict.YES, Verdict.NO, Verdict.UNKNOWN)
    options = [Option(1, click(360, 275), True), Option(2, click(40, 25), True)]
    chosen = await adapter.choose(shot, query, options)
    assert chosen.choice is None or chosen.choice in (1, 2)
    focal = await adapter.propose_point(shot, query, Avoid([Point(40, 25)]))
    region = await adapter.propose_box(shot, query, None)
    for reply in (judged, chosen, focal, region):
        assert reply.usage.error is None and 1 <= reply.usage.completion_tokens <= CAP


# ------------------------------------------------------------------ MVP's attention pass
# The random model seldom writes a bare "," (its tokenizer merges commas into longer tokens), so
# the tests of the pass's plumbing take as separator a token its greedy answer does write; the
# arithmetic on "," itself is tests/test_mvp_attention.py's.


def answer_ids(backend, messages, **sampling) -> list[int]:
    """The greedy answer's token ids, as the backend's own generate gives them."""
    import torch

    inputs = backend._inputs(messages, sampling)
    with torch.inference_mode():
        out = backend._model.generate(
            **inputs, max_new_tokens=CAP, do_sample=False, temperature=None, top_p=None, top_k=None
        )
    return out[0, inputs["input_ids"].shape[1] :].tolist()


def separator_in(backend, ids: list[int]) -> tuple[str, int]:
    """A token of the answer ``ids`` the model read back (not the last), spelled so that it is
    one token, and the index of its last reading."""
    tok = backend._processor.tokenizer
    for t in ids[:-1]:
        text = tok.decode([t])
        if tok.encode(text, add_special_tokens=False) == [t] and t not in tok.all_special_ids:
            return text, max(j for j, u in enumerate(ids[:-1]) if u == t)
    pytest.fail(f"no usable separator among {ids}")


@pytest.fixture(scope="session")
def hf_attending(tiny_qwen_dir):
    """The tiny model with MVP's attention pass on its last layer (it has two; the official 20
    is past its end)."""
    backend = TransformersBackend(tiny_qwen_dir, max_new_tokens=CAP, attention_layer=1)
    backend.load()
    return backend


async def test_attention_pass_reads_the_step_after_the_separator_as_an_eager_forward_does(
    hf_attending, tiny_qwen_dir
):
    """The captured query and keys are those of the decoding step that reads the separator
    back (its last reading): an independent eager forward over the prompt and the answer up to
    that token, with the attention weights transformers returns, names the same top cells in
    the same order."""
    import torch
    from transformers import AutoModelForImageTextToText

    from regionfocus.adapters.backends.transformers_local import top_cells

    messages = ask("Open the settings", screenshot())
    ids = answer_ids(hf_attending, messages)
    separator, at = separator_in(hf_attending, ids)
    backend = TransformersBackend(tiny_qwen_dir, max_new_tokens=CAP, attention_layer=1, separator=separator)
    found = await backend.attend(messages, top_k=10, max_tokens=CAP)
    assert found.separator_at == at and len(found.cells) == 10
    assert found.grid == (16, 12) and found.cell == 28 and found.usage.prompt_tokens > 192
    assert found.text == (await backend.complete(messages, max_tokens=CAP)).text  # the same greedy answer

    inputs = backend._inputs(messages, {})
    eager = AutoModelForImageTextToText.from_pretrained(tiny_qwen_dir, attn_implementation="eager").eval()
    seq = torch.cat([inputs["input_ids"][0], torch.tensor(ids[: at + 1])])[None]
    types = torch.cat([inputs["mm_token_type_ids"][0], torch.zeros(at + 1, dtype=torch.long)])[None]
    with torch.inference_mode():
        res = eager(
            input_ids=seq,
            attention_mask=torch.ones_like(seq),
            mm_token_type_ids=types,  # marks the image tokens, for their 3-D rotary positions
            pixel_values=inputs["pixel_values"],
            image_grid_thw=inputs["image_grid_thw"],
            output_attentions=True,
        )
    prompt = inputs["input_ids"][0]
    start = int(torch.nonzero(prompt == eager.config.vision_start_token_id)[0])
    end = int(torch.nonzero(prompt == eager.config.vision_end_token_id)[0])
    row = res.attentions[1][0, :, -1, :].max(dim=0)[0][start + 1 : end]
    assert top_cells(row, 16, 10) == found.cells
    # a separator the answer does not hold: no cells, no error
    backend.separator = "<|box_end|>"
    assert (await backend.attend(messages, top_k=10, max_tokens=CAP)).cells == []


async def test_attention_layer_past_the_model_is_named(hf_backend, hf_attending):
    with pytest.raises(
        ValueError, match=r"attention_layer 20 is past the model's last decoder layer \(2 layers"
    ):
        await hf_backend.attend(ask("Where?", screenshot()), top_k=5)
    with pytest.raises(ValueError, match="needs a request with an image"):
        await hf_attending.attend(ask("Where?"), top_k=5)


# MVP itself in process (its own "(x,y)" request, attention views on every sample of a
# screenspot-pro run, --attention-layer): tests/test_mvp_inprocess.py, on a tiny model whose
# answer holds the "," the pass reads; the random model here writes none.
