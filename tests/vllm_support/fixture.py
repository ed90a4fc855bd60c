"""Session fixtures: ``vllm_server``, a real vLLM (CPU) server serving the tiny trained
Qwen2.5-VL (``tests/tiny_trained.py``), and ``tiny_trained_dir``, that model's folder for
in-process use (transformers).

Builds the vLLM venv on first use (``scripts/vllm_venv.sh``; a few minutes on a fresh machine,
then cached), trains the model (a few minutes, then cached), starts the server once per test
session and stops it at the end whatever happens. Any setup failure fails the tests with the log tail: the
suite never silently skips them. Outside CI (``CI`` unset), ``REGIONFOCUS_SKIP_VLLM=1`` skips
them on purpose, e.g. on a machine without python3.11; ``-m "not vllm"`` deselects them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .model_dir import TinyModelBuild, ensure_tiny_model
from .server import VllmServer, VllmSetupError, cache_root, ensure_venv, start_server

# A bound on every completion whatever the client asks (the CLI's adapters ask for 1024): the
# trained model's answers are under 50 tokens, so only a reply that runs away reaches it, and
# the batching test's replies, which ignore the end token, stop there. 256: long enough that
# decoding, which vLLM batches, outlasts the per-request intake (at 128, eight requests ran
# one after another: overlap 1.0-1.3; at 256, 7.1).
MAX_NEW_TOKENS = 256
START_TIMEOUT_S = 420.0  # about 1 min on an idle 2-core machine; slower when the CPUs are shared


@dataclass
class VllmHandle:
    """What tests use: ``base_url`` ends in ``/v1``; ``model`` is the served name;
    ``model_dir`` the folder it serves."""

    base_url: str
    model: str
    server: VllmServer
    model_dir: Path
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
        build = TinyModelBuild()  # trains (or finds) the model while the venv is built
    except VllmSetupError as e:
        _give_up(str(e))
    try:
        python, timings["venv_s"] = ensure_venv(cache_root() / "vllm-venv-build.out")
    except VllmSetupError as e:
        build.process.kill()
        build.process.communicate()
        _give_up(f"vLLM venv unavailable: {e}")
    try:
        model_dir = build.result()
        timings["model_s"] = build.seconds()  # from the start, so overlapping the venv's build
        log = Path(tmp_path_factory.mktemp("vllm")) / "server.log"
        server = start_server(
            python, model_dir, log, timeout_s=START_TIMEOUT_S, max_new_tokens=MAX_NEW_TOKENS
        )
    except VllmSetupError as e:
        _give_up(str(e))
    timings["server_start_s"] = server.start_s
    handle = VllmHandle(server.base_url, server.model, server, model_dir, MAX_NEW_TOKENS, timings)
    try:
        yield handle
    finally:
        timings["rss_gb_at_end"] = server.rss_bytes() / 1e9
        server.stop()
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            summary = ", ".join(f"{k}={v:.1f}" for k, v in timings.items())
            reporter.write_line(f"vllm_server fixture: {summary} (log: {server.log_path})")


@pytest.fixture(scope="session")
def tiny_trained_dir() -> Path:
    """The tiny trained Qwen2.5-VL's folder (trained on first use, then cached), for
    ``TransformersBackend``: it answers every family's request in that family's format and ends
    its replies (``tests/tiny_trained.py``)."""
    try:
        return ensure_tiny_model()
    except VllmSetupError as e:
        pytest.fail(str(e), pytrace=False)
