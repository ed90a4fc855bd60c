"""Where Chromium is and how it is launched: shared by everything that renders pages (the
browsing harness, the built-in ScreenSpot-Pro data builder), imported by neither from the other.

Plain data and small pure functions: no Playwright import, so importing it costs nothing. A
launch that fails becomes one :class:`ChromiumLaunchError` line here, whichever command launched
(Playwright's own error is many lines: the whole command line and its call log).
Facts behind the flags (checked on Debian's Chromium): without the background-networking
switches Chromium keeps opening connections a closed network refuses; `/usr/bin/chromium` is
a wrapper script, so the binary itself is launched.

Chromium renders untrusted pages, so it runs with its sandbox, and sees none of our secrets:
its environment holds only what a browser needs (no API keys or tokens). Its sandbox cannot
start as root (the usual case in a container): there it runs without, and says so once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
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


def resolve_browser(path: str | None, flag: str = "--browser") -> str | None:
    """The Chromium executable to launch: ``path`` if given (an executable file, else
    :class:`ChromiumLaunchError` naming ``flag``), else Debian's Chromium when installed, else
    None (Playwright's own browser). :func:`choose_chromium` keeps how it was chosen too."""
    return choose_chromium(path, flag).executable


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


# ------------------------------------------------------------------------- a launch that fails
SETUP = "`bash scripts/setup.sh`"  # the README's set-up: Debian's Chromium by apt-get, Playwright in .venv
_SPAWN = re.compile(r"spawn .* (E[A-Z]+)\s*$", re.M)
_EXITED = re.compile(r"<process did exit: exitCode=(\w+), signal=(\w+)>")
_STDERR = re.compile(r"\[pid=\d+\]\[err\] ?(.*)")
# Chromium's own log prefix, "[pid:tid:MMDD/HHMMSS.micros:LEVEL:file:line] " (pid and tid optional).
_CHROMIUM_LOG = re.compile(r"^\[[0-9:/.]+:(?P<level>[A-Z]+)\d*:(?P<source>[^\]]*)\]\s*")
# Errors Chromium logs on every start where there is no D-Bus (a container), whatever stops it:
# "Failed to connect to the bus", from dbus/bus.cc (bus.cc in older builds' prefixes).
_NEVER_THE_CAUSE = ("dbus/", "bus.cc")
_SPAWN_CAUSES = {
    "EACCES": "is not executable (permission denied)",
    "ENOENT": "cannot be run (no such file, or the interpreter its first line names is missing)",
    "ENOEXEC": "is not a program this machine can run (exec format error)",
}


class ChromiumLaunchError(ValueError):
    """Chromium, or Playwright's driver that starts it, did not start. The message is one line:
    the executable, how it was chosen (the flag that sets it) and the cause, Chromium's own first
    error line when it wrote one. A ValueError, so every command prints it in one line and exits 2
    (:func:`regionfocus.kit.command.run_command`)."""


@dataclass(frozen=True)
class ChromiumChoice:
    """The Chromium a command launches. ``executable``: None is Playwright's own build.
    ``flag``: how a user chooses another (``--browser``, ``chromium=``); ``given``: they did."""

    executable: str | None
    flag: str = "--browser"
    given: bool = False

    def _set(self, value: str) -> str:
        return f"{self.flag}{value}" if self.flag.endswith("=") else f"{self.flag} {value}"

    def describe(self) -> str:
        if self.executable is None:
            return f"Playwright's own Chromium (the default: {DEBIAN_CHROMIUM} is not installed)"
        if self.given:
            return self._set(self.executable)
        return f"{self.executable} (the default; {self._set('PATH')} chooses another)"

    def error(self, cause: str) -> ChromiumLaunchError:
        return ChromiumLaunchError(f"Chromium did not start: {self.describe()} {cause}")

    def missing(self) -> ChromiumLaunchError:
        """The executable is not there; when it was not given, no Chromium is installed at all,
        and the message says what installs one."""
        if self.given:
            return self.error("does not exist")
        bundled = " and Playwright's own is not downloaded" if self.executable is None else ""
        return ChromiumLaunchError(
            f"Chromium did not start: no Chromium ({DEBIAN_CHROMIUM} is not installed{bundled}); "
            f"{SETUP} installs Debian's (apt-get install chromium), or {self._set('PATH')} names another"
        )


def choose_chromium(path: str | None, flag: str = "--browser", *, fallback: bool = True) -> ChromiumChoice:
    """The Chromium to launch: ``path`` when given (set by ``flag``), checked before anything
    starts; else Debian's when installed; else Playwright's own build (``fallback``) or
    :class:`ChromiumLaunchError` saying what installs one. Raises :class:`ChromiumLaunchError`."""
    if path:
        choice = ChromiumChoice(path, flag, given=True)
        if not os.path.exists(path):
            raise choice.missing()
        if os.path.isdir(path):
            raise choice.error("is a folder, not Chromium's executable")
        if not os.access(path, os.X_OK):
            raise choice.error(_SPAWN_CAUSES["EACCES"])
        return choice
    if os.path.isfile(DEBIAN_CHROMIUM):
        return ChromiumChoice(DEBIAN_CHROMIUM, flag)
    if not fallback:
        raise ChromiumChoice(DEBIAN_CHROMIUM, flag).missing()
    return ChromiumChoice(None, flag)


def chromium_stderr(message: str) -> str | None:
    """The first meaningful line Chromium wrote on stderr, from a Playwright launch error's
    message: its first ERROR or FATAL line when it logged one (the warnings it prints on every
    start, and its D-Bus errors in a container, say nothing about why it stopped), else its
    first non-empty line."""
    lines = []
    for raw in dict.fromkeys(m.group(1).strip() for m in _STDERR.finditer(message)):
        m = _CHROMIUM_LOG.match(raw)
        text = raw[m.end() :].strip() if m else raw
        if text and not (m and m.group("source").startswith(_NEVER_THE_CAUSE)):
            lines.append((m.group("level") if m else "", text))
    for level, text in lines:
        if level in ("ERROR", "FATAL"):
            return _short(text)
    return _short(lines[0][1]) if lines else None


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def launch_error(error: BaseException, choice: ChromiumChoice) -> ChromiumLaunchError:
    """Playwright's error for a failed ``chromium.launch`` (many lines: the whole command line,
    its call log) as one :class:`ChromiumLaunchError` line."""
    message = str(error)
    spawn = _SPAWN.search(message)
    if spawn:
        return choice.error(_SPAWN_CAUSES.get(spawn.group(1), f"cannot be run ({spawn.group(1)})"))
    if "Executable doesn't exist" in message:  # Playwright's own build was never downloaded
        return choice.missing()
    said = chromium_stderr(message)
    exited = _EXITED.search(message)
    if exited:
        code, signal = exited.groups()
        how = f"killed by {signal}" if signal != "null" else f"exit code {code}"
        tail = f": {said}" if said else " and wrote nothing on stderr"
        return choice.error(f"exited at start ({how}){tail}")
    first = message.splitlines()[0] if message.strip() else type(error).__name__
    first = re.sub(r"^BrowserType\.launch:\s*", "", first).strip()
    return choice.error(f"failed: {_short(first)}" + (f" (Chromium: {said})" if said else ""))


def driver_error(error: BaseException) -> ChromiumLaunchError:
    """Playwright's driver (the Node.js program that starts browsers) did not start."""
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return ChromiumLaunchError(
        f"Chromium did not start: Playwright's driver did not run ({_short(first)}); {SETUP} reinstalls "
        "Playwright with it (or: pip install --force-reinstall playwright)"
    )


@contextlib.contextmanager
def starting_driver() -> Iterator[None]:
    """Around starting Playwright (``async_playwright().start()``, ``sync_playwright().start()``):
    its failure raised as :func:`driver_error`."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - whatever stopped the driver, the user sees one line
        _read_driver_error(e)
        raise driver_error(e) from e


def _read_driver_error(error: BaseException) -> None:
    """Playwright's transport also keeps a failed start's error in a future nobody reads
    (playwright/_impl/transport.py, ``on_error_future``); asyncio reports such a future with a
    whole traceback when it is collected ("Future exception was never retrieved"), after our one
    line. Reading it here, found in the frames the error passed through, keeps the line alone."""
    tb = error.__traceback__
    while tb is not None:
        future = getattr(tb.tb_frame.f_locals.get("self"), "on_error_future", None)
        if future is not None and future.done() and not future.cancelled():
            future.exception()
        tb = tb.tb_next


@contextlib.contextmanager
def launching(choice: ChromiumChoice) -> Iterator[None]:
    """Around ``chromium.launch(...)`` of ``choice``: its failure raised as :func:`launch_error`."""
    try:
        yield
    except ChromiumLaunchError:
        raise
    except Exception as e:  # noqa: BLE001 - Playwright's Error and TargetClosedError, a timeout
        raise launch_error(e, choice) from e


@contextlib.asynccontextmanager
async def launched(choice: ChromiumChoice, **options: Any) -> AsyncIterator[Any]:
    """Playwright started and ``choice`` launched (``options`` go to :func:`launch_options`),
    both stopped on exit: the Playwright ``Browser``. Either failing to start raises
    :class:`ChromiumLaunchError`. For one browser for a whole job; the browsing harness, which
    relaunches a browser that died, keeps its own (webvoyager/browser.py)."""
    from playwright.async_api import async_playwright

    with starting_driver():
        pw = await async_playwright().start()
    try:
        with launching(choice):
            browser = await pw.chromium.launch(**launch_options(choice.executable, **options))
        try:
            yield browser
        finally:
            await browser.close()
    finally:
        await pw.stop()
