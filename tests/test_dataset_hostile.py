"""A shared ScreenSpot-Pro copy that lies: file names that leave images/, headers that claim
huge images. Each stops the load before anything is decoded or sent, naming the file; the CLI
exits 2 with that message, no traceback."""

from __future__ import annotations

import asyncio
import json
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from regionfocus import RegionFocusConfig
from regionfocus.agent import RegionFocusAgent
from regionfocus.kit.runlog import read_records
from regionfocus.screenspot_pro.cli import main as screenspot_main
from regionfocus.screenspot_pro.dataset import DEFAULT_MAX_IMAGE_PIXELS, DatasetError, load_dataset
from regionfocus.screenspot_pro.runner import run_samples

from .test_screenspot_helpers import ColourModel, fresh_dataset


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def header_only_png(path: Path, width: int, height: int) -> Path:
    """A PNG of a few dozen bytes whose header claims ``width`` x ``height``: its one data
    chunk holds next to nothing, so decoding it would allocate the full image for nothing."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(b"\0")) + _chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
    return path


def _point_first_record_at(root: Path, img_filename: str, img_size: list[int] | None = None) -> str:
    ann = sorted((root / "annotations").glob("*.json"))[0]
    recs = json.loads(ann.read_text())
    recs[0]["img_filename"] = img_filename
    if img_size is not None:
        recs[0]["img_size"] = img_size
        recs[0]["bbox"] = [0, 0, 10, 10]
    ann.write_text(json.dumps(recs))
    return str(recs[0]["id"])


@pytest.mark.parametrize("escape", ["../../secret.png", "../secret.png", "ABS", "sub/../../secret.png"])
def test_an_img_filename_outside_images_is_refused(tmp_path: Path, escape: str, capsys):
    data = fresh_dataset(tmp_path / "data")
    secret = tmp_path / "secret.png"
    Image.new("RGB", (64, 48), "red").save(secret)
    (data / "secret.png").write_bytes(secret.read_bytes())  # ../secret.png resolves here
    name = str(secret) if escape == "ABS" else escape
    sid = _point_first_record_at(data, name, [64, 48])
    with pytest.raises(DatasetError) as err:
        load_dataset(data)
    assert f"(id {sid!r}): img_filename {name!r} is outside images/" in str(err.value)
    argv = ["--data", str(data), "--out", str(tmp_path / "run"), "--agent", "ocr", "--no-progress"]
    assert screenspot_main(argv, model=ColourModel()) == 2
    err = capsys.readouterr().err
    assert "is outside images/" in err and len(err.strip().splitlines()) == 1


def test_names_that_stay_inside_images_load(tmp_path: Path):
    data = fresh_dataset(tmp_path / "data")
    first = sorted((data / "images").rglob("*.png"))[0]
    (data / "images" / "sub").mkdir()
    # A link the data set's author placed inside images/ is followed (Hugging Face snapshots).
    outside = tmp_path / "blobs"
    outside.mkdir()
    (outside / "blob").write_bytes(first.read_bytes())
    (data / "images" / "sub" / "linked.png").symlink_to(outside / "blob")
    with Image.open(first) as im:
        size = list(im.size)
    sid = _point_first_record_at(data, "sub/../sub/linked.png", size)
    (sample,) = [s for s in load_dataset(data) if s.id == sid]
    assert sample.image_path == data.resolve() / "images" / "sub/../sub/linked.png"
    assert sample.img_size == tuple(size)


@pytest.mark.parametrize(
    ("width", "height"),
    [(30000, 30000), (10000, 10000)],  # above Pillow's own error limit; between its warn and error
)
def test_a_header_claiming_a_huge_image_is_refused_without_decoding(tmp_path: Path, width, height):
    data = fresh_dataset(tmp_path / "data")
    header_only_png(data / "images" / "bomb.png", width, height)
    sid = _point_first_record_at(data, "bomb.png", [width, height])
    with pytest.raises(DatasetError) as err:
        load_dataset(data)
    message = str(err.value)
    assert f"(id {sid!r}): image file " in message and "bomb.png" in message
    assert "--max-image-pixels" in message


def test_the_pixel_limit_is_the_callers_to_raise(tmp_path: Path):
    data = fresh_dataset(tmp_path / "data")
    header_only_png(data / "images" / "big.png", 10000, 10000)  # 100 MP, above the 64 MP default
    sid = _point_first_record_at(data, "big.png", [10000, 10000])
    assert 100_000_000 > DEFAULT_MAX_IMAGE_PIXELS
    (sample,) = [s for s in load_dataset(data, max_image_pixels=120_000_000) if s.id == sid]
    assert sample.img_size == (10000, 10000)  # the header was read, not the (absent) pixels
    with pytest.raises(ValueError, match="max_image_pixels"):
        load_dataset(data, max_image_pixels=0)


def test_cli_exits_2_naming_the_bomb(tmp_path: Path, capsys):
    data = fresh_dataset(tmp_path / "data")
    header_only_png(data / "images" / "bomb.png", 30000, 30000)
    _point_first_record_at(data, "bomb.png", [30000, 30000])
    argv = ["--data", str(data), "--out", str(tmp_path / "run"), "--agent", "ocr", "--no-progress"]
    assert screenspot_main(argv, model=ColourModel()) == 2
    err = capsys.readouterr().err
    assert "bomb.png" in err and "--max-image-pixels" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()  # stopped before the run folder was made


def test_an_image_swapped_after_loading_is_an_error_record_not_a_decode(tmp_path: Path):
    data = fresh_dataset(tmp_path / "data")
    by_image = {}
    for s in load_dataset(data):
        by_image.setdefault(s.image_path, s)
    samples = list(by_image.values())  # one sample per screenshot
    assert len(samples) >= 2
    victim = samples[1]
    # Replaced between load and run by one within every limit: only the size check stops it.
    header_only_png(victim.image_path, 5000, 5000)
    agent = RegionFocusAgent(ColourModel(), RegionFocusConfig())
    asyncio.run(run_samples(samples, agent, tmp_path / "run", concurrency=2, progress=False))
    recs = {r["id"]: r for r in read_records(tmp_path / "run" / "records.jsonl")}
    assert set(recs) == {s.id for s in samples}  # every sample recorded, none lost
    assert "changed during the run" in recs[victim.id]["error"]
    assert all(recs[s.id]["error"] is None for s in samples if s is not victim)
