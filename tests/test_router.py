"""A ScreenSpot-Pro run through a real router: vllm-router (``--policy consistent_hash``) in front
of two scripted Qwen2.5-VL-format servers, one ``--base-url`` pointing at the router.

Each server remembers which instructions it has grounded (its first grounding request of an
instruction is the full screenshot, later ones are views), like a replica whose prefix cache has
seen the screenshot: the run scores as against one server only if every request of a sample
reaches the same replica, which the client's X-Session-ID (the sample id) asks the router for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regionfocus.screenspot_pro.cli import main

from .chat_server import ChatServer, Router
from .test_screenspot_helpers import expected_outcomes, fresh_dataset
from .test_screenspot_http import QwenLike

pytestmark = pytest.mark.slow


def test_run_through_vllm_router_keeps_each_sample_on_one_replica(tmp_path: Path, capsys):
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    with ChatServer(QwenLike(), model="qwen-test") as a, ChatServer(QwenLike(), model="qwen-test") as b:
        try:
            router = Router([a.url, b.url]).__enter__()
        except RuntimeError as e:
            pytest.skip(f"the router cannot start here: {e}")
        try:
            argv = [
                "--data", str(data), "--out", str(out), "--no-progress", "--agent", "qwen2.5-vl",
                "--base-url", router.base_url, "--model", "qwen-test", "--timeout", "30", "--concurrency", "4",
            ]  # fmt: skip
            assert main(argv) == 0, capsys.readouterr().err
        finally:
            router.__exit__()
        sessions = {name: set(srv.stats.sessions) for name, srv in (("a", a), ("b", b))}
    recs = {r["id"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())}
    # every sample accounted for, scored as against one server
    assert {i: (r["baseline"]["correctness"], r["final"]["correctness"]) for i, r in recs.items()} == (
        expected_outcomes()
    )
    assert sessions["a"] and sessions["b"]  # both replicas served
    assert sessions["a"] | sessions["b"] == set(recs)  # every request carried its sample's id
    assert not sessions["a"] & sessions["b"]  # and no sample was split between replicas
