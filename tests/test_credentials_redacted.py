"""Credentials in a base URL (problem 8): ``https://user:pass@host/v1`` and ``?api_key=...``
reach the server (basic auth) and nothing else: not config.json, call records, report.html,
error text, log lines (ours or the HTTP stack's) or the backend's repr. The unit tests pin
:mod:`regionfocus.adapters.redact`; the others run the real backend and the real ScreenSpot-Pro command
against the local OpenAI-compatible server and grep everything they left behind."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest

from regionfocus.adapters.backends.openai_http import BackendError, OpenAIBackend
from regionfocus.adapters.redact import redact_text, redact_url, split_userinfo, url_secrets
from regionfocus.screenspot_pro.cli import main as screenspot_main

from .chat_server import ChatServer, Reply, request_text
from .test_screenspot_helpers import fresh_dataset
from .test_screenspot_http import QwenLike

SECRET = "s3cret"
BASIC = "Basic " + base64.b64encode(f"user:{SECRET}".encode()).decode()


def with_credentials(srv: ChatServer) -> str:
    return srv.base_url.replace("://", f"://user:{SECRET}@", 1)


# ------------------------------------------------------------------ the redaction function
@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pass@host:8443/v1", "https://***:***@host:8443/v1"),
        ("https://tok3n@host/v1", "https://***@host/v1"),
        ("https://h/v1?api_key=abc&model=m", "https://h/v1?api_key=***&model=m"),
        (
            "https://h/v1?key=abc&token=t&X-Amz-Signature=s",
            "https://h/v1?key=***&token=***&X-Amz-Signature=***",
        ),
        ("https://u:p@h/v1?access_token=abc#frag", "https://***:***@h/v1?access_token=***#frag"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),  # nothing secret: same text
        ("http://h/v1/?a=1&b=", "http://h/v1/?a=1&b="),
        ("http://u:p@[::1/v1", "http://***@[::1/v1"),  # does not parse: userinfo still masked
    ],
)
def test_redact_url_masks_userinfo_and_secret_parameters(url, shown):
    assert redact_url(url) == shown


def test_redact_text_masks_every_url_and_the_given_secrets():
    text = "failed for url 'http://bob:hunter22@api.example/v1/chat' (hunter22) key=k; see http://ok/v1"
    out = redact_text(text, ["hunter22", "ab"])  # too short a secret is not masked everywhere
    assert "hunter22" not in out and "'http://***:***@api.example/v1/chat'" in out
    assert "http://ok/v1" in out and "(***)" in out


def test_split_userinfo_gives_the_bare_url_and_the_basic_header():
    assert split_userinfo("http://user:s%40cret@h:1/v1") == (
        "http://h:1/v1",
        "Basic " + base64.b64encode(b"user:s@cret").decode(),
    )
    assert split_userinfo("http://h/v1") == ("http://h/v1", None)
    assert set(url_secrets("http://user:s%40cret@h/v1?api_key=k3y9")) >= {"s%40cret", "s@cret", "k3y9"}


# ------------------------------------------------------------------ the backend
async def test_backend_sends_basic_auth_and_shows_the_url_masked(caplog):
    caplog.set_level(logging.DEBUG)  # the HTTP stack's own request lines too
    with ChatServer("ok") as srv:
        srv.script(Reply.server_error(500), "ok", Reply.server_error(503))
        url = with_credentials(srv)
        b = OpenAIBackend([url], model="m", max_retries=1, backoff=0.0)
        answer = await b.complete([{"role": "user", "content": "hi"}])
        b.max_retries = 0
        with pytest.raises(BackendError) as info:
            await b.complete([{"role": "user", "content": "again"}])
        shown = [repr(b), str(b.endpoints), str(b.served()), answer.usage.endpoint]
        await b.aclose()
    assert srv.stats.auth_headers == [BASIC, BASIC, BASIC]  # the credentials still reach the server
    assert answer.text == "ok" and answer.usage.endpoint == redact_url(url)
    assert "***:***@127.0.0.1" in str(info.value) and info.value.endpoint == redact_url(url)
    for text in (*shown, str(info.value), repr(info.value), caplog.text):
        assert SECRET not in text
    assert "retrying" in caplog.text  # the 500 was logged, masked
    assert "HTTP Request" in caplog.text  # and the HTTP stack's request line was there to check


async def test_query_string_secrets_are_masked_in_the_http_stacks_log_lines(caplog):
    caplog.set_level(logging.DEBUG)
    with ChatServer("ok") as srv:
        b = OpenAIBackend([f"{srv.base_url}?api_key=k3ysecret"], model="m", max_retries=0)
        # The client appends its path after the query, so this server answers 404: the
        # failure and its log lines are what is checked.
        with pytest.raises(BackendError) as info:
            await b.complete([{"role": "user", "content": "hi"}])
        await b.aclose()
    assert "api_key=***" in str(info.value) and "k3ysecret" not in str(info.value) + caplog.text
    assert "HTTP Request" in caplog.text and "api_key=***" in caplog.text  # httpx's line, masked
    with pytest.raises(ValueError, match=r"\*\*\*") as bad:
        OpenAIBackend(["ftp://user:k3ysecret@h/v1"], model="m")
    assert "k3ysecret" not in str(bad.value)


# ------------------------------------------------------------------ a whole ScreenSpot-Pro run
class FailingQwen(QwenLike):
    """QwenLike, but the ``[error]`` sample's requests get HTTP 500 (its record keeps the text)."""

    def __call__(self, body: dict) -> Reply:
        if "[error]" in request_text(body):
            return Reply.server_error(500)
        return super().__call__(body)


def test_screenspot_run_keeps_url_credentials_out_of_every_file_and_log(
    tmp_path: Path, capsys, caplog, monkeypatch
):
    caplog.set_level(logging.DEBUG)
    # No backoff between the 500's retries: the error record, not the wait, is under test.
    monkeypatch.setattr(OpenAIBackend, "_delay", lambda self, attempt, retry_after: 0.0)
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    with ChatServer(responder=FailingQwen(), model="qwen-test") as srv:
        url = with_credentials(srv)
        argv = [
            "--data", str(data), "--out", str(out), "--no-progress", "--no-regionfocus",
            "--agent", "qwen2.5-vl", "--base-url", url, "--model", "qwen-test", "--timeout", "30",
        ]  # fmt: skip
        assert screenspot_main(argv) == 0
        auth = set(srv.stats.auth_headers)
        statuses = list(srv.stats.statuses)
    printed = capsys.readouterr()
    assert auth == {BASIC} and 500 in statuses and 200 in statuses

    files = [p for p in out.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"config.json", "records.jsonl", "report.html"} <= names, names
    leaks = [str(p.relative_to(out)) for p in files if SECRET.encode() in p.read_bytes()]
    assert leaks == []
    for where, text in (("stdout", printed.out), ("stderr", printed.err), ("logs", caplog.text)):
        assert SECRET not in text, where
    # ...and the masked URL is what they show instead
    assert "***:***@127.0.0.1" in (out / "config.json").read_text()
    records = (out / "records.jsonl").read_text()
    assert "HTTP 500" in records and "***:***@127.0.0.1" in records
    assert "retrying" in caplog.text
