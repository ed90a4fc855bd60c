"""A ScreenSpot-Pro run through a real router: vllm-router (``sticky_least_loaded`` or ``consistent_hash``) in front
of two scripted Qwen2.5-VL-format servers, one ``--base-url`` pointing at the router.

Each server remembers which instructions it has grounded (its first grounding request of an
instruction is the full screenshot, later ones are views), like a replica whose prefix cache has
seen the screenshot: the run scores as against one server only if every request of a sample
reaches the same replica, which the client's X-Session-ID (the sample id) asks the router for."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from regionfocus.adapters.serving import serve_command
from regionfocus.screenspot_pro.cli import main

from .chat_server import ChatServer, Router
from .test_screenspot_helpers import expected_outcomes, fresh_dataset
from .test_screenspot_http import QwenLike


def test_serve_command_multi_gpu_forms():
    one = shlex.split(serve_command("qwen2.5-vl", data_parallel=4))
    assert one[:3] == ["vllm", "serve", "Qwen/Qwen2.5-VL-7B-Instruct"] and one[-2:] == [
        "--data-parallel-size",
        "4",
    ]
    assert "--data-parallel-size" not in serve_command("qwen2.5-vl", data_parallel=1)
    lines = serve_command(
        "qwen2.5-vl", data_parallel=8, nodes=["http://n1:8000", "http://n2:8000"]
    ).splitlines()
    assert shlex.split(lines[1]) == shlex.split(serve_command("qwen2.5-vl", data_parallel=8))
    router = shlex.split(lines[3])
    assert router[0] == "vllm-router" and router[router.index("--policy") + 1] == "sticky_least_loaded"
    assert router[router.index("--worker-urls") + 1 :] == ["http://n1:8000", "http://n2:8000"]
    with pytest.raises(ValueError, match="router"):
        serve_command("qwen2.5-vl", local_media_path="/dev/shm/x", nodes=["http://n1:8000"])


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["sticky_least_loaded", "consistent_hash"])
def test_run_through_vllm_router_keeps_each_sample_on_one_replica(policy: str, tmp_path: Path, capsys):
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    with ChatServer(QwenLike(), model="qwen-test") as a, ChatServer(QwenLike(), model="qwen-test") as b:
        try:
            router = Router([a.url, b.url], policy).__enter__()
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
