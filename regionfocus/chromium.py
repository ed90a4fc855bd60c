"""Where Chromium is and how it is launched: shared by everything that renders pages (the
browsing harness, the built-in ScreenSpot-Pro data builder), imported by neither from the other.

Plain data and one path check: no Playwright import, so importing it costs nothing.
Facts behind the flags (checked on Debian's Chromium): without the background-networking
switches Chromium keeps opening connections a closed network refuses; `/usr/bin/chromium` is
a wrapper script, so the binary itself is launched.
"""

from __future__ import annotations

import os

DEBIAN_CHROMIUM = "/usr/lib/chromium/chromium"
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def resolve_browser(path: str | None) -> str | None:
    """The Chromium executable to launch: ``path`` if given (must exist), else Debian's
    Chromium when installed, else None (Playwright's own browser)."""
    if path:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"--browser {path}: no such file")
        return path
    return DEBIAN_CHROMIUM if os.path.isfile(DEBIAN_CHROMIUM) else None
