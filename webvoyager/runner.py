"""Runs browsing tasks: one Chromium for the run, a context and an agent per task, resumable.

The loop itself is the core's (:func:`regionfocus.loop.run_episode`, written against the
environment protocol); here each task becomes a :class:`~regionfocus.webvoyager.task_env.TaskEnv`, each
step is written to the task folder as it happens (rundir.py documents the layout), and each
task's record goes to the run log. A task that fails (a page that will not load, a crashed
renderer, an unexpected error) is recorded with its error and the run goes on; one whose steps
lost model calls is recorded as partial (rerun by ``--retry-errors``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from PIL import Image

from regionfocus.adapters.backends.openai_http import SESSION
from regionfocus.agent import RegionFocusAgent
from regionfocus.kit.progress import Progress
from regionfocus.loop import Limits, Step, model_calls, run_episode

from . import miniwob
from .browser import Browser, BrowserEnv, EnvConfig
from .miniwob_grammar import grammar_for
from .official import write_interact_messages
from .rundir import RunDir, save_png, write_json
from .task_env import TaskEnv
from .tasks import WebTask

log = logging.getLogger(__name__)


@dataclass
class RunSettings:
    """``max_steps``: actions per task (the RegionFocus paper's main WebVoyager setting is 100;
    the official harness uses 15). ``task_zoom``: CSS zoom of MiniWoB++ pages.
    ``allow_domains``: optional navigation allow-list. ``keep_screens``: earlier screenshots
    kept in memory for agents that are shown them (UI-TARS). ``max_model_steps`` and
    ``end_on_no_action``: :class:`~regionfocus.loop.Limits`; ``hide_instruction``: MiniWoB++
    pages without their instruction header (the screen-to-text suite)."""

    max_steps: int = 100
    max_model_steps: int | None = None
    end_on_no_action: bool = False
    hide_instruction: bool = False
    viewport: tuple[int, int] = (1440, 1440)
    concurrency: int = 1
    task_zoom: float = miniwob.DEFAULT_ZOOM
    episode_ms: int = miniwob.DEFAULT_EPISODE_MS
    allow_domains: tuple[str, ...] = ()
    settle_s: float = 0.25
    progress: bool = True
    env_overrides: dict = field(default_factory=dict)
    keep_screens: int = 8
    # What the agent is shown ("screenshot", "a11y", "compressed-a11y",
    # "screenshot+compressed-a11y"), and whether the page's accessibility tree is read at every
    # step (a text observation, the a11y agent, the a11y proposer or the no-target trigger).
    observation: str = "screenshot"
    a11y_phases: tuple[str, ...] | None = None  # None: all three A11y-Compressor phases
    read_tree: bool = False

    def env_config(self, task: WebTask) -> EnvConfig:
        return EnvConfig(
            viewport=self.viewport,
            allow_domains=self.allow_domains,
            file_root=miniwob.file_root() if task.kind == "miniwob" else None,
            settle_s=self.settle_s,
            **self.env_overrides,
        )


class _TaskRecorder:
    """Writes each step of a task to its folder as soon as it happened: the screenshot, the
    zoomed views, and the whole trajectory so far (a killed run keeps every finished step)."""

    def __init__(self, task: WebTask, folder: Path):
        self.task = task
        self.folder = folder
        self.steps: list[dict] = []

    def step(self, step: Step, views: list[Image.Image | None]) -> None:
        n = step.n
        save_png(self.folder / f"screenshot{n}.png", step.screenshot)
        view_files = []
        for k, img in enumerate(views):
            if img is not None:
                name = f"views/step{n}_{k}.png"
                save_png(self.folder / name, img)
                view_files.append(name)
        d = step.decision
        action = d.action
        rec = {
            "step": n,
            "screenshot": f"screenshot{n}.png",
            "url": step.url,
            "action": action.to_dict() if action else None,
            "action_text": action.describe() if action else "(no action)",
            "source": d.source,
            "trigger": d.trigger,
            "text": d.text,
            "decision": d.to_dict(),
            "model_calls": model_calls(d.all_calls),
            "model_errors": sum(1 for c in d.all_calls if c.error),
            "views": view_files,
        }
        if step.result is not None:
            r = step.result
            rec.update(
                effect=r.effect.to_dict(),
                effect_details=r.details,
                events=r.events,
                error=r.error,
                url_after=r.url,
            )
        if step.status is not None:
            rec["miniwob"] = asdict(step.status)
        rec["wall_s"] = round(step.wall_s, 3)
        self.steps.append(rec)
        self.save(None, "")

    def save(self, record: dict | None, instruction: str) -> None:
        write_json(
            self.folder / "trajectory.json",
            {"task": self.task.to_dict(), "instruction": instruction, "record": record, "steps": self.steps},
        )


async def run_task(
    task: WebTask, agent: RegionFocusAgent, env: BrowserEnv, folder: Path, settings: RunSettings
) -> dict:
    """Run one task (or MiniWoB++ episode) to its end and return its record. Never raises for
    page-side trouble: it ends up in the record's ``error``."""
    recorder = _TaskRecorder(task, folder)
    if hasattr(agent.model, "task_grammar"):
        # The CPU stand-ins read a benchmark's own instruction wording through the grammar it
        # supplies. One model serves every task of a run, and a run's tasks are of one kind.
        agent.model.task_grammar = grammar_for(task)
    task_env = TaskEnv(
        env,
        task,
        task_zoom=settings.task_zoom,
        episode_ms=settings.episode_ms,
        a11y=settings.read_tree,
        hide_instruction=settings.hide_instruction,
    )
    limits = Limits(
        settings.max_steps, settings.keep_screens, settings.max_model_steps, settings.end_on_no_action
    )
    episode = await run_episode(
        agent,
        task_env,
        limits,
        recorder,
        observation=settings.observation,
        observation_phases=settings.a11y_phases,
    )
    ending, steps = episode.ending, recorder.steps
    if ending.reason == "error" and ending.error and not ending.error.startswith("page crashed"):
        log.warning("task %s failed: %s", task.id, ending.error)
    last = episode.steps[-1] if episode.steps else None
    if last is not None and last.result is not None and last.result.screenshot is not None:
        # The screen the last action left: the judge's most useful picture.
        save_png(folder / f"screenshot{len(steps) + 1}.png", last.result.screenshot)
    status = episode.status
    instruction = episode.instruction or task.ques
    triggers = Counter(s["trigger"] for s in steps if s.get("trigger"))
    lost = [(s.n, c) for s in episode.steps for c in s.decision.lost_calls]
    record = {
        "id": task.id,
        "web_name": task.web_name,
        "kind": task.kind,
        "ques": instruction,
        "web": task.web,
        "seed": task.seed,
        "success": (status.success if status else False) if task.kind == "miniwob" else None,
        "reward": status.reward if status else None,
        "raw_reward": status.raw_reward if status else None,
        "done": status.done if status else None,
        "answer": ending.answer,
        "ended": ending.reason,
        "steps": len(steps),
        "model_steps": episode.model_steps,
        "regionfocus_rounds": agent.rounds_total,
        "model_calls": sum(s["model_calls"] for s in steps),
        "model_errors": sum(s["model_errors"] for s in steps),
        "no_effect_steps": sum(1 for s in steps if s.get("effect") and not s["effect"].get("changed")),
        "triggers": dict(triggers),
        "error": ending.error,
        "wall_s": round(episode.wall_s, 3),
        "folder": task.folder,
    }
    if lost and not ending.error and record["model_errors"] == record["model_calls"]:
        # Every model call failed (a server down): the task measured nothing. An error, as a
        # ScreenSpot-Pro sample whose calls all failed: scored, counted, rerun by --retry-errors.
        record["error"] = f"all {len(lost)} model call(s) failed; first: {lost[0][1].error}"
    elif lost and not ending.error:
        # Some step decided without every call it asked for (a RegionFocus round that lost a
        # view or its choice): the task ran to its end, but not as the model would have run it.
        kinds = ", ".join(dict.fromkeys(f"step {n} {c.kind}" for n, c in lost))
        record["status"] = "partial"
        record["lost"] = f"{len(lost)} model call(s) failed ({kinds}); first: {lost[0][1].error}"
    recorder.save(record, instruction)
    official = [{"text": s.decision.text, "action": s.decision.action} for s in episode.steps]
    write_interact_messages(folder, instruction, task.web, official)
    return record


async def run_tasks(
    tasks: Sequence[WebTask],
    make_agent: Callable[[], RegionFocusAgent],
    run_dir: RunDir,
    browser: Browser,
    settings: RunSettings,
) -> list[dict]:
    """Run every task not already finished in ``run_dir``, ``settings.concurrency`` at a time,
    each in its own browser context. Returns all records (old and new) in task order."""
    pending = [t for t in tasks if not run_dir.finished(t.id)]
    skipped = len(tasks) - len(pending)
    if skipped:
        log.info("resuming: %d of %d tasks already finished", skipped, len(tasks))
    bar = _progress(len(tasks), skipped, settings.progress)
    sem = asyncio.Semaphore(max(1, settings.concurrency))
    lock = asyncio.Lock()
    done_ok = 0

    async def one(task: WebTask) -> None:
        nonlocal done_ok
        SESSION.set(task.id)  # this task's context: its requests route together
        async with sem:
            folder = run_dir.reset_task(task.folder)
            env = None
            try:
                env = await browser.new_env(settings.env_config(task))
                record = await run_task(task, make_agent(), env, folder, settings)
            except Exception as e:  # noqa: BLE001 - e.g. the browser could not open a context
                record = _failed_record(task, f"{type(e).__name__}: {e}")
            finally:
                if env is not None:
                    await env.close()
            async with lock:
                failed = functools.partial(_failed_record, task)
                record = run_dir.record(record, fallback=failed)
                done_ok += bool(record.get("success"))
                bar.update(
                    error=record.get("ended") == "error", note=f"success {done_ok}/{bar.n - skipped} this run"
                )

    try:
        await asyncio.gather(*(one(t) for t in pending))
    finally:
        bar.close()
        run_dir.write_results()
    order = {t.id: i for i, t in enumerate(tasks)}
    return sorted((r for r in run_dir.results.values() if r["id"] in order), key=lambda r: order[r["id"]])


def _failed_record(task: WebTask, error: str) -> dict:
    return {
        "id": task.id,
        "web_name": task.web_name,
        "kind": task.kind,
        "ques": task.ques,
        "web": task.web,
        "seed": task.seed,
        "success": False if task.kind == "miniwob" else None,
        "reward": None,
        "raw_reward": None,
        "done": None,
        "answer": None,
        "ended": "error",
        "steps": 0,
        "model_steps": 0,
        "regionfocus_rounds": 0,
        "model_calls": 0,
        "model_errors": 0,
        "no_effect_steps": 0,
        "triggers": {},
        "error": error,
        "wall_s": 0.0,
        "folder": task.folder,
    }


def _progress(total: int, finished: int, enabled: bool) -> Progress:
    """A bar on a terminal, a line a minute in a log (Slurm, nohup), nothing with --no-progress."""
    return Progress(
        total, desc="webvoyager", unit="task", initial=finished, enabled=None if enabled else False
    )
