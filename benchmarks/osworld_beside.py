"""The OSWorld-style wrapper on a real window: how often a click beside its target is recovered.

A real X server (Xvfb) runs the Tk test application (tests/xvfb_app.py: six labelled buttons on
a plain window); every action is executed with pyautogui and every screenshot taken as OSWorld's
server does (tests/xvfb_desktop.py). The inner agent is a demo, and says so: it clicks ``gap`` px
beside its target button on one side (right, below, left, above), where the click does nothing,
either every step at the same point (``stubborn``) or each time ``--drift`` px further out
(``drifting``: no try repeats the last, so only the no-effect trigger can catch it). Each episode
is OSWorld's loop (predict, execute, observe) for up to three steps, plain (Focus with
``enabled=False``: the same bookkeeping, no round) and wrapped (Focus around the offline OCR
stand-in), for every button, side and gap. An episode succeeds when the app reports a click on
its target and nothing else.

Prints Markdown: success with Wilson 95 % intervals per agent and condition, paired against
plain (exact McNemar), and rounds, model calls and seconds per episode.

    .venv/bin/python -m benchmarks.osworld_beside [--gaps 30,80] [--drift 25]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from regionfocus.kit.stats import diff_cell, p_value, paired, pct_ci
from regionfocus.plugins import Focus
from regionfocus.plugins.osworld import OSWorldFocus
from tests.xvfb_app import LABELS
from tests.xvfb_desktop import SIDES, Beside, application, episode, xvfb

from ._common import print_machine, print_table


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return values


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gaps", type=_ints, default=[30, 80], help="px between the button's edge and the click")
    p.add_argument("--drift", type=int, default=25, help="px the drifting agent moves out per try")
    p.add_argument("--steps", type=int, default=3, help="steps per episode (OSWorld's max_steps)")
    args = p.parse_args(argv)
    agents = {"stubborn": 0, "drifting": args.drift}
    results: dict[tuple[str, str], list[bool]] = {}
    cost: dict[tuple[str, str], list[tuple[int, int, float]]] = {}
    print_machine()
    with xvfb() as desktop, Focus("ocr") as wrapped_focus, Focus("ocr", enabled=False) as plain_focus:
        for agent_name, drift in agents.items():
            for condition, focus in (("plain", plain_focus), ("wrapped", wrapped_focus)):
                key = (agent_name, condition)
                for label in LABELS:
                    for side in SIDES:
                        for gap in args.gaps:
                            with tempfile.TemporaryDirectory(prefix="rf-osworld-") as tmp:
                                with application(desktop, Path(tmp)) as (out, layout):
                                    desktop.move(5, 700)
                                    focus.reset()
                                    inner = Beside(layout[label], side, gap=gap, drift=drift)
                                    agent = OSWorldFocus(inner, focus, cursor=(5, 700))
                                    t = time.perf_counter()
                                    clicked = episode(
                                        desktop, agent, f"Click the {label} button", out, steps=args.steps
                                    )
                                    wall = time.perf_counter() - t
                            results.setdefault(key, []).append(clicked == [label])
                            cost.setdefault(key, []).append(
                                (agent.stats["rf_triggered"], agent.stats["rf_calls"], wall)
                            )
                            print(
                                f"{agent_name} {condition} {label} {side} gap={gap}: "
                                f"{'recovered' if clicked == [label] else f'clicked {clicked}'} "
                                f"({wall:.1f} s)",
                                flush=True,
                            )
    rows = []
    for (agent_name, condition), ok in results.items():
        c = cost[(agent_name, condition)]
        n = len(c)
        row = [agent_name, condition, f"{sum(ok)}/{len(ok)}", pct_ci(sum(ok), len(ok))]
        plain = results[(agent_name, "plain")]
        test = paired(ok, plain) if condition == "wrapped" else None
        row += [diff_cell(test), p_value(test.p)] if test else ["", ""]
        row += [sum(x[0] for x in c) / n, sum(x[1] for x in c) / n, sum(x[2] for x in c) / n]
        rows.append(row)
    print_table(
        f"Clicks beside the target on a real window (Xvfb, Tk, OCR stand-in; gaps {args.gaps} px, "
        f"{len(LABELS)} buttons x {len(SIDES)} sides, {args.steps} steps)",
        [
            "agent",
            "condition",
            "recovered",
            "% [95 % CI]",
            "− plain (points)",
            "McNemar p",
            "rounds/ep",
            "calls/ep",
            "s/ep",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
