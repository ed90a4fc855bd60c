"""Which requests a task's browser may make.

A page the agent browses is untrusted: it can redirect, embed frames and fire requests at
whatever it likes. Two rules, checked on every request the browser makes:

- addresses that are not on the public internet (loopback, private, link-local such as the
  cloud metadata service 169.254.169.254, unspecified, ``localhost``), and the model servers
  of the run, are refused unless the user named the host (``--allow-domain 127.0.0.1``) or
  allowed them all (``--allow-private-network``, for a site served on this machine or LAN);
- documents (pages and frames) must come from the allow-list when there is one; ``file://``
  documents only from under ``file_root`` (the built-in MiniWoB++ pages), compared after
  percent-decoding and resolving ``..`` and links; ``about:blank``; nothing else.

The browser applies them twice. In Chromium itself, :func:`resolver_rules` makes the
non-public address ranges unresolvable, so no request reaches them whatever issued it (a
redirect hop, a frame, a script, a websocket). In the browsing context, every document request
is checked with :func:`refusal`, a redirect's target before the browser follows it, and a
document that arrives at a refused address anyway (a chain of redirects) is replaced by a blank
page. Host names are checked as written (no DNS lookup): a public name that resolves to a
private address is not caught here.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True)
class NetPolicy:
    """``allow_domains``: hosts (and their subdomains) documents may come from; empty: any
    public host. ``allow_private``: every loopback, private and link-local host too;
    ``private_hosts``: those of them allowed one by one (as are the allow-list's). ``deny``:
    hosts or ``host:port`` origins never reachable (the run's model servers). ``file_root``:
    the folder ``file://`` documents may come from."""

    allow_domains: tuple[str, ...] = ()
    allow_private: bool = False
    private_hosts: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    file_root: str | None = None


def is_private_host(host: str) -> bool:
    """Whether ``host`` (a URL's hostname: lower case, IPv6 without brackets) is not a public
    internet address: loopback, private, link-local, shared, reserved or unspecified, as an IP
    literal (IPv4-mapped IPv6 included), or a name that stays inside a machine or network
    (``localhost``, ``*.localhost``, ``*.internal`` such as metadata.google.internal, ``*.local``)."""
    host = host.rstrip(".")
    if host == "localhost" or host.endswith((".localhost", ".internal", ".local")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: not resolved here
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global


def _listed(host: str, domains: tuple[str, ...]) -> bool:
    host = host.rstrip(".")
    return any(host == d or host.endswith("." + d) for d in (d.lower().strip(".") for d in domains) if d)


def _private_allowed(host: str, policy: NetPolicy) -> bool:
    return policy.allow_private or _listed(host, policy.private_hosts + policy.allow_domains)


def _denied(host: str, port: int | None, deny: tuple[str, ...]) -> bool:
    return any(d == host or d == f"{host}:{port}" for d in deny)


def refusal(url: str, policy: NetPolicy, *, document: bool = True) -> str | None:
    """None when the browser may request ``url``, else why not. ``document``: a page or a
    frame (the allow-list and the scheme rules apply); otherwise a resource a page loads (only
    the address rules apply)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        return f"malformed URL ({e})"
    scheme = parts.scheme.lower()
    if scheme in ("http", "https", "ws", "wss"):
        host = (parts.hostname or "").lower()
        port = port or (443 if scheme in ("https", "wss") else 80)
        if _denied(host, port, policy.deny):
            return f"{host}:{port} is the model server of this run, not a page"
        if is_private_host(host) and not _private_allowed(host, policy):
            return (
                f"host {host!r} is a loopback, private or link-local address "
                f"(allow it with --allow-domain {host} or --allow-private-network)"
            )
        if document and policy.allow_domains and not _listed(host, policy.allow_domains):
            return f"domain {host!r} is not in the allow-list"
        return None
    if not document:
        return None  # data:, blob:, file: resources of a page the rules above let in
    if scheme == "about" and url == "about:blank":
        return None
    if scheme == "file" and policy.file_root:
        path = os.path.realpath(unquote(parts.path))
        root = os.path.realpath(policy.file_root)
        if os.path.commonpath([path, root]) == root:
            return None
        return f"file {path} is outside {root}"
    return f"scheme {scheme or '(none)'!r} is not allowed (http and https only)"


# Glob patterns (Chromium's host-resolver rules match IP literals as written, IPv6 without
# brackets) for every address range is_private_host refuses.
_PRIVATE_PATTERNS = (
    "localhost", "*.localhost", "*.internal", "*.local",  # names that stay inside a machine or LAN
    "0.*", "10.*", "127.*", "169.254.*", "192.168.*",
    *(f"172.{n}.*" for n in range(16, 32)),
    *(f"100.{n}.*" for n in range(64, 128)),  # shared address space: cloud metadata lives here too
    "::", "::1", "::ffff:*", "fc*", "fd*", "fe8*", "fe9*", "fea*", "feb*",
)  # fmt: skip


def resolver_rules(policy: NetPolicy) -> str | None:
    """Chromium's ``--host-resolver-rules`` value that makes the non-public ranges unresolvable
    except the hosts ``policy`` allows; None when it allows them all."""
    if policy.allow_private:
        return None
    rules = [f"MAP {p} ~NOTFOUND" for p in _PRIVATE_PATTERNS]
    allowed = [h.lower().strip(".") for h in (*policy.private_hosts, *policy.allow_domains) if h]
    rules += [f"EXCLUDE {h}" for h in allowed if is_private_host(h)]
    return ", ".join(rules)
