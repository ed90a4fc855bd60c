"""The tiny Qwen2.5-VL folder the vLLM server serves (and in-process tests load), trained once
and cached.

Trained by ``tests/tiny_trained.py`` with the *product's* Python (torch and transformers 5.x),
in a child process so the test process does not load torch for it. The folder name carries a
hash of the training script, of the random builder it reuses and of the first lessons' text,
so a changed recipe or adapter template trains a fresh folder; the builder writes atomically,
takes turns with other builders through a lock file and reuses a complete folder. Its config
loads as is in the vLLM venv's older transformers (checked with 5.19).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from .server import REPO, VllmSetupError, cache_root

BUILDER = REPO / "tests" / "tiny_trained.py"


class TinyModelBuild:
    """The builder, running: :meth:`result` waits for its folder. Started before the vLLM venv
    is built, the two overlap (pip mostly waits on the disk; training keeps two cores busy)."""

    def __init__(self, log_path: Path | None = None) -> None:
        if not BUILDER.exists():
            raise VllmSetupError(f"{BUILDER} is missing: it trains the tiny Qwen2.5-VL the server loads")
        self.log_path = log_path or cache_root() / "tiny-trained-build.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.started = time.perf_counter()
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.tiny_trained", str(cache_root())],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            )

    def result(self, timeout_s: float = 3600) -> Path:
        """The model folder. Raises :class:`VllmSetupError` on failure. ``timeout_s``: training
        takes a few minutes on two idle cores, far longer on a machine whose cores are taken
        by other work; the bound only stops a hung build."""
        try:
            out, _ = self.process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise VllmSetupError(f"training the tiny Qwen2.5-VL took over {timeout_s:.0f} s") from None
        lines = out.strip().splitlines()
        folder = Path(lines[-1]) if lines else None
        if self.process.returncode != 0 or folder is None or not (folder / "config.json").exists():
            tail = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-40:])
            raise VllmSetupError(
                f"training the tiny Qwen2.5-VL with {BUILDER} failed ({self.log_path}):\n{tail}"
            )
        return folder

    def seconds(self) -> float:
        return time.perf_counter() - self.started


def ensure_tiny_model(timeout_s: float = 3600) -> Path:
    """The cached model folder, trained if missing (see :class:`TinyModelBuild`)."""
    return TinyModelBuild().result(timeout_s)
