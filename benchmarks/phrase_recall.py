"""Phrase recall of the screen description on dense 4K documentation screens (issue 22).

Each screen is 3840x2160 with three panes side by side, each an installed Debian doc page
(python3-doc, sqlite3-doc, git-doc) scrolled to a seeded offset, rendered by Chromium. Targets
are links inside running text (an ``<a>`` in a ``<p>``/``<li>``/``<dd>`` longer than the link,
one line, wholly in its pane), with their DOM boxes (getClientRects). A target is recalled
when the description resolves its text to a box whose centre lies inside the link's box:

- ``line``: the description's entries as listed (what HEAD's describe-screen gave and a
  text-only LLM can click): the smallest entry whose text contains the phrase;
- ``phrase``: :meth:`ScreenText.locate` (the phrase's own box inside its line), the box a
  ReAct click("phrase") goes to.

Pages and targets come from a fixed seed. Python pages are the development set; SQLite and Git
are held out (never looked at while building the splitter).

    .venv/bin/python -m benchmarks.phrase_recall [--screens 2] [--per-screen 12] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import random
import time
from pathlib import Path

from PIL import Image

from regionfocus.adapters.perception.ocr_text import fold
from regionfocus.adapters.perception.screen_text import ScreenText, describe_screen
from regionfocus.geometry import Box
from regionfocus.kit.chromium import launch_options, resolve_browser

SIZE = (3840, 2160)
PANES = 3
SETS = {
    "python": "/usr/share/doc/python3.11/html/library/*.html",
    "sqlite": "/usr/share/doc/sqlite3/*.html",
    "git": "/usr/share/doc/git-doc/git-*.html",
}
HELD_OUT = ("sqlite", "git")

TARGETS_JS = """() => {
  const out = [];
  for (const a of document.querySelectorAll('p a, li a, dd a')) {
    const text = a.textContent.replace(/\\s+/g, ' ').trim();
    const host = a.closest('p, li, dd');
    const rects = a.getClientRects();
    if (rects.length !== 1 || text.length < 2 || text.length > 40) continue;
    if (host.textContent.trim().length < text.length + 20) continue;
    const r = rects[0];
    if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth || r.width < 4) continue;
    out.push({text, box: [r.left, r.top, r.right, r.bottom]});
  }
  const seen = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    range.selectNodeContents(n);
    const r = range.getBoundingClientRect();
    if (r.width > 0 && r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth)
      seen.push(n.textContent);
  }
  return {targets: out, visible: seen.join(' ')};
}"""


async def render(out_dir: Path, screens: int, per_screen: int, seed: int) -> list[dict]:
    """Screenshots and targets, cached in ``out_dir`` (a rerun only describes)."""
    from playwright.async_api import async_playwright

    index = out_dir / "targets.json"
    if index.is_file():
        return json.loads(index.read_text())
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    records = []
    pane_w = SIZE[0] // PANES
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(**launch_options(resolve_browser(None)))
        try:
            for name, pattern in SETS.items():
                pages = sorted(p for p in glob.glob(pattern) if Path(p).stat().st_size > 20_000)
                for k in range(screens):
                    targets: list[dict] = []
                    panes, visible = [], []
                    for pane in range(PANES):
                        url = "file://" + rng.choice(pages)
                        ctx = await browser.new_context(viewport={"width": pane_w, "height": SIZE[1]})
                        page = await ctx.new_page()
                        await page.goto(url)
                        height = await page.evaluate("document.documentElement.scrollHeight")
                        y = rng.randrange(0, max(1, height - SIZE[1] // 2))
                        await page.evaluate(f"window.scrollTo(0, {y})")
                        await page.wait_for_timeout(100)
                        png = out_dir / f"{name}{k}_{pane}.png"
                        await page.screenshot(path=str(png))
                        found = await page.evaluate(TARGETS_JS)
                        visible.append(fold(found["visible"]))
                        for t in found["targets"]:
                            b = t["box"]
                            targets.append(
                                {
                                    "text": t["text"],
                                    "box": [b[0] + pane * pane_w, b[1], b[2] + pane * pane_w, b[3]],
                                }
                            )
                        panes.append(png)
                        await ctx.close()
                    screen = Image.new("RGB", SIZE, "white")
                    for pane, png in enumerate(panes):
                        with Image.open(png) as im:
                            screen.paste(im.convert("RGB"), (pane * pane_w, 0))
                        png.unlink()
                    path = out_dir / f"{name}{k}.png"
                    screen.save(path)
                    # Only phrases shown once on the whole screen: a click on an ambiguous phrase
                    # says nothing about boxes.
                    shown = " " + " ".join(visible) + " "
                    unique = [t for t in targets if shown.count(f" {fold(t['text'])} ") == 1]
                    picked = rng.sample(unique, min(per_screen, len(unique)))
                    records.append({"set": name, "image": str(path), "targets": picked})
        finally:
            await browser.close()
    index.write_text(json.dumps(records, indent=1))
    return records


def line_box(screen: ScreenText, phrase: str) -> Box | None:
    want = fold(phrase)
    hits = [e for e in screen.elements if want and want in fold(e.text)]
    return min(hits, key=lambda e: e.box.area).box if hits else None


def phrase_box(screen: ScreenText, phrase: str) -> Box | None:
    el = screen.locate(phrase) if hasattr(screen, "locate") else None
    return el.box if el is not None else line_box(screen, phrase)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--screens", type=int, default=2, help="screens per doc set")
    p.add_argument("--per-screen", type=int, default=12, help="targets per screen")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", default="/tmp/rf-phrase-recall", help="screenshots and targets")
    args = p.parse_args(argv)
    records = asyncio.run(
        render(Path(args.cache) / f"s{args.seed}", args.screens, args.per_screen, args.seed)
    )
    tally: dict[str, list[int]] = {}
    for rec in records:
        with Image.open(rec["image"]) as im:
            t0 = time.perf_counter()
            screen = describe_screen(im.convert("RGB"))
            secs = time.perf_counter() - t0
        row = tally.setdefault(rec["set"], [0, 0, 0])
        for t in rec["targets"]:
            dom = Box(*t["box"])
            row[0] += 1
            for col, finder in ((1, line_box), (2, phrase_box)):
                b = finder(screen, t["text"])
                row[col] += bool(b is not None and dom.contains(b.center))
        print(f"# {rec['image']}: {len(rec['targets'])} targets, described in {secs:.1f} s", flush=True)
    groups = {**{k: [k] for k in tally}, "held out": list(HELD_OUT), "all": list(tally)}
    print("| set | targets | line centre inside | phrase centre inside |\n|---|---:|---:|---:|")
    for label, members in groups.items():
        n, a, b = (sum(tally[m][i] for m in members if m in tally) for i in range(3))
        print(f"| {label} | {n} | {a}/{n} ({a / max(n, 1):.2f}) | {b}/{n} ({b / max(n, 1):.2f}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
