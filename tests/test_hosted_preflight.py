"""The check before the first sample (issue 37 item 7, the backend half): each backend's
``preflight`` asks its server once (the provider's model lookup through its SDK, or GET /models of
an OpenAI-compatible server) and ends in one line naming the cause: a dead server, a refused key,
a missing key, an unknown model. Real local servers speak each wire protocol; nothing leaves
loopback."""

from __future__ import annotations

import asyncio

import pytest

from regionfocus.adapters.backends.anthropic_messages import AnthropicBackend
from regionfocus.adapters.backends.base import PreflightFailed
from regionfocus.adapters.backends.gemini_genai import GeminiBackend
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.adapters.backends.openai_responses import ResponsesBackend
from regionfocus.adapters.families.hosted import build_hosted
from regionfocus.adapters.preflight import backend_of, preflight

from .chat_server import ChatServer
from .provider_servers import ProviderServer, closed_port

KEY = "sk-test-preflight-0123456789"
BACKENDS = {"anthropic": AnthropicBackend, "gemini": GeminiBackend, "openai": ResponsesBackend}
ENV = {"anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY", "openai": "OPENAI_API_KEY"}
MODEL = {"anthropic": "claude-opus-4-7", "gemini": "gemini-3.1-pro-preview", "openai": "gpt-5.4"}
PROVIDERS = list(BACKENDS)


@pytest.fixture
def keys(monkeypatch):
    for name in (*ENV.values(), "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name in ENV.values():
        monkeypatch.setenv(name, KEY)


def _check(backend) -> str | None:
    """The preflight's one line, or None when it passed."""

    async def run():
        try:
            await backend.preflight()
        finally:
            await backend.aclose()

    try:
        asyncio.run(run())
    except PreflightFailed as e:
        return str(e)
    return None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_known_model_with_an_accepted_key_passes_with_one_lookup(provider, keys):
    with ProviderServer(provider, models={MODEL[provider]}, key=KEY) as srv:
        assert _check(BACKENDS[provider](MODEL[provider], srv.base_url)) is None
        assert srv.stats.lookups == [MODEL[provider]] and srv.stats.requests == 0  # nothing generated


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_unknown_model_is_named(provider, keys):
    with ProviderServer(provider, models={"some-other-model"}) as srv:
        line = _check(BACKENDS[provider]("claude-opus-4-7x", srv.base_url))
    assert line and "no model 'claude-opus-4-7x'" in line and "--model" in line and "\n" not in line


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refused_key_is_named_and_never_shown(provider, keys):
    with ProviderServer(provider, key="sk-the-right-one") as srv:
        line = _check(BACKENDS[provider](MODEL[provider], srv.base_url))
        assert len(srv.stats.lookups) == 1  # a refusal is not retried
    assert line and "refused the API key" in line and ENV[provider] in line and KEY not in line


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_missing_key_is_named_before_any_request(provider, keys, monkeypatch):
    monkeypatch.delenv(ENV[provider])
    with ProviderServer(provider) as srv:
        line = _check(BACKENDS[provider](MODEL[provider], srv.base_url))
        assert srv.stats.lookups == []
    assert line and "no API key" in line and ENV[provider] in line


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_dead_server_is_named_with_its_cause(provider, keys):
    port = closed_port()
    line = _check(BACKENDS[provider](MODEL[provider], f"http://127.0.0.1:{port}"))
    assert line and "cannot be reached" in line and f"connection refused at 127.0.0.1:{port}" in line


def test_an_openai_compatible_server_must_list_the_model(keys):
    with ChatServer(model="ui-tars-1.5-7b") as srv:
        assert _check(OpenAIBackend(srv.base_url, "ui-tars-1.5-7b")) is None
        line = _check(OpenAIBackend(srv.base_url, "ui-tars-7b"))
    assert line and "does not serve model 'ui-tars-7b'" in line and "ui-tars-1.5-7b" in line
    port = closed_port()
    line = _check(OpenAIBackend(f"http://127.0.0.1:{port}/v1", "m"))
    assert line and "cannot be reached" in line and "connection refused" in line


def test_preflight_finds_the_backend_of_any_model(keys):
    async def run(model):
        await preflight(model)

    with ProviderServer("anthropic", models=set()) as srv:
        adapter = build_hosted("claude", model="claude-opus-4-7", base_url=srv.base_url)
        assert backend_of(adapter) is adapter.backend
        with pytest.raises(PreflightFailed, match="no model"):
            asyncio.run(run(adapter))
    from regionfocus.adapters import get_adapter

    ocr = get_adapter("ocr")
    assert backend_of(ocr) is None
    asyncio.run(run(ocr))  # nothing to check: a no-op
