"""The tiny random Qwen2.5-VL folder the vLLM server serves, built once and cached.

Built by ``tests/tiny_qwen.py`` with the *product's* Python (transformers 5.x), in a child
process so the test process does not load torch for it. The folder name carries a hash of the
builder's source, so a changed builder gets a fresh folder; the builder itself writes
atomically and reuses a complete folder. Its config (``rope_parameters`` etc.) loads as is in
the vLLM venv's older transformers (checked with 5.19).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from .server import REPO, VllmSetupError, cache_root

BUILDER = REPO / "tests" / "tiny_qwen.py"


def model_cache_dir() -> Path:
    digest = hashlib.sha256(BUILDER.read_bytes()).hexdigest()[:12]
    return cache_root() / f"tiny-qwen25vl-{digest}"


def ensure_tiny_model(timeout_s: float = 600) -> Path:
    """The cached model folder, built if missing. Raises :class:`VllmSetupError` on failure."""
    if not BUILDER.exists():
        raise VllmSetupError(f"{BUILDER} is missing: it builds the tiny Qwen2.5-VL the server loads")
    out = model_cache_dir()
    code = "import sys; from tests.tiny_qwen import build_tiny_qwen25vl; build_tiny_qwen25vl(sys.argv[1])"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(out)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        )
    except subprocess.TimeoutExpired:
        raise VllmSetupError(f"building the tiny Qwen2.5-VL took over {timeout_s:.0f} s") from None
    if proc.returncode != 0 or not (out / "config.json").exists():
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        raise VllmSetupError(f"building the tiny Qwen2.5-VL with {BUILDER} failed:\n{tail}")
    return out
