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

from regionfocus.adapters.families.hosted_models import seen_size
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


class Oracle:
    """A model that knows where each target is (from the data set's annotations) and answers in
    its family's frame of the image it received: right on a full screenshot only if the request
    carried the size the adapter says the model sees and the answer is mapped back through the
    same frame. Zoomed views (the same instruction asked again) it answers at their centre."""

    def __init__(self, provider: str, data: Path):
        self.provider = provider
        self.like = HostedLike(provider)  # its answer formats
        self.targets: dict[str, tuple[list[float], list[int]]] = {}
        seen: dict[str, int] = {}
        for f in sorted((data / "annotations").glob("*.json")):
            for r in json.loads(f.read_text()):
                seen[r["instruction"]] = seen.get(r["instruction"], 0) + 1
                self.targets[r["instruction"]] = (r["bbox"], r["img_size"])
        self.unique = {k for k, n in seen.items() if n == 1}
        self.asked: dict[str, int] = {}

    def instruction_in(self, text: str) -> str | None:
        hits = [k for k in self.targets if k in text]
        return max(hits, key=len) if hits else None

    def __call__(self, req):
        from .model_like import request_kind
        from .provider_servers import Said

        text, image = req.text, req.images[-1]
        kind = request_kind(text)
        if kind == "judge":
            return Said("NO - the star is off the target.\nVerdict: NO")
        if kind == "choose":
            return Said("Star 1 is on it.\nSelected point: 1")
        key = self.instruction_in(text)
        bbox, size = self.targets[key]
        cx, cy = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
        x, y = cx * image.width / size[0], cy * image.height / size[1]
        if kind == "focal":
            return Said(f"It should be about {self.like._point(x, y, image.size)}.")
        self.asked[key] = self.asked.get(key, 0) + 1
        if self.asked[key] > 1:  # a view: the oracle cannot place it, and says where it looks
            return self.like._ground(image.width / 2, image.height / 2, image.size, "Perhaps here.")
        return self.like._ground(x, y, image.size, "There it is.")


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
def test_builtin_data_runs_end_to_end_with_each_provider(provider, tmp_path, monkeypatch, capsys):
    """The issue's command, `--data builtin` (rendered with Chromium, cached): every sample of the
    selection is accounted for, the baseline hits every target the oracle could name (the frame
    maps hold on real 4K screenshots), and RegionFocus rounds ran on top."""
    from regionfocus.screenspot_pro.builder import builtin_dataset_dir

    monkeypatch.setenv(KEYS[provider], "sk-test-do-not-log-0123456789")
    oracle = Oracle(provider, builtin_dataset_dir())
    out = tmp_path / "run"
    model = {"anthropic": "claude-opus-4-7", "gemini": "gemini-2.5-flash", "openai": "gpt-5.4"}[provider]
    with ProviderServer(provider, oracle) as srv:
        argv = [
            "--data", "builtin", "--out", str(out), "--no-progress", "--limit", "6", "--trigger", "always",
            "--agent", AGENTS[provider], "--base-url", srv.base_url, "--model", model, "--concurrency", "3",
        ]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
        assert not srv.errors, srv.errors
    recs = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(recs) == 6 and all(r["status"] == "ok" for r in recs)
    named = [r for r in recs if r["sample"]["instruction"] in oracle.unique]
    assert named and all(r["baseline"]["correctness"] == "correct" for r in named)
    assert all(r["trace"]["rounds"] and r["trace"]["rounds"][0]["views"] for r in recs)  # RegionFocus ran
    first = recs[0]["trace"]["calls"][0]
    assert first["image_seen"] == [list(seen_size(provider, model, (3840, 2160)))]


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
def test_every_strategy_runs_with_each_provider(provider, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEYS[provider], "sk-test-do-not-log-0123456789")
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    with ProviderServer(provider, HostedLike(provider)) as srv:
        argv = [
            "--data", str(data), "--out", str(out), "--no-progress", "--strategy", "all", "--limit", "4",
            "--agent", AGENTS[provider], "--base-url", srv.base_url, "--model", MODELS[provider], "--concurrency", "3",
        ]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
        assert not srv.errors, srv.errors
    recs = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    peers = sorted(p.name for p in out.glob("results_*.json") if p.name != "results_baseline.json")
    assert len(peers) >= 10, peers  # each strategy scored its own results file


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
def test_a_provider_that_stays_busy_leaves_the_sample_partial(provider, tmp_path, monkeypatch, capsys):
    """Every RegionFocus focal request is refused with 429 (a 1 ms hint) until the retries run
    out: the call fails, the sample is recorded partial and stays in the denominator."""
    from .model_like import request_kind
    from .provider_servers import Said

    monkeypatch.setenv(KEYS[provider], "sk-test-do-not-log-0123456789")
    like = HostedLike(provider)

    def busy_on_focal(req):
        if request_kind(req.text) == "focal":
            said = Said.rate_limited(provider, 0.001)
            said.headers = {"retry-after-ms": "1"} if provider != "gemini" else {}
            return said
        return like(req)

    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    with ProviderServer(provider, busy_on_focal) as srv:
        argv = [
            "--data", str(data), "--out", str(out), "--no-progress", "--limit", "2", "--trigger", "always",
            "--agent", AGENTS[provider], "--base-url", srv.base_url, "--model", MODELS[provider],
        ]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
        refused = srv.stats.statuses.count(429)
    recs = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [r["status"] for r in recs] == ["partial", "partial"]
    calls = [
        c for r in recs for c in r["trace"]["calls"] + [c for k in r["trace"]["rounds"] for c in k["calls"]]
    ]
    failed = [c for c in calls if c.get("error")]
    assert failed and all("429" in c["error"] for c in failed)
    assert refused == 2 * 5  # each focal request: the first attempt and 4 retries
