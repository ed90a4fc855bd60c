"""The screen-to-text suite of the browsing harness: the paper's task list and success tables.

After Sasagawa and Kawahara (Waseda), "環境依存情報を利用しない大規模言語モデルによるコンピュータータスク
自動化手法": §4.1 (success = a positive reward from the task; no next action, a failed model call
or running past the step limit count as failures), Appendix B (at most 10 model completions per
episode, temperature 0), Table 1 (mean success over tasks, tasks evaluated) and Table 3
(success of 1-step and n-step tasks). The suite (its task list, exclusions, 1-step/n-step split
and reported numbers) ships as ``webvoyager/suites/screen_to_text.json``.

``regionfocus webvoyager --tasks screen-to-text[:1-step|:n-step|:task,task] --agent screen-text``
runs it through the one episode loop (runner.py, :func:`regionfocus.loop.run_episode`) in the
paper's setting: at most 10 model steps (several commands of one answer are one), the whole
answer executed, "no next action" ends the episode, the instruction header hidden, the task at
twice its size. ``regionfocus screen-text-eval`` is that command with the earlier flags
(screen_text_eval.py).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .miniwob import available_tasks

SUITE_NAME = "screen-to-text"
TASK_ZOOM = 2.0  # the 160 px task shown at 320 px: the paper's doubled resolution
VIEWPORT = (500, 560)  # the zoomed task and MiniWoB++'s 500 px dialogs, little else


@dataclass(frozen=True)
class Suite:
    """The paper's task list: ``tasks`` evaluated, ``excluded`` {task: reason} (Appendix A),
    ``n_step`` tasks (the rest are 1-step), ``settings`` and ``reported`` numbers."""

    tasks: tuple[str, ...]
    excluded: dict
    n_step: frozenset[str]
    settings: dict
    reported: dict
    note: str


def load_suite() -> Suite:
    data = json.loads(
        (resources.files("regionfocus.webvoyager") / "suites" / "screen_to_text.json").read_text("utf-8")
    )
    return Suite(
        tuple(data["tasks"]),
        dict(data["excluded"]),
        frozenset(data["n_step_tasks"]),
        dict(data["settings"]),
        dict(data["reported"]),
        data["note"],
    )


def is_suite(spec: str) -> bool:
    return spec == SUITE_NAME or spec.startswith(SUITE_NAME + ":")


def suite_tasks(spec: str) -> list[str]:
    """Task names for ``spec``: "screen-to-text" (the suite), "screen-to-text:1-step" or
    "screen-to-text:n-step" (a part of it), or "screen-to-text:a,b" (MiniWoB++ tasks in the
    suite's setting; a bare "a,b" too). Raises ValueError naming unknown tasks or an unknown part."""
    suite = load_suite()
    if spec == SUITE_NAME:
        return list(suite.tasks)
    part = spec.removeprefix(SUITE_NAME + ":")
    if part in ("1-step", "n-step"):
        return [t for t in suite.tasks if (t in suite.n_step) == (part == "n-step")]
    names = [n.strip() for n in part.removeprefix("miniwob:").split(",") if n.strip()]
    if not names:
        raise ValueError(f"no task in {spec!r} (the part must be 1-step, n-step or a task list)")
    unknown = sorted(set(names) - set(available_tasks()))
    if unknown:
        raise ValueError(f"unknown MiniWoB++ task(s): {', '.join(unknown)}")
    return names


# ----------------------------------------------------------------------------------- tables
def success_table(
    records: Sequence[dict],
    label: str = "ours",
    n_step: frozenset[str] | None = None,
    reported: dict | None = None,
) -> str:
    """The paper's layout from run records (``web_name``, ``success``, ``model_steps``): Table 1
    (mean over tasks of each task's success rate, tasks evaluated) and Table 3 (the same mean
    over 1-step and over n-step tasks; the mean model steps of solved n-step episodes), a row
    for ``records`` and one per model the paper reports (``reported``: the suite's)."""
    suite = load_suite() if n_step is None or reported is None else None
    n_step = suite.n_step if n_step is None else n_step
    reported = suite.reported if reported is None else reported
    by_task: dict[str, list[dict]] = {}
    for r in records:
        by_task.setdefault(r["web_name"], []).append(r)
    rate = {t: sum(bool(r["success"]) for r in rs) / len(rs) for t, rs in by_task.items()}

    def mean(ts: list[str]) -> str:
        return f"{statistics.mean(rate[t] for t in ts):.3f}" if ts else "-"

    def num(v) -> str:
        return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)

    ones = [t for t in rate if t not in n_step]
    ns = [t for t in rate if t in n_step]
    won_n = [r.get("model_steps", 0) for r in records if r["web_name"] in n_step and r["success"]]
    avg_n = f"{statistics.mean(won_n):.3f}" if won_n else "-"
    papers = {f"{m} (paper)": v for m, v in reported.items()}
    w = max(len(label), 5, *map(len, papers))

    def row1(name, success, tasks, episodes) -> str:
        return f"{name:<{w}}  {success:>12}  {tasks:>5}  {episodes:>8}"

    def row3(name, one, n_one, n, n_n, steps) -> str:
        return f"{name:<{w}}  {one:>6} ({n_one:>3})    {n:>6} ({n_n:>3})    {steps:>6}"

    table1 = [row1(label, mean(list(rate)), len(rate), len(records))]
    table1 += [row1(m, num(v.get("mean_success")), num(v.get("tasks")), "-") for m, v in papers.items()]
    table3 = [row3(label, mean(ones), len(ones), mean(ns), len(ns), avg_n)]
    table3 += [
        row3(m, num(v.get("one_step")), "-", num(v.get("n_step")), "-", "-") for m, v in papers.items()
    ]
    return "\n".join(
        [
            "Table 1 layout: mean success over tasks",
            f"{'model':<{w}}  mean success  tasks  episodes",
            *table1,
            "",
            "Table 3 layout: success by the number of steps a task needs",
            f"{'model':<{w}}  1-step (tasks)  n-step (tasks)  mean model steps of solved n-step",
            *table3,
            "",
            "per task: " + ", ".join(f"{t} {rate[t]:.2f}" for t in sorted(rate)),
        ]
    )


def suite_report(run_dir: str | Path) -> str | None:
    """The paper's tables for a screen-to-text run folder, also written to
    ``RUN_DIR/screen_to_text.md``; None for a run of other tasks."""
    from .rundir import read_results, run_config, write_text

    config = run_config(run_dir)
    if not is_suite(str(config.get("tasks", ""))):
        return None
    label = str(config.get("model") or config.get("agent") or "ours")
    label += " + RegionFocus" if config.get("regionfocus_enabled") else ""
    text = success_table(read_results(run_dir), label)
    write_text(Path(run_dir) / "screen_to_text.md", text + "\n")
    return text
