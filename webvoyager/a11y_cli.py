"""``regionfocus a11y URL``: print a page's accessibility observation and its size.

    regionfocus a11y https://example.org [--instruction TEXT] [--format a11y|compressed-a11y]
    regionfocus a11y page.html --format compressed-a11y --phases modal,reduce

Launches Chromium (regionfocus.webvoyager.browser.Browser; ``--browser PATH`` for another), loads the URL (http(s), or a local file path /
file:// URL, allowed under its own folder), reads the tree (webvoyager/a11y_tree.py) and prints
the linearized tree (``a11y``) or A11y-Compressor's observation (``compressed-a11y``), then one
line with its size in characters and o200k_base tokens (webvoyager/tokens.py says why that
tokenizer).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from urllib.parse import urlsplit

from regionfocus.a11y import PHASES, compress, linearize
from regionfocus.kit.command import Parser, run_command

from .a11y_tree import snapshot
from .browser import Browser, EnvConfig
from .tokens import TOKENIZER, count_tokens, tokenizer_available

FORMATS = ("a11y", "compressed-a11y")
PROG = "regionfocus a11y"


def _parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog=PROG,
        description="Print the accessibility observation of a page (plain linearized tree or "
        "A11y-Compressor's compressed one) and its size in characters and tokens.",
    )
    ap.add_argument("url", help="http(s) URL, file:// URL or path of a local HTML file")
    ap.add_argument("--instruction", default="", help="task text (phase 2 keeps text around its keywords)")
    ap.add_argument(
        "--format", choices=FORMATS, default="compressed-a11y", help="observation (default compressed-a11y)"
    )
    ap.add_argument(
        "--phases",
        default=",".join(PHASES),
        help=f"compressed-a11y phases to run, comma-separated subset of {','.join(PHASES)} (the paper's ablation)",
    )
    ap.add_argument("--viewport", default="1440x1440", help="W x H in CSS pixels (default 1440x1440)")
    ap.add_argument("--visible-only", action="store_true", help="a11y format: on-screen rows only")
    ap.add_argument(
        "--browser", metavar="PATH", help="Chromium executable (default Debian's /usr/lib/chromium/chromium)"
    )
    return ap


def _target(url: str) -> tuple[str, str | None]:
    """(URL to load, folder file:// navigation is allowed under). Raises ValueError."""
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("http", "https"):
        return url, None
    path = Path(urlsplit(url).path) if scheme == "file" else Path(url)
    if scheme not in ("", "file") and not Path(url).exists():
        raise ValueError(f"URL {url!r}: only http(s), file:// and local paths are supported")
    path = path.expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"URL {url!r}: no such file {path}")
    return path.as_uri(), str(path.parent)


async def _run(args: argparse.Namespace, viewport: tuple[int, int], phases: list[str]) -> str:
    url, root = _target(args.url)
    host = urlsplit(url).hostname
    # The page the user named may be on this machine (a site in development): its host is allowed.
    async with Browser(args.browser, private_hosts=(host,) if host else ()) as browser:
        env = await browser.new_env(EnvConfig(viewport=viewport, file_root=root))
        try:
            error = await env.goto(url)
            if error:
                raise RuntimeError(error)
            await env.observe()
            snap = await snapshot(env.page)
        finally:
            await env.close()
    if args.format == "a11y":
        return linearize(snap.elements, viewport=snap.viewport if args.visible_only else None)
    return compress(snap.elements, args.instruction, phases=phases, viewport=snap.viewport).text


def a11y_command(argv: list[str]) -> int:
    """Print a page's accessibility observation (linearized or compressed) and its size."""
    return run_command(PROG, lambda: _print_observation(argv))


def _print_observation(argv: list[str]) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    try:
        w, h = (int(v) for v in args.viewport.lower().split("x"))
        if w <= 0 or h <= 0:
            raise ValueError
    except ValueError:
        ap.error(f"--viewport must look like 1440x1440, got {args.viewport!r}")
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    bad = [p for p in phases if p not in PHASES]
    if bad:
        ap.error(f"--phases: unknown phase(s) {bad}; known: {', '.join(PHASES)}")
    try:
        text = asyncio.run(_run(args, (w, h), phases))
    except RuntimeError as e:  # the page did not load: bad input, named (ValueError is too)
        raise ValueError(str(e)) from None
    print(text)
    tokens = (
        f"{count_tokens(text)} tokens ({TOKENIZER})"
        if tokenizer_available()
        else "tokens: n/a (no bpe-openai)"
    )
    print(f"\n[{args.format}] {len(text)} characters, {tokens}")
    return 0
