"""MVP in process, end to end, on a tiny Qwen2.5-VL that answers: ``--strategy mvp`` through the
ScreenSpot-Pro command with ``--backend hf`` takes its views from the attention pass on every
sample, through MVP's own request (ZJUSCL/MVP @ 988ff3c6, ``mvp_sspro.py``: its "(x,y)" system
prompt, 32 new tokens), and the layer comes from ``--attention-layer``.

The model. The tiny random Qwen2.5-VL of ``tests/tiny_qwen.py`` never writes a "," of its own
(its tokenizer merges commas into longer tokens, and its greedy text is random), so MVP's
attention pass would have no step to read. The trained tiny model (``tests/tiny_trained.py``)
writes one in its learnt answers (``tests/test_tiny_trained_hf.py``); here, to pin the answer and
its token count exactly, the random model's weights are edited into a model that always answers
"(12,34)": every attention and MLP output
projection is zeroed (each position's hidden state stays its own embedding, or the vision
tower's features at an image token), each token of the chain "assistant\\n" -> "(" -> "1" -> "2"
-> "," -> "3" -> "4" -> ")" -> <|im_end|> gets an embedding of its own and the output row of its
successor points at it. The attention pass is untouched: the decoding step that reads "," back
still computes its query and the image tokens' keys through the layer's real projections, so the
attended cells depend on the screenshot, and the pass runs exactly as for any model.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from tests.tiny_qwen import build_tiny_qwen25vl

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from regionfocus.adapters.backends.transformers_local import SEPARATOR, TransformersBackend  # noqa: E402

pytestmark = pytest.mark.slow

ANSWER = "(12,34)"
SHOT = (448, 336)


def answering_model(base: Path, out: Path, answer: str = ANSWER) -> Path:
    """A copy of the tiny model at ``base`` that answers ``answer`` to any request (module
    docstring); its tokens must be distinct."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    if (out / "config.json").exists():
        return out
    tok = AutoProcessor.from_pretrained(base).tokenizer
    model = AutoModelForImageTextToText.from_pretrained(base)
    ask = tok.apply_chat_template(
        [{"role": "user", "content": "x"}], add_generation_prompt=True, tokenize=False
    )
    chain = [tok.encode(ask, add_special_tokens=False)[-1]]
    chain += [tok.encode(c, add_special_tokens=False)[0] for c in answer]
    chain.append(tok.convert_tokens_to_ids("<|im_end|>"))
    assert len(set(chain)) == len(chain), chain
    with torch.no_grad():
        for layer in model.get_decoder().layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.get_decoder().norm.weight.fill_(1.0)
        embed, head = model.get_input_embeddings().weight, model.lm_head.weight
        for slot, (token, successor) in enumerate(zip(chain, chain[1:], strict=False)):
            embed[token] = 0.0
            embed[token, slot] = 1.0
            head[successor] = 0.0
            head[successor, slot] = 50.0
    work = out.with_name(out.name + ".building")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    for f in work.glob("*.safetensors"):
        f.unlink()
    model.save_pretrained(work)
    work.rename(out)
    return out


@pytest.fixture(scope="session")
def answering(tmp_path_factory) -> Path:
    t0 = time.perf_counter()
    models = tmp_path_factory.mktemp("mvp-models")
    path = answering_model(build_tiny_qwen25vl(models / "tiny-qwen25vl"), models / "answering")
    print(f"answering tiny Qwen2.5-VL built in {time.perf_counter() - t0:.2f}s")
    return path


def screenshot(size=SHOT, target=(300, 250, 420, 300)) -> Image.Image:
    img = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(img)
    d.rectangle(target, fill=(30, 120, 220))
    d.text((target[0] + 20, target[1] + 15), "Submit", fill="white")
    d.text((20, 20), "Settings  Profile  Search", fill="black")
    return img


def test_mvp_in_process_reads_the_attention_of_its_own_requests_answer(answering):
    from regionfocus.adapters import get_adapter
    from regionfocus.strategies import MVP
    from regionfocus.strategies.mvp import grid_windows, ranked_windows

    backend = TransformersBackend(answering, attention_layer=1)  # the tiny model has two layers
    adapter = get_adapter("qwen2.5-vl", backend=backend)
    shot = screenshot()
    res = asyncio.run(
        MVP(views=2, top_k=20, window=(112.0, 84.0)).run(adapter, shot, "Click the Submit button", None)
    )
    assert [c.kind for c in res.calls] == ["full", "attention", "view[0]", "view[1]"]
    assert all(c.error is None for c in res.calls) and res.calls[0].text == ANSWER
    # the answer and its end token: 8 new tokens, within MVP's 32
    assert res.calls[1].completion_tokens == 8 and not any("own grounding prompt" in n for n in res.notes)
    steps = {s["stage"]: s for s in res.steps}
    assert steps["views"]["proposal"] == "attention" and len(steps["attention"]["positions"]) == 20
    positions = [tuple(p) for p in steps["attention"]["positions"]]
    assert all(((x / 28) - 0.5).is_integer() and ((y / 28) - 0.5).is_integer() for x, y in positions)
    from regionfocus.geometry import Point

    expected = ranked_windows([Point(*p) for p in positions], shot.size, (112.0, 84.0), 2)
    assert steps["group"]["windows"] == [b.to_list() for b, _ in expected]
    assert steps["group"]["windows"] != [b.to_list() for b, _ in grid_windows(shot.size, 2)]
    # the full image's "(12,34)", in pixels of the 448 x 336 image it was sent at
    assert res.calls[0].image_size == [448, 336] and steps["group"]["points"][0] is not None
    # the token the pass reads is a token of its own in the answer, for the model's tokenizer
    tok = backend._processor.tokenizer
    (sep,) = tok.encode(SEPARATOR, add_special_tokens=False)
    assert sep in tok.encode(ANSWER, add_special_tokens=False)


def test_a_random_model_whose_answer_has_no_separator_fails_the_sample_loudly(answering, tmp_path_factory):
    """The tiny random model's greedy answer to MVP's request: no "," read back, so no attention
    step: the sample's MVP fails naming the answer (the grid is mvp-grid's, never MVP's)."""
    from regionfocus.adapters import get_adapter
    from regionfocus.strategies import MVP

    base = answering.parent / "tiny-qwen25vl"
    backend = TransformersBackend(base, attention_layer=1, max_new_tokens=12)
    adapter = get_adapter("qwen2.5-vl", backend=backend)
    with pytest.raises(
        RuntimeError,
        match=r"mvp: the attention pass gave no views \(ValueError: no attention step: the answer",
    ):
        asyncio.run(MVP(views=2).run(adapter, screenshot(), "Click the Submit button", None))


def write_screens(root: Path, n: int, size=(700, 440)) -> Path:
    """A ScreenSpot-Pro folder (the official layout) of ``n`` small screens, one target each."""
    (root / "annotations").mkdir(parents=True)
    (root / "images").mkdir()
    records = []
    for i in range(n):
        box = (80 + 150 * i, 120 + 60 * i, 200 + 150 * i, 160 + 60 * i)
        screenshot(size, box).save(root / "images" / f"s{i}.png")
        records.append(
            {
                "id": f"tiny_{i}",
                "img_filename": f"s{i}.png",
                "bbox": list(box),
                "img_size": list(size),
                "instruction": "Click the Submit button",
                "instruction_cn": "点击提交",
                "application": "tiny",
                "platform": "macos",
                "group": "Dev",
                "ui_type": "text",
            }  # fmt: skip
        )
    (root / "annotations" / "tiny_macos.json").write_text(json.dumps(records))
    return root


def test_screenspot_mvp_in_process_takes_attention_views_on_every_sample(answering, tmp_path):
    from regionfocus.geometry import Point
    from regionfocus.kit.runlog import read_records
    from regionfocus.screenspot_pro.cli import main
    from regionfocus.strategies.mvp import ranked_windows

    data, out = write_screens(tmp_path / "data", 3), tmp_path / "run"
    argv = ["--data", str(data), "--out", str(out), "--agent", "qwen2.5-vl", "--backend", "hf",
            "--model", str(answering), "--attention-layer", "1", "--no-progress", "--no-regionfocus",
            "--strategy", "mvp", "--concurrency", "1"]  # fmt: skip
    assert main(argv) == 0
    recs = read_records(out / "records.jsonl")
    assert len(recs) == 3 and all(r["status"] == "ok" for r in recs)
    for r in recs:
        row = r["strategies"]["mvp"]
        assert row["error"] is None, row["error"]
        trace = row["trace"]
        steps = {s["stage"]: s for s in trace["steps"]}
        assert steps["views"]["proposal"] == "attention" and len(steps["attention"]["positions"]) == 100
        positions = [Point(*p) for p in steps["attention"]["positions"]]
        assert steps["group"]["windows"] == [
            b.to_list() for b, _ in ranked_windows(positions, (700, 440), (1288.0, 728.0), 4)
        ]
        assert [c["kind"] for c in trace["calls"]][:2] == ["full", "attention"]
        assert not any("grid" in n for n in trace["notes"])
    assert (out / "results_mvp.json").exists()
    assert "mvp ran with grid views" not in (out / "summary.md").read_text()
