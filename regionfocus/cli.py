"""The `regionfocus` command.

Subcommands are registered by the packages that own them as entry points in the group
``regionfocus.commands`` (``name = "package.module:function"``, see pyproject.toml): the core
names no adapter or harness, and a third-party package can add a command the same way. A
command's one-line summary is the first line of its function's docstring; the function takes
the arguments after the command name and returns an exit code.
"""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint, entry_points

GROUP = "regionfocus.commands"
# Third-party modules of the optional parts, by the extra that installs them (pyproject.toml).
EXTRAS = {
    "playwright": "browser",
    "miniwob": "browser",
    "rapidocr": "ocr",
    "onnxruntime": "ocr",
    "bpe_openai": "a11y",
    "transformers": "hf",
    "accelerate": "hf",
    "torch": "hf",
    "segment_anything": "sam",
    "torchvision": "sam",
    "anthropic": "hosted",
    "google": "hosted",  # google-genai installs google.genai
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
  regionfocus parse --agent uitars-1.5 --size 3840x2160 "Action: click(start_box='(512,300)')"
  regionfocus serve-command --agent qwen2.5-vl
  regionfocus show-prompt --agent qwen2.5-vl --kind grounding

`regionfocus COMMAND --help` explains each command.
"""


def commands() -> dict[str, EntryPoint]:
    """The registered commands by name, sorted."""
    return {ep.name: ep for ep in sorted(entry_points(group=GROUP), key=lambda ep: ep.name)}


def summary(ep: EntryPoint) -> str:
    """The first line of the command function's docstring (loading it imports its module)."""
    try:
        doc = ep.load().__doc__ or ""
    except Exception as e:  # noqa: BLE001 - one broken plug-in must not hide the others
        return f"(cannot load {ep.value}: {type(e).__name__}: {e})"
    return doc.strip().splitlines()[0] if doc.strip() else ""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    found = commands()
    if not argv or argv[0] in ("-h", "--help", "help"):
        width = max(map(len, found), default=0)
        lines = "\n".join(f"  {name:<{width}}  {summary(ep)}" for name, ep in found.items())
        print(USAGE.format(commands=lines or "  (none registered: is regionfocus installed with pip?)"))
        return 0
    if argv[0] in ("-V", "--version"):
        from . import __version__

        print(f"regionfocus {__version__}")
        return 0
    name = argv[0]
    if name not in found:
        known = ", ".join(found) or "none registered (install the package with pip)"
        print(f"regionfocus: unknown command {name!r}; choose one of: {known}", file=sys.stderr)
        return 2
    try:
        return int(found[name].load()(argv[1:]) or 0)
    except ModuleNotFoundError as e:
        extra = EXTRAS.get((e.name or "").split(".")[0])
        if extra is None:
            raise
        print(
            f"regionfocus {name}: this needs {e.name}, which the '{extra}' extra installs: "
            f"pip install 'regionfocus[{extra}]'",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
