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
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.adapters.backends.transport import named_key_problem
from regionfocus.adapters.cli_args import (
    build_model,
    coat_from_args,
    request_identity,
    text_only_config,
)
from regionfocus.adapters.model_check import add_preflight_argument, check_models
from regionfocus.adapters.redact import redact_url
from regionfocus.kit import command
from regionfocus.kit.data_pin import DataPin
from regionfocus.kit.flags import (
    REGIONFOCUS,
    config_from_args,
    non_negative,
    positive,
    strategy_names,
    whole,
)
from regionfocus.kit.runlog import read_config, selected_count
from regionfocus.kit.shards import merge_shards, select
from regionfocus.strategies import get_strategy

from .flags import EXAMPLES, a11y_phases, add_run_arguments, default_viewport
from .judge import format_summary, judge_run
from .report import compare_runs, summary_markdown, write_report
from .rundir import RunDir, read_json, read_results, write_json
from .tasks import load_tasks, tasks_pin

PROG = "regionfocus webvoyager"


def build_parser() -> argparse.ArgumentParser:
    p = command.Parser(
        prog=PROG,
        description="Run a GUI agent (optionally wrapped by RegionFocus) in headless Chromium on "
        "WebVoyager tasks or offline MiniWoB++ pages.\n\nother commands:\n"
        + command.subcommand_help(PROG, SUBCOMMANDS),
        epilog=EXAMPLES + "\n" + command.exit_codes("tasks"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_arguments(p)
    return p


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
    pin: DataPin  # the selected tasks by content, checked against a resumed folder's

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
        phases=a11y_phases(args.a11y_phases),
        coat=coat_from_args(args),
        pin=tasks_pin(tasks, args.tasks, args.answers),
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
    check_models(args, model)  # before the browser starts and any record is written
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
        # Chromium starts before any folder is opened: one that will not start (a wrong --browser,
        # none installed) ends the command in one line, with no folder created and no folder's
        # config.json, records or lock touched. Every folder then refuses other settings or
        # changed tasks before any task runs.
        async with browser:
            for name, run_dir in dirs.items():
                config = _pinned_config(args, run, model, browser, name)
                run_dir.open(config, selected=[t.id for t in run.tasks], data=run.pin)
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
        "prints success mean ± std per site and overall and writes RUN_DIR/judge.json. The judge model "
        "is checked first (GET /models): a dead server, a refused key or an unknown --model exits 2.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--base-url", required=True, action="append", dest="base_urls", metavar="URL")
    p.add_argument("--model", required=True, help="judge model name on the server")
    p.add_argument(
        "--repeats", type=whole(1), default=3, help="judgements per task (default 3, as in the paper)"
    )
    p.add_argument("--last-k", type=whole(1), default=15, help="screenshots shown, the last K (default 15)")
    p.add_argument("--temperature", type=non_negative, default=0.0, help="default 0, as the official script")
    p.add_argument("--max-tokens", type=whole(1), default=1000)
    p.add_argument("--concurrency", type=whole(1), default=4, help="judge requests in flight (default 4)")
    p.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="environment variable holding the API key, which must then be set (default: OPENAI_API_KEY "
        "when set; a local server needs none)",
    )
    p.add_argument("--timeout", type=positive, default=300.0, metavar="S")
    add_preflight_argument(p)
    return p


def judge_main(argv: list[str]) -> int:
    """auto-evaluate a run with a VLM (the official protocol)"""
    args = _judge_parser().parse_args(argv)
    _require_run(args.run_dir)
    problem = named_key_problem(args.api_key_env)
    if problem:
        raise ValueError(problem)
    backend = OpenAIBackend(
        args.base_urls,
        args.model,
        api_key_env=args.api_key_env or "OPENAI_API_KEY",
        timeout=args.timeout,
        max_in_flight=max(1, args.concurrency),
    )
    check_models(args, backend)  # before any task is judged and judge.json is written

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
    p = command.compare_parser(
        f"{PROG} compare",
        "Two run folders of the same tasks side by side: success with 95 % intervals, and the paired "
        "test (exact McNemar, bootstrap interval of the difference) on the tasks both scored.",
    )
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
    p = command.merge_parser(
        f"{PROG} merge",
        "One run folder from the folders of a --shard I/N run (all N): the records, the per-task folders "
        "(screenshots, interact_messages.json), results.json, summary and report.html of one unsharded "
        "run, with the shards' task pins (data.json). Refuses shards run with other settings (naming "
        "the key), overlapping or missing ones, and shards that pinned one task with other content. "
        "Judge the merged folder (`judge OUT`).",
    )
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
