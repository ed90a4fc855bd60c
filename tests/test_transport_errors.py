"""A failed connection says why, in one line (issue 37 item 14), for Claude, OpenAI (Responses)
and an OpenAI-compatible server: a self-signed certificate, an unknown host, a refused port, a
key pasted with its newline, an HTTPS proxy in the environment (never applied to this machine),
a SOCKS proxy without SOCKS support. Real servers on loopback (a TLS server with a certificate
made here); the unknown host is under .invalid, which no resolver answers (RFC 2606)."""

from __future__ import annotations

import asyncio
import datetime
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from regionfocus.adapters.backends.openai_http import BackendError, OpenAIBackend
from regionfocus.adapters.families.hosted import build_hosted

from .chat_server import ChatServer
from .provider_servers import ProviderServer, Said, act_recorded, closed_port

KEY = "sk-test-transport-0123456789"
ENV = {"claude": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
MODEL = {"claude": "claude-sonnet-4-5", "openai": "gpt-4o"}
PROXY_VARS = (
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
)


@pytest.fixture(autouse=True)
def env(monkeypatch):
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    for name in ENV.values():
        monkeypatch.setenv(name, KEY)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """An HTTPS server on loopback whose certificate nobody trusts (self-signed, made here)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _hosted_error(agent: str, base_url: str) -> str:
    """The error a hosted family's call records against ``base_url`` (one attempt)."""

    async def run():
        adapter = build_hosted(agent, model=MODEL[agent], base_url=base_url, timeout=10)
        adapter.backend.max_retries = 0
        _, call = await act_recorded(adapter, Image.new("RGB", (64, 48)))
        return call.error or ""

    return asyncio.run(run())


def _compatible_error(base_url: str) -> str:
    async def run():
        backend = OpenAIBackend(base_url, "m", timeout=10, max_retries=0)
        try:
            await backend.complete([{"role": "user", "content": "hi"}])
        except BackendError as e:
            return str(e)
        finally:
            await backend.aclose()
        return ""

    return asyncio.run(run())


def _error(agent: str, base_url: str) -> str:
    suffix = "/v1" if agent != "claude" else ""
    return (
        _compatible_error(base_url + suffix)
        if agent == "compatible"
        else _hosted_error(agent, base_url + suffix)
    )


AGENTS = ["claude", "openai", "compatible"]


@pytest.mark.parametrize("agent", AGENTS)
def test_a_self_signed_certificate_is_named(agent, tls_server):
    line = _error(agent, tls_server)
    assert "TLS certificate of 127.0.0.1" in line and "self-signed" in line and "\n" not in line


@pytest.mark.parametrize("agent", AGENTS)
def test_an_unknown_host_is_named(agent):
    line = _error(agent, "http://no-such-host.invalid:8000")
    assert "unknown host 'no-such-host.invalid'" in line


@pytest.mark.parametrize("agent", AGENTS)
def test_a_refused_port_is_named(agent):
    port = closed_port()
    line = _error(agent, f"http://127.0.0.1:{port}")
    assert f"connection refused at 127.0.0.1:{port}" in line


@pytest.mark.parametrize("agent", ["claude", "openai"])
def test_a_key_with_its_newline_is_named_and_never_shown(agent, monkeypatch):
    monkeypatch.setenv(ENV[agent], KEY + "\n")
    line = _error(agent, f"http://127.0.0.1:{closed_port()}")
    assert f"{ENV[agent]} holds whitespace or a control character at its end" in line and KEY not in line
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\n")
    with pytest.raises(ValueError, match="OPENAI_API_KEY holds whitespace"):
        OpenAIBackend("http://127.0.0.1:1/v1", "m")


@pytest.mark.parametrize("agent", AGENTS)
def test_a_proxy_in_the_environment_is_not_applied_to_this_machine(agent, monkeypatch):
    dead = f"http://127.0.0.1:{closed_port()}"
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, dead)
    if agent == "compatible":
        with ChatServer("ok") as srv:
            assert _compatible_error(srv.base_url) == ""
        return
    provider = {"claude": "anthropic", "openai": "openai"}[agent]
    ok = Said("[[10, 10]]") if agent == "claude" else Said("[[0.1,0.1,0.2,0.2]]")
    with ProviderServer(provider, ok) as srv:
        assert _error(agent, srv.url) == ""
        assert srv.stats.requests == 1


@pytest.mark.parametrize("agent", ["claude", "openai", "gemini", "compatible"])
def test_a_socks_proxy_without_socks_support_is_one_line_before_any_call(agent, monkeypatch):
    import importlib.util

    if importlib.util.find_spec("socksio") is not None:
        pytest.skip("socksio is installed here: the proxy would be used")
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with pytest.raises(ValueError) as info:
        if agent == "compatible":
            OpenAIBackend("https://api.example.invalid/v1", "m")
        else:
            build_hosted(agent, model={"gemini": "gemini-2.5-flash", **MODEL}[agent])
    line = str(info.value)
    assert "ALL_PROXY is a SOCKS proxy (socks5://127.0.0.1:1080)" in line and "pip install socksio" in line
