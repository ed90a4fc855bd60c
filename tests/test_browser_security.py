"""What a browsed page can reach, and what Chromium is given: the network rules (fast, pure)
and, in a real Chromium, a redirect and a frame aimed at a host not allowed, the metadata
address, and the environment of the browser process."""

from __future__ import annotations

import asyncio
import http.server
import os
import threading
from pathlib import Path

import pytest

from regionfocus.kit.chromium import browser_environment, launch_options, use_sandbox
from regionfocus.webvoyager.browser import Browser, EnvConfig
from regionfocus.webvoyager.cli import model_origins
from regionfocus.webvoyager.net_policy import NetPolicy, is_private_host, refusal, resolver_rules


# ------------------------------------------------------------------------------ the rules
@pytest.mark.parametrize(
    ("host", "private"),
    [
        ("127.0.0.1", True), ("127.8.9.10", True), ("10.1.2.3", True), ("172.16.0.1", True),
        ("172.31.255.255", True), ("192.168.1.1", True), ("169.254.169.254", True), ("0.0.0.0", True),
        ("100.100.100.200", True), ("::1", True), ("fe80::1", True), ("fd00::1", True),
        ("::ffff:127.0.0.1", True), ("localhost", True), ("app.localhost", True),
        ("metadata.google.internal", True), ("printer.local", True),
        ("172.32.0.1", False), ("8.8.8.8", False), ("2606:4700::1111", False), ("example.org", False),
        ("localhost.example.org", False),
    ],
)  # fmt: skip
def test_which_hosts_are_not_public(host, private):
    assert is_private_host(host) is private


def test_private_addresses_are_refused_for_pages_and_resources_unless_allowed():
    closed = NetPolicy()
    for url in ("http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:8000/", "http://[::1]:9/"):
        assert "loopback, private or link-local" in refusal(url, closed)
        assert "loopback, private or link-local" in refusal(url, closed, document=False)  # a script's fetch
    assert refusal("http://127.0.0.1:8000/", NetPolicy(private_hosts=("127.0.0.1",))) is None
    assert refusal("http://127.0.0.1:8000/", NetPolicy(allow_domains=("127.0.0.1",))) is None
    assert refusal("http://10.0.0.5/", NetPolicy(allow_private=True)) is None
    assert refusal("https://example.org/", closed) is None


def test_the_model_server_is_never_a_page():
    deny = model_origins(["http://user:pw@10.0.0.7:8000/v1", "https://api.example.com/v1"])
    assert deny == ("10.0.0.7:8000", "api.example.com:443")
    open_net = NetPolicy(allow_private=True, deny=deny)
    assert "model server" in refusal("http://10.0.0.7:8000/v1/models", open_net)
    assert "model server" in refusal("https://api.example.com/v1/x", open_net, document=False)
    assert refusal("http://10.0.0.7:8080/", open_net) is None  # another port of that machine


def test_allow_list_applies_to_every_document_and_file_paths_are_decoded(tmp_path: Path):
    root = tmp_path / "pages"
    (root / "sub").mkdir(parents=True)
    policy = NetPolicy(allow_domains=("example.org",), file_root=str(root))
    assert refusal("https://cdn.example.org/x", policy) is None
    assert "allow-list" in refusal("https://evil.test/", policy)
    assert refusal("https://evil.test/lib.js", policy, document=False) is None  # resources: any public host
    assert refusal((root / "sub" / "a.html").as_uri(), policy) is None
    for escape in ("/sub/%2e%2e/%2e%2e/secret.html", "/sub/%2E%2E%2F%2E%2E%2Fsecret.html", "/../secret.html"):
        assert "is outside" in refusal(f"file://{root}{escape}", policy), escape
    assert "scheme 'javascript'" in refusal("javascript:alert(1)", policy)


def test_resolver_rules_cover_the_ranges_and_except_allowed_hosts():
    assert resolver_rules(NetPolicy(allow_private=True)) is None
    rules = resolver_rules(NetPolicy(private_hosts=("127.0.0.1",), allow_domains=("example.org",)))
    for pattern in ("127.*", "169.254.*", "10.*", "172.20.*", "192.168.*", "::1", "localhost"):
        assert f"MAP {pattern} ~NOTFOUND" in rules
    assert "EXCLUDE 127.0.0.1" in rules and "EXCLUDE example.org" not in rules


def test_sandbox_and_environment_of_the_browser(monkeypatch, caplog):
    assert use_sandbox(True, euid=1000) is True
    assert use_sandbox(False, euid=1000) is False
    assert use_sandbox(True, euid=0) is False
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("HF_TOKEN", "hf-secret")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    env = browser_environment(os.environ)
    assert "OPENAI_API_KEY" not in env and "HF_TOKEN" not in env
    assert env["LC_ALL"] == "C.UTF-8" and env["PATH"] == os.environ["PATH"]
    opts = launch_options("/bin/chromium", sandbox=False)
    assert "--no-sandbox" in opts["args"] and opts["chromium_sandbox"] is False
    assert "OPENAI_API_KEY" not in opts["env"]


# ------------------------------------------------------------------------- in Chromium
class _Hits:
    """A local HTTP server that counts its requests; ``redirect`` answers /go with a 302."""

    def __init__(self, host: str, redirect: str | None = None, body: str = "<p>page</p>"):
        self.paths: list[str] = []
        hits = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                hits.paths.append(self.path)
                if redirect and self.path.startswith("/go"):
                    self.send_response(302)
                    self.send_header("Location", redirect)
                    self.end_headers()
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://{host}:{self.server.server_port}/"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow  # a real Chromium
async def test_redirects_frames_and_metadata_stay_out_in_chromium():
    secret = _Hits("127.0.0.2")  # a loopback host nobody allowed
    page = _Hits(
        "127.0.0.1",
        redirect=secret.url + "stolen",
        body=f'<p>hello</p><iframe src="{secret.url}framed"></iframe>',
    )
    try:
        async with Browser(private_hosts=("127.0.0.1",)) as browser:
            env = await browser.new_env(EnvConfig(viewport=(600, 500), allow_domains=("127.0.0.1",)))
            try:
                # An allowed page whose frame points at the host nobody allowed.
                assert await env.goto(page.url + "home") is None
                await env.page.wait_for_load_state("load")  # frames included
                blocked = [e for e in env.events if e["type"] == "blocked"]
                assert any(e["url"].endswith("/framed") for e in blocked)
                # A script of that page can't reach it either: Chromium cannot resolve the range.
                got = await env.page.evaluate(
                    "u => fetch(u).then(() => 'reached', e => 'failed: ' + e.message)", secret.url + "script"
                )
                assert got.startswith("failed")
                # An allowed host that redirects to the host nobody allowed.
                err = await env.goto(page.url + "go")
                assert err is not None
                blocked = [e for e in env.events if e["type"] == "blocked"]
                assert any("redirect from" in e["reason"] and e["url"].endswith("/stolen") for e in blocked)
                # The metadata address: refused by us at once, not by a network timeout.
                err = await env.goto("http://169.254.169.254/latest/meta-data/")
                assert err is not None and "loopback, private or link-local" in err
                pid_env = _chromium_environ(browser)
            finally:
                await env.close()
        assert page.paths == ["/home", "/go"]
        assert secret.paths == []  # neither the frame, the redirect nor the script reached it
        assert pid_env is not None and b"PATH=" in pid_env  # Linux shows a process's environment
        assert b"OPENAI_API_KEY" not in pid_env
    finally:
        page.close()
        secret.close()


def _chromium_environ(browser: Browser) -> bytes | None:
    """The environment of a running Chromium process of this test, where /proc shows it."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"chromium" in cmd and b"--host-resolver-rules" in cmd:
                return Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
    return None


@pytest.fixture(autouse=True)
def _api_key_in_our_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-reach-chromium")
    yield
    asyncio.set_event_loop_policy(None)
