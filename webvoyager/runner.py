"""The browsing loop: screenshot -> agent.step -> execute -> agent.observe, per task, resumable.

One Chromium serves the whole run; each task gets its own context and its own agent (history
stars never leak between tasks). Everything a step did is written to the task folder
(rundir.py documents the layout); a task that fails (a page that will not load, a crashed
renderer, an unexpected error) is recorded with its error and the run goes on.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from PIL import Image

from regionfocus.actions import ActionType
from regionfocus.agent import RegionFocusAgent
from regionfocus.geometry import Box
from regionfocus.model import Query, Turn
from regionfocus.views import View, ViewSource

from . import miniwob
from .browser import Browser, BrowserEnv, EnvConfig, StepResult
from .official import interact_messages
from .rundir import RunDir, save_png, write_json
from .tasks import WebTask

log = logging.getLogger(__name__)


@dataclass
class RunSettings:
    """``max_steps``: actions per task (the RegionFocus paper's main WebVoyager setting is 100;
    the official harness uses 15). ``task_zoom``: CSS zoom of MiniWoB++ pages.
    ``allow_domains``: optional navigation allow-list. ``keep_screens``: earlier screenshots
    kept in memory for agents that are shown them (UI-TARS)."""

    max_steps: int = 100
    viewport: tuple[int, int] = (1440, 1440)
    concurrency: int = 1
    task_zoom: float = miniwob.DEFAULT_ZOOM
    episode_ms: int = miniwob.DEFAULT_EPISODE_MS
    allow_domains: tuple[str, ...] = ()
    settle_s: float = 0.25
    progress: bool = True
    env_overrides: dict = field(default_factory=dict)
    keep_screens: int = 8

    def env_config(self, task: WebTask) -> EnvConfig:
        return EnvConfig(
            viewport=self.viewport,
            allow_domains=self.allow_domains,
            file_root=miniwob.file_root() if task.kind == "miniwob" else None,
            settle_s=self.settle_s,
            **self.env_overrides,
        )


class RecordingViews:
    """Passes view requests to ``source`` and keeps each view's image, in request order, so the
    report can show exactly what the model looked at."""

    def __init__(self, source: ViewSource):
        self.source = source
        self.images: list[Image.Image | None] = []

    async def view(self, box: Box, target: tuple[int, int]) -> View:
        i = len(self.images)
        self.images.append(None)
        v = await self.source.view(box, target)
        self.images[i] = v.image
        return v

    def take(self) -> list[Image.Image | None]:
        out, self.images = self.images, []
        return out


def _outcome(step: dict) -> str:
    if step.get("error"):
        return f"error: {step['error']}"
    if step.get("action") is None:
        return "no action"
    return "changed the page" if (step.get("effect") or {}).get("changed") else "no visible effect"


def _turn(shot: Image.Image, decision, step: dict) -> Turn:
    """The step as the agent's history holds it: the model's own answer when the executed
    action is the one it wrote on this screenshot, else only the action (RegionFocus chose it)."""
    own = decision.source == "agent"
    return Turn(shot, shot.size, decision.action, decision.text if own else "", _outcome(step))


async def run_task(
    task: WebTask, agent: RegionFocusAgent, env: BrowserEnv, folder: Path, settings: RunSettings
) -> dict:
    """Run one task (or MiniWoB++ episode) to its end and return its record. Never raises for
    page-side trouble: it ends up in the record's ``error``."""
    t0 = time.perf_counter()
    agent.reset()
    steps: list[dict] = []
    official_steps: list[dict] = []
    answer: str | None = None
    ended = "max-steps"  # finished | call_user | done (MiniWoB++ episode over) | max-steps | error
    error: str | None = None
    status: miniwob.EpisodeStatus | None = None
    instruction = task.ques
    last: StepResult | None = None
    views = RecordingViews(env.zoom)
    try:
        if task.kind == "miniwob":
            instruction = await miniwob.start_episode(env, task, settings.task_zoom, settings.episode_ms)
        else:
            nav_error = await env.goto(task.web)
            if nav_error:
                raise _TaskError(nav_error)
        shot = await env.observe()
        turns: list[Turn] = []
        unsaved: Image.Image | None = None  # the screen the last action left, not yet saved
        for n in range(1, settings.max_steps + 1):
            save_png(folder / f"screenshot{n}.png", shot)
            unsaved = None
            url = env.page.url if env.page else ""
            ts = time.perf_counter()
            query = Query(instruction, "agent", url=url, turns=tuple(turns))
            decision = await agent.step(shot, query, views=views)
            view_files = []
            for k, img in enumerate(views.take()):
                if img is not None:
                    name = f"views/step{n}_{k}.png"
                    save_png(folder / name, img)
                    view_files.append(name)
            action = decision.action
            step = {
                "step": n,
                "screenshot": f"screenshot{n}.png",
                "url": url,
                "action": action.to_dict() if action else None,
                "action_text": action.describe() if action else "(no action)",
                "source": decision.source,
                "trigger": decision.trigger,
                "text": decision.text,
                "decision": decision.to_dict(),
                "model_calls": len(decision.all_calls),
                "model_errors": sum(1 for c in decision.all_calls if c.error),
                "views": view_files,
            }
            steps.append(step)
            official_steps.append({"text": decision.text, "action": action})
            if action is not None and action.type in (ActionType.FINISHED, ActionType.CALL_USER):
                # call_user hands the task back: an ending, not an answer (the official message
                # file says "CallUser", never "ANSWER").
                ended = action.type.value
                answer = action.text if action.type == ActionType.FINISHED else None
                step["wall_s"] = round(time.perf_counter() - ts, 3)
                break
            if action is None:
                step["wall_s"] = round(time.perf_counter() - ts, 3)
                _remember(turns, _turn(shot, decision, step), settings.keep_screens)
                continue
            last = await env.act(action)
            unsaved = last.screenshot
            agent.observe(action, last.effect)
            step.update(
                effect=last.effect.to_dict(),
                effect_details=last.details,
                events=last.events,
                error=last.error,
                url_after=last.url,
            )
            _remember(turns, _turn(shot, decision, step), settings.keep_screens)
            if last.crashed:
                raise _TaskError(f"page crashed at step {n}")
            if task.kind == "miniwob":
                status = await miniwob.episode_status(env)
                step["miniwob"] = asdict(status)
            step["wall_s"] = round(time.perf_counter() - ts, 3)
            if status is not None and status.done:
                ended = "done"
                break
            if last.screenshot is None:
                raise _TaskError(f"no screenshot after step {n}: {last.error}")
            shot = last.screenshot
        if unsaved is not None:  # the final screen: the judge's most useful picture
            save_png(folder / f"screenshot{len(steps) + 1}.png", unsaved)
    except _TaskError as e:
        error, ended = str(e), "error"
    except Exception as e:  # noqa: BLE001 - one task's failure must not end the run
        error, ended = f"{type(e).__name__}: {e}", "error"
        log.warning("task %s failed:\n%s", task.id, traceback.format_exc())
    if task.kind == "miniwob" and status is None and error is None:
        try:
            status = await miniwob.episode_status(env)
        except Exception as e:  # noqa: BLE001
            error = f"could not read the episode's reward: {e}"

    triggers = Counter(s["trigger"] for s in steps if s.get("trigger"))
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
        "answer": answer,
        "ended": ended,
        "steps": len(steps),
        "regionfocus_rounds": agent.rounds_total,
        "model_calls": sum(s["model_calls"] for s in steps),
        "model_errors": sum(s["model_errors"] for s in steps),
        "no_effect_steps": sum(1 for s in steps if s.get("effect") and not s["effect"].get("changed")),
        "triggers": dict(triggers),
        "error": error,
        "wall_s": round(time.perf_counter() - t0, 3),
        "folder": task.folder,
    }
    write_json(
        folder / "trajectory.json",
        {"task": task.to_dict(), "instruction": instruction, "record": record, "steps": steps},
    )
    write_json(folder / "interact_messages.json", interact_messages(instruction, task.web, official_steps))
    return record


def _remember(turns: list[Turn], turn: Turn, keep_screens: int) -> None:
    """Append ``turn``; screenshots older than the last ``keep_screens`` are let go."""
    turns.append(turn)
    old = len(turns) - keep_screens - 1
    if old >= 0 and turns[old].image is not None:
        turns[old] = replace(turns[old], image=None)


class _TaskError(Exception):
    """Ends a task with a recorded error (a page that will not load, a crash)."""


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
    bar = _progress(len(pending), settings.progress)
    sem = asyncio.Semaphore(max(1, settings.concurrency))
    lock = asyncio.Lock()
    done_ok = 0

    async def one(task: WebTask) -> None:
        nonlocal done_ok
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
                run_dir.record(record)
                done_ok += bool(record.get("success"))
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(success=f"{done_ok}/{bar.n}")

    try:
        await asyncio.gather(*(one(t) for t in pending))
    finally:
        if bar is not None:
            bar.close()
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
        "regionfocus_rounds": 0,
        "model_calls": 0,
        "model_errors": 0,
        "no_effect_steps": 0,
        "triggers": {},
        "error": error,
        "wall_s": 0.0,
        "folder": task.folder,
    }


def _progress(total: int, enabled: bool):
    if not enabled or total == 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="webvoyager", unit="task", dynamic_ncols=True)
