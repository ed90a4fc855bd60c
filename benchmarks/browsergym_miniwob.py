"""MiniWoB++ through BrowserGym's own runner: demo agents plain and wrapped with RegionFocus
(issue 36 item 6).

Every MiniWoB++ task BrowserGym registers whose name matches ``--tasks`` (shell patterns; default
``click-*``: the whole click family, 31 tasks, none picked by hand) runs with seeds
``0..--seeds-1`` in four arms, each an ``ExpArgs(agent_args, EnvArgs(task, seed, max_steps)).run()``
scored by BrowserGym's reward (MiniWoB++'s raw reward > 0):

* ``reader``: :class:`benchmarks.bgym_demo_agents.PageReaderArgs`, clicks by element;
* ``reader+rf``: the same inside ``RegionFocusArgs(agent="ocr")``;
* ``offset``: the same reader clicking by coordinates ``--offset`` pixels right of each target;
* ``offset+rf``: that one inside ``RegionFocusArgs(agent="ocr")``.

The inner agents are demos, not models, and the grounding model is the offline OCR stand-in: the
numbers say whether the plug-in works inside BrowserGym's loop (a click that changed nothing is
noticed, refined, and scored by BrowserGym), not how a VLM agent does. Prints the paired table
(success with Wilson intervals, exact McNemar per inner agent: plain against wrapped), then
RegionFocus rounds, calls and tokens per episode, steps and wall seconds, then success per task.

Each episode's outcome is a line of ``OUT/episodes.jsonl`` (BrowserGym's own folders under
``OUT/exps``); the same command again runs only the episodes missing. ``--workers`` processes
run episodes side by side, each with its own Playwright (Debian's Chromium, via
``offline_browsergym``) and its own OCR model.

    .venv/bin/python -m benchmarks.browsergym_miniwob --out /tmp/bgym-miniwob
    .venv/bin/python -m benchmarks.browsergym_miniwob --tasks 'click-button*,click-dialog*' --seeds 3
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import logging
import multiprocessing
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from regionfocus.kit.stats import HOW_TO_READ, PAIRED_HEAD, paired, paired_cells, pct_ci

from ._common import print_machine, print_table

ARMS = ("reader", "reader+rf", "offset", "offset+rf")
PAIRS = (("reader+rf", "reader"), ("offset+rf", "offset"))

_ARGS: dict = {}  # per worker process: arm -> agent args (the wrapped ones keep their OCR model)
_STACK = contextlib.ExitStack()


def all_tasks() -> list[str]:
    """Every MiniWoB++ task BrowserGym registers, without the ``miniwob.`` prefix."""
    from browsergym.miniwob import ALL_MINIWOB_TASKS

    return sorted(t.get_task_id().removeprefix("miniwob.") for t in ALL_MINIWOB_TASKS)


def select_tasks(patterns: str) -> list[str]:
    """The tasks matching any comma-separated shell pattern; ValueError naming one that matches none."""
    names = all_tasks()
    chosen: list[str] = []
    for pat in (p.strip() for p in patterns.split(",")):
        hits = fnmatch.filter(names, pat) if pat else []
        if not hits:
            raise ValueError(
                f"--tasks {pat!r}: no MiniWoB++ task matches (BrowserGym registers {len(names)})"
            )
        chosen += [h for h in hits if h not in chosen]
    return chosen


def _agent_args(arm: str, offset: float):
    from regionfocus.plugins.browsergym import RegionFocusArgs

    from .bgym_demo_agents import PageReaderArgs

    inner = PageReaderArgs(offset=offset if arm.startswith("offset") else 0.0)
    return RegionFocusArgs(inner=inner, agent="ocr") if arm.endswith("+rf") else inner


def _init_worker(offset: float) -> None:
    from regionfocus.plugins.browsergym import offline_browsergym

    logging.getLogger().setLevel(logging.WARNING)
    _STACK.enter_context(offline_browsergym())
    for arm in ARMS:
        _ARGS[arm] = _agent_args(arm, offset)


def run_episode(arm: str, task: str, seed: int, max_steps: int, exp_root: str) -> dict:
    """One episode through BrowserGym's ``ExpArgs``; its outcome as a record."""
    from browsergym.experiments import EnvArgs, ExpArgs

    exp = ExpArgs(
        agent_args=_ARGS[arm],
        env_args=EnvArgs(task_name=f"miniwob.{task}", task_seed=seed, max_steps=max_steps),
        logging_level=logging.WARNING,
        logging_level_stdout=logging.WARNING,
    )
    start = time.monotonic()
    exp.prepare(exp_root)
    exp.run()
    try:
        summary = json.loads((Path(exp.exp_dir) / "summary_info.json").read_text())
    except (OSError, ValueError) as e:  # BrowserGym could not write it: a failed episode
        summary = {"err_msg": f"no summary_info.json: {e}"}
    rec = {
        "arm": arm,
        "task": task,
        "seed": seed,
        "success": bool((summary.get("cum_reward") or 0) > 0),
        "steps": summary.get("n_steps"),
        "error": summary.get("err_msg"),
        "wall_s": round(time.monotonic() - start, 2),
        "exp_dir": str(exp.exp_dir),
    }
    for key in ("rf_triggered", "rf_calls", "rf_prompt_tokens", "rf_completion_tokens"):
        rec[key] = summary.get(f"stats.cum_{key}") or 0
    return rec


def read_records(path: Path) -> dict[tuple[str, str, int], dict]:
    done: dict[tuple[str, str, int], dict] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
                done[(r["arm"], r["task"], r["seed"])] = r
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by an interrupted run: that episode runs again
    return done


def run_all(tasks: list[str], seeds: int, max_steps: int, offset: float, workers: int, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "episodes.jsonl"
    done = read_records(log_path)
    todo = [(a, t, s) for t in tasks for s in range(seeds) for a in ARMS if (a, t, s) not in done]
    print(
        f"{len(done)} episodes on file, {len(todo)} to run with {workers} worker(s)",
        file=sys.stderr,
        flush=True,
    )
    if todo:
        with (
            ProcessPoolExecutor(
                workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
                initargs=(offset,),
            ) as pool,
            log_path.open("a") as log_file,
        ):
            futures = [pool.submit(run_episode, a, t, s, max_steps, str(out / "exps")) for a, t, s in todo]
            for i, fut in enumerate(as_completed(futures), 1):
                rec = fut.result()
                done[(rec["arm"], rec["task"], rec["seed"])] = rec
                log_file.write(json.dumps(rec) + "\n")
                log_file.flush()
                os.fsync(log_file.fileno())
                ok = "ok" if rec["success"] else "--"
                print(
                    f"[{i}/{len(todo)}] {rec['arm']:9} {rec['task']} seed {rec['seed']}: {ok}",
                    file=sys.stderr,
                )
    return done


def report(done: dict, tasks: list[str], seeds: int) -> None:
    """The tables, over the (task, seed) pairs every arm has run (an interrupted run reports the
    complete ones and says how many are missing)."""
    wanted = [(t, s) for t in tasks for s in range(seeds)]
    keys = [k for k in wanted if all((a, *k) in done for a in ARMS)]
    if len(keys) < len(wanted):
        print(f"\n{len(wanted) - len(keys)} of {len(wanted)} (task, seed) pairs lack an arm: left out below")
    tasks = [t for t in tasks if any(k[0] == t for k in keys)]
    by_arm = {a: [done[(a, t, s)] for t, s in keys if (a, t, s) in done] for a in ARMS}
    outcomes = {a: {(r["task"], r["seed"]): r["success"] for r in by_arm[a]} for a in ARMS}

    rows = []
    for arm in ARMS:
        recs = by_arm[arm]
        n, k = len(recs), sum(r["success"] for r in recs)
        per = lambda key, recs=recs, n=n: sum(r[key] or 0 for r in recs) / n if n else 0.0  # noqa: E731
        errors = sum(1 for r in recs if r["error"])
        rows.append(
            [arm, n, pct_ci(k, n), per("rf_triggered"), per("rf_calls"), per("rf_prompt_tokens"),
             per("rf_completion_tokens"), per("steps"), per("wall_s"), errors]
        )  # fmt: skip
    print_table(
        f"Success and cost per episode ({len(tasks)} tasks x {seeds} seeds)",
        ["arm", "n", "success % [95 % CI]", "rounds", "calls", "prompt tok", "completion tok", "steps", "wall s",
         "errors"],
        rows,
    )  # fmt: skip

    paired_rows = []
    for a, b in PAIRS:
        common = [key for key in keys if key in outcomes[a] and key in outcomes[b]]
        t = paired([outcomes[a][key] for key in common], [outcomes[b][key] for key in common])
        if t is not None:
            paired_rows.append(paired_cells(a, b, t))
    print_table("Wrapped against plain, paired by (task, seed)", PAIRED_HEAD, paired_rows)
    print(HOW_TO_READ + "\n")

    per_task = defaultdict(dict)
    for arm in ARMS:
        for r in by_arm[arm]:
            per_task[r["task"]].setdefault(arm, []).append(r["success"])
    print_table(
        "Success per task (episodes won / run)",
        ["task", *ARMS],
        [[t, *(f"{sum(per_task[t].get(a, []))}/{len(per_task[t].get(a, []))}" for a in ARMS)] for t in tasks],
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--tasks", default="click-*", help="comma-separated shell patterns over MiniWoB++ task names"
    )
    ap.add_argument(
        "--seeds", type=int, default=2, help="episodes per task and arm, seeds 0..N-1 (default 2)"
    )
    ap.add_argument(
        "--max-steps", type=int, default=4, help="BrowserGym's step limit per episode (default 4)"
    )
    ap.add_argument(
        "--offset", type=float, default=12.0, help="pixels right of its target the offset agent clicks"
    )
    ap.add_argument(
        "--workers", type=int, default=2, help="episodes run side by side (default 2: the machine's cores)"
    )
    ap.add_argument(
        "--out", type=Path, default=Path("runs/browsergym-miniwob"), help="results folder (resumable)"
    )
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.max_steps < 1 or args.workers < 1:
        ap.error("--seeds, --max-steps and --workers must be at least 1")
    try:
        tasks = select_tasks(args.tasks)
    except ValueError as e:
        ap.error(str(e))
    print_machine()
    start = time.monotonic()
    done = run_all(tasks, args.seeds, args.max_steps, args.offset, args.workers, args.out)
    print(
        f"command: python -m benchmarks.browsergym_miniwob --tasks '{args.tasks}' --seeds {args.seeds} "
        f"--max-steps {args.max_steps} --offset {args.offset:g} --workers {args.workers}; "
        f"wall {time.monotonic() - start:.0f} s this invocation"
    )
    report(done, tasks, args.seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
