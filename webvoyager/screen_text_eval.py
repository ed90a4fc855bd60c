"""``regionfocus screen-text-eval``: the screen-to-text suite (screen_text_suite.py) run by
``regionfocus webvoyager --tasks screen-to-text --agent screen-text``, with this command's earlier
flags translated."""

from __future__ import annotations

import argparse
import re

from regionfocus.kit.command import Parser, run_command

from .cli import run_main
from .screen_text_suite import SUITE_NAME, is_suite

PROG = "regionfocus screen-text-eval"


def main(argv: list[str]) -> int:
    """the screen-to-text suite on MiniWoB++ (`regionfocus webvoyager --tasks screen-to-text`)"""
    return run_command(PROG, lambda: _run(argv), "tasks")


def _run(argv: list[str]) -> int:
    p = Parser(
        prog=PROG,
        description="The screen-to-text ReAct agent (Sasagawa and Kawahara) on the paper's MiniWoB++ "
        "suite: `regionfocus webvoyager --tasks screen-to-text --agent screen-text` with this command's "
        "earlier flags translated; every other flag of `regionfocus webvoyager` is passed on (e.g. "
        "--no-regionfocus for the paper's plain agent).",
    )
    p.add_argument("--tasks", default=SUITE_NAME, help="screen-to-text[:1-step|:n-step] or a comma list")
    p.add_argument("--seeds", default="0-19", help="consecutive seeds, 0-19 (the paper's gpt-4 setting) or 3")
    p.add_argument("--model", help="model id as the server lists it")
    p.add_argument("--max-steps", type=int, default=10, help="model steps per episode (paper: 10)")
    p.add_argument(
        "--regionfocus",
        action="store_true",
        help="deprecated, does nothing: RegionFocus is on by default (--no-regionfocus turns it off)",
    )
    p.add_argument("--reasoning", choices=("react", "coat"), default="react", help="coat: carry CoAT parts")
    p.add_argument("--coat-parts", help="CoAT parts for --reasoning coat: all or a list of sd,par,at,ad")
    p.add_argument("--out", metavar="RUN_DIR", help="run folder (default runs/screen-text-<model>)")
    p.add_argument("--recall", action="store_true", help=argparse.SUPPRESS)
    args, rest = p.parse_known_args(argv)
    if args.recall:
        p.error("element recall is measured by `python -m benchmarks.screen_text_recall`")
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", args.seeds.strip())
    if m is None or int(m.group(2) or m.group(1)) < int(m.group(1)):
        p.error(f"--seeds must be one seed or a range like 0-19, got {args.seeds!r}")
    first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    tasks = args.tasks if is_suite(args.tasks) else f"{SUITE_NAME}:{args.tasks}"
    model = args.model or ""
    out = args.out or f"runs/screen-text-{re.sub(r'[^A-Za-z0-9._-]+', '_', model)}"
    argv = ["--tasks", tasks, "--agent", "screen-text", "--seed", str(first)]
    argv += ["--episodes-per-task", str(last - first + 1), "--max-model-steps", str(args.max_steps)]
    argv += ["--out", out, *(["--model", model] if model else [])]
    if args.reasoning == "coat":
        argv += ["--reasoning", "coat", *(["--coat-parts", args.coat_parts] if args.coat_parts else [])]
    return run_main(argv + rest)
