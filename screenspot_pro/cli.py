"""`regionfocus screenspot-pro`: run, report, compare, build-sample.

Exit codes: :mod:`regionfocus.kit.command` (0 done, 2 bad input named in one line, 3 every
sample failed, 130 interrupted: the run folder stays resumable, rerun the same command).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from PIL import Image

from regionfocus.adapters.cli_args import (
    add_agent_arguments,
    add_second_agent_arguments,
    build_model,
    build_second_model,
    request_identity,
)
from regionfocus.adapters.model_check import check_models
from regionfocus.adapters.redact import redact_url
from regionfocus.kit import command, hub
from regionfocus.kit.chromium import ChromiumLaunchError
from regionfocus.kit.flags import (
    add_out_argument,
    add_regionfocus_arguments,
    add_strategy_argument,
    config_from_args,
    strategy_names,
    whole,
)
from regionfocus.kit.prices import load as load_prices
from regionfocus.kit.runlog import read_config, selected_count
from regionfocus.kit.shards import add_shard_argument, merge_shards, select
from regionfocus.model import GroundingModel

from .dataset import DEFAULT_MAX_IMAGE_PIXELS, Selection
from .formats import FORMATS, Format, detect
from .report import compare_runs, load_run, table_for_run, write_reports
from .runner import run_screenspot
from .strategies import fit_to_model, second_options

PROG = "regionfocus screenspot-pro"

DESCRIPTION = """\
Ground ScreenSpot-Pro instructions with an agent and score them the way the official
harness does. Each sample is predicted once by the agent alone (the baseline), then the
agent judges its own point and RegionFocus refines the rejected ones: both rows come out
of the same pass. Finished samples are saved as they complete; rerunning the same command
resumes where it stopped.

example (CPU only, no downloads; the OCR stand-in, not a model, on a sample set built and
cached on first use):
  regionfocus screenspot-pro --data builtin --agent ocr
example (the benchmark from the Hugging Face Hub, kept in its cache and pinned to a commit):
  regionfocus screenspot-pro --data hf:likaixin/ScreenSpot-Pro --agent ocr --out runs/sspro-ocr
example (a model behind an OpenAI-compatible server, e.g. `vllm serve`):
  regionfocus screenspot-pro --data ~/ScreenSpot-Pro --agent qwen2.5-vl \\
      --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-VL-7B-Instruct --concurrency 16
"""

FILES = """\
files written to RUN_DIR (--out):
  records.jsonl          one JSON record per finished sample (points, verdict, trigger, the full
                         RegionFocus trace, calls, tokens, seconds); append-only, resumable
  config.json            the resolved RegionFocus config and run settings (a folder refuses to
                         resume with different settings)
  results.json           official {"details", "metrics"} format, final (+ RegionFocus) points
  results_baseline.json  the same for the agent alone
  results_<name>.json    the same for each other --strategy (results.json stays RegionFocus's)
  strategies.png/.svg/.pdf  with --strategy: accuracy with its 95 % interval against calls,
                         tokens and USD per sample (a panel where the run has that cost)
  summary.md             the paper's Table 1 layout, per application, trigger rate, judge quality,
                         flips, cost per sample
  report.html            one self-contained page to browse samples with their overlays
"""


def data_layouts(formats: tuple[Format, ...] = FORMATS) -> str:
    """The ``--help`` paragraph of the benchmarks ``--data`` reads, from their table."""
    width = max(len(f.title) for f in formats)
    lines = [
        f"  {f.title:<{width}}  {f.pattern}, {f.images}/"
        + (f" (default --task {','.join(f.default_tasks)})" if f.default_tasks else "")
        for f in formats
    ]
    return (
        "data layout (--data DIR), told apart by its annotation files; the run folder pins which:\n"
        + "\n".join(lines)
    )


def run_parser() -> argparse.ArgumentParser:
    p = command.Parser(
        prog=PROG,
        description=f"{DESCRIPTION}\nother commands:\n{command.subcommand_help(PROG, SUBCOMMANDS)}",
        epilog=f"{FILES}\n{data_layouts()}\n\n{command.exit_codes('samples')}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _data_arguments(p.add_argument_group("data"))
    r = p.add_argument_group("run")
    _run_arguments(r)
    _transport_arguments(r)
    add_shard_argument(r)
    add_agent_arguments(p)
    add_second_agent_arguments(p)
    add_regionfocus_arguments(p)
    return p


def _data_arguments(d: argparse._ArgumentGroup) -> None:
    d.add_argument(
        "--data",
        required=True,
        metavar="DIR|builtin|hf:OWNER/NAME[@REV]",
        help="a ScreenSpot-Pro, ScreenSpot-v2, OSWorld-G or UI-Vision folder (layouts below), "
        "'builtin' for the rendered sample set, or a data set on the Hugging Face Hub "
        "(hf:likaixin/ScreenSpot-Pro; @REV a branch, tag or commit), downloaded into the Hub cache; "
        "the run pins the commit it resolved to and a rerun reads that commit",
    )
    d.add_argument(
        "--browser",
        metavar="PATH",
        help="the Chromium that renders --data builtin on first use (default Debian's "
        "/usr/lib/chromium/chromium)",
    )
    d.add_argument(
        "--task",
        default="all",
        help="annotation files to run, comma-separated stems like 'pycharm_macos' (default: all)",
    )
    d.add_argument(
        "--group", nargs="+", default=[], metavar="G", help="only these groups (Dev, Creative, CAD, ...)"
    )
    d.add_argument("--app", nargs="+", default=[], metavar="A", help="only these applications")
    d.add_argument("--ui-type", choices=("text", "icon"), help="only text or only icon targets")
    d.add_argument(
        "--language", choices=("en", "cn"), default="en", help="instruction (en) or instruction_cn (cn)"
    )
    d.add_argument(
        "--limit", type=whole(1), metavar="N", help="the first N selected samples (in dataset order)"
    )
    d.add_argument(
        "--max-image-pixels",
        type=whole(1),
        default=None,
        metavar="N",
        help="refuse screenshots larger than N pixels (width x height, read from the file header "
        "before anything is decoded; default 64000000, about 8K)",
    )


def _run_arguments(r: argparse._ArgumentGroup) -> None:
    add_out_argument(r, "<benchmark>")  # screenspot-pro, screenspot-v2, osworld-g, ui-vision
    r.add_argument(
        "--concurrency", type=whole(1), default=4, metavar="N", help="samples in flight (default 4)"
    )
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument(
        "--retry-errors",
        action="store_true",
        help="on resume, rerun samples recorded as errors (e.g. the server was down); "
        "finished samples are never rerun",
    )
    add_strategy_argument(
        r,
        "All run on the same samples from one baseline; each writes results_<name>.json and a row "
        "of the comparison in summary.md and report.html; zoom-consistency routes between --agent "
        "and --second-agent when given.",
    )
    r.add_argument(
        "--prices",
        metavar="FILE",
        help="a price table (TOML: [[model]] match, input, cached_input, output in USD per million "
        "tokens) for the USD columns of summary.md and report.html, instead of the built-in one "
        "(regionfocus/kit/data/prices.toml, hosted models with their sources)",
    )


def _transport_arguments(r: argparse._ArgumentGroup) -> None:
    r.add_argument(
        "--image-workers",
        type=whole(1),
        default=None,
        metavar="N",
        help="samples decoding their screenshot at once, apart from --concurrency (default: CPU count)",
    )
    r.add_argument(
        "--local-media-dir",
        metavar="DIR",
        help="client on the server's machine: write images once under DIR (e.g. "
        "/dev/shm/regionfocus-media) and send file:// URLs; `regionfocus serve-command "
        "--local-media-path` prints the server command for it (bound to 127.0.0.1, allowed to read "
        "that folder only). An image that cannot be written, or a server that refuses files, gets "
        "a data URL",
    )
    r.add_argument(
        "--local-format",
        choices=("bmp", "png"),
        default="bmp",
        help="files of --local-media-dir: bmp (uncompressed, default) or png (lossless, ~4x smaller)",
    )


def _identity(
    args: argparse.Namespace, data_dir: Path, fmt: str, data_id: str | None = None
) -> dict[str, Any]:
    """Run settings that change a sample's result: a folder refuses to mix two of them. The
    benchmark is pinned unless ScreenSpot-Pro, so folders made before the others still resume.
    ``data_id``: a Hub set's hf:OWNER/NAME@commit, pinned instead of its cache folder."""
    return {
        **({"format": fmt} if fmt != "screenspot-pro" else {}),
        **({"shard": str(args.shard)} if args.shard else {}),
        "data": data_id or str(data_dir.resolve()),
        "agent": args.agent,
        "model": args.model,
        # Pinned only when given: folders of one-model runs resume.
        **(
            {"second_agent": args.second_agent, "second_model": args.second_model or args.model}
            if args.second_agent
            else {}
        ),
        "backend": args.backend if args.agent != "ocr" else None,
        "temperature": args.temperature,
        "ocr_budget": args.ocr_budget,
        # Pinned only when given: the layer MVP's attention reads changes its views.
        **(
            {"attention_layer": args.attention_layer}
            if getattr(args, "attention_layer", None) is not None
            else {}
        ),
        "selection": {
            "task": args.task,
            "groups": sorted(args.group),
            "applications": sorted(args.app),
            "ui_type": args.ui_type,
            "language": args.language,
        },
    }


def _resolve_data(
    arg: str, outs: list[str] | tuple[str, ...] = (), browser: str | None = None
) -> tuple[Path, str | None]:
    """The folder ``--data`` names, and for a Hub set its pinned id (hf:OWNER/NAME@commit); a
    rerun into a run folder of ``outs`` (--out, else each benchmark's default folder: which one
    is known only once the data is) reads the commit its config.json pinned when ``arg`` names
    no revision. ``browser``: the Chromium that renders the built-in set (``--browser``)."""
    if hub.is_hub(arg):
        spec = hub.parse_spec(arg)
        for out in outs:
            if spec.revision is None:
                spec = hub.pinned_revision(spec, Path(out) / "config.json")
        print(f"data: {spec} from the Hugging Face Hub (kept in its cache)", file=sys.stderr)
        got = hub.fetch(spec)
        return got.path, got.pinned
    if arg != "builtin":
        return Path(arg).expanduser(), None
    builder = _builder()
    if not builder.builtin_cached():
        print("built-in data: rendering it with Chromium (about 20 s, once), then cached", file=sys.stderr)
    try:
        return builder.builtin_dataset_dir(browser_path=browser, browser_flag="--browser"), None
    except ChromiumLaunchError as e:  # one line already: the executable, --browser, the cause
        raise ValueError(f"could not render the built-in data set: {e}") from None
    except Exception as e:  # noqa: BLE001 - an environment problem, named in one line
        first = (str(e).strip().splitlines() or [""])[0]
        raise ValueError(f"could not render the built-in data set ({type(e).__name__}: {first})") from None


def _builder():
    # Imported on use: the builder renders with Playwright (the browser extra), which a run
    # on a data folder does not need.
    try:
        from . import builder
    except ModuleNotFoundError as e:
        if e.name != f"{__package__}.builder":
            raise
        raise ValueError(
            "the built-in sample builder (regionfocus.screenspot_pro.builder) is not installed"
        ) from None
    return builder


def _selection(args: argparse.Namespace) -> Selection:
    tasks = tuple(t.strip() for t in args.task.split(",") if t.strip()) if args.task != "all" else ()
    return Selection(
        tasks=tasks,
        groups=tuple(args.group),
        applications=tuple(args.app),
        ui_type=args.ui_type,
        language=args.language,
        limit=args.limit,
    )


def _load_samples(args: argparse.Namespace, data_dir: Path) -> tuple[Format, list]:
    """The benchmark in ``data_dir`` and this shard's samples of the selection. Raises
    ValueError for a selection or shard holding none."""
    max_pixels = DEFAULT_MAX_IMAGE_PIXELS if args.max_image_pixels is None else args.max_image_pixels
    command.at_least_one("--max-image-pixels", max_pixels)
    # This process decodes what the loader accepted; Pillow's global guard must not be stricter.
    Image.MAX_IMAGE_PIXELS = max(Image.MAX_IMAGE_PIXELS or 0, max_pixels)
    fmt = detect(data_dir)
    selection = _selection(args)
    if selection.groups or selection.applications:
        _check_names(fmt.load(data_dir, _unfiltered(selection), max_image_pixels=max_pixels), selection)
    samples = fmt.load(data_dir, selection, max_image_pixels=max_pixels)
    if not samples:
        raise ValueError(f"no samples in {data_dir} match the filters (task/group/app/ui-type)")
    n_all, samples = len(samples), select(samples, args.shard)
    if not samples:
        raise ValueError(f"shard {args.shard} holds none of the {n_all} selected samples; use fewer shards")
    return fmt, samples


def _unfiltered(selection: Selection) -> Selection:
    """The same annotation files and language, every sample of them."""
    return Selection(tasks=selection.tasks, language=selection.language)


def _check_names(samples, selection: Selection) -> None:
    """Bad input naming the values that exist when a --group or --app names none of them (as an
    unknown --task names the annotation files)."""
    for flag, wanted, attr in (
        ("--group", selection.groups, "group"),
        ("--app", selection.applications, "application"),
    ):
        present = sorted({getattr(s, attr) for s in samples}, key=str.lower)
        unknown = [w for w in wanted if w.lower() not in {p.lower() for p in present}]
        if unknown:
            raise ValueError(
                f"{flag}: no sample has {', '.join(map(repr, unknown))}; the selected files hold "
                f"{', '.join(present) or 'none'}"
            )


def _model(args: argparse.Namespace) -> GroundingModel:
    """The model the agent flags describe, with --local-media-dir applied."""
    model = build_model(args, concurrency=args.concurrency)
    if args.local_media_dir:
        backend = getattr(model, "backend", None)
        if not hasattr(backend, "use_local_media"):
            raise ValueError("--local-media-dir needs an HTTP agent (--base-url)")
        backend.use_local_media(args.local_media_dir, args.local_format)
    return model


def _invocation(args: argparse.Namespace, n_selected: int) -> dict[str, Any]:
    """Run settings recorded but not pinned: a resume may change them."""
    second = (
        {"second_base_urls": [redact_url(u) for u in args.second_base_urls]} if args.second_base_urls else {}
    )
    return {
        "limit": args.limit,
        "timeout": args.timeout,
        "base_urls": [redact_url(u) for u in args.base_urls] if args.base_urls else args.base_urls,
        **second,
        "max_in_flight": args.max_in_flight,
        "n_selected": n_selected,
        "prices": str(Path(args.prices).resolve()) if args.prices else None,
    }


def cmd_run(argv: list[str], model: GroundingModel | None = None) -> int:
    """ground the selected samples (the default command; see above)"""
    args = run_parser().parse_args(argv)
    command.at_least_one("--concurrency", args.concurrency)
    config = config_from_args(args)
    strategies = strategy_names(args.strategy)
    second = build_second_model(args, concurrency=args.concurrency)
    options = second_options(strategies, second)
    # A model the caller passed in is the caller's to close and to check; ours are checked now,
    # before the data is read and any record written.
    owned, model = (True, _model(args)) if model is None else (False, model)
    check_models(args, model if owned else None, second)
    outs = [args.out] if args.out else [command.default_out(f.name, args.agent) for f in FORMATS]
    data_dir, data_id = _resolve_data(args.data, outs, args.browser)
    fmt, samples = _load_samples(args, data_dir)
    if args.prices:
        load_prices(args.prices)  # a table that does not read fails before any model call
    out = Path(args.out or command.default_out(fmt.name, args.agent))
    strategies, unfit = fit_to_model(strategies, model, every=(args.strategy or "").strip().lower() == "all")
    for name, reason in unfit.items():
        print(f"--strategy all: {name} left out: {reason}", file=sys.stderr)
    identity = {**_identity(args, data_dir, fmt.name, data_id), "request": request_identity(model)}
    print(f"{len(samples)} samples from {data_dir} -> {out}", file=sys.stderr)

    async def run_then_close() -> None:
        try:
            await run_screenspot(
                samples,
                model,
                config,
                out,
                enabled=not args.no_regionfocus,
                concurrency=args.concurrency,
                identity=identity,
                invocation=_invocation(args, len(samples)),
                progress=False if args.no_progress else None,
                retry_errors=args.retry_errors,
                strategies=strategies,
                image_workers=args.image_workers,
                tune_allocator=True,
                options=options,
            )
        finally:
            for m in (model if owned else None, second):
                if m is not None:
                    await _close(m)

    asyncio.run(run_then_close())
    print(table_for_run(out))
    print(f"\nresults: {out}/results.json, {out}/summary.md, {out}/report.html")
    return print_ending(out)


def print_ending(run_dir: str | Path) -> int:
    """Print what the run holds (finished of selected, errors, partial) as the last line; the
    exit code it earns (every sample failed: :data:`~regionfocus.kit.command.ALL_FAILED`)."""
    line, code = command.ending(load_run(run_dir), "samples", selected_count(read_config(run_dir)))
    print(line)
    return code


async def _close(model: GroundingModel) -> None:
    """Close the model's connections (HTTP clients) in the loop that opened them."""
    close = getattr(model, "aclose", None) or getattr(getattr(model, "backend", None), "aclose", None)
    if close is None:
        return
    try:
        await close()
    except Exception:  # noqa: BLE001 - closing must not hide the run's real outcome
        pass


def cmd_report(argv: list[str]) -> int:
    """rebuild results and reports from a run folder"""
    p = command.Parser(
        prog=f"{PROG} report", description="Rebuild results, summary.md and report.html from RUN_DIR."
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument(
        "--thumb-width", type=whole(64), default=1200, help="width of the report's screenshots (px)"
    )
    p.add_argument(
        "--max-images",
        type=whole(0),
        default=400,
        metavar="N",
        help="samples whose screenshots report.html embeds (errors and flips first; default 400)",
    )
    p.add_argument(
        "--prices",
        metavar="FILE",
        help="a price table (TOML: [[model]] match, input, cached_input, output in USD per million "
        "tokens) for the USD columns of summary.md and report.html, instead of the run's "
        "(regionfocus/kit/data/prices.toml, hosted models with their sources)",
    )
    args = p.parse_args(argv)
    write_reports(
        args.run_dir, thumb_width=args.thumb_width, max_images=args.max_images, prices_file=args.prices
    )
    print(table_for_run(args.run_dir))
    print_ending(args.run_dir)  # the report itself succeeded, whatever the run's samples did
    return 0


def cmd_compare(argv: list[str]) -> int:
    """two runs side by side"""
    p = command.compare_parser(f"{PROG} compare", "Print two run folders side by side (accuracy in %).")
    args = p.parse_args(argv)
    for run in (args.run_a, args.run_b):
        _grounding_run(run)
    print(compare_runs(args.run_a, args.run_b), end="")
    return 0


# Identity keys only another harness pins: how a folder of theirs is told apart.
_OTHER_HARNESSES = (("tasks", "webvoyager"), ("coat_parts", "aitz"))


def _grounding_run(run_dir: str) -> None:
    """Bad input naming what ``run_dir`` is when it is no grounding run folder."""
    if not (Path(run_dir) / "config.json").is_file():
        raise ValueError(f"{run_dir}: not a run folder (no config.json)")
    identity = read_config(run_dir).get("identity") or {}
    for key, harness in _OTHER_HARNESSES:
        if key in identity:
            raise ValueError(
                f"{run_dir} is a {harness} run folder, not a grounding one; "
                f"`regionfocus {harness} compare` sets two of those side by side"
                if harness == "webvoyager"
                else f"{run_dir} is an {harness} run folder, not a grounding one"
            )


def cmd_merge(argv: list[str]) -> int:
    """one run folder from the --shard I/N runs"""
    p = command.merge_parser(
        f"{PROG} merge",
        "One run folder from the folders of a --shard I/N run (all N of them): the same records, "
        "results, summary.md and report.html as one unsharded run, and the shards' data pins "
        "(data.json), so a resume over changed data is refused there too. Refuses shards run with "
        "other settings (naming the key), overlapping or missing ones, and shards that pinned one "
        "sample with other data.",
    )
    args = p.parse_args(argv)
    merged = merge_shards(args.out, args.shards)
    n_selected = sum(c.get("invocation", {}).get("n_selected") or 0 for c in merged.configs)
    write_reports(args.out, n_selected=n_selected or None)
    print(table_for_run(args.out))
    print(f"\n{len(merged.records)} records from {len(args.shards)} shards -> {args.out}")
    return 0


def cmd_build_sample(argv: list[str]) -> int:
    """render a small ScreenSpot-Pro-format set"""
    p = command.Parser(
        prog=f"{PROG} build-sample",
        description="Render a ScreenSpot-Pro-format set (annotations/, images/) with Chromium.",
    )
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument(
        "--screens", type=whole(1), default=None, metavar="N", help="number of screenshots to render"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true", help="rebuild even if OUT_DIR already holds a set")
    p.add_argument(
        "--browser", metavar="PATH", help="Chromium executable (default Debian's /usr/lib/chromium/chromium)"
    )
    args = p.parse_args(argv)
    builder = _builder()
    kwargs: dict[str, Any] = {
        "seed": args.seed,
        "force": args.force,
        "browser_path": args.browser,
        "browser_flag": "--browser",
    }
    if args.screens is not None:
        kwargs["n_screens"] = args.screens
    out = builder.build_sample(Path(args.out_dir), **kwargs)
    print(out)
    return 0


SUBCOMMANDS = {
    "report": command.Subcommand(cmd_report, "RUN_DIR"),
    "compare": command.Subcommand(cmd_compare, "RUN_A RUN_B"),
    "merge": command.Subcommand(cmd_merge, "OUT SHARD_DIR..."),
    "build-sample": command.Subcommand(cmd_build_sample, "OUT_DIR"),
}


def main(argv: list[str] | None = None, *, model: GroundingModel | None = None) -> int:
    """ground instructions on ScreenSpot-Pro screenshots (baseline and RegionFocus in one pass)

    ``model``: use this GroundingModel instead of the one the flags describe (for Python
    callers wrapping their own agent)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return command.dispatch(PROG, argv, SUBCOMMANDS, lambda rest: cmd_run(rest, model), "samples")


if __name__ == "__main__":
    sys.exit(main())
