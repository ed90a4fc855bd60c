"""Every harness command checks its model before the first sample (issue 37, item 7, the harness
half; tests/test_hosted_preflight.py checks each backend's own check).

A dead server, a refused key, an unknown model and a missing key end the command with exit 2 and
one line naming the cause, before the data is read and before any run folder exists: no
records.jsonl, no model call spent. ``--no-preflight`` skips the request (a gateway without a
models list), never the key. Real local servers speak each wire protocol (tests/chat_server.py,
tests/provider_servers.py); a closed port stands in for a mistyped --base-url."""

from __future__ import annotations

from pathlib import Path

import pytest

from regionfocus.aitz.cli import main as aitz_main
from regionfocus.screenspot_pro.cli import main
from regionfocus.webvoyager.cli import main as webvoyager_main

from .chat_server import ChatServer
from .provider_servers import ProviderServer, closed_port
from .test_screenspot_helpers import fresh_dataset
from .test_screenspot_http import QwenLike

KEY = "sk-test-harness-preflight-42"
CLAUDE = "claude-opus-4-7"


def _qwen(base_url: str, data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--data", str(data), "--out", str(out), "--no-progress", "--agent", "qwen2.5-vl",
        "--base-url", base_url, "--model", "qwen-test", *extra,
    ]  # fmt: skip


def _one_error_line(capsys) -> str:
    """The command's whole stderr, which must be one line."""
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("regionfocus ") and ": error: " in err, err
    return err


def test_a_dead_server_ends_the_run_before_the_data_is_read(tmp_path: Path, capsys):
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    out = tmp_path / "run"
    # --data names nothing: the model is checked first, so the server is what the line names
    assert main(_qwen(dead, tmp_path / "no-data-here", out)) == 2
    err = _one_error_line(capsys)
    assert f"the server at {dead} cannot be reached" in err and "--no-preflight" in err
    assert not out.exists()


def test_an_unknown_model_is_named_and_no_sample_is_run(tmp_path: Path, capsys):
    data, out = fresh_dataset(tmp_path / "data"), tmp_path / "run"
    with ChatServer(responder=QwenLike(), model="Qwen/Qwen2.5-VL-7B-Instruct") as srv:
        assert main(_qwen(srv.base_url, data, out)) == 2
        assert srv.stats.chat_requests == 0 and srv.stats.requests == 1  # one GET /models, nothing else
    err = _one_error_line(capsys)
    assert "does not serve model 'qwen-test' (it lists: Qwen/Qwen2.5-VL-7B-Instruct); check --model" in err
    assert not (out / "records.jsonl").exists()


def test_a_healthy_server_passes_with_one_request_and_the_run_goes_on(tmp_path: Path, capsys):
    data, out = fresh_dataset(tmp_path / "data"), tmp_path / "run"
    with ChatServer(responder=QwenLike(), model="qwen-test") as srv:
        assert main(_qwen(srv.base_url, data, out, "--no-regionfocus", "--limit", "2")) == 0
        assert srv.stats.requests - srv.stats.chat_requests == 1  # the check: one GET /models
    assert len((out / "records.jsonl").read_text().splitlines()) == 2


def test_no_preflight_skips_the_request_for_a_gateway_without_a_models_list(tmp_path: Path, capsys):
    """A gateway that routes chat completions but lists other names (or none): with the flag,
    the run goes straight to its samples."""
    data, out = fresh_dataset(tmp_path / "data"), tmp_path / "run"
    with ChatServer(responder=QwenLike(), model="router-alias") as srv:
        argv = _qwen(srv.base_url, data, out, "--no-regionfocus", "--limit", "2", "--no-preflight")
        assert main(argv) == 0, capsys.readouterr().err
        assert srv.stats.requests == srv.stats.chat_requests  # no GET /models at all
    assert len((out / "records.jsonl").read_text().splitlines()) == 2


@pytest.fixture
def no_keys(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _claude(base_url: str, out: Path, *extra: str) -> list[str]:
    return [
        "--data", "/nonexistent/ScreenSpot-Pro", "--out", str(out), "--no-progress", "--agent", "claude",
        "--base-url", base_url, "--model", CLAUDE, *extra,
    ]  # fmt: skip


@pytest.mark.parametrize("flag", [(), ("--no-preflight",)])
def test_a_missing_key_is_named_before_anything_even_without_the_request(no_keys, tmp_path, capsys, flag):
    with ProviderServer("anthropic", models={CLAUDE}, key=KEY) as srv:
        assert main(_claude(srv.base_url, tmp_path / "run", *flag)) == 2
        assert srv.stats.lookups == [] and srv.stats.requests == 0  # nothing was asked
    err = _one_error_line(capsys)
    assert "no API key: set ANTHROPIC_API_KEY" in err
    assert not (tmp_path / "run").exists()


def test_a_refused_key_is_named_and_never_shown(no_keys, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong-key-0123456789")
    with ProviderServer("anthropic", models={CLAUDE}, key=KEY) as srv:
        assert main(_claude(srv.base_url, tmp_path / "run")) == 2
        assert srv.stats.requests == 0  # no message was generated
    err = _one_error_line(capsys)
    assert "refused the API key in ANTHROPIC_API_KEY" in err and "sk-wrong-key" not in err
    assert not (tmp_path / "run").exists()


def test_an_unknown_hosted_model_is_named(no_keys, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with ProviderServer("anthropic", models={"claude-sonnet-4-5"}, key=KEY) as srv:
        assert main(_claude(srv.base_url, tmp_path / "run")) == 2
        assert srv.stats.lookups == [CLAUDE] and srv.stats.requests == 0
    assert f"has no model {CLAUDE!r}" in _one_error_line(capsys)


def test_aitz_and_webvoyager_check_their_model_too(tmp_path: Path, capsys):
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    model = ["--agent", "qwen2.5-vl", "--base-url", dead, "--model", "m", "--no-progress"]
    assert aitz_main(["run", str(tmp_path / "no-episodes"), "--out", str(tmp_path / "a"), *model]) == 2
    assert f"the server at {dead} cannot be reached" in _one_error_line(capsys)
    assert webvoyager_main(["--tasks", "miniwob:click-button", "--out", str(tmp_path / "w"), *model]) == 2
    assert f"the server at {dead} cannot be reached" in _one_error_line(capsys)
    assert not (tmp_path / "a").exists() and not (tmp_path / "w").exists()


@pytest.mark.parametrize("flag", [(), ("--no-preflight",)])
def test_a_served_models_key_variable_named_but_unset_is_named_before_anything(
    tmp_path: Path, capsys, monkeypatch, flag
):
    """Unnamed, OPENAI_API_KEY may be unset (a local vLLM takes any key); a variable the user
    named must hold one: the placeholder would turn a typo into a 401 on every sample."""
    monkeypatch.delenv("RF_UNSET_KEY", raising=False)
    with ChatServer(QwenLike(), model="qwen-test") as srv:
        argv = _qwen(
            srv.base_url, tmp_path / "no-data-here", tmp_path / "run", "--api-key-env", "RF_UNSET_KEY"
        )
        assert main([*argv, *flag]) == 2
        assert srv.stats.chat_requests == 0
    assert "no API key: set RF_UNSET_KEY" in _one_error_line(capsys)
    assert not (tmp_path / "run").exists()
