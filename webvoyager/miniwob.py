"""MiniWoB++ offline: real task pages from the ``miniwob`` wheel with their own reward (Shi et
al., 2017; Liu et al., 2018, "Reinforcement Learning on Web Interfaces Using Workflow-Guided
Exploration"; Farama Foundation's MiniWoB++).

An episode: load the page by file URL, wait for the ``#sync-task-cover``, seed the page's RNG
with ``Math.seedrandom``, raise ``core.EPISODE_MAX_TIME`` (10 s by default, far too short for a
model), start with ``core.startEpisodeReal()``, read the instruction with
``core.getUtterance()``, act with real mouse and keyboard events, and read ``WOB_DONE_GLOBAL``,
``WOB_RAW_REWARD_GLOBAL`` (+1 / -1) and ``WOB_REWARD_GLOBAL`` (time-discounted).

The task is drawn in the top-left 160x210 CSS px; we scale it with CSS ``zoom`` on the root
element (rewards come from the page's own click handlers, so they stay valid) and hide the
reward display and click canvas beside it, whose timer and click marks would otherwise count as
"the screen changed" after every action. ``hide_instruction`` also hides the yellow instruction
header (``#query``; the layout stays): the screen-to-text paper cut it from its screenshots and
gave the instruction as text only.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
from pathlib import Path

from regionfocus.environment import EpisodeStatus

from .browser import BrowserEnv
from .tasks import WebTask

# A quick list of one-click tasks named by visible text. The CPU agents also read the multi-step
# instructions of the click-, enter-, focus- and choose- families (miniwob_grammar.py, which the
# runner hands them for these pages):
# `miniwob:'click-*,enter-*,focus-*,choose-*'` runs all of them (BENCHMARKS.md §13). Drag, draw,
# slider and colour tasks suit neither CPU agent (docs/ARCHITECTURE.md §9).
DEFAULT_TASKS = (
    "click-button",
    "click-link",
    "click-dialog",
    "click-dialog-2",
    "click-tab",
    "click-test-2",
    "navigate-tree",
)
DEFAULT_EPISODE_MS = 600_000  # ten minutes: a VLM step can take many seconds
DEFAULT_ZOOM = 1.25  # 200x262 px in a 1440x1440 screen: text ~12 px, ~8 px at a 1 MP budget

_SETUP_SCRIPT = """([seed, maxMs, zoom, hideQuery]) => {
  const style = document.createElement('style');
  style.textContent = `html { zoom: ${zoom}; }
    #reward-display, #click-canvas { display: none !important; }
    ${hideQuery ? '#query { visibility: hidden !important; }' : ''}`;
  document.head.appendChild(style);
  Math.seedrandom(String(seed));
  core.EPISODE_MAX_TIME = maxMs;
  core.startEpisodeReal();
  clearInterval(core.CD_TIMER);  // the countdown display mutates the DOM every second
  return core.getUtterance();
}"""

_STATUS_SCRIPT = """() => [WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL, WOB_REWARD_GLOBAL,
  WOB_REWARD_REASON === null ? null : String(WOB_REWARD_REASON)]"""


def html_root() -> Path:
    """The folder holding the task pages (``miniwob/html/miniwob``). Found without importing
    the package, whose import pulls in gymnasium and selenium."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.origin:
        raise RuntimeError("the miniwob package is not installed: pip install miniwob")
    return Path(spec.origin).resolve().parent / "html" / "miniwob"


def available_tasks() -> list[str]:
    return sorted(p.stem for p in html_root().glob("*.html"))


def parse_spec(spec: str) -> list[str]:
    """ "miniwob" -> the curated list; "miniwob:click-button,click-link" -> those tasks;
    "miniwob:click-*,enter-*" -> whole families (shell patterns). Raises ValueError naming
    unknown tasks and patterns that match none."""
    if spec == "miniwob":
        return list(DEFAULT_TASKS)
    if not spec.startswith("miniwob:"):
        raise ValueError(f"not a MiniWoB++ spec: {spec!r} (use miniwob or miniwob:task,task)")
    asked = [n.strip() for n in spec.split(":", 1)[1].split(",") if n.strip()]
    if not asked:
        raise ValueError(f"{spec!r}: name at least one task after 'miniwob:'")
    all_tasks = available_tasks()
    known = set(all_tasks)
    names: list[str] = []
    for n in asked:  # a pattern names a whole family: "click-*"
        found = fnmatch.filter(all_tasks, n) if any(c in n for c in "*?[") else [n]
        names += [f for f in found or [n] if f not in names]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"unknown MiniWoB++ task(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return names


def miniwob_tasks(spec: str | list[str], episodes: int = 1, seed: int = 0) -> list[WebTask]:
    """One :class:`WebTask` per (task, episode) of ``spec`` (:func:`parse_spec`, or task names);
    episode k of every task uses seed ``seed + k``, so a baseline run and a RegionFocus run see
    the same problems."""
    if episodes < 1:
        raise ValueError(f"--episodes-per-task must be >= 1, got {episodes}")
    root = html_root()
    return [
        WebTask(
            id=f"{name}--{k}",
            web_name=name,
            ques="",
            web=(root / f"{name}.html").as_uri(),
            kind="miniwob",
            seed=seed + k,
        )
        for name in (parse_spec(spec) if isinstance(spec, str) else spec)
        for k in range(episodes)
    ]


async def start_episode(
    env: BrowserEnv,
    task: WebTask,
    zoom: float = DEFAULT_ZOOM,
    max_ms: int = DEFAULT_EPISODE_MS,
    hide_instruction: bool = False,
) -> str:
    """Load, seed and start ``task``'s episode; returns the instruction. Raises RuntimeError
    with the page's problem when the page does not load."""
    error = await env.goto(task.web)
    if error:
        raise RuntimeError(error)
    page = env.page
    assert page is not None
    await page.wait_for_selector("#sync-task-cover", state="attached", timeout=15_000)
    setup = [task.seed or 0, int(max_ms), float(zoom), bool(hide_instruction)]
    utterance = await env.evaluate(_SETUP_SCRIPT, setup)
    return " ".join(str(utterance).split())


async def episode_status(env: BrowserEnv) -> EpisodeStatus:
    done, raw, reward, reason = await env.evaluate(_STATUS_SCRIPT)
    return EpisodeStatus(bool(done), float(raw or 0), float(reward or 0), reason)


def file_root() -> str:
    """The folder file:// navigation is limited to during MiniWoB++ runs (the wheel's html/)."""
    return os.fspath(html_root().parent)
