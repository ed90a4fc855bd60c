"""Element recall of the screen-to-text description on MiniWoB++ pages, against the DOM.

For the first screen of each (task, seed) episode: the page's visible interactive elements
(button, input, select, textarea, a, MiniWoB++'s .alink, ARIA button/tab/menuitem/option/
treeitem/link roles, onclick handlers; the instruction header left out) and the screen-to-text
description of the screenshot (regionfocus.adapters.perception.screen_text.describe_screen: rapidocr + the OpenCV
detector). An element counts as named when some description entry's box centre lies inside it
("as control": the entry is a detected control, not a plain OCR line). Pooled per task family
(variant suffixes removed) and overall. Real Chromium, offline, no model.

    .venv/bin/python -m benchmarks.screen_text_recall [--tasks screen-to-text] [--seeds 0-1]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from regionfocus.webvoyager.screen_text_eval import (
    EvalConfig,
    _seeds,
    measure_recall,
    recall_table,
    suite_tasks,
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default="screen-to-text", help="screen-to-text[:1-step|:n-step] or a task list")
    p.add_argument("--seeds", default="0", help="seed range or list (default 0)")
    p.add_argument("--zoom", type=float, default=2.0, help="CSS zoom of the task (default 2.0)")
    args = p.parse_args(argv)
    try:
        tasks, seeds = suite_tasks(args.tasks), _seeds(args.seeds)
    except ValueError as e:
        p.error(str(e))
    t0 = time.perf_counter()
    rows = asyncio.run(measure_recall(tasks, seeds, EvalConfig(zoom=args.zoom)))
    print(recall_table(rows))
    print(
        f"\n{len(rows)} pages, {len(tasks)} tasks, seeds {args.seeds}, zoom {args.zoom}, "
        f"{time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
