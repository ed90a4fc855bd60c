"""`regionfocus aitz`: score AITZ predictions, or run an agent over AITZ episodes.

Exit codes: :mod:`regionfocus.kit.command` (0 done, 2 bad input named in one line, 3 every
episode failed, 130 interrupted: the run folder stays resumable, rerun the same command).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from regionfocus.adapters.cli_args import (
    add_agent_arguments,
    add_reasoning_arguments,
    build_model,
    coat_from_args,
    request_identity,
)
from regionfocus.adapters.model_check import check_models
from regionfocus.adapters.reasoning.coat_model import CoatModel
from regionfocus.kit import command
from regionfocus.kit.flags import add_out_argument, whole
from regionfocus.kit.runlog import RunFolder, atomic_write_text
from regionfocus.model import GroundingModel

from .episodes import episodes_pin, load_aitz
from .runner import RECORD_FIELDS, run_episodes
from .scoring import prediction_from_dict, read_predictions, score

PROG = "regionfocus aitz"

DESCRIPTION = """\
Android in the Zoo (AITZ) with the CoAT paper's action matching: atomic accuracy per action
type, the format hit rate, and per episode success and goal progress.

commands:
{commands}

  score: a predictions file holds one JSON line per step,
      {{"episode_id": "...", "step_id": 0, "prediction": {{"type": "click", "point": [x, y]}}}}
      (types click, scroll, type, press, stop; points in image pixels; "type": null for an
      unreadable answer; a step without a line counts as unanswered)
  run: asks an agent for every step, with the gold history before it (teacher forcing, as the
      paper evaluates); writes records.jsonl, predictions.jsonl and summary.md to --out and
      resumes when rerun, e.g.
      regionfocus aitz run DATA --agent qwen2.5-vl --base-url URL --model NAME [--reasoning coat]

DATA: a folder of AITZ episode files (the released layout; images beside them or under DATA).

"""


def score_parser() -> argparse.ArgumentParser:
    p = command.Parser(prog=f"{PROG} score", description="Score a predictions file against AITZ episodes.")
    p.add_argument("data", metavar="DATA", help="folder of AITZ episode files")
    p.add_argument("predictions", metavar="PREDICTIONS", help="JSON Lines, one step each (see `aitz --help`)")
    p.add_argument(
        "--empty-text-matches",
        action="store_true",
        help="the official evaluator's rule: an empty typed text matches any gold text",
    )
    p.add_argument(
        "--click-gold-at-origin",
        action="store_true",
        help="the official evaluator's rule: every click is scored against the point [0, 0]",
    )
    return p


def run_parser() -> argparse.ArgumentParser:
    p = command.Parser(
        prog=f"{PROG} run",
        description="Run an agent over AITZ episodes (teacher-forced).",
        epilog=command.exit_codes("episodes"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("data", metavar="DATA", help="folder of AITZ episode files")
    add_out_argument(p, "aitz")
    p.add_argument("--limit", type=whole(1), metavar="N", help="the first N episodes (in file order)")
    p.add_argument(
        "--concurrency", type=whole(1), default=4, metavar="N", help="episodes in flight (default 4)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--retry-errors", action="store_true", help="on resume, rerun episodes recorded as errors or partial"
    )
    add_agent_arguments(p)
    add_reasoning_arguments(p)
    return p


def cmd_score(argv: list[str]) -> int:
    """score a predictions file against AITZ episodes"""
    args = score_parser().parse_args(argv)
    episodes = load_aitz(args.data)
    predictions = read_predictions(args.predictions)
    known = {(st.episode_id, st.step_id) for ep in episodes for st in ep.steps}
    stray = sorted(set(predictions) - known)
    if stray:
        print(f"{len(stray)} prediction(s) name no step of {args.data}, e.g. {stray[0]}", file=sys.stderr)
    rules = {"empty_text_matches": args.empty_text_matches, "click_gold_at_origin": args.click_gold_at_origin}
    print(score(episodes, predictions, **rules).table())
    return 0


def cmd_run(argv: list[str], model: GroundingModel | None = None) -> int:
    """run an agent over AITZ episodes, teacher-forced"""
    args = run_parser().parse_args(argv)
    command.at_least_one("--concurrency", args.concurrency)
    coat = coat_from_args(args)
    owned = model is None
    if model is None:
        model = build_model(args, concurrency=args.concurrency, coat=coat)
        check_models(args, model)  # before the episodes are read and any record is written
    elif coat is not None:
        model = CoatModel(model, coat)
    episodes = load_aitz(args.data)[: args.limit]
    out = Path(args.out or command.default_out("aitz", args.agent))
    identity = {
        "data": str(Path(args.data).resolve()),
        "agent": args.agent,
        "model": args.model,
        "backend": args.backend,
        "temperature": args.temperature,
        "reasoning": args.reasoning,
        "coat_parts": coat.spec() if coat else None,
        "request": request_identity(model),
    }
    print(f"{len(episodes)} episodes from {args.data} -> {out}", file=sys.stderr)

    async def go() -> list[dict]:
        try:
            with RunFolder(
                out,
                identity,
                {"limit": args.limit},
                retry_errors=args.retry_errors,
                schema=RECORD_FIELDS,
                selected=[e.episode_id for e in episodes],
                data=episodes_pin(episodes, args.data),  # changed episodes refused, moved ones resume
            ) as folder:
                return await run_episodes(
                    episodes,
                    model,
                    folder,
                    coat=coat is not None,
                    concurrency=args.concurrency,
                    progress=False if args.no_progress else None,
                )
        finally:
            closer = getattr(model, "aclose", None)
            if owned and closer is not None:
                await closer()

    return _write_outputs(out, args.agent, episodes, asyncio.run(go()))


def _write_outputs(out: Path, agent: str, episodes: list, records: list[dict]) -> int:
    """predictions.jsonl and summary.md of a finished run, the table and last line printed;
    the exit code the run earns."""
    steps = [(r, s) for r in records for s in r.get("steps", [])]
    predictions = {
        (r["id"], s["step_id"]): prediction_from_dict(s["prediction"], f"record {r['id']}") for r, s in steps
    }
    lines = [
        json.dumps({"episode_id": r["id"], "step_id": s["step_id"], "prediction": s["prediction"]}) + "\n"
        for r, s in steps
    ]
    atomic_write_text(out / "predictions.jsonl", "".join(lines))
    table = score(episodes, predictions).table()
    line, code = command.ending(records, "episodes", len(episodes))
    atomic_write_text(out / "summary.md", f"# AITZ, {agent}\n\n```\n{table}\n```\n\n{line}.\n")
    print(table)
    print(line)
    return code


SUBCOMMANDS = {
    "score": command.Subcommand(cmd_score, "DATA PREDICTIONS.jsonl"),
    "run": command.Subcommand(cmd_run, "DATA --agent AGENT ..."),
}


def _help(argv: list[str]) -> int:
    """What runs when no subcommand is named: the overview, or bad input naming the word."""
    if not argv or argv[0] in ("-h", "--help"):
        print(
            DESCRIPTION.format(commands=command.subcommand_help(PROG, SUBCOMMANDS))
            + command.exit_codes("episodes")
        )
        return 0
    raise command.UsageError(
        f"{PROG}: error: unknown command {argv[0]!r} (choose from {', '.join(SUBCOMMANDS)})"
    )


def main(argv: list[str] | None = None, *, model: GroundingModel | None = None) -> int:
    """score AITZ predictions or run an agent over AITZ episodes (CoAT's action matching)

    ``model``: run this GroundingModel instead of the one the flags describe."""
    argv = list(sys.argv[1:] if argv is None else argv)
    table = {
        **SUBCOMMANDS,
        "run": command.Subcommand(lambda rest: cmd_run(rest, model), SUBCOMMANDS["run"].args),
    }
    return command.dispatch(PROG, argv, table, _help, "episodes")


if __name__ == "__main__":
    sys.exit(main())
