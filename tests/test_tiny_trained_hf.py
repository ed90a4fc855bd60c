"""The tiny trained Qwen2.5-VL (tests/tiny_trained.py) in process, through TransformersBackend:
each family's answer in its format, ended, and MVP's attention pass finds the ``,`` the answers
write, so ``--strategy mvp`` takes its views from attention on every sample, not the grid."""

from __future__ import annotations

import re

import pytest

from tests.tiny_trained import draw_target

pytest.importorskip("torch")
pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

from regionfocus.adapters.backends.transformers_local import TransformersBackend  # noqa: E402

pytestmark = pytest.mark.slow

TINY_MAX_PIXELS = 256 * 28 * 28
TARGET = (820, 420, 940, 540)


def shot() -> Image.Image:
    img = Image.new("RGB", (1280, 800), (245, 245, 245))
    draw_target(img, TARGET)
    return img


def inside(p, size) -> bool:
    return p is not None and 0 <= p.x <= size[0] and 0 <= p.y <= size[1]


@pytest.fixture(scope="session")
def trained_backend(tiny_trained_dir):
    backend = TransformersBackend(tiny_trained_dir, max_new_tokens=64, attention_layer=1)
    backend.load()
    return backend


@pytest.mark.parametrize(
    ("family", "answer"),
    [
        (
            "qwen2.5-vl",
            r"<tool_call>\n\{\"name\": \"computer_use\", .*\"coordinate\": \[\d+, \d+\]\}\}\n</tool_call>",
        ),
        ("uitars-1.5", r"Action: click\(point='<point>\d+ \d+</point>'\)"),
        ("gta1", r"\(\d+,\d+\)"),
    ],
)
async def test_in_process_answers_match_the_served_ones(trained_backend, family, answer):
    from regionfocus import Query
    from regionfocus.adapters import get_adapter

    model = get_adapter(family, backend=trained_backend, max_pixels=TINY_MAX_PIXELS)
    screen = shot()
    reply = await model.act(screen, Query("click the green square"))
    assert re.fullmatch(answer, reply.text, re.S), reply.text
    assert inside(reply.point, screen.size) and reply.usage.completion_tokens < 64  # ended


@pytest.mark.parametrize("family", ["qwen2.5-vl", "gta1"])
async def test_attention_pass_finds_the_answer_comma_near_the_target(trained_backend, family):
    """Qwen2.5-VL's pre-filled ``[`` is continued ``x, y]}}``; GTA1 writes ``(x,y)``: both hold
    a bare ``,`` (one token), so the pass reads real attention, not the grid's fallback."""
    from regionfocus import Query
    from regionfocus.adapters import get_adapter

    model = get_adapter(family, backend=trained_backend, max_pixels=TINY_MAX_PIXELS)
    positions, usage = await model.attention(shot(), Query("click the green square"), 10)
    assert usage.error is None and len(positions) == 10
    assert all(0 <= p.x <= 1280 and 0 <= p.y <= 800 for p in positions)


def test_screenspot_mvp_in_process_takes_attention_views_on_every_sample(trained_backend, tmp_path):
    from regionfocus.adapters import get_adapter
    from regionfocus.kit.runlog import read_records
    from regionfocus.screenspot_pro.cli import main
    from tests.test_vllm_e2e import green_dataset

    data, out = green_dataset(tmp_path / "data", 4), tmp_path / "run"
    argv = ["--data", str(data), "--out", str(out), "--agent", "gta1", "--no-progress",
            "--no-regionfocus", "--strategy", "mvp", "--concurrency", "2"]  # fmt: skip
    adapter = get_adapter("gta1", backend=trained_backend, max_pixels=TINY_MAX_PIXELS)
    assert main(argv, model=adapter) == 0
    records = read_records(out / "records.jsonl")
    assert len(records) == 4 and all(r["status"] == "ok" for r in records)
    for r in records:
        trace = r["strategies"]["mvp"]["trace"]
        steps = {s["stage"]: s for s in trace["steps"]}
        assert steps["views"]["proposal"] == "attention", trace["notes"]
    assert "grid views" not in (out / "summary.md").read_text()
