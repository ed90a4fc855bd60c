"""Where Chromium is and how it is launched: shared by everything that renders pages (the
browsing harness, the built-in ScreenSpot-Pro data builder), imported by neither from the other.

Plain data and small pure functions: no Playwright import, so importing it costs nothing.
Facts behind the flags (checked on Debian's Chromium): without the background-networking
switches Chromium keeps opening connections a closed network refuses; `/usr/bin/chromium` is
a wrapper script, so the binary itself is launched.

Chromium renders untrusted pages, so it runs with its sandbox, and sees none of our secrets:
its environment holds only what a browser needs (no API keys or tokens). Its sandbox cannot
start as root (the usual case in a container): there it runs without, and says so once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

DEBIAN_CHROMIUM = "/usr/lib/chromium/chromium"
CHROMIUM_ARGS = (
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
# What Chromium reads from its environment: the search path, home and temp folders, locale and
# time zone, a display, fonts, proxies and CA certificates. Everything else is left out.
_ENV_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "LANG", "LANGUAGE", "TZ",
        "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "FONTCONFIG_FILE", "FONTCONFIG_PATH",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    }
)  # fmt: skip
_ENV_PREFIXES = ("LC_", "XDG_")
_warned_no_sandbox = False


def resolve_browser(path: str | None) -> str | None:
    """The Chromium executable to launch: ``path`` if given (must exist), else Debian's
    Chromium when installed, else None (Playwright's own browser)."""
    if path:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"--browser {path}: no such file")
        return path
    return DEBIAN_CHROMIUM if os.path.isfile(DEBIAN_CHROMIUM) else None


def browser_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of ``environ`` Chromium is given: what a browser needs, no credentials."""
    return {k: v for k, v in environ.items() if k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)}


def use_sandbox(requested: bool = True, euid: int | None = None) -> bool:
    """Whether Chromium runs sandboxed: when ``requested`` and not as root (``euid`` 0), where
    its sandbox refuses to start. Running as root without one is logged once per process."""
    global _warned_no_sandbox
    if not requested:
        return False
    if (os.geteuid() if euid is None else euid) != 0:
        return True
    if not _warned_no_sandbox:
        _warned_no_sandbox = True
        log.warning(
            "running as root: Chromium's sandbox cannot start, so pages are rendered without it; "
            "run as an ordinary user to keep it"
        )
    return False


def launch_options(
    executable: str | None, *, headless: bool = True, sandbox: bool = True, extra_args: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Keyword arguments for Playwright's ``chromium.launch``: the flags above, the sandbox as
    :func:`use_sandbox` decides (``sandbox=False``: off, as ``--no-browser-sandbox`` asks), the
    filtered environment."""
    args = [a for a in CHROMIUM_ARGS if headless or a != "--headless"]
    sandboxed = use_sandbox(sandbox)
    if not sandboxed:
        args.append("--no-sandbox")
    return {
        "executable_path": executable,
        "args": [*args, *extra_args],
        "headless": headless,
        "chromium_sandbox": sandboxed,
        "env": browser_environment(os.environ),
    }
