"""The flags of ``regionfocus webvoyager``: tasks, run, browser, observation, agent and
RegionFocus, each group checked where it is parsed."""

from __future__ import annotations

import argparse

from regionfocus.a11y import PHASES
from regionfocus.adapters.cli_args import add_agent_arguments, add_reasoning_arguments
from regionfocus.adapters.registry import facts
from regionfocus.kit.flags import (
    add_out_argument,
    add_regionfocus_arguments,
    add_strategy_argument,
    positive,
    whole,
)
from regionfocus.kit.shards import add_shard_argument

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


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """Every flag of a run, in the order ``--help`` lists them."""
    g = p.add_argument_group("tasks and run")
    _task_arguments(g)
    _run_arguments(g)
    _browser_arguments(g)
    _observation_arguments(g)
    add_shard_argument(g)
    add_agent_arguments(p)
    add_reasoning_arguments(p)
    add_regionfocus_arguments(p)


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
    g.add_argument(
        "--concurrency", type=whole(1), default=1, metavar="N", help="tasks in parallel (default 1)"
    )
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


def a11y_phases(spec: str | None) -> tuple[str, ...] | None:
    if spec is None:
        return None
    phases = tuple(p.strip() for p in spec.split(",") if p.strip())
    bad = [p for p in phases if p not in PHASES]
    if bad:
        raise ValueError(f"--a11y-phases: unknown {', '.join(bad)}; choose from {', '.join(PHASES)}")
    return phases
