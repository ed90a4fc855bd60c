"""`regionfocus screenspot-pro --agent claude|gemini|openai` end to end: the real command, the real
hosted adapter, the provider's official SDK pointed with --base-url at a local server speaking
that provider's wire format, answered by a scripted model that sees the image it was sent and
answers in its own frame (tests/hosted_like.py). Baseline and RegionFocus both run; the scores
come out right only if every frame map is right.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regionfocus.screenspot_pro.cli import main

from .hosted_like import HostedLike
from .provider_servers import ProviderServer
from .test_screenspot_helpers import expected_outcomes, fresh_dataset

KEYS = {"anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY", "openai": "OPENAI_API_KEY"}
AGENTS = {"anthropic": "claude", "gemini": "gemini", "openai": "openai"}
# A model of each provider whose rule shrinks the 1600x1000 test screens (Claude, OpenAI's tile
# rule) or keeps them (Gemini), and has a computer-use tool.
MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-3-flash-preview",
    "openai": "computer-use-preview",
}
SEEN = {"anthropic": [1390, 868], "gemini": [1600, 1000], "openai": [1229, 768]}


def _run(
    provider: str, tmp_path: Path, monkeypatch, capsys, request_format: str
) -> tuple[dict, ProviderServer]:
    monkeypatch.setenv(KEYS[provider], "sk-test-do-not-log-0123456789")
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    responder = HostedLike(provider, computer_use=request_format == "computer-use")
    with ProviderServer(provider, responder) as srv:
        argv = [
            "--data", str(data), "--out", str(out), "--no-progress",
            "--agent", AGENTS[provider], "--base-url", srv.base_url, "--model", MODELS[provider],
            "--request-format", request_format, "--timeout", "30", "--concurrency", "3",
        ]  # fmt: skip
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 0, err
        assert not srv.errors, srv.errors
    assert "sk-test-do-not-log" not in err
    recs = {r["id"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())}
    return recs, srv


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
@pytest.mark.parametrize("request_format", ["prompt", "computer-use"])
def test_screenspot_pro_through_each_provider(provider, request_format, tmp_path, monkeypatch, capsys):
    recs, srv = _run(provider, tmp_path, monkeypatch, capsys, request_format)
    assert {i: (r["baseline"]["correctness"], r["final"]["correctness"]) for i, r in recs.items()} == (
        expected_outcomes()
    )
    assert recs["appb_2"]["status"] == "error" and "400" in recs["appb_2"]["error"]
    # Every call records what it cost and what the model saw: the first (the baseline's) the
    # full screenshot at the provider's size, the views too.
    call = recs["appa_1"]["trace"]["calls"][0]
    assert call["image_sent"] == [SEEN[provider]] and call["image_seen"] == [SEEN[provider]]
    assert call["prompt_tokens"] > 0 and call["completion_tokens"] > 0 and call["model"] == MODELS[provider]
    assert all(
        c.get("image_seen") for r in recs.values() for c in r["trace"].get("calls", []) if not c.get("error")
    )
    assert srv.stats.requests == sum(r["n_calls"] for r in recs.values())
