"""The ``regionfocus strategies`` command: the test-time strategies, their papers and budgets."""

from __future__ import annotations

import argparse
import json

from . import STRATEGIES

EPILOG = """Every strategy takes the baseline prediction and returns a final point with the same
trace and cost record (each call's image size sent and seen, image tokens as the model family's
processor counts them, text tokens, latency). Sampling strategies degenerate with a deterministic
model (temperature 0, or the OCR agent): their n samples would all be the same answer, so they
take that one answer and say so in the result's notes. Budgets are requests per sample beyond
the baseline; n and the step limits are parameters. A strategy that reproduces a published run
says what that run sent ("protocol": coordinates, images per request, reruns, harness).

example:
  regionfocus strategies
  regionfocus strategies --json
"""


def strategies_command(argv: list[str]) -> int:
    """List the test-time strategies (papers, call budgets, sampling/planner needs)."""
    parser = argparse.ArgumentParser(
        prog="regionfocus strategies",
        description="List the registered test-time strategies.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print the table as JSON lines")
    args = parser.parse_args(argv)
    rows = [
        {
            "name": i.name,
            "paper": i.paper,
            "calls_per_sample": i.call_budget,
            "needs_sampling": i.needs_sampling,
            "needs_planner": i.needs_planner,
            "deterministic_model": i.deterministic,
            "protocol": i.protocol,
        }
        for i in STRATEGIES.values()
    ]
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        needs = ", ".join(
            n for n, on in (("sampling", r["needs_sampling"]), ("planner", r["needs_planner"])) if on
        )
        print(f"{r['name']:<{width}}  {r['paper']}")
        print(f"{'':<{width}}  calls: {r['calls_per_sample']}")
        print(f"{'':<{width}}  needs: {needs or '-'}; deterministic model: {r['deterministic_model']}")
        if r["protocol"]:
            print(f"{'':<{width}}  protocol: {r['protocol']}")
    return 0
