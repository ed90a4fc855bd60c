"""``regionfocus webvoyager``: run an agent in Chromium on WebVoyager tasks or MiniWoB++,
judge a run, or rebuild its report."""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from regionfocus import RegionFocusAgent, __version__
from regionfocus.a11y import PHASES
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.adapters.cli_args import (
    add_agent_arguments,
    add_reasoning_arguments,
    build_model,
    coat_from_args,
    request_identity,
    text_only_config,
)
from regionfocus.adapters.redact import redact_url
from regionfocus.adapters.registry import facts
from regionfocus.kit import command
from regionfocus.kit.flags import (
    REGIONFOCUS,
    add_out_argument,
    add_regionfocus_arguments,
    add_strategy_argument,
    config_from_args,
    non_negative,
    positive,
    strategy_names,
    whole,
)
from regionfocus.kit.runlog import read_config, selected_count
from regionfocus.kit.shards import add_shard_argument, merge_shards, select
from regionfocus.strategies import get_strategy

from .judge import format_summary, judge_run
from .report import compare_runs, summary_markdown, write_report
from .rundir import RunDir, read_json, read_results, write_json
from .tasks import load_tasks

PROG = "regionfocus webvoyager"
EXAMPLES = """examples:
  # offline, CPU only: the OCR stand-in (fixed rules, not a model) on the curated MiniWoB++
  # tasks, then without RegionFocus; it reads MiniWoB++'s instruction wording through the
  # grammar the runner hands it for MiniWoB++ pages (miniwob_grammar.py)
  regionfocus webvoyager --tasks miniwob --agent ocr --out runs/miniwob-rf
  regionfocus webvoyager --tasks miniwob --agent ocr --out runs/miniwob-base --no-regionfocus

  # chosen MiniWoB++ tasks, 5 seeded episodes each, 2 tasks in parallel
  regionfocus webvoyager --tasks miniwob:click-button,click-link --episodes-per-task 5 \\
      --agent ocr --out runs/mw --concurrency 2

  # the screen-to-text paper's MiniWoB++ suite with a text-only LLM, seeds 0-19, its tables
  regionfocus webvoyager --tasks screen-to-text --agent screen-text --episodes-per-task 20 \\
      --base-url http://127.0.0.1:8000/v1 --model NAME --out runs/st --no-regionfocus

  # WebVoyager with UI-TARS-1.5 served by vLLM (viewport 1440x1440 by default for UI-TARS)
  regionfocus webvoyager --tasks data/WebVoyager_data.jsonl --answers data/reference_answer.json \\
      --agent uitars-1.5 --base-url http://127.0.0.1:8000/v1 --model ByteDance-Seed/UI-TARS-1.5-7B \\
      --out runs/wv-uitars --concurrency 8

  # judge a WebVoyager run three times with any OpenAI-compatible VLM, then rebuild the report
  regionfocus webvoyager judge runs/wv-uitars --base-url http://127.0.0.1:8001/v1 --model Qwen/Qwen2.5-VL-72B-Instruct
  regionfocus webvoyager report runs/wv-uitars

A run folder is resumable: run the same command again and finished tasks are skipped.
MiniWoB++ episodes are scored by the page's own reward; WebVoyager tasks need the judge.
"""


def _viewport(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--viewport must look like 1440x1440, got {text!r}") from None
    if w < 500 or h < 300:
        raise argparse.ArgumentTypeError(
            f"--viewport {text}: use at least 500x300 (MiniWoB++ dialogs need 500 px)"
        )
    return w, h


def _page_bytes(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--max-page-bytes must be a whole number of bytes, got {text!r}"
        ) from None
    if n < 1024:
        raise argparse.ArgumentTypeError(f"--max-page-bytes must be at least 1024, got {n}")
    return n


def default_viewport(agent: str) -> tuple[int, int]:
    """The agent's own browser window (its ``viewport`` fact: the paper's 2240x1260 for
    Qwen2.5-VL and the families fine-tuned from Qwen, 1440x1440 for UI-TARS). Raises ValueError
    for an unknown agent."""
    return facts(agent).viewport


OBSERVATIONS = ("screenshot", "a11y", "compressed-a11y", "screenshot+compressed-a11y")


def build_parser() -> argparse.ArgumentParser:
    p = command.Parser(
        prog=PROG,
        description="Run a GUI agent (optionally wrapped by RegionFocus) in headless Chromium on "
        "WebVoyager tasks or offline MiniWoB++ pages.\n\nother commands:\n"
        + command.subcommand_help(PROG, SUBCOMMANDS),
        epilog=EXAMPLES + "\n" + command.exit_codes("tasks"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = p.add_argument_group("tasks and run")
    _task_arguments(g)
    _run_arguments(g)
    _browser_arguments(g)
    _observation_arguments(g)
    add_shard_argument(g)
    add_agent_arguments(p)
    add_reasoning_arguments(p)
    add_regionfocus_arguments(p)
    return p


def _task_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--tasks",
        required=True,
        metavar="FILE.jsonl|miniwob[:task,...]|screen-to-text[:part]",
        help="official WebVoyager JSONL (web_name, id, ques, web) or MiniWoB++: `miniwob` for the curated "
        "click list, `miniwob:click-button,click-link` for chosen tasks, `miniwob:'click-*,enter-*'` for whole "
        "families, `screen-to-text` for the "
        "screen-to-text paper's suite in its setting (`:1-step`, `:n-step` or `:task,task` for a part; "
        "the paper's tables in RUN_DIR/screen_to_text.md)",
    )
    g.add_argument("--answers", metavar="FILE", help="WebVoyager reference-answer JSON (kept with each task)")
    g.add_argument(
        "--episodes-per-task",
        type=whole(1),
        default=1,
        metavar="K",
        help="MiniWoB++ episodes per task (default 1)",
    )
    g.add_argument(
        "--seed", type=int, default=0, help="MiniWoB++ episode k of each task uses seed S+k (default 0)"
    )
    g.add_argument(
        "--task-zoom",
        type=positive,
        default=None,
        metavar="Z",
        help="CSS zoom of the 160x210 px MiniWoB++ task (default 1.25: visible, yet small in a large screen, "
        "so an agent's ~1 MP pixel budget makes its text hard to read)",
    )


def _run_arguments(g: argparse._ArgumentGroup) -> None:
    add_out_argument(g, "webvoyager")
    g.add_argument(
        "--max-steps",
        type=whole(1),
        metavar="N",
        help="actions per task (default 100 for WebVoyager, the paper's main setting; it also reports "
        "10, 50 and 300; default 10 for MiniWoB++, 100 for screen-to-text)",
    )
    g.add_argument(
        "--max-model-steps",
        type=whole(1),
        metavar="N",
        help="steps a model decides per task: an agent's answer or a RegionFocus round, several commands "
        "of one answer being one (default 10 for screen-to-text, the paper's; no cap otherwise)",
    )
    g.add_argument("--concurrency", type=whole(1), default=1, metavar="N", help="tasks in parallel (default 1)")
    add_strategy_argument(
        g,
        "Each is the refinement run when a trigger fires (zoomclick, e.g., starts from the click that "
        "failed and crops through the browser's true zoom). A live episode's path depends on its "
        "strategy, so several names run the tasks once per strategy, each in its own run folder "
        "OUT/<name> (one name: OUT itself); `compare` sets two side by side.",
    )
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument(
        "--retry-errors",
        action="store_true",
        help="on resume, run again the tasks recorded with an error (kept and counted otherwise)",
    )
    g.add_argument("-v", "--verbose", action="store_true", help="log each task's problems")


def _browser_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--viewport",
        type=_viewport,
        metavar="WxH",
        help="browser viewport = screenshot size in px (default 1440x1440; 2240x1260 for qwen agents)",
    )
    g.add_argument(
        "--browser", metavar="PATH", help="Chromium executable (default Debian's /usr/lib/chromium/chromium)"
    )
    g.add_argument(
        "--allow-domain",
        action="append",
        default=[],
        metavar="D",
        help="only load pages from this domain and its subdomains, redirects and frames included "
        "(repeatable; default: any public http(s) site). A loopback or private address named here "
        "is reachable too (--allow-domain 127.0.0.1 for a site served on this machine)",
    )
    g.add_argument(
        "--allow-private-network",
        action="store_true",
        help="let pages reach loopback, private and link-local addresses (a site on this machine or "
        "your LAN). Off by default: a page could otherwise probe your network, the cloud metadata "
        "service (169.254.169.254) or the model server; the model server stays blocked either way",
    )
    g.add_argument(
        "--no-browser-sandbox",
        action="store_true",
        help="run Chromium without its sandbox (where it cannot start, e.g. some containers; "
        "as root it is off anyway, with a warning)",
    )
    g.add_argument(
        "--dialogs",
        choices=("accept", "dismiss"),
        default="accept",
        help="what to do with JavaScript alert/confirm/prompt dialogs (always recorded; default accept; "
        "more than 20 in one step are a dialog loop and end the task)",
    )
    g.add_argument(
        "--max-page-bytes",
        type=_page_bytes,
        metavar="N",
        help="the largest page or frame document let in, in bytes after decompression (default 32 MiB); "
        "a page over it, or still arriving at the 30 s navigation timeout, ends its task with an error "
        "naming it (a page that never ends, a download a click starts)",
    )


def _observation_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--observation",
        choices=OBSERVATIONS,
        default="screenshot",
        help="what the agent reads: the screenshot (default), the page's accessibility tree "
        "linearized (a11y, the A11y-Compressor paper's baseline) or compressed (compressed-a11y), "
        "or the screenshot with the compressed tree; text observations let text-only models browse",
    )
    g.add_argument(
        "--a11y-phases",
        metavar="P,P",
        help="the A11y-Compressor phases a compressed observation applies, for the paper's ablation "
        "(modal,reduce,structure; default all three)",
    )


def _a11y_phases(spec: str | None) -> tuple[str, ...] | None:
    if spec is None:
        return None
    phases = tuple(p.strip() for p in spec.split(",") if p.strip())
    bad = [p for p in phases if p not in PHASES]
    if bad:
        raise ValueError(f"--a11y-phases: unknown {', '.join(bad)}; choose from {', '.join(PHASES)}")
    return phases


def reads_tree(args: argparse.Namespace, rf_config) -> bool:
    """Whether a run needs the page's accessibility tree at every step."""
    return (
        args.observation != "screenshot"
        or args.agent == "a11y"
        or rf_config.proposer == "a11y"
        or rf_config.no_target_trigger
    )


def model_origins(base_urls: list[str]) -> tuple[str, ...]:
    """``host:port`` of each model server: pages never reach them, even on a network allowed."""
    out = []
    for url in base_urls:
        parts = urlsplit(url)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            continue  # a malformed URL fails where it is used
        if parts.hostname:
            out.append(f"{parts.hostname.lower()}:{port}")
    return tuple(out)


def _suite():
    # Imported on use, like everything that reaches the browser: MiniWoB++ and the
    # screen-to-text suite load Playwright (the browser extra), which `report`, `compare` and
    # `judge` do not need.
    from . import screen_text_suite

    return screen_text_suite


def load_task_list(args: argparse.Namespace):
    from . import miniwob  # Playwright: see _suite

    st = _suite()
    if args.tasks == "miniwob" or args.tasks.startswith("miniwob:"):
        return miniwob.miniwob_tasks(args.tasks, args.episodes_per_task, args.seed), "miniwob"
    if st.is_suite(args.tasks):
        return miniwob.miniwob_tasks(
            st.suite_tasks(args.tasks), args.episodes_per_task, args.seed
        ), st.SUITE_NAME
    return load_tasks(args.tasks, args.answers), "web"


@dataclass(frozen=True)
class _Resolved:
    """The run's values resolved from the flags and the kind of task list."""

    kind: str
    tasks: list
    n_all: int  # tasks in the whole list, whatever the shard
    rf_config: Any
    viewport: tuple[int, int]
    max_steps: int
    model_steps: int | None
    task_zoom: float
    phases: tuple[str, ...] | None
    coat: Any

    @property
    def suite(self) -> bool:
        """The screen-to-text paper's suite, run in its setting."""
        return self.kind == _suite().SUITE_NAME


def _resolve(args: argparse.Namespace) -> _Resolved:
    """Everything the flags decide before a model or a browser is built. Raises ValueError."""
    from . import miniwob  # Playwright: see _suite

    st = _suite()
    command.at_least_one("--concurrency", args.concurrency)
    tasks, kind = load_task_list(args)
    n_all, tasks = len(tasks), select(tasks, args.shard)
    if not tasks:
        raise ValueError(f"shard {args.shard} holds none of the {n_all} tasks; use fewer shards")
    suite = kind == st.SUITE_NAME  # the paper's setting, beside its defaults below
    command.at_least_one("--max-steps", args.max_steps)
    command.at_least_one("--max-model-steps", args.max_model_steps)
    task_zoom = (
        (st.TASK_ZOOM if suite else miniwob.DEFAULT_ZOOM) if args.task_zoom is None else args.task_zoom
    )
    if not 0.25 <= task_zoom <= 8:
        raise ValueError(f"--task-zoom must be in [0.25, 8], got {task_zoom}")
    return _Resolved(
        kind=kind,
        tasks=tasks,
        n_all=n_all,
        rf_config=text_only_config(args.agent, config_from_args(args)),
        viewport=args.viewport or (st.VIEWPORT if suite else default_viewport(args.agent)),
        max_steps=args.max_steps or (10 if kind == "miniwob" else 100),
        model_steps=args.max_model_steps or (st.load_suite().settings["max_steps"] if suite else None),
        task_zoom=task_zoom,
        phases=_a11y_phases(args.a11y_phases),
        coat=coat_from_args(args),
    )


def _pinned_config(args: argparse.Namespace, run: _Resolved, model, browser, strategy: str) -> dict:
    """What the run folder pins: a later run with other values is refused, naming the key."""
    config = {
        "agent": args.agent,
        "model": args.model,
        "backend": args.backend,
        "base_urls": [redact_url(u) for u in (args.base_urls or [])],
        "regionfocus_enabled": not args.no_regionfocus,
        "regionfocus": run.rf_config.to_dict(),
        "tasks": args.tasks,
        "answers": args.answers,
        "n_tasks": run.n_all,  # of the whole list: the same in every shard
        "episodes_per_task": args.episodes_per_task,
        "viewport": list(run.viewport),
        "device_scale_factor": 1,
        "max_steps": run.max_steps,
        "seed": args.seed,
        "task_zoom": run.task_zoom if run.kind != "web" else None,
        "concurrency": args.concurrency,
        "browser": browser.executable or "playwright-bundled",
        "allow_domains": list(args.allow_domain),
        "dialogs": args.dialogs,
        "temperature": args.temperature,
        "regionfocus_version": __version__,
        "request": request_identity(model),
    }
    return {**config, **_pinned_when_used(args, run, strategy)}


def _pinned_when_used(args: argparse.Namespace, run: _Resolved, strategy: str) -> dict:
    """Settings pinned only when they differ from the default, so earlier folders resume."""
    config: dict[str, Any] = {}
    if run.model_steps is not None:
        config["max_model_steps"] = run.model_steps
    if args.allow_private_network:
        config["allow_private_network"] = True
    if args.observation != "screenshot":
        config["observation"] = args.observation
    if run.phases is not None:
        config["a11y_phases"] = list(run.phases)
    if run.coat is not None:
        config["reasoning"] = args.reasoning
        config["coat_parts"] = run.coat.spec()
    if strategy != REGIONFOCUS:
        config["strategy"] = strategy
    if args.shard:
        config["shard"] = str(args.shard)
    return config


def _settings(args: argparse.Namespace, run: _Resolved):
    from .runner import RunSettings  # Playwright: see _suite

    return RunSettings(
        max_steps=run.max_steps,
        max_model_steps=run.model_steps,
        end_on_no_action=run.suite,
        hide_instruction=run.suite,
        viewport=run.viewport,
        concurrency=args.concurrency,
        task_zoom=run.task_zoom,
        allow_domains=tuple(args.allow_domain),
        progress=not args.no_progress,
        env_overrides={
            "dialogs": args.dialogs,
            "deny_hosts": model_origins(args.base_urls or []),
            **({"max_page_bytes": args.max_page_bytes} if args.max_page_bytes else {}),
        },
        observation=args.observation,
        a11y_phases=run.phases,
        read_tree=reads_tree(args, run.rf_config),
    )


def _run_folders(args: argparse.Namespace) -> dict[str, Path]:
    """The run folder of each --strategy name: --out itself for one, OUT/<name> for several."""
    names = strategy_names(args.strategy)
    if args.no_regionfocus and len(names) > 1:
        raise ValueError("--no-regionfocus runs no strategy: give one --strategy at most")
    out = Path(args.out or command.default_out("webvoyager", args.agent))
    return {name: out if len(names) == 1 else out / name for name in names}


def run_main(argv: list[str]) -> int:
    """run the tasks (the default command; see above)"""
    from .browser import Browser  # Playwright: see _suite
    from .runner import run_tasks

    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s"
    )
    run = _resolve(args)
    folders = _run_folders(args)
    model = build_model(args, concurrency=args.concurrency, coat=run.coat)
    if run.suite and hasattr(model, "whole_answers"):
        model.whole_answers = True  # the screen-to-text agent runs each answer's whole list
    browser = Browser(
        args.browser,
        sandbox=not args.no_browser_sandbox,
        allow_private=args.allow_private_network,
        private_hosts=tuple(args.allow_domain),
    )
    dirs = {name: RunDir(folder, retry_errors=args.retry_errors) for name, folder in folders.items()}
    settings = _settings(args, run)

    async def go() -> None:
        async with browser:
            for name, run_dir in dirs.items():
                refiner = None if name == REGIONFOCUS else get_strategy(name)
                agent = partial(
                    RegionFocusAgent, model, run.rf_config, enabled=not args.no_regionfocus, refiner=refiner
                )
                await run_tasks(run.tasks, agent, run_dir, browser, settings)
        closer = getattr(getattr(model, "backend", None), "aclose", None)
        if closer is not None:
            await closer()

    try:
        for name, run_dir in dirs.items():  # every folder refuses other settings before any task runs
            run_dir.open(_pinned_config(args, run, model, browser, name), selected=[t.id for t in run.tasks])
        asyncio.run(go())
    finally:
        for run_dir in dirs.values():
            run_dir.close()
    return max(_print_outputs(run_dir, len(run.tasks)) for run_dir in dirs.values())


def _print_outputs(run_dir: RunDir, n_selected: int) -> int:
    """Write the run folder's report, print its tables and last line; the exit code it earns."""
    report = write_report(run_dir.root)
    print(summary_markdown(read_json(run_dir.root / "summary.json")))
    tables = _suite().suite_report(run_dir.root)
    if tables:
        print(tables)
    print(f"results: {run_dir.results_path}\nreport:  {report}")
    return print_ending(run_dir.root, n_selected)


def print_ending(root: str | Path, n_selected: int | None = None) -> int:
    """The last line (tasks finished of selected, errors, partial) and the exit code it earns
    (every task failed: :data:`~regionfocus.kit.command.ALL_FAILED`)."""
    n = selected_count(read_config(root)) if n_selected is None else n_selected
    line, code = command.ending(read_results(root), "tasks", n)
    print(line)
    return code


def _judge_parser() -> argparse.ArgumentParser:
    p = command.Parser(
        prog=f"{PROG} judge",
        description="Auto-evaluate a WebVoyager run with an OpenAI-compatible VLM (the official protocol: "
        "task, final answer and the last K screenshots; SUCCESS or NOT SUCCESS), REPEATS times; "
        "prints success mean ± std per site and overall and writes RUN_DIR/judge.json.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--base-url", required=True, action="append", dest="base_urls", metavar="URL")
    p.add_argument("--model", required=True, help="judge model name on the server")
    p.add_argument("--repeats", type=whole(1), default=3, help="judgements per task (default 3, as in the paper)")
    p.add_argument("--last-k", type=whole(1), default=15, help="screenshots shown, the last K (default 15)")
    p.add_argument("--temperature", type=non_negative, default=0.0, help="default 0, as the official script")
    p.add_argument("--max-tokens", type=whole(1), default=1000)
    p.add_argument("--concurrency", type=whole(1), default=4, help="judge requests in flight (default 4)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR", help="env var with the API key")
    p.add_argument("--timeout", type=positive, default=300.0, metavar="S")
    return p


def judge_main(argv: list[str]) -> int:
    """auto-evaluate a run with a VLM (the official protocol)"""
    args = _judge_parser().parse_args(argv)
    _require_run(args.run_dir)
    backend = OpenAIBackend(
        args.base_urls,
        args.model,
        api_key_env=args.api_key_env,
        timeout=args.timeout,
        max_in_flight=max(1, args.concurrency),
    )

    async def go() -> dict:
        try:
            return await judge_run(
                args.run_dir,
                backend,
                model_name=args.model,
                repeats=args.repeats,
                last_k=args.last_k,
                temperature=args.temperature,
                max_tokens=args.max_tokens,
                concurrency=args.concurrency,
            )
        finally:
            await backend.aclose()

    print(format_summary(asyncio.run(go())))
    write_report(args.run_dir)
    return 0


def _require_run(path: str) -> None:
    root = Path(path)
    if not ((root / "records.jsonl").is_file() or (root / "results.json").is_file()):
        raise ValueError(f"{path} holds no run (no records.jsonl)")


def report_main(argv: list[str]) -> int:
    """rebuild results.json, summary and report.html from a run folder"""
    p = command.Parser(
        prog=f"{PROG} report",
        description="Rebuild RUN_DIR/results.json, summary.json, summary.md and report.html from the run "
        "folder's record log.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    args = p.parse_args(argv)
    _require_run(args.run_dir)
    tables, report = rebuild_outputs(args.run_dir)
    if tables:
        print(tables)
    print(report)
    print_ending(args.run_dir)  # the report itself succeeded, whatever the run's tasks did
    return 0


def compare_main(argv: list[str]) -> int:
    """two run folders of the same tasks side by side (paired test)"""
    p = command.Parser(
        prog=f"{PROG} compare",
        description="Two run folders of the same tasks side by side: success with 95 %% intervals, "
        "and the paired test (exact McNemar, bootstrap interval of the difference) on the tasks both scored.",
    )
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    args = p.parse_args(argv)
    _require_run(args.run_a)
    _require_run(args.run_b)
    print(compare_runs(args.run_a, args.run_b), end="")
    return 0


def rebuild_outputs(root: str | Path) -> tuple[str | None, Path]:
    """Everything a run folder derives from its record log: results.json, the screen-to-text
    tables (returned, None for other runs) and summary + report.html (the report's path returned)."""
    write_json(Path(root) / "results.json", read_results(root))
    return _suite().suite_report(root), write_report(root)


def merge_main(argv: list[str]) -> int:
    """one run folder from the folders of a --shard I/N run"""
    p = command.Parser(
        prog=f"{PROG} merge",
        description="One run folder from the folders of a --shard I/N run (all N): the records, the "
        "per-task folders (screenshots, interact_messages.json), results.json, summary and report.html "
        "of one unsharded run. Refuses shards run with other settings (naming the key), overlapping or "
        "missing ones. Judge the merged folder (`judge OUT`).",
    )
    p.add_argument("out", metavar="OUT")
    p.add_argument("shards", nargs="+", metavar="SHARD_DIR")
    args = p.parse_args(argv)
    merged = merge_shards(args.out, args.shards)
    out = Path(args.out)
    for shard in args.shards:
        for rec in read_results(shard):
            src = Path(shard) / str(rec.get("folder") or "")
            if rec.get("folder") and src.is_dir():
                shutil.copytree(src, out / rec["folder"], dirs_exist_ok=True)
    _, report = rebuild_outputs(out)
    print(f"{len(merged.records)} records from {len(args.shards)} shards -> {out}\nreport:  {report}")
    return 0


SUBCOMMANDS = {
    "judge": command.Subcommand(judge_main, "RUN_DIR --base-url URL --model NAME"),
    "report": command.Subcommand(report_main, "RUN_DIR"),
    "compare": command.Subcommand(compare_main, "RUN_A RUN_B"),
    "merge": command.Subcommand(merge_main, "OUT SHARD_DIR..."),
}


def main(argv: list[str] | None = None) -> int:
    """browse live pages in Chromium (WebVoyager tasks, MiniWoB++ offline)"""
    argv = list(sys.argv[1:] if argv is None else argv)
    return command.dispatch(PROG, argv, SUBCOMMANDS, run_main, "tasks")


if __name__ == "__main__":
    sys.exit(main())
