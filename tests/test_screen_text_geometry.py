"""The boxes screen-to-text builds from what OCR and the detector found: whatever the layout,
they are in order, inside what they split, and each item holds its own row (issue 30, item 7:
a dense 4K screen crashed describe-screen with "Box corners out of order")."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from regionfocus.adapters.perception.ocr_text import TextLine
from regionfocus.adapters.perception.screen_text import ScreenText, _rows, merge, with_words
from regionfocus.adapters.perception.ui_detect import KINDS, DetectedElement
from regionfocus.geometry import Box

W, H = 3840, 2160  # a 4K screen


def _line(text: str, left: float, top: float, right: float, bottom: float, conf: float = 0.95) -> TextLine:
    return TextLine(text, conf, Box(left, top, right, bottom))


def test_a_tall_line_in_a_menu_row_does_not_put_the_split_below_the_next_rows():
    # A dense screen: inside one filled outline, a tall line (a sidebar's text read as one
    # line) joins the first row; halfway between that row's bottom and the next row's top is
    # below the rows after it, which made the items' edges run backwards.
    lines = [
        _line("Tall", 10, 5, 60, 200),
        _line("File", 70, 10, 120, 25),
        _line("Edit", 10, 40, 60, 55),
        _line("View", 10, 60, 60, 75),
    ]
    outline = Box(0, 0, 200, 210)
    out = merge(lines, [DetectedElement("button", outline)])
    items = [e for e in out if e.kind == "button"]
    assert [e.text for e in items] == ["Tall File", "Edit", "View"]
    assert items[0].box.top == outline.top and items[-1].box.bottom == outline.bottom
    assert all(a.box.bottom == b.box.top for a, b in zip(items, items[1:], strict=False))
    for item, word in zip(items, ("File", "Edit", "View"), strict=True):
        (line,) = [ln for ln in lines if ln.text == word]
        assert item.box.contains(line.box.center), (item, word)


# --------------------------------------------------------------------------- properties
coord = st.floats(min_value=-50, max_value=W + 50, allow_nan=False, allow_infinity=False)
span = st.floats(min_value=0, max_value=900, allow_nan=False, allow_infinity=False)
words = st.sampled_from(["File", "Edit", "user$", "O", "口", "Submit now", "a", " ", "x > y", "1"])


@st.composite
def boxes(draw, max_h: float = 400) -> Box:
    left, top = draw(coord), draw(st.floats(min_value=-50, max_value=H + 50))
    return Box(left, top, left + draw(span), top + draw(st.floats(min_value=0, max_value=max_h)))


@st.composite
def text_lines(draw) -> TextLine:
    return TextLine(draw(words), draw(st.floats(min_value=0, max_value=1)), draw(boxes(max_h=300)))


@st.composite
def detections(draw) -> DetectedElement:
    kind = draw(st.sampled_from(KINDS))
    checked = draw(st.none() | st.booleans()) if kind in ("checkbox", "radio") else None
    return DetectedElement(kind, draw(boxes(max_h=900)), 0.8, checked, draw(st.sampled_from(["", "Go"])))


@st.composite
def menus(draw):
    """An outline and lines whose centres fall inside it: the layouts the menu split sees."""
    outline = draw(boxes(max_h=1200))
    lines = []
    for _ in range(draw(st.integers(2, 12))):
        cx = draw(st.floats(min_value=outline.left, max_value=outline.right))
        cy = draw(st.floats(min_value=outline.top, max_value=outline.bottom))
        w, h = draw(span), draw(st.floats(min_value=0, max_value=400))
        lines.append(_line(draw(words).strip() or "w", cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    return outline, lines


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(text_lines(), max_size=25), st.lists(detections(), max_size=12))
def test_any_layout_of_lines_and_controls_merges_without_error(lines, detected):
    out = merge(lines, detected)
    for e in out:
        assert e.box.left <= e.box.right and e.box.top <= e.box.bottom
    tops = [(round(e.box.top), e.box.left) for e in out]
    assert tops == sorted(tops)
    # What the screen-text agent does with a description: name, locate, look up.
    screen = ScreenText((W, H), out)
    screen.to_text(lambda b: Box(b.left * 0.5, b.top * 0.5, b.right * 0.5, b.bottom * 0.5))
    for e in out[:5]:
        screen.find(e.label)
        screen.at(e.center)


@settings(max_examples=300, deadline=None)
@given(menus())
def test_menu_items_tile_their_outline_in_order(menu):
    outline, lines = menu
    inside = sorted(
        (ln for ln in lines if outline.contains(ln.box.center)), key=lambda ln: (ln.box.top, ln.box.left)
    )
    rows = _rows(inside)
    items = [e for e in merge(lines, [DetectedElement("button", outline)]) if e.kind == "button"]
    if len(rows) < 2:
        return  # one button (or a terminal's field): what the general property checks
    assert len(items) == len(rows)
    ordered = sorted(items, key=lambda e: (e.box.top, e.box.bottom))
    assert ordered[0].box.top == outline.top and ordered[-1].box.bottom == outline.bottom
    assert all(a.box.bottom == b.box.top for a, b in zip(ordered, ordered[1:], strict=False))
    assert all(e.box.left == outline.left and e.box.right == outline.right for e in items)
    # Every row is clicked inside its own item: some line of the row has its centre there.
    texts = [" ".join(ln.text for ln in sorted(r, key=lambda ln: ln.box.left)) for r in rows]
    for e in items:
        if texts.count(e.text) == 1:  # rows reading alike cannot be told apart by their item
            row = rows[texts.index(e.text)]
            assert any(e.box.contains(ln.box.center) for ln in row), (e, row)


@settings(max_examples=100, deadline=None)
@given(st.lists(text_lines(), min_size=1, max_size=8), st.integers(0, 2**32 - 1))
def test_word_boxes_of_lines_anywhere_on_a_small_screen(lines, seed):
    # Lines reaching past the image, or wholly outside it, on a noisy little screen: each
    # line gets word boxes in order along it, or none.
    rng = np.random.default_rng(seed)
    image = Image.fromarray(rng.integers(0, 256, (90, 160, 3), dtype=np.uint8))
    small = [
        TextLine(
            ln.text, ln.conf, Box(ln.box.left / 24, ln.box.top / 24, ln.box.right / 24, ln.box.bottom / 24)
        )
        for ln in lines
    ]
    for ln in with_words(image, small):
        assert all(w.left <= w.right and w.top <= w.bottom for w in ln.words)
        assert all(a.left <= b.left for a, b in zip(ln.words, ln.words[1:], strict=False))
    merge(with_words(image, small), [])
