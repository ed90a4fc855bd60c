"""The `regionfocus` command. Each subcommand lives with the package that owns it and is
imported only when used, so `regionfocus --help` stays instant and the core imports nothing
of the harnesses."""

from __future__ import annotations

import sys

COMMANDS = {
    "screenspot-pro": (
        "screenspot_pro.cli",
        "ground instructions on ScreenSpot-Pro screenshots (baseline and RegionFocus in one pass)",
    ),
    "webvoyager": ("webvoyager.cli", "browse live pages in Chromium (WebVoyager tasks, MiniWoB++ offline)"),
    "parse": ("adapters.cli", "parse a model answer into an action in original-screenshot pixels"),
    "serve-command": ("adapters.cli", "print the recommended `vllm serve` line for a model family"),
    "show-prompt": ("adapters.cli", "print exactly the request a model family is sent (templates, pre-fill)"),
}

USAGE = """usage: regionfocus COMMAND [options]

RegionFocus: visual test-time scaling for GUI agents. When the wrapped agent is probably
wrong, it zooms into regions around a focal point, gathers one candidate per region and lets
the model choose among candidates drawn as numbered pink stars on the screenshot.

commands:
{commands}

examples:
  regionfocus screenspot-pro --data builtin --agent ocr            # CPU-only, no downloads
  regionfocus screenspot-pro --data ~/ScreenSpot-Pro --agent uitars-1.5 \\
      --base-url http://127.0.0.1:8000/v1 --model ByteDance-Seed/UI-TARS-1.5-7B --concurrency 16
  regionfocus webvoyager --tasks miniwob --agent ocr
  regionfocus parse --model uitars-1.5 --size 3840x2160 "Action: click(start_box='(512,300)')"
  regionfocus serve-command --model qwen2.5-vl
  regionfocus show-prompt --agent qwen2.5-vl --kind grounding

`regionfocus COMMAND --help` explains each command.
"""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        width = max(map(len, COMMANDS))
        print(USAGE.format(commands="\n".join(f"  {k:<{width}}  {v[1]}" for k, v in COMMANDS.items())))
        return 0
    if argv[0] in ("-V", "--version"):
        from . import __version__

        print(f"regionfocus {__version__}")
        return 0
    name = argv[0]
    if name not in COMMANDS:
        print(f"regionfocus: unknown command {name!r}; choose one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    import importlib

    module = importlib.import_module(COMMANDS[name][0])
    # adapters.cli serves two commands and takes the command name; harness CLIs do not.
    rest = argv if module.__name__ == "adapters.cli" else argv[1:]
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
