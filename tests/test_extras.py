"""The parts beyond ScreenSpot-Pro against a server are extras: a command that needs one that
is not installed exits 2 naming the pip line, and the ScreenSpot-Pro path loads none of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_without(modules: list[str], argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``regionfocus ARGV`` in a fresh interpreter where ``modules`` cannot be imported."""
    code = (
        "import sys\n"
        f"for m in {modules!r}: sys.modules[m] = None  # what a missing package looks like\n"
        "from regionfocus.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    ("missing", "argv", "extra"),
    [
        (["playwright"], ["webvoyager", "--tasks", "miniwob:click-button", "--agent", "ocr"], "browser"),
        (["rapidocr", "onnxruntime"], ["screenspot-pro", "--data", "DATA", "--agent", "ocr"], "ocr"),
        (["bpe_openai"], ["a11y", "--help"], None),  # help needs no tokenizer
    ],
)
def test_a_missing_extra_exits_2_naming_the_pip_line(tmp_path, missing, argv, extra):
    from .test_screenspot_helpers import fresh_dataset

    data = fresh_dataset(tmp_path / "data")
    argv = [str(data) if a == "DATA" else a for a in argv] + (
        ["--out", str(tmp_path / "run")] if extra else []
    )
    done = _run_without(missing, argv, tmp_path)
    if extra is None:
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == 2, done.stderr
    assert f"pip install 'regionfocus[{extra}]'" in done.stderr and "Traceback" not in done.stderr


def test_the_screenspot_http_path_imports_no_extra(tmp_path):
    code = (
        "import sys, json\n"
        "import regionfocus.screenspot_pro.cli, regionfocus.screenspot_pro.runner\n"
        "from regionfocus.adapters import get_adapter\n"
        "from regionfocus.adapters.backends.openai_http import OpenAIBackend\n"
        "get_adapter('qwen2.5-vl', backend=OpenAIBackend(['http://127.0.0.1:9/v1'], 'm'))\n"
        "heavy = ['playwright', 'miniwob', 'rapidocr', 'onnxruntime', 'bpe_openai', 'torch', 'transformers']\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
