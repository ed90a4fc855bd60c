"""Element recall of the screen-to-text description on MiniWoB++ pages, against the DOM.

For the first screen of each (task, seed) episode: the page's visible interactive elements
(button, input, select, textarea, a, MiniWoB++'s .alink, ARIA button/tab/menuitem/option/
treeitem/link roles, onclick handlers; the instruction header left out) and the screen-to-text
description of the screenshot (regionfocus.adapters.perception.screen_text.describe_screen: rapidocr + the OpenCV
detector), taken as the suite shows the page (the header hidden). An element counts as named when
some description entry's box centre lies inside it ("as control": the entry is a detected control,
not a plain OCR line). Pooled per task family (variant suffixes removed) and overall. Real
Chromium, offline, no model.

Phrase recall (issue 22), on the same pages: each visible run of words of one DOM text node on
one line (Range client rects per word; the instruction header left out) is a phrase with its
DOM box. "point inside": some entry's point (its box centre, or a word box centre of an OCR
line) lies in the phrase's box; "phrase located": the box the description gives for the
phrase's text (:meth:`ScreenText.locate`, else the smallest entry containing the text, as
benchmarks/phrase_recall.py) has its centre in the phrase's box, counted over phrases whose text
is shown once on the page (a click on an ambiguous phrase says nothing about boxes). Pooled per
name prefix (click-*, enter-*, focus-*, choose-*, the others together) and overall.

    .venv/bin/python -m benchmarks.screen_text_recall [--tasks screen-to-text] [--seeds 0-1]
    .venv/bin/python -m benchmarks.screen_text_recall --tasks families --seeds 0-2
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from regionfocus.adapters.perception.ocr_text import fold
from regionfocus.adapters.perception.screen_text import ScreenText, describe_screen
from regionfocus.geometry import Box
from regionfocus.webvoyager.browser import Browser, EnvConfig
from regionfocus.webvoyager.miniwob import available_tasks, file_root, miniwob_tasks, start_episode
from regionfocus.webvoyager.screen_text_suite import TASK_ZOOM, VIEWPORT, suite_tasks

from ._common import print_table
from .miniwob_families import FAMILIES, family_of, family_tasks
from .phrase_recall import phrase_box

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

# Runs of words of one text node on one line, with their union box. A run counts when the
# element holding it is what the page shows at the run's centre (not clipped by a scroll box,
# not covered by a dialog).
PHRASE_SCRIPT = """() => {
  const q = document.getElementById('query');
  const area = document.getElementById('area') || document.body;
  const walk = document.createTreeWalker(area, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  const out = [];
  const flush = (run, el) => {
    if (!run) return;
    const [l, t, r, b] = run.box;
    if (r - l < 2 || b - t < 2 || r <= 0 || b <= 0 || l >= innerWidth || t >= innerHeight) return;
    const hit = document.elementFromPoint((l + r) / 2, (t + b) / 2);
    if (!hit || !(hit === el || el.contains(hit))) return;
    out.push({text: run.words.join(' '), box: run.box});
  };
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const el = n.parentElement;
    if (!el || (q && q.contains(n)) || ['SCRIPT', 'STYLE', 'OPTION'].includes(el.tagName)) continue;
    const s = getComputedStyle(el);
    if (s.visibility === 'hidden' || s.display === 'none' || s.opacity === '0') continue;
    let run = null;
    for (const m of n.textContent.matchAll(/\\S+/g)) {
      range.setStart(n, m.index);
      range.setEnd(n, m.index + m[0].length);
      const r = range.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      if (run && Math.abs(r.top - run.box[1]) < 0.5 * r.height && r.left >= run.box[2] - 1) {
        run.words.push(m[0]);
        run.box = [run.box[0], Math.min(run.box[1], r.top), r.right, Math.max(run.box[3], r.bottom)];
      } else {
        flush(run, el);
        run = {words: [m[0]], box: [r.left, r.top, r.right, r.bottom]};
      }
    }
    flush(run, el);
  }
  return out;
}"""


@dataclass
class RecallRow:
    """Element recall on one page: ``total`` interactive DOM elements, ``named`` those with a
    description entry (any kind) whose box centre lies in the element, ``as_control`` those
    named by a detected control (not plain OCR text). Phrase recall: ``phrases`` visible text
    runs, ``pointed`` those holding some entry's point, ``unique`` those whose text is shown
    once, ``located`` unique ones the description's box for their text lands in."""

    task: str
    seed: int
    total: int
    named: int
    as_control: int
    phrases: int = 0
    pointed: int = 0
    unique: int = 0
    located: int = 0


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


def phrase_recall(screen: ScreenText, phrases: Sequence[dict]) -> tuple[int, int, int, int]:
    """(phrases, pointed, unique, located) for one page: ``phrases`` carry ``text`` and ``box``
    XYXY in the screenshot's pixels (as :data:`PHRASE_SCRIPT` returns them)."""
    points = [e.box.center for e in screen.elements]
    points += [w.center for e in screen.elements for w in e.words]
    shown = " " + " ".join(fold(p["text"]) for p in phrases) + " "
    pointed = unique = located = 0
    for p in phrases:
        box = Box(*p["box"])
        pointed += any(box.contains(pt) for pt in points)
        if shown.count(f" {fold(p['text'])} ") == 1:
            unique += 1
            found = phrase_box(screen, p["text"])
            located += found is not None and box.contains(found.center)
    return len(phrases), pointed, unique, located


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
                    phrases = await env.evaluate(PHRASE_SCRIPT)
                    screen = await asyncio.to_thread(describe_screen, shot)
                    rows.append(
                        RecallRow(name, seed, *element_recall(screen, dom), *phrase_recall(screen, phrases))
                    )
                except Exception as e:  # a page that does not load or set up: named, not fatal to a sweep
                    print(f"# {name} seed {seed}: skipped: {e}", file=sys.stderr, flush=True)
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


def phrase_group(task: str) -> str:
    fam = family_of(task)
    return f"{fam}-*" if fam in FAMILIES else "other families"


def phrase_rows(rows: Sequence[RecallRow], per_task: bool = False) -> list[list[str]]:
    """Phrase recall per :func:`phrase_group` (the issue's families first), then overall;
    ``per_task``: per task instead of per group."""
    groups: dict[str, list[RecallRow]] = {} if per_task else {f"{f}-*": [] for f in FAMILIES}
    for r in rows:
        groups.setdefault(r.task if per_task else phrase_group(r.task), []).append(r)

    def line(name: str, rs: Sequence[RecallRow]) -> list[str]:
        n, pointed, unique, located = (
            sum(getattr(r, k) for r in rs) for k in ("phrases", "pointed", "unique", "located")
        )
        return [
            name,
            str(len({r.task for r in rs})),
            str(len(rs)),
            str(n),
            f"{pointed / n:.3f}" if n else "-",
            str(unique),
            f"{located / unique:.3f}" if unique else "-",
        ]

    out = [line(g, rs) for g, rs in groups.items() if rs]
    return [*out, line("all", rows)]


PHRASE_HEADERS = ["family", "tasks", "pages", "phrases", "point inside", "unique phrases", "phrase located"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--tasks",
        default="screen-to-text",
        help="screen-to-text[:1-step|:n-step], a task list, families (click-, enter-, focus-, choose-*) or all",
    )
    p.add_argument("--seeds", default="0", help="seed range or list (default 0)")
    p.add_argument(
        "--zoom", type=float, default=TASK_ZOOM, help=f"CSS zoom of the task (default {TASK_ZOOM})"
    )
    p.add_argument("--per-task", action="store_true", help="also print phrase recall per task")
    args = p.parse_args(argv)
    try:
        special = {"families": family_tasks, "all": available_tasks}
        tasks = special[args.tasks]() if args.tasks in special else suite_tasks(args.tasks)
        a, _, b = args.seeds.partition("-")
        seeds = list(range(int(a), int(b) + 1)) if b else [int(s) for s in args.seeds.split(",")]
    except ValueError as e:
        p.error(str(e))
    t0 = time.perf_counter()
    rows = asyncio.run(measure_recall(tasks, seeds, args.zoom))
    print(recall_table(rows))
    print_table("Phrase recall of the screen description", PHRASE_HEADERS, phrase_rows(rows))
    if args.per_task:
        per_task = [[r[0], *r[2:]] for r in phrase_rows(rows, per_task=True)]  # no "tasks" column: 1 each
        print_table("Phrase recall per task", ["task", *PHRASE_HEADERS[2:]], per_task)
    print(
        f"\n{len(rows)} pages, {len(tasks)} tasks, seeds {args.seeds}, zoom {args.zoom}, "
        f"{time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
