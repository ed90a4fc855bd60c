"""Element recall of the screen-to-text description on MiniWoB++ pages, against the DOM.

For the first screen of each (task, seed) episode: the page's visible interactive elements
(button, input, select, textarea, a, MiniWoB++'s .alink, ARIA button/tab/menuitem/option/
treeitem/link roles, onclick handlers; the instruction header left out) and the screen-to-text
description of the screenshot (regionfocus.adapters.perception.screen_text.describe_screen: rapidocr + the OpenCV
detector), taken as the suite shows the page (the header hidden). An element counts as named when
some description entry's box centre lies inside it ("as control": the entry is a detected control,
not a plain OCR line). Pooled per task family (variant suffixes removed) and overall. Real
Chromium, offline, no model.

    .venv/bin/python -m benchmarks.screen_text_recall [--tasks screen-to-text] [--seeds 0-1]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from regionfocus.adapters.perception.screen_text import ScreenText, describe_screen
from regionfocus.geometry import Box
from regionfocus.webvoyager.browser import Browser, EnvConfig
from regionfocus.webvoyager.miniwob import file_root, miniwob_tasks, start_episode
from regionfocus.webvoyager.screen_text_suite import TASK_ZOOM, VIEWPORT, suite_tasks

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
    tasks: Sequence[str], seeds: Sequence[int], zoom: float = TASK_ZOOM, browser: Browser | None = None
) -> list[RecallRow]:
    """Element recall of the screen-to-text description on the first screen of each episode."""
    own = browser is None
    browser = browser or await Browser().start()
    rows = []
    try:
        for name in tasks:
            for seed in seeds:
                (task,) = miniwob_tasks([name], seed=seed)
                env = await browser.new_env(EnvConfig(viewport=VIEWPORT, file_root=file_root()))
                try:
                    await start_episode(env, task, zoom, hide_instruction=True)
                    shot = await env.observe()
                    dom = await env.evaluate(DOM_SCRIPT)
                    screen = await asyncio.to_thread(describe_screen, shot)
                    rows.append(RecallRow(name, seed, *element_recall(screen, dom)))
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default="screen-to-text", help="screen-to-text[:1-step|:n-step] or a task list")
    p.add_argument("--seeds", default="0", help="seed range or list (default 0)")
    p.add_argument(
        "--zoom", type=float, default=TASK_ZOOM, help=f"CSS zoom of the task (default {TASK_ZOOM})"
    )
    args = p.parse_args(argv)
    try:
        tasks = suite_tasks(args.tasks)
        a, _, b = args.seeds.partition("-")
        seeds = list(range(int(a), int(b) + 1)) if b else [int(s) for s in args.seeds.split(",")]
    except ValueError as e:
        p.error(str(e))
    t0 = time.perf_counter()
    rows = asyncio.run(measure_recall(tasks, seeds, args.zoom))
    print(recall_table(rows))
    print(
        f"\n{len(rows)} pages, {len(tasks)} tasks, seeds {args.seeds}, zoom {args.zoom}, "
        f"{time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
