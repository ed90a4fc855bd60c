"""Can a model read the choice map when candidates crowd (issue 25)? Before -> after.

Every crowd of tests/map_reader.py (2-6 candidates 10-60 px apart: adjacent lines of small
text, a row, a grid, a ring) at every place (light text, corners and edges, dark UI, the star's
own pink and a softer pink) of a 4K screenshot, drawn as each family's model sees it: through
the harness's drawing path (``mark_for_model`` -> the adapter's ``annotate``, at the family's
input size). A reader finds the tags on the image, reads them with the project's OCR (rapidocr's
recogniser) and pairs each with the nearest star; a label counts when it is read exactly once
and paired with its own star. A map is decidable when every label counts: otherwise a model
choosing by number may pick a candidate it did not mean.

Before: ``regionfocus/stars.py`` at ``--before-rev`` (the drawing code when the issue was
taken), drawn as the adapter drew it then (on the model-size copy, or at full resolution and
resized for a model that sees the screenshot shrunk).

    .venv/bin/python -m benchmarks.map_legibility [--before-rev ab28b61] [--family uitars-1.0 ...] [--place ...]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from regionfocus.adapters.registry import get_adapter
from regionfocus.geometry import Point
from regionfocus.stars import mark_for_model, star_extent, star_map
from tests.map_reader import FAMILIES, PLACES, SHAPES, UHD, crowd, crowded_screen, read_map, window_around

from ._common import print_machine, print_table

ROOT = Path(__file__).resolve().parents[1]


def load_before(rev: str) -> ModuleType:
    """``regionfocus/stars.py`` as it was at ``rev``, imported beside today's package."""
    text = subprocess.run(
        ["git", "show", f"{rev}:regionfocus/stars.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "stars_before.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("regionfocus._stars_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def _before(old: ModuleType, adapter, shot, pts, labels):
    """The map as the adapter drew it with the old code, the stars the reader pairs with, and
    the window to read (all in model pixels)."""
    base = await adapter.model_image(shot)
    sx, sy = base.width / shot.width, base.height / shot.height
    if min(sx, sy) >= 0.95:  # drawn on the model-size copy
        img = old.draw_stars(base, [Point(p.x * sx, p.y * sy) for p in pts], labels, reference=shot.size)
    else:  # its starred patch equals this within 2 levels (tests/test_client_images.py)
        img = await adapter.model_image(old.draw_stars(shot, pts, labels))
    marks = [(i, Point(p.x * sx, p.y * sy)) for i, p in enumerate(pts)]
    return img, marks, window_around(old.star_extent(shot.size, pts, labels), sx, sy)


async def _after(adapter, shot, pts, labels):
    img = await mark_for_model(adapter, shot, pts, labels)
    sx, sy = img.width / shot.width, img.height / shot.height
    m = star_map(shot.size, pts, labels)
    marks = [(i, k.point) for i, k in enumerate(m.marks)]
    marks += [(i, k.at) for i, k in enumerate(m.marks) if k.inset is not None]
    marks = [(i, Point(p.x * sx, p.y * sy)) for i, p in marks]
    return img, marks, window_around(star_extent(shot.size, pts, labels), sx, sy)


async def run(families: list[str], rev: str, places: list[str]) -> None:
    old = load_before(rev)
    shot = crowded_screen()
    # per (family, shape): [labels ok before, after, labels, maps decidable before, after, maps]
    tally: dict[tuple[str, str], list[int]] = {}
    for family in families:
        adapter = get_adapter(family)
        await adapter.model_image(shot)  # the resize every request about the screenshot shares
        for shape in SHAPES:
            row = tally.setdefault((family, shape), [0] * 6)
            for place in places:
                pts = crowd(shape, place)
                labels = [str(i + 1) for i in range(len(pts))]
                maps = (_before(old, adapter, shot, pts, labels), _after(adapter, shot, pts, labels))
                for k, draw in enumerate(maps):
                    img, marks, window = await draw
                    reading = read_map(img, window, marks, labels)
                    row[k] += reading.labels_ok
                    row[3 + k] += reading.legible
                row[2] += len(labels)
                row[5] += 1
    pct = lambda a, b: f"{100 * a / b:.0f} %"  # noqa: E731
    rows = []
    for shape in SHAPES:
        cells = [shape]
        for family in families:
            b, a, n, _, _, _ = tally[(family, shape)]
            cells.append(f"{pct(b, n)} -> {pct(a, n)}")
        rows.append(cells)
    totals = ["all crowds"]
    decidable = ["maps with every tag paired"]
    for family in families:
        t = [sum(tally[(family, s)][j] for s in SHAPES) for j in range(6)]
        totals.append(f"{pct(t[0], t[2])} -> {pct(t[1], t[2])}")
        decidable.append(f"{t[3]}/{t[5]} -> {t[4]}/{t[5]}")
    rows += [totals, decidable]
    sizes = ", ".join(
        f"{f} {get_adapter(f).input_size(UHD)[0]}x{get_adapter(f).input_size(UHD)[1]}" for f in families
    )
    print_table(
        f"Tags read and paired with their own star, before ({rev}) -> after, {len(places)} places per crowd "
        f"(model sizes of a 3840x2160 screenshot: {sizes})",
        ["crowd", *families],
        rows,
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before-rev", default="ab28b61", help="commit whose regionfocus/stars.py is 'before'")
    ap.add_argument("--family", action="append", choices=FAMILIES, help="repeatable; default: all four")
    ap.add_argument("--place", action="append", choices=list(PLACES), help="repeatable; default: all")
    args = ap.parse_args(argv)
    print_machine()
    asyncio.run(run(args.family or list(FAMILIES), args.before_rev, args.place or list(PLACES)))


if __name__ == "__main__":
    main()
