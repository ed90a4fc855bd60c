"""How a request reaches its server, and why it did not, in one line.

Every SDK here (anthropic, openai, google-genai) speaks through an httpx2 client and reports a
failed connection as "Connection error." with the real cause several links down the exception
chain: a certificate the system does not trust, a host no resolver knows, a port nothing listens
on, a header h11 refuses. :func:`transport_cause` walks that chain and names the cause.

Two environment traps are caught before the first request instead: a proxy from ``HTTPS_PROXY``
or ``ALL_PROXY`` applied to a server on this machine (loopback never goes through a proxy here:
the client ignores the environment's proxies for it, as ``NO_PROXY=127.0.0.1,localhost`` would),
and a SOCKS proxy without SOCKS support installed (httpx2 raises ImportError while building the
client, once per call, and the half-built SDK client prints "Exception ignored" on collection).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import socket
import ssl
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def host_port(url: str) -> tuple[str, int | None]:
    """The host and port of ``url`` (the scheme's default port when none is written)."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.hostname or "", port


def is_loopback(url: str) -> bool:
    """``url`` names this machine (127.0.0.0/8, ::1, localhost)."""
    host = host_port(url)[0].lower()
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def client_options(url: str | None) -> dict[str, Any]:
    """Keyword arguments for the httpx2 client that talks to ``url`` (None: the provider's own
    host). A loopback server is reached directly: the environment's proxies (and its other
    settings) are not read for it."""
    return {"trust_env": False} if url and is_loopback(url) else {}


def proxy_problem(url: str) -> str | None:
    """Why a client for ``url`` cannot be built from this environment's proxy settings (a SOCKS
    proxy with no SOCKS support installed), or None."""
    if is_loopback(url):
        return None
    scheme = urlsplit(url).scheme or "https"
    proxies = urllib.request.getproxies_environment()
    host = host_port(url)[0]
    if host and urllib.request.proxy_bypass_environment(host, proxies):
        return None
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or not proxy.lower().startswith("socks"):
        return None
    if importlib.util.find_spec("socksio") is not None:
        return None
    var = "ALL_PROXY" if not proxies.get(scheme) else f"{scheme.upper()}_PROXY"
    shown = f"{urlsplit(proxy).scheme}://{host_port(proxy)[0]}:{host_port(proxy)[1]}"
    return (
        f"{var} is a SOCKS proxy ({shown}) but SOCKS support is not installed: "
        f"pip install socksio (or unset {var}, or add {host} to NO_PROXY)"
    )


def named_key_problem(variable: str | None) -> str | None:
    """Why the key variable a user named cannot be used (it is unset), or None. Unnamed, a
    server's OPENAI_API_KEY may be unset (a local vLLM takes any key); a named one is meant to hold
    a key, and the placeholder sent instead would turn a typo into a 401 on every request."""
    if variable and not os.environ.get(variable):
        return f"no API key: set {variable} (named by --api-key-env / api_key_env=)"
    return None


def key_problem(variable: str, value: str) -> str | None:
    """Why the API key in ``variable`` cannot go into a header (whitespace or a control
    character: a key pasted with its newline), or None. Never shows the key."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        where = "at its end" if value.strip() and value != value.rstrip() else "inside it"
        return (
            f"{variable} holds whitespace or a control character {where} (a key copied with its "
            "newline?): an API key is one word; set it again without it"
        )
    if not value.isascii():
        return f"{variable} holds a non-ASCII character: an API key is ASCII; set it again"
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it was raised from or during, each once."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        e = stack.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack.extend(x for x in (e.__cause__, e.__context__) if x is not None)
        stack.extend(a for a in getattr(e, "args", ()) if isinstance(a, BaseException))


def transport_cause(exc: BaseException, url: str, timeout: float | None = None) -> str | None:
    """The real cause of a failed connection to ``url`` in a few words, from anywhere in
    ``exc``'s chain; None when the chain holds no transport failure."""
    chain = list(_chain(exc))
    host, port = host_port(url)
    where = f"{host}:{port}" if port else host
    for e in chain:
        if isinstance(e, ssl.SSLCertVerificationError):
            why = e.verify_message or e.reason or "verify failed"
            return f"the TLS certificate of {where} is not trusted ({why})"
    for e in chain:
        if isinstance(e, ssl.SSLError):
            return f"the TLS handshake with {where} failed ({e.reason or e}; is it an https server?)"
    for e in chain:
        if isinstance(e, socket.gaierror):
            return f"unknown host {host!r} (name resolution failed: {e.strerror or e})"
    for e in chain:
        if isinstance(e, ConnectionRefusedError):
            return f"connection refused at {where} (nothing listens there)"
    for e in chain:
        if isinstance(e, ImportError) and "socks" in str(e).lower():
            return (
                proxy_problem(url)
                or "a SOCKS proxy is set but SOCKS support is not installed: pip install socksio"
            )
    for e in chain:
        name = type(e).__name__
        if name == "LocalProtocolError" and "header" in str(e).lower():
            return "a request header holds a character HTTP forbids (an API key with a newline or space?)"
    for e in chain:
        if isinstance(e, TimeoutError) or type(e).__name__ in (
            "ConnectTimeout",
            "ReadTimeout",
            "PoolTimeout",
        ):
            limit = f" within {timeout:g} s" if timeout else ""
            return f"no answer from {where}{limit}"
    for e in chain:
        if isinstance(e, ConnectionResetError):
            return f"{where} closed the connection"
        if type(e).__name__ in ("RemoteProtocolError",):
            return f"{where} broke the HTTP exchange ({str(e)[:120]})"
    for e in chain[1:]:
        if isinstance(e, OSError) and (e.strerror or str(e)):
            return f"{where}: {e.strerror or e}"
    return None
