"""The commands' guards on a shared run folder: a second process on a folder in use exits 2 at
once, naming the holder; a resume that would change what the model is sent exits 2 naming the
setting. Both through the real commands, as a user meets them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from regionfocus.screenspot_pro.cli import main as screenspot_main
from regionfocus.webvoyager.cli import main as webvoyager_main

from .chat_server import ChatServer
from .test_runlog_safety import folder_holder
from .test_screenspot_helpers import ColourModel, fresh_dataset
from .test_screenspot_http import QwenLike

ROOT = Path(__file__).resolve().parents[1]


def _wait_for_lock(proc: subprocess.Popen, out: Path) -> None:
    """Until ``proc`` has written its pid into the folder's lock (it holds the lock then)."""
    deadline = time.monotonic() + 120
    lock = out / ".lock"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the first run ended early: {proc.communicate()}")
        try:
            if json.loads(lock.read_text() or "{}").get("pid") == proc.pid:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError("the first run never took the folder")


@pytest.mark.slow  # a subprocess
def test_second_screenspot_run_on_a_folder_in_use_exits_2_naming_the_holder(tmp_path: Path, capsys):
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    argv = ["--data", str(data), "--out", str(out), "--agent", "ocr", "--no-progress"]
    # The first run's model never answers: it holds the folder for as long as the test needs.
    code = "import sys; from tests.test_screenspot_helpers import cli_main; sys.exit(cli_main())"
    env = {**os.environ, "COLOUR_MODEL_LATENCY": "3600", "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen(
        [sys.executable, "-c", code, *argv], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        _wait_for_lock(first, out)
        assert screenspot_main(argv, model=ColourModel()) == 2
        err = capsys.readouterr().err
        assert f"pid {first.pid}" in err and "in use" in err and "--out" in err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 2  # the count line, then ours
    finally:
        first.kill()
        first.wait(timeout=30)
    # the holder died without a word: its lock went with it and the folder resumes
    assert screenspot_main(argv, model=ColourModel()) == 0


def test_second_webvoyager_run_on_a_folder_in_use_exits_2(tmp_path: Path, capsys):
    out = tmp_path / "wv"
    holder = folder_holder(out)
    try:
        argv = ["--tasks", "miniwob:click-button", "--agent", "ocr", "--out", str(out), "--no-progress"]
        code = webvoyager_main(argv)
        err = capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert code == 2, err
    assert f"pid {holder.pid}" in err and "in use" in err and "Traceback" not in err


@pytest.mark.slow  # two runs through the HTTP backend
def test_resuming_a_png_run_with_jpeg_exits_2_naming_the_difference(tmp_path: Path, capsys):
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    with ChatServer(responder=QwenLike(), model="qwen-test") as srv:
        argv = [
            "--data", str(data), "--out", str(out), "--no-progress", "--limit", "1",
            "--agent", "qwen2.5-vl", "--base-url", srv.base_url, "--model", "qwen-test",
        ]  # fmt: skip
        assert screenspot_main(argv) == 0
        pinned = json.loads((out / "config.json").read_text())["identity"]["request"]
        assert pinned["image_format"] == "png" and pinned["transport"] == "data-url"
        assert pinned["family"] and len(pinned["resize"]) == 3  # the pixels the model sees
        capsys.readouterr()
        assert screenspot_main([*argv, "--image-format", "jpeg"]) == 2
        err = capsys.readouterr().err
        assert "request.image_format: 'png' in the folder, 'jpeg' now" in err
        assert "request.image_quality: None in the folder, 95 now" in err
        # A quality beside PNG changes nothing the model sees: not a different experiment.
        assert screenspot_main([*argv, "--image-quality", "80"]) == 0
