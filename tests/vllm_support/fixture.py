"""Session fixture ``vllm_server``: a real vLLM (CPU) server serving a tiny random Qwen2.5-VL.

Builds the vLLM venv on first use (``scripts/vllm_venv.sh``; a few minutes on a fresh machine,
then cached), builds the model folder (cached), starts the server once per test session and
stops it at the end whatever happens. Any setup failure fails the tests with the log tail: the
suite never silently skips them. Outside CI (``CI`` unset), ``REGIONFOCUS_SKIP_VLLM=1`` skips
them on purpose, e.g. on a machine without python3.11; ``-m "not vllm"`` deselects them.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .model_dir import ensure_tiny_model
from .server import VllmServer, VllmSetupError, cache_root, ensure_venv, start_server

# Random weights rarely emit EOS, so without a cap every call would run to the client's
# max_tokens (the CLI's adapters ask for 1024). 160 keeps the CPU time small yet makes decoding,
# which vLLM batches, outlast the per-request preprocessing that arrives one request at a time.
MAX_NEW_TOKENS = 160
START_TIMEOUT_S = 420.0  # about 1 min on an idle 2-core machine; slower when the CPUs are shared


@dataclass
class VllmHandle:
    """What tests use: ``base_url`` ends in ``/v1``; ``model`` is the served name."""

    base_url: str
    model: str
    server: VllmServer
    max_new_tokens: int  # the server's cap on every completion
    timings: dict[str, float] = field(default_factory=dict)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _give_up(msg: str) -> None:
    pytest.fail(f"{msg}\n(outside CI, REGIONFOCUS_SKIP_VLLM=1 skips the vLLM tests)", pytrace=False)


@pytest.fixture(scope="session")
def vllm_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> VllmHandle:
    if os.environ.get("REGIONFOCUS_SKIP_VLLM") == "1" and not _in_ci():
        pytest.skip("REGIONFOCUS_SKIP_VLLM=1: the real vLLM server tests are skipped on purpose")
    timings: dict[str, float] = {}
    try:
        python, timings["venv_s"] = ensure_venv(cache_root() / "vllm-venv-build.out")
    except VllmSetupError as e:
        _give_up(f"vLLM venv unavailable: {e}")
    try:
        t0 = time.perf_counter()
        model_dir = ensure_tiny_model()
        timings["model_s"] = time.perf_counter() - t0
        log = Path(tmp_path_factory.mktemp("vllm")) / "server.log"
        server = start_server(
            python, model_dir, log, timeout_s=START_TIMEOUT_S, max_new_tokens=MAX_NEW_TOKENS
        )
    except VllmSetupError as e:
        _give_up(str(e))
    timings["server_start_s"] = server.start_s
    handle = VllmHandle(server.base_url, server.model, server, MAX_NEW_TOKENS, timings)
    try:
        yield handle
    finally:
        timings["rss_gb_at_end"] = server.rss_bytes() / 1e9
        server.stop()
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            summary = ", ".join(f"{k}={v:.1f}" for k, v in timings.items())
            reporter.write_line(f"vllm_server fixture: {summary} (log: {server.log_path})")
