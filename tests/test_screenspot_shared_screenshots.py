"""The samples in flight share their screen's decoded screenshot (issue 22): one decode per
screen, not per sample, with the same records; a screenshot that cannot be decoded is each
sample's error, and nothing stays held after the run."""

from __future__ import annotations

import asyncio

from regionfocus.agent import RegionFocusAgent
from regionfocus.screenspot_pro.dataset import load_dataset
from regionfocus.screenspot_pro.runner import Screenshots, run_samples

from .test_screenspot_helpers import ColourModel, fresh_dataset


def _counting_decodes(monkeypatch):
    import regionfocus.screenspot_pro.runner as runner

    decoded: list[str] = []
    real = runner._load_rgb

    def counting(path, size):
        decoded.append(path.name)
        return real(path, size)

    monkeypatch.setattr(runner, "_load_rgb", counting)
    return decoded


def _points(records):
    return [
        (r["id"], r["baseline"]["point"], r["final"]["point"], r["verdict"], r["trigger"]) for r in records
    ]


def test_each_screen_is_decoded_once_for_its_samples_in_flight(tmp_path, monkeypatch):
    data = fresh_dataset(tmp_path / "data")
    samples = load_dataset(data)
    screens = {s.image_path for s in samples}
    assert len(samples) == 9 and len(screens) == 2
    decoded = _counting_decodes(monkeypatch)
    shared = asyncio.run(
        run_samples(samples, RegionFocusAgent(ColourModel()), tmp_path / "a", concurrency=9, progress=False)
    )
    assert len(decoded) == 2
    decoded.clear()
    one_at_a_time = asyncio.run(
        run_samples(samples, RegionFocusAgent(ColourModel()), tmp_path / "b", concurrency=1, progress=False)
    )
    # One sample in flight holds its screenshot alone: each sample decodes it again.
    assert len(decoded) == len(samples)
    assert _points(shared) == _points(one_at_a_time)


def test_an_undecodable_screenshot_is_each_samples_error(tmp_path):
    data = fresh_dataset(tmp_path / "data")
    samples = load_dataset(data)
    broken = samples[0].image_path
    broken.write_bytes(b"not a png")
    records = asyncio.run(
        run_samples(samples, RegionFocusAgent(ColourModel()), tmp_path / "run", concurrency=9, progress=False)
    )
    hit = [r for r, s in zip(records, samples, strict=True) if s.image_path == broken]
    other = [r for r, s in zip(records, samples, strict=True) if s.image_path != broken]
    assert hit and all(r["status"] == "error" and "cannot identify image" in r["error"] for r in hit)
    assert other and all("cannot identify" not in (r["error"] or "") for r in other)


async def test_a_screenshot_is_let_go_when_its_last_holder_is_done(tmp_path):
    data = fresh_dataset(tmp_path / "data")
    s = load_dataset(data)[0]
    shots = Screenshots(asyncio.Semaphore(1))
    a = await shots.hold(s.image_path, s.img_size)
    b = await shots.hold(s.image_path, s.img_size)
    assert a is b and shots.decodes == 1
    shots.release(s.image_path, s.img_size)
    c = await shots.hold(s.image_path, s.img_size)
    assert c is a and shots.decodes == 1  # still held by one: shared, not decoded again
    shots.release(s.image_path, s.img_size)
    shots.release(s.image_path, s.img_size)
    assert not shots._live
    await shots.hold(s.image_path, s.img_size)
    assert shots.decodes == 2


async def test_a_cancelled_holder_does_not_cancel_the_decode_the_others_wait_for(tmp_path):
    data = fresh_dataset(tmp_path / "data")
    s = load_dataset(data)[0]
    shots = Screenshots(asyncio.Semaphore(1))
    first = asyncio.create_task(shots.hold(s.image_path, s.img_size))
    second = asyncio.create_task(shots.hold(s.image_path, s.img_size))
    await asyncio.sleep(0)
    first.cancel()
    image = await second
    assert image.size == tuple(s.img_size) and first.cancelled()
    shots.release(s.image_path, s.img_size)
    assert not shots._live
