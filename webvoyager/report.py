"""Summary (``summary.json`` / ``summary.md``) and the trajectory browser (``report.html``),
rebuilt from the run folder alone.

Success: MiniWoB++ episodes by the page's own reward; WebVoyager tasks by the judge
(``judge.json``, written by ``regionfocus webvoyager judge``) when present, else unknown.
Everything a page or a model wrote is escaped before it reaches the HTML.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from statistics import mean

from PIL import Image

from regionfocus.kit import stats
from regionfocus.kit.report_shell import Overlay, data_url, render
from regionfocus.kit.runlog import atomic_write_bytes

from .rundir import read_json, read_results, run_config, write_json, write_text

# ------------------------------------------------------------------ summary


def _group_stats(records: list[dict]) -> dict:
    n = len(records)
    triggers: Counter = Counter()
    for r in records:
        triggers.update(r.get("triggers") or {})
    scored = [r for r in records if r.get("success") is not None]
    rewards = [r["reward"] for r in records if isinstance(r.get("reward"), (int, float))]
    return {
        "tasks": n,
        "scored": len(scored),
        "success": sum(1 for r in scored if r["success"]),
        "success_rate": round(sum(1 for r in scored if r["success"]) / len(scored), 4) if scored else None,
        "success_ci": stats.wilson(sum(1 for r in scored if r["success"]), len(scored)),
        "mean_reward": round(mean(rewards), 4) if rewards else None,
        "answered": sum(1 for r in records if r.get("answer")),
        "errors": sum(1 for r in records if r.get("error")),
        "partial": sum(1 for r in records if r.get("status") == "partial"),
        "mean_steps": round(mean(r.get("steps", 0) for r in records), 3) if n else 0.0,
        "regionfocus_rounds": sum(r.get("regionfocus_rounds", 0) for r in records),
        "rounds_per_task": round(mean(r.get("regionfocus_rounds", 0) for r in records), 3) if n else 0.0,
        "model_calls": sum(r.get("model_calls", 0) for r in records),
        "no_effect_steps": sum(r.get("no_effect_steps", 0) for r in records),
        "triggers": dict(sorted(triggers.items())),
        "triggers_per_task": {k: round(v / n, 3) for k, v in sorted(triggers.items())} if n else {},
    }


def summarize(run_dir: str | Path) -> dict:
    """Per-site and overall statistics of ``RUN_DIR/results.json`` (+ judge.json if any)."""
    root = Path(run_dir)
    records = read_results(root)
    by_site: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_site[r.get("web_name", "?")].append(r)
    summary = {
        "run_dir": str(root),
        "overall": _group_stats(records),
        "sites": {site: _group_stats(rs) for site, rs in sorted(by_site.items())},
    }
    config = run_config(root)
    summary["regionfocus_enabled"] = config.get("regionfocus_enabled")
    summary["agent"] = config.get("agent")
    judge = read_json(root / "judge.json")
    if judge:
        summary["judge"] = judge.get("summary")
    return summary


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _ci(ci: list[float] | tuple[float, float] | None) -> str:
    return "-" if ci is None else f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f}"


def summary_markdown(summary: dict) -> str:
    rf = summary.get("regionfocus_enabled")
    lines = [
        f"# WebVoyager run: {summary.get('agent') or '?'} "
        f"({'+ RegionFocus' if rf else 'baseline' if rf is not None else '?'})",
        "",
        "| site | tasks | success % | 95 % CI | mean reward | answered | errors | partial | mean steps | RF rounds/task | triggers/task |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    rows = list(summary["sites"].items()) + [("**overall**", summary["overall"])]
    for site, s in rows:
        trig = ", ".join(f"{k} {v}" for k, v in s["triggers_per_task"].items()) or "-"
        reward = "-" if s["mean_reward"] is None else f"{s['mean_reward']:.3f}"
        lines.append(
            f"| {site} | {s['tasks']} | {_pct(s['success_rate'])} | {_ci(s.get('success_ci'))} | {reward} | {s['answered']} | "
            f"{s['errors']} | {s.get('partial', 0)} | {s['mean_steps']:.2f} | {s['rounds_per_task']:.2f} | {trig} |"
        )
    judge = summary.get("judge")
    if judge:
        lines += [
            "",
            f"Judge ({judge.get('model')}, {judge.get('repeats')} repeats, last {judge.get('last_k')} screenshots):",
            "",
        ]
        lines += ["| site | success % (mean ± std) | unknown verdicts |", "|---|---:|---:|"]
        for site, s in list(judge["sites"].items()) + [("**overall**", judge["overall"])]:
            lines.append(f"| {site} | {s['mean'] * 100:.1f} ± {s['std'] * 100:.1f} | {s['unknown']} |")
    lines.append("")
    lines.append(
        "Success: MiniWoB++ by the page's reward (raw reward > 0); WebVoyager tasks by the judge. "
        "95 % CI: the Wilson score interval over the scored tasks; two runs of the same tasks compare "
        "task by task with `regionfocus webvoyager compare RUN_A RUN_B` (exact McNemar)."
    )
    return "\n".join(lines) + "\n"


def compare_runs(run_a: str | Path, run_b: str | Path) -> str:
    """Two runs of the same tasks, task by task: each run's success rate with its interval on
    the tasks both scored, and the paired test of A against B."""
    by_id = [{str(r.get("id")): r for r in read_results(d)} for d in (run_a, run_b)]
    ids = [i for i, r in by_id[0].items() if i in by_id[1] and r.get("success") is not None]
    ids = [i for i in ids if by_id[1][i].get("success") is not None]
    lines = [f"A: {run_a}  ({len(by_id[0])} tasks)", f"B: {run_b}  ({len(by_id[1])} tasks)"]
    if not ids:
        return "\n".join([*lines, "no task is scored in both runs: nothing to compare"]) + "\n"
    a = [bool(by_id[0][i]["success"]) for i in ids]
    b = [bool(by_id[1][i]["success"]) for i in ids]
    t = stats.paired(a, b)
    lines += [
        f"Paired on the {len(ids)} tasks both runs scored:",
        f"A success % {stats.pct_ci(sum(a), len(a))}",
        f"B success % {stats.pct_ci(sum(b), len(b))}",
        "  ".join(stats.PAIRED_HEAD),
        "  ".join(stats.paired_cells("A", "B", t)),
        stats.HOW_TO_READ,
    ]
    return "\n".join(lines) + "\n"


def write_summary(run_dir: str | Path) -> dict:
    root = Path(run_dir)
    summary = summarize(root)
    write_json(root / "summary.json", summary)
    write_text(root / "summary.md", summary_markdown(summary))
    return summary


# ------------------------------------------------------------------ report.html


def _image_size(path: Path, default: tuple[int, int]) -> tuple[int, int]:
    try:
        with Image.open(path) as im:
            return im.size
    except OSError:
        return default


def _effect_text(effect: dict | None) -> str:
    if not effect:
        return "not executed"
    if not effect.get("changed"):
        return "no effect"
    return "changed: " + ", ".join(f"{k}={v}" for k, v in effect.items() if k != "changed")


def _task(root: Path, rec: dict, default_size: tuple[int, int]) -> dict:
    """A task's record, its folder and its trajectory's steps, each with what the template draws."""
    folder = rec.get("folder") or ("task" + rec["id"])
    traj = read_json(root / folder / "trajectory.json", default={}) or {}
    steps = [
        {
            **step,
            "viewbox": (0, 0, *_image_size(root / folder / step["screenshot"], default_size)),
            "overlay": _overlay(step),
            "effect_text": _effect_text(step.get("effect")),
        }
        for step in traj.get("steps", [])
    ]
    return {"rec": rec, "folder": folder, "steps": steps}


def _overlay(step: dict) -> Overlay:
    """The step's RegionFocus round (boxes, focal point, history and candidate stars) and the
    executed action's point (a ring), in screenshot pixels."""
    out = Overlay.of_round((step.get("decision") or {}).get("round"))
    act = step.get("action") or {}
    for key in ("point", "end_point"):
        if act.get(key):
            out.marks.append((act[key], "action", ""))
    return out


FIGURE = "success"  # success.png, .svg, .pdf in the run folder


def success_rows(summary: dict) -> list[tuple[str, float, float, float]]:
    """(site, success %, interval low %, high %) of every site with a scored task, then overall."""
    rows = [*summary["sites"].items(), ("overall", summary["overall"])]
    return [
        (site, 100 * s["success_rate"], 100 * s["success_ci"][0], 100 * s["success_ci"][1])
        for site, s in rows
        if s.get("scored") and s.get("success_ci")
    ]


def _write_figure(root: Path, summary: dict, who: str) -> bytes | None:
    """success.png/.svg/.pdf: each site's success rate with its 95 % interval; the PNG for the
    page, None when no task is scored (matplotlib is imported here, on the first figure)."""
    rows = success_rows(summary)
    if not rows:
        return None
    from regionfocus.kit import figures

    n = summary["overall"]["scored"]
    fig = figures.rates_with_intervals(
        rows,
        title=f"WebVoyager: success per site\n{who} · n = {n} scored tasks",
        xlabel="success (bars: 95 % Wilson interval)",
        key="success",
        total_last=True,
    )
    return figures.save(fig, root / FIGURE, atomic_write_bytes)["png"]


def write_report(run_dir: str | Path) -> Path:
    """Write ``report.html`` (and the summary) from the folder's files; returns its path."""
    root = Path(run_dir)
    summary = write_summary(root)
    records = read_results(root)
    config = run_config(root)
    vp = config.get("viewport") or [1440, 1440]
    default_size = (int(vp[0]), int(vp[1]))
    site_rows = [
        [site, s["tasks"], _pct(s["success_rate"]), s["errors"], s.get("partial", 0), f"{s['mean_steps']:.2f}",
         f"{s['rounds_per_task']:.2f}", ", ".join(f"{k} {v}" for k, v in s["triggers"].items()) or "-"]
        for site, s in [*summary["sites"].items(), ("overall", summary["overall"])]
    ]  # fmt: skip
    mode = "+ RegionFocus" if config.get("regionfocus_enabled") else "baseline"
    png = _write_figure(root, summary, f"{config.get('agent', '?')} ({mode})")
    html = render(
        __package__,
        "report.html",
        title=f"WebVoyager run: {config.get('agent', '?')} — {mode}",
        subtitle=str(root),
        site_rows=site_rows,
        figure=png and data_url(png, "image/png"),
        sites=sorted({r.get("web_name", "?") for r in records}),
        records=records,
        tasks=[_task(root, r, default_size) for r in records],
    )
    path = root / "report.html"
    write_text(path, html)
    return path
