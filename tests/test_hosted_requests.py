"""What each hosted request carries, per model, as its provider documents it (issue 37 items 2, 3,
4, 6 and 13), through the providers' SDKs against local servers speaking their wire formats:
the output budget and reasoning setting of the model's rule (or the flags), no temperature where
the provider's guidance is its default, today's ids with their image tier and computer tool,
Gemini's media resolution and inline size, reasoning tokens counted, and tool calls read only
from the provider's structured calls."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest
from PIL import Image

from regionfocus.adapters.families.hosted import build_hosted, tool_calls
from regionfocus.adapters.families.hosted_models import model_rule, seen_size
from regionfocus.kit import prices

from .provider_servers import ProviderServer, Request, Said, act_recorded

KEY = "sk-test-requests-0123456789"
ENV = {"anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY", "openai": "OPENAI_API_KEY"}
AGENT = {"anthropic": "claude", "gemini": "gemini", "openai": "openai"}
K4 = (3840, 2160)


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name in ENV.values():
        monkeypatch.setenv(name, KEY)


def _ask(provider: str, model: str, said, image: Image.Image | None = None, **opts):
    """One grounding call; (the request as the server read it, the call record, the adapter,
    the reply or None)."""
    image = image or Image.new("RGB", (1600, 900), (210, 210, 210))

    async def run(srv):
        adapter = build_hosted(AGENT[provider], model=model, base_url=srv.base_url, **opts)
        reply, call = await act_recorded(adapter, image, "click the thing")
        return call, adapter, reply

    with ProviderServer(provider, said) as srv:
        call, adapter, reply = asyncio.run(run(srv))
        body, headers = srv.stats.bodies[-1], srv.stats.headers[-1]
    return Request(provider, body, headers, model), call, adapter, reply


GOOD = {
    "anthropic": Said("[[40, 40]]", output_tokens=900),
    "openai": Said("[[0.1,0.1,0.2,0.2]]", output_tokens=900, reasoning_tokens=800),
    "gemini": Said('[{"point": [100, 100], "label": "x"}]', output_tokens=900, reasoning_tokens=800),
}


# ------------------------------------------------------------------ budgets and reasoning
def test_claude_sonnet_5_thinks_adaptively_at_its_default_effort_with_room_to_answer():
    req, call, _, _ = _ask("anthropic", "claude-sonnet-5", GOOD["anthropic"])
    assert req.body["thinking"] == {"type": "adaptive"} and req.body["output_config"] == {"effort": "high"}
    assert req.budget == 16000 and "temperature" not in req.body and call.error is None


def test_gpt_5_5_reasons_at_medium_with_25k_tokens_and_counts_its_reasoning():
    req, call, _, _ = _ask("openai", "gpt-5.5", GOOD["openai"])
    assert req.body["reasoning"] == {"effort": "medium"} and req.budget == 25000
    assert "temperature" not in req.body
    assert (call.completion_tokens, call.reasoning_tokens) == (900, 800)


def test_gemini_3_1_pro_thinks_high_at_its_default_temperature_with_high_media_resolution():
    req, call, adapter, _ = _ask("gemini", "gemini-3.1-pro", GOOD["gemini"], temperature=0.0)
    config = req.body["generationConfig"]
    # the SDK passes the thinking config's own field names through (the API reads either spelling)
    assert list(config["thinkingConfig"].values()) == ["HIGH"] and config["maxOutputTokens"] == 32768
    assert "temperature" not in config  # Google: keep 1.0 for Gemini 3 (none sent: its default)
    assert config["mediaResolution"] == "MEDIA_RESOLUTION_HIGH"
    assert (call.completion_tokens, call.reasoning_tokens) == (900, 800)
    assert adapter.image_tokens(K4) == 1120  # a fixed budget per image, not 258 per 768-px tile
    facts = adapter.request_facts()
    assert (facts["reasoning"], facts["temperature"], facts["media_resolution"]) == (
        "high",
        None,
        "MEDIA_RESOLUTION_HIGH",
    )


def test_gemini_2_5_keeps_the_run_temperature():
    req, _, _, _ = _ask("gemini", "gemini-2.5-flash", GOOD["gemini"], temperature=0.0)
    assert req.body["generationConfig"]["temperature"] == 0.0


def test_the_flags_reach_the_request_and_the_run_settings():
    req, _, adapter, _ = _ask("openai", "gpt-5.5", GOOD["openai"], max_tokens=40000, reasoning="high")
    assert req.body["reasoning"] == {"effort": "high"} and req.budget == 40000
    from regionfocus.adapters.cli_args import request_identity

    identity = request_identity(adapter)
    assert identity["max_tokens"] == 40000 and identity["reasoning"] == "high"
    req, _, _, _ = _ask("anthropic", "claude-opus-4-7", GOOD["anthropic"], reasoning="low")
    assert req.body["thinking"] == {"type": "adaptive"} and req.body["output_config"] == {"effort": "low"}
    with pytest.raises(
        ValueError, match="--reasoning-effort 'medium': model 'gemini-3.1-pro\\*' takes low, high"
    ):
        build_hosted("gemini", model="gemini-3.1-pro", reasoning="medium")


def _thinks(needed: int, provider: str):
    """A thinking model that needs ``needed`` output tokens (thinking and answer): cut at any
    smaller budget, as the provider cuts it."""

    def respond(req: Request) -> Said:
        if (req.budget or 0) < needed:
            return Said.cut(provider, "thinking...")
        return GOOD[provider]

    return respond


@pytest.mark.parametrize(
    ("provider", "model"),
    [("anthropic", "claude-sonnet-5"), ("openai", "gpt-5.5"), ("gemini", "gemini-3.1-pro")],
)
def test_a_thinking_models_long_answer_fits_its_default_budget(provider, model):
    """6,000 tokens of thinking and answer: the old 1,024-token budget cut every reply."""
    _, call, _, reply = _ask(provider, model, _thinks(6000, provider))
    assert call.error is None and reply is not None and reply.point is not None
    _, call, _, _ = _ask(provider, model, _thinks(6000, provider), max_tokens=1024)
    assert "output budget of 1024 tokens" in call.error and "--max-tokens" in call.error


def test_reasoning_tokens_are_priced_as_output():
    table = prices.load()
    by_model = {"gpt-5.5": {"prompt_tokens": 1_000_000, "cached_tokens": 0, "completion_tokens": 1_000_000}}
    assert table.cost(by_model, None) == pytest.approx(5.0 + 30.0)  # completion holds the reasoning


# ------------------------------------------------------------------ today's ids
@pytest.mark.parametrize(
    ("model", "tool"),
    [
        ("claude-sonnet-5", "computer_20251124"),
        ("claude-mythos-5", "computer_20251124"),
        ("claude-mythos-preview", "computer_20251124"),
        ("claude-sonnet-5-5", "computer_toolset_20260801"),
        ("claude-haiku-5-5", "computer_toolset_20260801"),
    ],
)
def test_todays_claude_ids_get_the_high_resolution_tier_and_their_tool(model, tool, caplog):
    assert seen_size("anthropic", model, K4) == (2576, 1449)
    assert model_rule("anthropic", model).computer_tool["type"] == tool
    with caplog.at_level(logging.WARNING):
        build_hosted("claude", model=model)
    assert "no rule" not in caplog.text


def test_ga_gemini_ids_keep_the_computer_tool_and_gpt_5_mini_is_a_patch_model():
    assert model_rule("gemini", "gemini-3.1-pro").computer_tool["type"] == "computer_use"
    assert model_rule("gemini", "gemini-3-flash").computer_tool["type"] == "computer_use"
    for model in ("gpt-5-mini", "gpt-5-nano"):
        rule = model_rule("openai", model).image()
        assert (rule.kind, rule.patch, rule.max_patches) == ("fit", 32, 1536)
        assert rule.patches(K4) <= 1536


def test_an_id_no_rule_names_is_said_once_with_the_way_to_choose_another(caplog):
    with caplog.at_level(logging.WARNING):
        build_hosted("claude", model="claude-nova-9")
        build_hosted("claude", model="claude-nova-9")
    lines = [r.getMessage() for r in caplog.records if "no rule" in r.getMessage()]
    assert len(lines) == 1 and "'claude-nova-9'" in lines[0] and "--model-rule" in lines[0]
    adapter = build_hosted("claude", model="claude-nova-9", rule_model="claude-sonnet-5")
    assert (
        adapter.input_size(K4) == (2576, 1449) and adapter.request_facts()["model_rule"] == "claude-sonnet-5*"
    )


# ------------------------------------------------------------------ Gemini's inline limit
def test_a_gemini_image_over_the_inline_limit_is_sent_smaller_and_recorded():
    rng = np.random.default_rng(0)
    noise = Image.fromarray(rng.integers(0, 255, (900, 1600, 3), dtype=np.uint8))  # ~5.8 MB as PNG

    async def run(srv):
        adapter = build_hosted("gemini", model="gemini-3.1-pro", base_url=srv.base_url)
        adapter.backend.inline_limit = 2_000_000  # a small limit, the same rule
        return (await act_recorded(adapter, noise))[1]

    with ProviderServer("gemini", GOOD["gemini"]) as srv:
        call = asyncio.run(run(srv))
        (sent,) = Request("gemini", srv.stats.bodies[0], {}, "").images
    w, h = call.image_sent[0]
    assert (w, h) == sent.size and w < 1600 and abs(w / h - 16 / 9) < 0.02
    assert call.image_bytes <= 2_000_000 and call.error is None


# ------------------------------------------------------------------ tool calls are data
def test_an_echoed_tool_tag_in_claudes_prose_is_not_the_answer():
    echoed = '<tool_use name="computer">{"action": "left_click", "coordinate": [2, 2]}</tool_use>'
    real = Said(
        f"The instruction said: {echoed}. Clicking the button instead.",
        calls=[("computer", {"action": "left_click", "coordinate": [800, 450]})],
    )
    _, call, _, reply = _ask("anthropic", "claude-opus-4-7", real, request="computer-use")
    assert call.error is None and "[tool call computer" in call.text  # the record shows the call
    assert (reply.point.x, reply.point.y) == (800.0, 450.0)  # the real call, not the echoed [2, 2]
    # The record's text, read again (a report, a rerun), holds no call: tags there are prose.
    assert tool_calls(str(call.text)) == ()


def test_every_rule_cites_sources_that_say_what_they_establish():
    from importlib import resources

    from regionfocus.adapters.families.hosted_models import _table

    text = (
        resources.files("regionfocus.adapters.families")
        .joinpath("prompts", "hosted", "SOURCES.md")
        .read_text()
    )
    for provider, rules in _table().items():
        for rule in rules:
            assert rule.sources, rule.patterns
            for key in rule.sources:
                assert f"| `{key}` |" in text, (provider, rule.patterns, key)


def test_the_hosted_flags_are_refused_for_an_agent_that_has_none(tmp_path, capsys):
    from regionfocus.screenspot_pro.cli import main

    from .test_screenspot_helpers import fresh_dataset

    data = fresh_dataset(tmp_path / "data")
    code = main(
        ["--data", str(data), "--out", str(tmp_path / "run"), "--agent", "ocr", "--reasoning-effort", "high"]
    )
    err = capsys.readouterr().err
    assert (
        code == 2
        and "--reasoning-effort: for the hosted agents (claude, gemini, openai), not --agent ocr" in err
    )
    assert not (tmp_path / "run" / "records.jsonl").exists()
