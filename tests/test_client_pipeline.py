"""The client's pipeline around the images (issue 16): the decode limit apart from samples in
flight, the peak-RSS line of summary.md, view images released once their request is built,
and the server flag of the local transport in serve-command."""

from __future__ import annotations

import asyncio
import gc
import shlex
import weakref

import pytest
from PIL import Image

from regionfocus import ModelReply, Point, Query, RegionFocus, RegionFocusConfig
from regionfocus.actions import click
from regionfocus.adapters.serving import serve_command
from regionfocus.screenspot_pro.dataset import load_dataset
from regionfocus.screenspot_pro.runner import run_samples, run_screenspot
from tests.scripted import ScriptedModel

from .test_screenspot_helpers import ColourModel, fresh_dataset


def test_serve_command_names_the_local_media_folder():
    argv = shlex.split(serve_command("qwen2.5-vl", local_media_path="/dev/shm"))
    assert argv[argv.index("--allowed-local-media-path") + 1] == "/dev/shm"
    assert "--allowed-local-media-path" not in serve_command("qwen2.5-vl")


def test_summary_has_the_client_peak_rss_and_records_carry_it(tmp_path):
    data = fresh_dataset(tmp_path / "data")
    samples = load_dataset(data)[:3]
    records = asyncio.run(
        run_screenspot(
            samples, ColourModel(), RegionFocusConfig(), tmp_path / "run", progress=False, image_workers=1
        )
    )
    assert all(r["peak_rss_mb"] > 10 for r in records)
    summary = (tmp_path / "run" / "summary.md").read_text()
    line = next(ln for ln in summary.splitlines() if ln.startswith("- Client peak RSS:"))
    assert int(line.split(":")[1].split()[0]) == max(r["peak_rss_mb"] for r in records)


def test_decodes_are_limited_apart_from_samples_in_flight(tmp_path, monkeypatch):
    import regionfocus.screenspot_pro.runner as runner

    data = fresh_dataset(tmp_path / "data")
    samples = load_dataset(data)[:6]
    active, peak = 0, 0
    real = runner._load_rgb

    def counting(*args):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        try:
            return real(*args)
        finally:
            active -= 1

    monkeypatch.setattr(runner, "_load_rgb", counting)
    model = ColourModel()
    asyncio.run(
        run_samples(samples, _agent(model), tmp_path / "run", concurrency=6, progress=False, image_workers=1)
    )
    assert peak == 1
    with pytest.raises(ValueError, match="--image-workers"):
        asyncio.run(run_samples(samples, _agent(model), tmp_path / "r2", image_workers=0))


def _agent(model):
    from regionfocus.agent import RegionFocusAgent

    return RegionFocusAgent(model, RegionFocusConfig())


async def test_round_lets_each_view_image_go_with_its_request():
    """The orchestrator keeps no view image while the candidates are asked: a model that
    drops its reference (as the HTTP backend does once the body is built) frees it."""
    refs: list[weakref.ref] = []
    release = asyncio.Event()

    async def act(image, query, *, zoomed=False):
        refs.append(weakref.ref(image))
        size = image.size
        del image  # the model (backend) is done with the pixels
        await release.wait()
        return ModelReply("c", action=click(size[0] / 2, size[1] / 2))

    model = ScriptedModel(on_focal=lambda *a, **k: ModelReply("f", point=Point(400, 300)))
    model.act = act
    rf = RegionFocus(model, RegionFocusConfig())
    task = asyncio.create_task(rf.refine(Image.new("RGB", (800, 600), "white"), Query("x")))
    while len(refs) < 4:
        await asyncio.sleep(0)
    gc.collect()
    alive = [r() is not None for r in refs]
    release.set()
    res = await task
    assert alive == [False] * 4, "a view image was kept while its request waited"
    assert len(res.views) == 4 and res.views[0]["size"]
