"""Issue 25's acceptance check: crowded candidates (2-6 within 10-60 px on a 4K screenshot, on
lines of small text, in corners and at edges, over dark and pink UI) drawn as each family's
model sees them -- through the adapter's own ``annotate``, at its input size -- and read back:
every tag found and read by the project's OCR and paired with the nearest star, 100 %.

The reader (tests/map_reader.py) knows nothing of the layout but where the stars are drawn;
benchmarks/map_legibility.py runs every crowd at every place, before and after.
"""

import re

import pytest

from regionfocus.adapters.registry import get_adapter
from regionfocus.geometry import Point
from regionfocus.stars import star_extent, star_map
from tests.map_reader import FAMILIES, PLACES, SHAPES, UHD, crowd, crowded_screen, read_map, window_around

# Every crowd once and every place once per family: 7 renderings each.
CASES = list(zip(SHAPES, PLACES, strict=True))


@pytest.fixture(scope="module")
def shot():
    return crowded_screen()


async def _read(adapter, shot, pts, labels, drawn=None):
    """What the reader makes of the map ``adapter`` draws for ``pts`` (``drawn``: the labels
    drawn, when they differ from those the reader is told)."""
    img = await adapter.annotate(shot, pts, drawn or labels)
    assert img.size == adapter.input_size(UHD)
    sx, sy = img.width / UHD[0], img.height / UHD[1]
    m = star_map(UHD, pts, labels)
    marks = [(i, k.point) for i, k in enumerate(m.marks)] + [
        (i, k.at) for i, k in enumerate(m.marks) if k.inset is not None
    ]
    marks = [(i, Point(p.x * sx, p.y * sy)) for i, p in marks]
    return read_map(img, window_around(star_extent(UHD, pts, labels), sx, sy), marks, labels)


# UI-TARS 1.0 sees a 4K screenshot halved (the hardest); the others see it at about its size.
@pytest.mark.parametrize(
    "family", [pytest.param(f, marks=[] if f == "uitars-1.0" else pytest.mark.slow) for f in FAMILIES]
)
async def test_every_tag_is_read_and_paired_at_the_models_size(family, shot):
    adapter = get_adapter(family)
    for shape, place in CASES:
        pts = crowd(shape, place)
        labels = [str(i + 1) for i in range(len(pts))]
        reading = await _read(adapter, shot, pts, labels)
        assert reading.legible, (family, shape, place, reading)


async def test_the_reader_tells_a_wrong_pairing(shot):
    """The check can fail: numbers drawn in the reverse order of the points are all read, and
    none is paired with the star the reader expects it on."""
    adapter = get_adapter("uitars-1.0")
    pts = crowd("3 @ 18 px, a column", "light text")
    reading = await _read(adapter, shot, pts, ["1", "2", "3"], drawn=["3", "2", "1"])
    assert reading.texts == ["1", "2", "3"] and reading.labels_ok == 1  # "2" stays in the middle


@pytest.mark.slow
def test_benchmark_runs_and_prints_before_and_after(capsys):
    from benchmarks import map_legibility

    map_legibility.main(["--family", "uitars-1.0", "--place", "light text"])
    out = capsys.readouterr().out
    assert "| 2 @ 18 px, adjacent lines " in out and "-> 100 %" in out
    assert re.search(r"\| maps with every tag paired\s*\| 0/7 -> 7/7\s*\|", out), out
