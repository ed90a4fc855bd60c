"""BrowserGym on a machine without downloads: Debian's Chromium, the ``miniwob`` wheel's pages, and
the token counts of browsergym-experiments without fetching a vocabulary.

Three things BrowserGym expects from the network or from a set-up step:

* Playwright's own Chromium build (``playwright install chromium``, a download). BrowserGym
  launches browsers from one global ``Playwright`` (``browsergym.core._get_global_playwright``):
  the task's page (core/env.py) and its chat window (core/chat.py), neither with a way to pass an
  executable. :func:`offline_browsergym` starts that Playwright itself, makes its
  ``chromium.launch`` default to a local Chromium with the project's launch flags
  (:mod:`regionfocus.kit.chromium`), and hands it over with ``browsergym.core._set_global_playwright``,
  the hook BrowserGym has for this. BrowserGym's own launch arguments (``args``, ``headless``,
  ``slow_mo``, ``ignore_default_args``) are kept; ours are added to its ``args``, not put in
  ``pw_chromium_kwargs``, where an ``args`` key would collide with BrowserGym's.
* MiniWoB++ pages served from somewhere (``MINIWOB_URL``): the ``miniwob`` wheel ships them; a
  ``file://`` URL of its ``html/miniwob/`` folder, with the trailing slash BrowserGym appends task
  names to, is enough.
* browsergym-experiments counts the tokens of every text observation with tiktoken's
  ``cl100k_base`` (experiments/utils.py ``count_tokens``), which tiktoken downloads on first use.
  The same file ships in the ``bpe-openai`` wheel (``bpe_openai/data/cl100k_base.tiktoken.gz``);
  :func:`seed_tiktoken_cache` puts it where tiktoken's documented cache (``TIKTOKEN_CACHE_DIR``)
  looks for it, after checking it against the sha256 tiktoken itself expects, so tiktoken loads
  it as if it had downloaded it and counts exactly as it would.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib.resources
import importlib.util
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from regionfocus.kit.chromium import (
    ChromiumChoice,
    choose_chromium,
    launch_options,
    launching,
    starting_driver,
)

# tiktoken_ext/openai_public.py (tiktoken 0.14.0), ``cl100k_base``: the file tiktoken fetches and
# the sha256 it checks; its cache names a file by the sha1 of that URL (tiktoken/load.py
# ``read_file_cached``).
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def miniwob_url() -> str:
    """The ``file://`` URL of the ``miniwob`` wheel's task pages, with the trailing slash
    BrowserGym's MiniWoB++ tasks expect of ``MINIWOB_URL``. Found without importing the package."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or spec.origin is None:
        raise RuntimeError("the miniwob package is not installed: pip install 'regionfocus[browsergym]'")
    return (Path(spec.origin).resolve().parent / "html" / "miniwob").as_uri() + "/"


def _cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "regionfocus" / "tiktoken"


def seed_tiktoken_cache(directory: str | Path | None = None) -> Path:
    """Put tiktoken's ``cl100k_base`` file, taken from the ``bpe-openai`` wheel, into ``directory``
    (default: ``TIKTOKEN_CACHE_DIR`` when set, else ``~/.cache/regionfocus/tiktoken``) under the
    name tiktoken's cache gives it; return the directory. A file already there with the right
    content is kept. Raises RuntimeError when bpe-openai is missing or its file is not the one
    tiktoken expects."""
    folder = Path(directory or os.environ.get("TIKTOKEN_CACHE_DIR") or _cache_home())
    target = folder / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == CL100K_SHA256:
        return folder
    try:
        packed = importlib.resources.files("bpe_openai.data").joinpath("cl100k_base.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):
        raise RuntimeError(
            "bpe-openai is not installed (it ships the cl100k_base vocabulary): pip install 'regionfocus[browsergym]'"
        ) from None
    data = gzip.decompress(packed)
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        raise RuntimeError(
            "bpe-openai's cl100k_base.tiktoken is not the file tiktoken expects (sha256 differs)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)  # a concurrent reader sees no file or the whole file
    return folder


def _with_local_chromium(launch: Callable[..., Any], choice: ChromiumChoice) -> Callable[..., Any]:
    """``launch`` with a local Chromium and the project's flags as defaults; whatever the caller
    passes (BrowserGym: ``headless``, ``slow_mo``, ``args``, ``ignore_default_args``) wins, and its
    ``args`` are extended, not replaced. A Chromium that does not start raises
    :class:`~regionfocus.kit.chromium.ChromiumLaunchError`, one line naming ``chromium=``."""

    def launch_local(**kwargs: Any) -> Any:
        defaults = launch_options(choice.executable, headless=bool(kwargs.get("headless", True)))
        given = list(kwargs.get("args") or [])
        # Playwright adds its own headless switch from ``headless``; ours would fight a headed run.
        extra = [a for a in defaults["args"] if a not in given and a != "--headless"]
        kwargs["args"] = [*given, *extra]
        for key in ("executable_path", "chromium_sandbox", "env"):
            kwargs.setdefault(key, defaults[key])
        with launching(choice):
            return launch(**kwargs)

    launch_local.__wrapped__ = launch  # type: ignore[attr-defined]
    return launch_local


def _settings(
    chromium: str | None, miniwob: str | None, token_counts: bool
) -> tuple[ChromiumChoice, dict[str, str]]:
    """The Chromium to launch (a local one: Playwright's own build is a download) and the
    environment variables BrowserGym needs set."""
    choice = choose_chromium(chromium, "chromium=", fallback=False)
    env: dict[str, str] = {}
    if miniwob:
        env["MINIWOB_URL"] = miniwob
    elif "MINIWOB_URL" not in os.environ and importlib.util.find_spec("miniwob") is not None:
        env["MINIWOB_URL"] = miniwob_url()
    if token_counts:
        env["TIKTOKEN_CACHE_DIR"] = str(seed_tiktoken_cache())
    return choice, env


def _start(choice: ChromiumChoice) -> Any:
    from playwright.sync_api import sync_playwright

    with starting_driver():
        pw = sync_playwright().start()
    pw.chromium.launch = _with_local_chromium(pw.chromium.launch, choice)
    return pw


@contextlib.contextmanager
def offline_browsergym(
    chromium: str | None = None, *, miniwob: str | None = None, token_counts: bool = True
) -> Iterator[Any]:
    """Run BrowserGym here without downloads, inside the ``with`` block (in the thread that
    runs BrowserGym: Playwright's sync API stays on the thread that started it):

    * browsers launch from ``chromium`` (default: Debian's ``/usr/lib/chromium/chromium``) with the
      project's flags, through a Playwright handed to BrowserGym as its global one;
    * ``MINIWOB_URL`` is ``miniwob`` when given, else the ``miniwob`` wheel's pages unless the
      variable is already set;
    * ``token_counts``: browsergym-experiments' tiktoken finds ``cl100k_base`` in a cache seeded
      from the ``bpe-openai`` wheel (:func:`seed_tiktoken_cache`).

    Yields the Playwright instance. On exit BrowserGym's previous global Playwright and the
    environment variables are restored and this Playwright stops. Processes started inside the
    block inherit the variables but not the Playwright: see :func:`use_offline_browsergym`.
    """
    import browsergym.core

    choice, env = _settings(chromium, miniwob, token_counts)
    saved_env = {k: os.environ.get(k) for k in env}
    saved_pw = browsergym.core._PLAYWRIGHT
    pw = _start(choice)
    try:
        browsergym.core._set_global_playwright(pw)
        os.environ.update(env)
        yield pw
    finally:
        browsergym.core._set_global_playwright(saved_pw)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        pw.stop()


def use_offline_browsergym(chromium: str | None = None, *, miniwob: str | None = None) -> None:
    """:func:`offline_browsergym` for the rest of this process, for processes BrowserGym runs in
    that no ``with`` block reaches (AgentLab's parallel workers: ``RegionFocusArgs(offline=True)``
    calls it when it makes an agent there). Does nothing to a process whose BrowserGym already
    has a global Playwright (inside :func:`offline_browsergym`, or one the caller set up)."""
    import browsergym.core

    if browsergym.core._PLAYWRIGHT is not None:
        return
    choice, env = _settings(chromium, miniwob, token_counts=True)
    os.environ.update(env)
    browsergym.core._set_global_playwright(_start(choice))
