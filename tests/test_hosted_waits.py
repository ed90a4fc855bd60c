"""Every wait is ours (issue 37 items 1 and 15): the providers' SDKs, pointed at local servers
speaking their wire formats, no longer sleep by themselves; our loop waits what the server asks,
up to the cap, says so while it waits, counts it in the call record, and fails at once (one
request, no sleep) when the server asks for more than the cap. Waits are recorded, never slept."""

from __future__ import annotations

import asyncio
import logging

import pytest
from PIL import Image

from regionfocus.adapters.families.hosted import build_hosted

from .provider_servers import ProviderServer, Said, act_recorded

KEY = "sk-test-waits-0123456789abcdef"
ENV = {"anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY", "openai": "OPENAI_API_KEY"}
AGENT = {"anthropic": "claude", "gemini": "gemini", "openai": "openai"}
MODEL = {"anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash", "openai": "gpt-4o"}
OK = {
    "anthropic": Said("[[40, 40]]"),
    "openai": Said("[[0.1,0.1,0.2,0.2]]"),
    "gemini": Said('[{"point": [100, 100], "label": "x"}]'),
}


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name in ENV.values():
        monkeypatch.setenv(name, KEY)


@pytest.fixture(scope="module")
def shot() -> Image.Image:
    return Image.new("RGB", (640, 400), (200, 200, 200))


class Slept(list):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _call(provider: str, srv: ProviderServer, shot: Image.Image, **opts):
    """One grounding call through the family; (its call record, the waits it asked for)."""
    slept = Slept()

    async def run():
        adapter = build_hosted(AGENT[provider], model=MODEL[provider], base_url=srv.base_url, **opts)
        adapter.backend.sleep = slept
        return (await act_recorded(adapter, shot, "click the thing"))[1]

    return asyncio.run(run()), slept


def _busy(provider: str, headers: dict[str, str] | None = None, retry_info: str | None = None) -> Said:
    said = Said.rate_limited(provider, 1.0)
    if headers is not None and provider != "gemini":
        said.headers = headers
    if retry_info is not None and provider == "gemini":
        said.error["error"]["details"][0]["retryDelay"] = retry_info
    return said


CAPPED = [
    ("anthropic", _busy("anthropic", {"retry-after": "86400"}), "86400 s (retry-after)"),
    ("anthropic", _busy("anthropic", {"retry-after-ms": "1e12"}), "1e+09 s (retry-after-ms)"),
    ("openai", _busy("openai", {"retry-after": "86400"}), "86400 s (retry-after)"),
    ("openai", _busy("openai", {"retry-after-ms": "1e12"}), "1e+09 s (retry-after-ms)"),
    ("gemini", _busy("gemini", retry_info="86400s"), "86400 s (RetryInfo)"),
]


@pytest.mark.parametrize(
    ("provider", "busy", "named"), CAPPED, ids=[f"{p}-{n.split()[-1]}" for p, _, n in CAPPED]
)
def test_a_wait_past_the_cap_fails_the_call_at_once_naming_it(provider, busy, named, shot):
    with ProviderServer(provider, OK[provider]) as srv:
        srv.script(busy)
        call, slept = _call(provider, srv, shot)
        requests = srv.stats.requests
    assert requests == 1 and slept == []  # no second request, nothing slept (the SDK's sleep is off too)
    assert call.error and f"asked to wait {named}" in call.error and "120-s cap" in call.error
    assert "after 1 attempt(s)" in call.error and "--max-retry-wait" in call.error


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini"])
def test_a_wait_under_the_cap_is_waited_shown_and_counted(provider, shot, caplog):
    busy = _busy(provider, {"retry-after": "37"}, retry_info="37s")
    with ProviderServer(provider, OK[provider]) as srv:
        srv.script(busy, busy)
        with caplog.at_level(logging.WARNING):
            call, slept = _call(provider, srv, shot)
        assert srv.stats.requests == 3
    assert slept == [37.0, 37.0] and call.error is None
    assert (call.attempts, call.waited_s) == (3, 74.0)
    assert f"waiting 37 s: {provider} 429" in caplog.text and "retry 2 of 4" in caplog.text


def test_the_cap_is_a_setting(shot):
    with ProviderServer("anthropic", OK["anthropic"]) as srv:
        srv.script(_busy("anthropic", {"retry-after": "37"}))
        call, slept = _call("anthropic", srv, shot, max_wait=30)
    assert slept == [] and "past the 30-s cap" in call.error


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini"])
def test_the_attempt_count_is_the_requests_made(provider, shot):
    """A provider that stays overloaded: five requests (the first and four retries), and the
    error says five, not the one call the SDK saw."""
    with ProviderServer(provider, Said.overloaded(provider)) as srv:
        call, slept = _call(provider, srv, shot)
        requests = srv.stats.requests
    assert requests == 5 and len(slept) == 4
    assert "after 5 attempt(s)" in call.error and f"{sum(slept):.3g} s of waits" in call.error
