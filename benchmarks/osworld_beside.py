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
plain (exact McNemar), rounds, model calls and seconds per episode, and episodes whose action
hung (counted as failed). Each episode is appended to ``--out`` as it ends; the same command
again runs only the episodes the file lacks.

    .venv/bin/python -m benchmarks.osworld_beside [--gaps 30,80] [--drift 25] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
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


def _episode(desktop, focus, label, side, gap, drift, steps) -> dict:
    with tempfile.TemporaryDirectory(prefix="rf-osworld-") as tmp:
        with application(desktop, Path(tmp)) as (out, layout):
            desktop.move(5, 700)
            focus.reset()
            agent = OSWorldFocus(Beside(layout[label], side, gap=gap, drift=drift), focus, cursor=(5, 700))
            t = time.perf_counter()
            error = None
            try:
                clicked = episode(desktop, agent, f"Click the {label} button", out, steps=steps)
            except subprocess.SubprocessError as e:  # an action that hung: a failed episode
                clicked, error = [], f"{type(e).__name__}: {str(e)[:200]}"
            wall = time.perf_counter() - t
    return {
        "ok": clicked == [label],
        "clicked": clicked,
        "error": error,
        "rounds": agent.stats["rf_triggered"],
        "calls": agent.stats["rf_calls"],
        "wall_s": round(wall, 2),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gaps", type=_ints, default=[30, 80], help="px between the button's edge and the click")
    p.add_argument("--drift", type=int, default=25, help="px the drifting agent moves out per try")
    p.add_argument("--steps", type=int, default=3, help="steps per episode (OSWorld's max_steps)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("runs/osworld-beside/episodes.jsonl"),
        help="one line per episode; a rerun with the same file runs only the episodes it lacks",
    )
    args = p.parse_args(argv)
    agents = {"stubborn": 0, "drifting": args.drift}
    done = {}
    if args.out.exists():
        for line in args.out.read_text().splitlines():
            r = json.loads(line)
            done[(r["agent"], r["condition"], r["label"], r["side"], r["gap"], r["drift"], r["steps"])] = r
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print_machine()
    records = []
    with Focus("ocr") as wrapped_focus, Focus("ocr", enabled=False) as plain_focus:
        for agent_name, drift in agents.items():
            for condition, focus in (("plain", plain_focus), ("wrapped", wrapped_focus)):
                for label in LABELS:
                    todo = [(side, gap) for side in SIDES for gap in args.gaps]
                    keys = [
                        (agent_name, condition, label, side, gap, drift, args.steps) for side, gap in todo
                    ]
                    if all(k in done for k in keys):
                        records += [done[k] for k in keys]
                        continue
                    with xvfb() as desktop:  # one X server per button: a wedged one costs little
                        for key, (side, gap) in zip(keys, todo, strict=True):
                            if key not in done:
                                r = _episode(desktop, focus, label, side, gap, drift, args.steps)
                                r.update(agent=agent_name, condition=condition, label=label, side=side)
                                r.update(gap=gap, drift=drift, steps=args.steps)
                                with open(args.out, "a", encoding="utf-8") as f:
                                    f.write(json.dumps(r) + "\n")
                                done[key] = r
                                said = "recovered" if r["ok"] else f"clicked {r['clicked']}"
                                print(
                                    f"{agent_name} {condition} {label} {side} gap={gap}: {said}", flush=True
                                )
                            records.append(done[key])
    _table(records, args)


def _table(records: list[dict], args) -> None:
    by: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        by.setdefault((r["agent"], r["condition"]), []).append(r)
    rows = []
    for (agent_name, condition), rs in by.items():
        ok = [r["ok"] for r in rs]
        n = len(rs)
        row = [agent_name, condition, f"{sum(ok)}/{n}", pct_ci(sum(ok), n)]
        plain = [r["ok"] for r in by[(agent_name, "plain")]]
        test = paired(ok, plain) if condition == "wrapped" else None
        row += [diff_cell(test), p_value(test.p)] if test else ["", ""]
        row += [sum(r["rounds"] for r in rs) / n, sum(r["calls"] for r in rs) / n]
        row += [sum(r["wall_s"] for r in rs) / n, sum(1 for r in rs if r["error"])]
        rows.append(row)
    print_table(
        f"Clicks beside the target on a real window (Xvfb, Tk, OCR stand-in; gaps {args.gaps} px, "
        f"{len(LABELS)} buttons x {len(SIDES)} sides, {args.steps} steps, drift {args.drift} px)",
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
            "hung",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
