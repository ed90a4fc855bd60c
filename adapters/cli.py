"""``regionfocus parse`` and ``regionfocus serve-command``: the adapters' own subcommands.

The top-level CLI forwards here with ``adapters.cli.main(["parse", ...])``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from .registry import VLM_FAMILIES, get_adapter
from .serving import serve_command


def _size(value: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX*,]\s*(\d+)\s*", value)
    if not m or int(m.group(1)) <= 0 or int(m.group(2)) <= 0:
        raise argparse.ArgumentTypeError(
            f"--size must be WIDTHxHEIGHT in pixels, e.g. 3840x2160; got {value!r}"
        )
    return int(m.group(1)), int(m.group(2))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="regionfocus", description="Model adapter tools.")
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser(
        "parse",
        help="parse a model answer into an action in original-screenshot pixels",
        description="Parse TEXT as MODEL would answer for a screenshot of --size, sent at the adapter's own resize.",
    )
    pp.add_argument("--model", required=True, choices=VLM_FAMILIES, help="model family")
    pp.add_argument("--size", required=True, type=_size, metavar="WxH", help="original screenshot size")
    pp.add_argument("text", nargs="+", help="the answer text ('-' reads standard input)")
    sp = sub.add_parser("serve-command", help="print the recommended `vllm serve` line for a family")
    sp.add_argument("--model", required=True, choices=VLM_FAMILIES, help="model family")
    sp.add_argument(
        "--model-path", default=None, help="checkpoint folder or hub id (default: the family's 7B/8B)"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve-command":
        print(serve_command(args.model, args.model_path))
        return 0
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    adapter = get_adapter(args.model)
    w, h = args.size
    action = adapter.parse_action(text, w, h)
    if action is None:
        print(f"could not parse an action for {args.model} from: {text!r}", file=sys.stderr)
        return 1
    out = {
        "model": args.model,
        "size": [w, h],
        "model_input_size": list(adapter.input_size((w, h))),
        "action": action.to_dict(),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
