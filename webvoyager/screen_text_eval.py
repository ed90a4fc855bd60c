"""The screen-to-text agent on MiniWoB++: episodes, the paper's success table, and the
description's element recall against the DOM.

After Sasagawa and Kawahara (Waseda), "環境依存情報を利用しない大規模言語モデルによるコンピュータータスク
自動化手法": §4.1 (success = a positive reward from the task; no next action, a failed model call
or running past the step limit count as failures), Appendix B (at most 10 model completions per
episode, temperature 0), Table 1 (mean success over tasks, tasks evaluated) and Table 3
(success of 1-step and n-step tasks). The suite (its task list and exclusions) ships as
``webvoyager/suites/screen_to_text.json``.

The episode runner is self-contained (the browsing loop in runner.py may fold it in later): it
reuses :class:`regionfocus.webvoyager.browser.Browser` / ``BrowserEnv`` and ``regionfocus.webvoyager.miniwob`` for
loading, seeding and the reward, executes each answer's commands in order with the
environment's effect check after each, and, when ``regionfocus`` is on, runs the text-only
RegionFocus round on a click that had no effect. The task's yellow instruction header is left
out of the description (the paper cut it from its screenshots; the instruction is given as
text).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

from regionfocus.actions import ActionType
from regionfocus.adapters.agents.react_agent import ReactAgent, format_command
from regionfocus.adapters.agents.text_focus import text_region_focus
from regionfocus.adapters.backends.base import ChatBackend
from regionfocus.adapters.perception.screen_text import ScreenText, describe_screen
from regionfocus.adapters.reasoning.coat import CoatConfig, CoatHistory, CoatStep
from regionfocus.geometry import Box, Point

from .browser import Browser, BrowserEnv, EnvConfig
from .miniwob import available_tasks, episode_status, file_root, html_root, start_episode
from .tasks import WebTask

SUITE_NAME = "screen-to-text"
HEADER_SCRIPT = """() => { const q = document.getElementById('query');
  if (!q) return null; const r = q.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }"""


# ----------------------------------------------------------------------------------- suite
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


def suite_tasks(spec: str) -> list[str]:
    """Task names for ``spec``: "screen-to-text" (the suite), "screen-to-text:1-step" or
    "screen-to-text:n-step" (a part of it), or a comma list of MiniWoB++ task names. Raises
    ValueError naming unknown tasks or an unknown part."""
    suite = load_suite()
    if spec == SUITE_NAME:
        return list(suite.tasks)
    if spec.startswith(SUITE_NAME + ":"):
        part = spec.split(":", 1)[1]
        if part not in ("1-step", "n-step"):
            raise ValueError(f"{spec!r}: the part must be 1-step or n-step")
        return [t for t in suite.tasks if (t in suite.n_step) == (part == "n-step")]
    names = [n.strip() for n in spec.removeprefix("miniwob:").split(",") if n.strip()]
    if not names:
        raise ValueError(f"no task in {spec!r}")
    unknown = sorted(set(names) - set(available_tasks()))
    if unknown:
        raise ValueError(f"unknown MiniWoB++ task(s): {', '.join(unknown)}")
    return names


# ----------------------------------------------------------------------------------- episodes
@dataclass
class EvalConfig:
    """``viewport``: screenshot size (W, H); ``zoom``: CSS zoom of the task (2.0 shows the
    160 px task at 320 px, the paper's doubled resolution); ``max_steps``: model completions
    per episode (the paper's 10); ``regionfocus``: run the text-only RegionFocus round on a
    click without effect; ``coat``: carry Chain-of-Action-Thought (None: the paper's plain
    history); ``stop_on_no_effect``: drop the rest of an answer's commands after one that had
    no effect (default: run them all, as the paper executes the whole list)."""

    viewport: tuple[int, int] = (480, 560)
    zoom: float = 2.0
    max_steps: int = 10
    max_ms: int = 6_000_000
    regionfocus: bool = False
    coat: CoatConfig | None = None
    stop_on_no_effect: bool = False
    max_tokens: int = 512


@dataclass
class EpisodeRecord:
    """One episode. ``success``: the page's raw reward was positive; ``llm_steps``: model
    completions used; ``error``: why it ended without a reward ("" when it got one);
    ``steps``: per completion, the observation, raw answer, commands and what each did."""

    task: str
    seed: int
    success: bool = False
    raw_reward: float = 0.0
    reward: float = 0.0
    done: bool = False
    llm_steps: int = 0
    actions: int = 0
    error: str = ""
    instruction: str = ""
    steps: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _web_task(task: str, seed: int) -> WebTask:
    page = html_root() / f"{task}.html"
    if not page.is_file():
        raise ValueError(f"no MiniWoB++ page for task {task!r} at {page}")
    return WebTask(id=f"{task}--{seed}", web_name=task, ques="", web=page.as_uri(), kind="miniwob", seed=seed)


async def run_episode(
    browser: Browser, backend: ChatBackend, task: str, seed: int, cfg: EvalConfig | None = None
) -> EpisodeRecord:
    """One MiniWoB++ episode of the screen-to-text agent. Never raises for what the model or
    the page does: failures end the episode and are recorded in ``error``."""
    cfg = cfg or EvalConfig()
    rec = EpisodeRecord(task, seed)
    env = await browser.new_env(EnvConfig(viewport=cfg.viewport, file_root=file_root()))
    try:
        await _episode(env, backend, task, seed, cfg, rec)
    except Exception as e:  # noqa: BLE001 - an episode's failure is a record, not a crash
        rec.error = rec.error or f"{type(e).__name__}: {e}"
    finally:
        await env.close()
    return rec


async def _episode(
    env: BrowserEnv, backend: ChatBackend, task: str, seed: int, cfg: EvalConfig, rec: EpisodeRecord
) -> None:
    rec.instruction = await start_episode(env, _web_task(task, seed), zoom=cfg.zoom, max_ms=cfg.max_ms)
    header = await env.evaluate(HEADER_SCRIPT)
    ignore = [Box(*header)] if header else []
    agent = ReactAgent(backend, task=task, coat=cfg.coat, max_tokens=cfg.max_tokens)
    history = CoatHistory()
    shot = await env.observe()
    for _ in range(cfg.max_steps):
        step = await agent.next_actions(shot, rec.instruction, history, ignore=ignore)
        rec.llm_steps += 1
        srec = {
            "observation": step.screen.to_text(),
            "raw": step.raw,
            "errors": step.errors,
            "executed": [],
            "coat": step.to_dict()["coat"],
        }
        rec.steps.append(srec)
        if not step.actions:
            rec.error = "no next action: " + ("; ".join(step.errors) or "empty answer")
            return
        failed: list[Point] = []
        for action, command in zip(step.actions, step.commands, strict=True):
            if action.type == ActionType.FINISHED:
                srec["executed"].append({"command": command, "outcome": "finished"})
                status = await episode_status(env)
                _set_status(rec, status)
                if not status.done:
                    rec.error = "the agent finished before the task gave a reward"
                return
            before = shot
            result = await env.act(action)
            rec.actions += 1
            shot = result.screenshot or shot
            outcome = "changed the screen" if result.effect.changed else "no visible effect"
            if result.error:
                outcome = f"error: {result.error}"
            history.append(agent.history_step(step, command, outcome))
            srec["executed"].append({"command": command, "outcome": outcome})
            if result.crashed:
                rec.error = f"the page crashed: {result.error}"
                return
            status = await episode_status(env)
            if status.done:
                _set_status(rec, status)
                return
            if not result.effect.changed and action.is_point_action:
                failed.append(action.point)
                if cfg.regionfocus:
                    shot = await _region_focus(env, agent, before, rec, history, failed, srec)
                    status = await episode_status(env)
                    if status.done:
                        _set_status(rec, status)
                        return
                if cfg.stop_on_no_effect:
                    break
    rec.error = f"no reward within {cfg.max_steps} model steps"


async def _region_focus(env, agent, before, rec, history, failed, srec):
    """One text-only RegionFocus round on the screenshot the failed click was made on; its
    choice is executed and recorded like any command. Returns the newest screenshot."""
    fr = await text_region_focus(agent, before, rec.instruction, list(failed), env.zoom, history=history)
    srec.setdefault("regionfocus", []).append(fr.trace)
    if fr.action is None:
        return env.last_screenshot or before
    result = await env.act(fr.action)
    rec.actions += 1
    outcome = "changed the screen" if result.effect.changed else "no visible effect"
    command = "RegionFocus: " + format_command(fr.action)
    history.append(CoatStep(command, outcome=outcome))
    srec["executed"].append({"command": command, "outcome": outcome})
    if not result.effect.changed and fr.action.point is not None:
        failed.append(fr.action.point)
    return result.screenshot or env.last_screenshot or before


def _set_status(rec: EpisodeRecord, status) -> None:
    rec.done = status.done
    rec.raw_reward = status.raw_reward
    rec.reward = status.reward
    rec.success = status.success
    if status.done and not status.success:
        rec.error = rec.error or f"the task gave reward {status.raw_reward:+.0f}"


async def run_suite(
    backend: ChatBackend,
    tasks: Sequence[str],
    seeds: Sequence[int],
    cfg: EvalConfig | None = None,
    *,
    browser: Browser | None = None,
    on_record=None,
    skip: frozenset[str] = frozenset(),
) -> list[EpisodeRecord]:
    """Every (task, seed) episode, one at a time (one browser; a context per episode).
    ``on_record``: called with each record as it finishes (to write it out); ``skip``: episode
    ids ("task--seed") already finished (a resumed run)."""
    own = browser is None
    browser = browser or await Browser().start()
    out = []
    try:
        for task in tasks:
            for seed in seeds:
                if f"{task}--{seed}" in skip:
                    continue
                rec = await run_episode(browser, backend, task, seed, cfg)
                out.append(rec)
                if on_record is not None:
                    on_record(rec)
    finally:
        if own:
            await browser.close()
    return out


# ----------------------------------------------------------------------------------- table
def success_table(
    records: Sequence[EpisodeRecord], label: str = "ours", n_step: frozenset[str] | None = None
) -> str:
    """The paper's layout: Table 1 (mean over tasks of each task's success rate, tasks
    evaluated) and Table 3 (the same mean over 1-step and over n-step tasks; the mean number of
    model steps of successful n-step episodes), one row for ``records``."""
    n_step = load_suite().n_step if n_step is None else n_step
    by_task: dict[str, list[EpisodeRecord]] = {}
    for r in records:
        by_task.setdefault(r.task, []).append(r)
    rate = {t: sum(r.success for r in rs) / len(rs) for t, rs in by_task.items()}

    def mean(ts: list[str]) -> str:
        return f"{statistics.mean(rate[t] for t in ts):.3f}" if ts else "-"

    ones = [t for t in rate if t not in n_step]
    ns = [t for t in rate if t in n_step]
    won_n = [r.llm_steps for r in records if r.task in n_step and r.success]
    avg_n = f"{statistics.mean(won_n):.3f}" if won_n else "-"
    w = max(len(label), 5)
    lines = [
        "Table 1 layout: mean success over tasks",
        f"{'model':<{w}}  mean success  tasks  episodes",
        f"{label:<{w}}  {mean(list(rate)):>12}  {len(rate):>5}  {len(records):>8}",
        "",
        "Table 3 layout: success by the number of steps a task needs",
        f"{'model':<{w}}  1-step (tasks)  n-step (tasks)  mean steps of solved n-step",
        f"{label:<{w}}  {mean(ones):>6} ({len(ones):>3})    {mean(ns):>6} ({len(ns):>3})    {avg_n:>6}",
        "",
        "per task: " + ", ".join(f"{t} {rate[t]:.2f}" for t in sorted(rate)),
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------- recall
DOM_SCRIPT = """() => {
  const sel = 'button, input:not([type=hidden]), select, textarea, a, .alink, [role=button], [role=tab],'
    + ' [role=menuitem], [role=option], [role=treeitem], [role=link], [onclick]';
  const q = document.getElementById('query');
  const out = [];
  for (const el of document.querySelectorAll('#area ' + sel.split(',').join(', #area '))) {
    const r = el.getBoundingClientRect();
    const s = getComputedStyle(el);
    if (r.width < 2 || r.height < 2 || s.visibility === 'hidden' || s.display === 'none') continue;
    if (r.right <= 0 || r.bottom <= 0 || r.left >= innerWidth || r.top >= innerHeight) continue;
    if (q && q.contains(el)) continue;
    out.push({tag: el.tagName.toLowerCase(), type: el.type || '', box: [r.left, r.top, r.right, r.bottom]});
  }
  return out;
}"""


@dataclass
class RecallRow:
    """Element recall on one page: ``total`` interactive DOM elements, ``named`` those with a
    description entry (any kind) whose box centre lies in the element, ``as_control`` those
    named by a detected control (not plain OCR text)."""

    task: str
    seed: int
    total: int
    named: int
    as_control: int


def element_recall(screen: ScreenText, dom: Sequence[dict]) -> tuple[int, int, int]:
    """(total, named, as_control) for one page: ``dom`` entries carry ``box`` XYXY in the
    screenshot's pixels (as :data:`DOM_SCRIPT` returns them)."""
    named = controls = 0
    for el in dom:
        box = Box(*el["box"])
        hits = [e for e in screen.elements if box.contains(e.box.center)]
        named += bool(hits)
        controls += any(e.kind != "text" for e in hits)
    return len(dom), named, controls


async def measure_recall(
    tasks: Sequence[str], seeds: Sequence[int], cfg: EvalConfig | None = None, browser: Browser | None = None
) -> list[RecallRow]:
    """Element recall of the screen-to-text description on the first screen of each episode."""
    cfg = cfg or EvalConfig()
    own = browser is None
    browser = browser or await Browser().start()
    rows = []
    try:
        for task in tasks:
            for seed in seeds:
                env = await browser.new_env(EnvConfig(viewport=cfg.viewport, file_root=file_root()))
                try:
                    await start_episode(env, _web_task(task, seed), zoom=cfg.zoom, max_ms=cfg.max_ms)
                    header = await env.evaluate(HEADER_SCRIPT)
                    shot = await env.observe()
                    dom = await env.evaluate(DOM_SCRIPT)
                    screen = await asyncio.to_thread(
                        describe_screen, shot, ignore=[Box(*header)] if header else []
                    )
                    rows.append(RecallRow(task, seed, *element_recall(screen, dom)))
                finally:
                    await env.close()
    finally:
        if own:
            await browser.close()
    return rows


_VARIANT = re.compile(
    r"-(?:\d+|nodelay|easy|medium|hard|large|soft|transfer|nl|turk|dynamic|popup|all|some)$"
)


def task_family(task: str) -> str:
    """The task with its variant suffixes removed: click-tab-2-hard -> click-tab,
    email-inbox-forward-nl-turk -> email-inbox-forward."""
    prev = None
    while prev != task:
        prev, task = task, _VARIANT.sub("", task)
    return task


def recall_table(rows: Sequence[RecallRow]) -> str:
    """Recall per task family (pooled over its pages) and overall."""
    fam: dict[str, list[RecallRow]] = {}
    for r in rows:
        fam.setdefault(task_family(r.task), []).append(r)

    def line(name: str, rs: Sequence[RecallRow]) -> str:
        total = sum(r.total for r in rs)
        named = sum(r.named for r in rs)
        ctl = sum(r.as_control for r in rs)
        if not total:
            return f"{name:<28} {len(rs):>5} {0:>8}        -            -"
        return f"{name:<28} {len(rs):>5} {total:>8} {named / total:>12.3f} {ctl / total:>12.3f}"

    out = [f"{'task family':<28} {'pages':>5} {'elements':>8} {'recall(any)':>12} {'as control':>12}"]
    out += [line(f, rs) for f, rs in sorted(fam.items())]
    out.append(line("ALL", rows))
    return "\n".join(out)


# ----------------------------------------------------------------------------------- command
def _seeds(text: str) -> list[int]:
    if re.fullmatch(r"\d+-\d+", text):
        a, b = map(int, text.split("-"))
        if b < a:
            raise ValueError(f"--seeds {text!r}: the range is empty")
        return list(range(a, b + 1))
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be a range like 0-19 or a comma list, got {text!r}") from None


def main(argv: list[str]) -> int:
    """Run the screen-to-text LLM agent on MiniWoB++ and print the paper's success table."""
    p = argparse.ArgumentParser(
        prog="regionfocus screen-text-eval",
        description="Episodes of the screen-to-text ReAct agent (Sasagawa and Kawahara) on MiniWoB++ pages "
        "through any OpenAI-compatible chat endpoint (text only), scored by the pages' own rewards.",
    )
    p.add_argument(
        "--tasks", default=SUITE_NAME, help="screen-to-text[:1-step|:n-step] or a comma list of tasks"
    )
    p.add_argument("--seeds", default="0-19", help="seed range (0-19, the paper's gpt-4 setting) or list")
    p.add_argument(
        "--base-url", action="append", help="OpenAI-compatible base URL ending in /v1 (repeatable)"
    )
    p.add_argument("--model", help="model id as the server lists it")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    p.add_argument("--max-steps", type=int, default=10, help="model completions per episode (paper: 10)")
    p.add_argument(
        "--regionfocus", action="store_true", help="text-only RegionFocus on a click without effect"
    )
    p.add_argument("--reasoning", choices=("react", "coat"), default="react", help="coat: carry CoAT parts")
    p.add_argument(
        "--coat-parts", default="all", help="CoAT parts for --reasoning coat: all or a list of sd,par,at,ad"
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="RUN_DIR",
        help="run folder (default runs/screen-text-<model>): the pinned configuration and one record per "
        "episode in records.jsonl; rerunning the same command resumes",
    )
    p.add_argument(
        "--retry-errors", action="store_true", help="on resume, run again the episodes that raised"
    )
    p.add_argument(
        "--recall", action="store_true", help="measure element recall against the DOM instead (no model)"
    )
    args = p.parse_args(argv)
    try:
        tasks = suite_tasks(args.tasks)
        seeds = _seeds(args.seeds)
        coat = CoatConfig.parse(args.coat_parts) if args.reasoning == "coat" else None
    except ValueError as e:
        p.error(str(e))
    if args.max_steps < 1:
        p.error("--max-steps must be at least 1")
    cfg = EvalConfig(max_steps=args.max_steps, regionfocus=args.regionfocus, coat=coat)
    if args.recall:
        rows = asyncio.run(measure_recall(tasks, seeds, cfg))
        print(recall_table(rows))
        return 0
    if not args.base_url or not args.model:
        p.error("--base-url and --model are needed to run the agent (or use --recall)")
    from regionfocus.adapters.backends.openai_http import OpenAIBackend
    from regionfocus.adapters.redact import redact_url
    from regionfocus.kit.runlog import RunFolder, RunFolderError

    backend = OpenAIBackend(args.base_url, args.model, api_key_env=args.api_key_env)
    out = args.out or Path(f"runs/screen-text-{re.sub(r'[^A-Za-z0-9._-]+', '_', args.model)}")
    identity = {
        "harness": "screen-text-eval",
        "model": args.model,
        "tasks": list(tasks),
        "seeds": list(seeds),
        "max_steps": args.max_steps,
        "regionfocus": args.regionfocus,
        "reasoning": args.reasoning,
        "coat_parts": args.coat_parts if coat else None,
    }
    try:
        folder = RunFolder(
            out,
            identity,
            {"base_urls": [redact_url(u) for u in args.base_url]},
            retry_errors=args.retry_errors,
        )
    except RunFolderError as e:
        p.error(str(e))

    def write(rec: EpisodeRecord) -> None:
        print(
            f"{rec.task} seed {rec.seed}: {'success' if rec.success else 'failure'} {rec.error}",
            file=sys.stderr,
        )
        # A failed episode is a result ("ok"); "error" is kept for episodes that raised.
        raised = rec.error.split(":")[0].endswith(("Error", "Exception"))
        folder.add({"id": f"{rec.task}--{rec.seed}", **rec.to_dict(), "status": "error" if raised else "ok"})

    with folder:
        asyncio.run(run_suite(backend, tasks, seeds, cfg, on_record=write, skip=frozenset(folder.done)))
        wanted = {f"{t}--{s}" for t in tasks for s in seeds}
        records = [
            EpisodeRecord(**{k: v for k, v in r.items() if k in EpisodeRecord.__dataclass_fields__})
            for i, r in folder.records.items()
            if i in wanted
        ]
    print(success_table(records, label=args.model))
    print(f"records: {out}/records.jsonl", file=sys.stderr)
    return 0
