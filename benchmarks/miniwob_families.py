"""MiniWoB++ success per task over whole families (issue 22): every task of click-*, enter-*,
focus-*, choose-* (44 tasks), per agent, with and without RegionFocus, seeded episodes.

Runs the CLI (``regionfocus webvoyager --tasks miniwob:<tasks> --agent A [--no-regionfocus]
--episodes-per-task K --out DIR``; episode k uses seed k) once per configuration, at most two
browser runs at a time, or reads run folders already made (``--from DIR...``). A run folder is
resumable: the same command again runs only the episodes it lacks. Client CPU is the CLI
process's own CPU plus that of the processes it waited for (Chromium, OCR), from ``wait4``,
appended to ``DIR/client_cpu.json`` per invocation (a folder the script did not run has none).

Prints Markdown: success per task (grouped by family) with each family's mean and each task
KIND's mean (:data:`KIND`), then per configuration and family the mean steps, how episodes
ended (records.jsonl ``ended``), wall and client CPU seconds. Columns are named by run folder,
so "before" and "after" folders side by side compare code versions.

    .venv/bin/python -m benchmarks.miniwob_families --agents a11y,ocr --out-root runs/after
    .venv/bin/python -m benchmarks.miniwob_families --from runs/before-* runs/after-*
    .venv/bin/python -m benchmarks.miniwob_families --from runs/before-ocr-rf --instructions
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from regionfocus.webvoyager.rundir import read_results

from ._common import print_machine, print_table

FAMILIES = ("click", "enter", "focus", "choose")
KINDS = ("click", "select-then-submit", "type", "focus", "multi-click")
MAX_BROWSER_RUNS = 2  # the machine has 2 cores shared with others: more only queue

# The kind of each task, decided from its instructions (``--instructions`` prints examples):
# - click: one click on something the instruction names or describes ("Click on the "X"
#   button.", "Click on a large red circle", "Close the dialog box by clicking the "x".");
# - select-then-submit: pick one or more things (radio, checkboxes, list, dates, shades, an
#   expanded section) then press Submit ("Select X and click Submit.", "Select 10/11/2016 as
#   the date and hit submit.", "Expand the section below and click submit.");
# - type: type given text into fields (then submit): "Enter "X" into the text field and press
#   Submit.", the date and time fields;
# - focus: put the caret in a field, nothing else ("Focus into the textbox.");
# - multi-click: several clicks with no Submit, opening a menu/tab/pie/section to reach the item
#   to click ("Switch between the tabs to find and click on the link "X".", "Click button ONE,
#   then click button TWO."). The issue names four kinds; these tasks are none of them, and
#   counting them as one-step clicks or as submits would blur both.
KIND = {
    "choose-date": "select-then-submit",
    "choose-date-easy": "select-then-submit",
    "choose-date-medium": "select-then-submit",
    "choose-date-nodelay": "select-then-submit",
    "choose-list": "select-then-submit",
    "click-button": "click",
    "click-button-sequence": "multi-click",
    "click-checkboxes": "select-then-submit",
    "click-checkboxes-large": "select-then-submit",
    "click-checkboxes-soft": "select-then-submit",
    "click-checkboxes-transfer": "select-then-submit",
    "click-collapsible": "select-then-submit",
    "click-collapsible-nodelay": "select-then-submit",
    "click-collapsible-2": "multi-click",
    "click-collapsible-2-nodelay": "multi-click",
    "click-color": "click",
    "click-dialog": "click",
    "click-dialog-2": "click",
    "click-link": "click",
    "click-menu": "multi-click",
    "click-menu-2": "multi-click",
    "click-option": "select-then-submit",
    "click-pie": "multi-click",
    "click-pie-nodelay": "multi-click",
    "click-scroll-list": "select-then-submit",
    "click-shades": "select-then-submit",
    "click-shape": "click",
    "click-tab": "click",
    "click-tab-2": "multi-click",
    "click-tab-2-easy": "multi-click",
    "click-tab-2-hard": "multi-click",
    "click-tab-2-medium": "multi-click",
    "click-test": "click",
    "click-test-2": "click",
    "click-test-transfer": "click",
    "click-widget": "click",
    "enter-date": "type",
    "enter-password": "type",
    "enter-text": "type",
    "enter-text-2": "type",
    "enter-text-dynamic": "type",
    "enter-time": "type",
    "focus-text": "focus",
    "focus-text-2": "focus",
}


def family_of(task: str) -> str:
    return task.split("-", 1)[0]


def family_tasks(families: Sequence[str] = FAMILIES) -> list[str]:
    """Every installed MiniWoB++ task whose name starts with one of ``families`` + "-"."""
    from regionfocus.webvoyager.miniwob import available_tasks

    return [t for t in available_tasks() if family_of(t) in families]


@dataclass
class Run:
    """One run folder: ``label`` (its name), its records by (task, seed), its client CPU."""

    label: str
    records: dict[tuple[str, int], dict]
    cpu_s: float | None = None


def load_run(folder: Path) -> Run:
    """The run folder's records (``read_results``: a retried episode's last record wins) and
    the client CPU logged beside it, if any."""
    records = {(r["web_name"], int(r.get("seed") or 0)): r for r in read_results(folder)}
    cpu = folder / "client_cpu.json"
    cpu_s = sum(s["cpu_s"] for s in json.loads(cpu.read_text())) if cpu.is_file() else None
    return Run(folder.name, records, cpu_s)


def log_cpu(folder: Path, entry: dict) -> None:
    path = folder / "client_cpu.json"
    done = json.loads(path.read_text()) if path.is_file() else []
    path.write_text(json.dumps([*done, entry], indent=1))


def cli_command(
    cli: Sequence[str], tasks: Sequence[str], agent: str, rf: bool, episodes: int, out: Path
) -> list[str]:
    cmd = [*cli, "webvoyager", "--tasks", "miniwob:" + ",".join(tasks), "--agent", agent]
    cmd += [] if rf else ["--no-regionfocus"]
    return [*cmd, "--episodes-per-task", str(episodes), "--out", str(out), "--no-progress"]


def run_cli(cmd: Sequence[str], out: Path) -> float:
    """Runs ``cmd`` to its end; returns (and logs in ``out``) the CPU seconds it and the
    children it waited for used. Its output goes to ``out``/families.log."""
    out.mkdir(parents=True, exist_ok=True)
    t0, start = time.perf_counter(), time.strftime("%Y-%m-%dT%H:%M:%S")
    with open(out / "families.log", "a") as log:
        proc = subprocess.Popen(list(cmd), stdout=log, stderr=subprocess.STDOUT)
        # wait4, not Popen.wait: the rusage of this one child, right with two runs in parallel.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    log_cpu(
        out,
        {
            "start": start,
            "wall_s": round(time.perf_counter() - t0, 1),
            "cpu_s": round(cpu, 1),
            "returncode": proc.returncode,
            "loadavg_at_end": os.getloadavg()[0],
            "command": shlex.join(cmd),
        },
    )
    if proc.returncode:
        print(f"# {shlex.join(cmd)} exited {proc.returncode}; see {out / 'families.log'}", file=sys.stderr)
    return cpu


def successes(run: Run, task: str) -> tuple[int, int]:
    rs = [r for (t, _), r in run.records.items() if t == task]
    return sum(bool(r.get("success")) for r in rs), len(rs)


def mean_cell(pairs: Sequence[tuple[int, int]]) -> str:
    ok, n = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    return f"{ok / n:.2f} ({ok}/{n})" if n else "-"


def success_rows(runs: Sequence[Run], tasks: Sequence[str]) -> list[list[str]]:
    """Rows: each task (kind, then k/n per run), each family's mean after its tasks, then each
    kind's mean."""
    rows: list[list[str]] = []
    for fam in dict.fromkeys(family_of(t) for t in tasks):
        members = [t for t in tasks if family_of(t) == fam]
        for t in members:
            cells = []
            for run in runs:
                ok, n = successes(run, t)
                cells.append(f"{ok}/{n}" if n else "-")
            rows.append([t, KIND.get(t, "?"), *cells])
        rows.append(
            [
                f"**{fam}-\\* mean** ({len(members)})",
                "",
                *(mean_cell([successes(r, t) for t in members]) for r in runs),
            ]
        )
    for kind in KINDS:
        members = [t for t in tasks if KIND.get(t) == kind]
        if members:
            rows.append(
                [
                    f"**kind {kind}** ({len(members)})",
                    "",
                    *(mean_cell([successes(r, t) for t in members]) for r in runs),
                ]
            )
    rows.append([f"**all** ({len(tasks)})", "", *(mean_cell([successes(r, t) for t in tasks]) for r in runs)])
    return rows


def ending_rows(runs: Sequence[Run], tasks: Sequence[str]) -> list[list[str]]:
    """Per run and family (then all): episodes, mean steps, how they ended, wall s/episode,
    and the run's client CPU s/episode (all families together: one CLI process ran them)."""
    rows = []
    for run in runs:
        groups = [
            (f"{f}-*", [t for t in tasks if family_of(t) == f]) for f in dict.fromkeys(map(family_of, tasks))
        ]
        for name, members in [*groups, ("all", list(tasks))]:
            rs = [r for (t, _), r in run.records.items() if t in members]
            if not rs:
                continue
            ends = Counter(str(r.get("ended") or r.get("status")) for r in rs)
            steps = sum(int(r.get("steps") or 0) for r in rs) / len(rs)
            wall = sum(float(r.get("wall_s") or 0) for r in rs) / len(rs)
            cpu = "-"
            if name == "all" and run.cpu_s is not None:
                cpu = f"{run.cpu_s:.0f} ({run.cpu_s / len(rs):.1f}/ep)"
            ended = ", ".join(f"{k} {v}" for k, v in ends.most_common())
            rows.append([run.label, name, len(rs), f"{steps:.1f}", ended, f"{wall:.1f}", cpu])
    return rows


def instruction_rows(runs: Sequence[Run], tasks: Sequence[str], per_task: int = 2) -> list[list[str]]:
    rows = []
    for t in tasks:
        seen: list[str] = []
        for run in runs:
            for (task, _), r in sorted(run.records.items()):
                q = " ".join(str(r.get("ques") or "").split())
                if task == t and q and q not in seen and len(seen) < per_task:
                    seen.append(q)
        rows.append([t, KIND.get(t, "?"), " / ".join(s.replace("|", "\\|") for s in seen) or "-"])
    return rows


def print_tables(runs: Sequence[Run], tasks: Sequence[str], instructions: bool = False) -> None:
    labels = [r.label for r in runs]
    print_table(
        "Success per task (episodes succeeded / run)", ["task", "kind", *labels], success_rows(runs, tasks)
    )
    print_table(
        "Steps, endings and cost",
        ["run", "family", "episodes", "mean steps", "ended", "wall s/ep", "client CPU s"],
        ending_rows(runs, tasks),
    )
    if instructions:
        print_table("Instruction examples", ["task", "kind", "instructions"], instruction_rows(runs, tasks))


def default_cli() -> list[str]:
    beside = Path(sys.executable).with_name("regionfocus")
    found = str(beside) if beside.is_file() else shutil.which("regionfocus")
    if not found:
        raise SystemExit("regionfocus CLI not found beside this Python nor on PATH; give --cli")
    return [found]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="folders", nargs="+", default=[], help="existing run folders to tabulate")
    p.add_argument(
        "--agents", default="", help="agents to run, comma list (e.g. a11y,ocr); none: only --from"
    )
    p.add_argument("--rf", default="rf,norf", help="rf, norf or both (default rf,norf)")
    p.add_argument("--out-root", default="runs/families", help="run folders go to OUT_ROOT-<agent>-<rf|norf>")
    p.add_argument(
        "--families", default=",".join(FAMILIES), help="task name prefixes (default click,enter,focus,choose)"
    )
    p.add_argument("--tasks", default="", help="only these tasks (comma list), e.g. for a quick check")
    p.add_argument("--episodes", type=int, default=3, help="episodes (seeds 0..K-1) per task (default 3)")
    p.add_argument("--jobs", type=int, default=2, help=f"browser runs at a time (at most {MAX_BROWSER_RUNS})")
    p.add_argument("--cli", default="", help="command running the regionfocus CLI (default: the venv's)")
    p.add_argument("--instructions", action="store_true", help="also print instruction examples per task")
    args = p.parse_args(argv)
    if not 1 <= args.jobs <= MAX_BROWSER_RUNS:
        p.error(f"--jobs must be 1..{MAX_BROWSER_RUNS}")
    tasks = [t for t in args.tasks.split(",") if t] or family_tasks(tuple(args.families.split(",")))
    agents = [a for a in args.agents.split(",") if a]
    modes = [m for m in args.rf.split(",") if m]
    if any(m not in ("rf", "norf") for m in modes):
        p.error("--rf takes rf, norf or rf,norf")
    if not agents and not args.folders:
        p.error("give --agents to run, or --from run folders")
    cli = shlex.split(args.cli) if args.cli else default_cli()
    planned = [(a, m, Path(f"{args.out_root}-{a}-{m}")) for a in agents for m in modes]
    print_machine()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        jobs = [
            pool.submit(run_cli, cli_command(cli, tasks, a, m == "rf", args.episodes, out), out)
            for a, m, out in planned
        ]
        for (a, m, out), job in zip(planned, jobs, strict=True):
            print(f"# {out}: {a} {m}: client CPU {job.result():.0f} s", flush=True)
    if planned:
        print(f"# ran {len(planned)} configurations in {time.perf_counter() - t0:.0f} s wall", flush=True)
    runs = [load_run(Path(f)) for f in args.folders] + [load_run(out) for _, _, out in planned]
    print_tables(runs, tasks, args.instructions)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
