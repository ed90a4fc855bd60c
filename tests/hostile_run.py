"""One `regionfocus screenspot-pro` run against a scripted server, as the hostile-run tests run it:
the real Qwen2.5-VL adapter over the real HTTP backend, the colour-swatch data set, and what a
run's folder is read back as (strict JSON lines, the official scores)."""

from __future__ import annotations

import json
from pathlib import Path

from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.openai_http import OpenAIBackend

from .chat_server import ChatServer
from .test_screenspot_helpers import default_screens

MODEL = "qwen-test"

# The built-in data's sample ids by their swatch's colour (what tests.hostile.colour_sample_of reads).
IDS_BY_COLOUR = {
    "".join(f"{c:02x}" for c in t.colour): t.id for targets in default_screens().values() for t in targets
}


def run_argv(data: Path, out: Path, srv: ChatServer, *extra: str) -> list[str]:
    """The command line of a run of ``data`` into ``out`` against ``srv``."""
    return [
        "--data", str(data), "--out", str(out), "--no-progress",
        "--agent", "qwen2.5-vl", "--base-url", srv.base_url, "--model", MODEL,
        "--concurrency", "3", *extra,
    ]  # fmt: skip


def quick_model(srv: ChatServer):
    """The adapter the flags build, with quick retries: the failures here are scripted to last,
    so the SDK's backoff would only add seconds."""
    backend = OpenAIBackend([srv.base_url], MODEL, timeout=30, max_retries=1, backoff=0.01)
    return get_adapter("qwen2.5-vl", backend=backend)


def strict_lines(path: Path) -> list[dict]:
    """Each line of a log as strict JSON (no NaN/Infinity) from valid UTF-8."""

    def refuse(c: str):
        raise AssertionError(f"non-finite constant {c} in the log")

    text = path.read_bytes().decode("utf-8")  # raises on invalid UTF-8
    return [json.loads(line, parse_constant=refuse) for line in text.splitlines()]


def records(out: Path) -> dict[str, dict]:
    """The run's records by id."""
    return {r["id"]: r for r in strict_lines(out / "records.jsonl")}


def results(out: Path) -> tuple[dict, dict]:
    """The official results of the final (+ RegionFocus) and baseline rows, whole."""
    return (
        json.loads((out / "results.json").read_text()),
        json.loads((out / "results_baseline.json").read_text()),
    )


def scores(out: Path) -> tuple[dict, dict]:
    """Correct of total, final and baseline rows."""
    keys = ("num_correct_action", "num_total")
    final, base = (r["metrics"]["overall"] for r in results(out))
    return {k: final[k] for k in keys}, {k: base[k] for k in keys}
