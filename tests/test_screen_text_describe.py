"""Screen-to-text on a form drawn with PIL: the real rapidocr engine, the OpenCV detector, the
paper's merge rules and observation layout, and the describe-screen command."""

from __future__ import annotations

import json

import pytest
from PIL import Image, ImageDraw, ImageFont

from regionfocus.adapters.describe_cli import describe_screen_command
from regionfocus.adapters.perception.ocr_text import TextLine, split_words
from regionfocus.adapters.perception.screen_text import (
    ScreenElement,
    ScreenText,
    describe_screen,
    merge,
    with_words,
)
from regionfocus.adapters.perception.ui_detect import DetectedElement, ElementDetector, OpenCvDetector
from regionfocus.geometry import Box

BORDER = (118, 118, 118)


def _font(size=22):
    return ImageFont.truetype("DejaVuSans.ttf", size)


def form() -> Image.Image:
    """Controls drawn the way Chromium draws them, in a known layout (top to bottom)."""
    im = Image.new("RGB", (520, 620), "white")
    d = ImageDraw.Draw(im)
    f = _font()
    d.text((10, 10), "Please sign in", fill="black", font=f)  # plain text, top
    # button with a label
    d.rounded_rectangle((10, 60, 150, 110), radius=6, fill=(239, 239, 239), outline=BORDER, width=2)
    d.text((40, 72), "Submit", fill="black", font=f)
    # text field holding a value
    d.rectangle((10, 130, 300, 175), fill="white", outline=BORDER, width=2)
    d.text((20, 140), "alice", fill="black", font=f)
    # text area (tall) holding a sentence
    d.rectangle((10, 195, 400, 300), fill="white", outline=BORDER, width=2)
    d.text((20, 205), "hello world", fill="black", font=f)
    # checkbox (ticked) + label, radio (empty) + label
    d.rounded_rectangle((12, 322, 38, 348), radius=3, fill="white", outline=BORDER, width=2)
    d.line((17, 335, 24, 343, 34, 326), fill="black", width=4)
    d.text((50, 322), "Remember", fill="black", font=f)
    d.ellipse((12, 372, 38, 398), fill="white", outline=BORDER, width=2)
    d.text((50, 372), "Guest", fill="black", font=f)
    # dropdown: a field with a chevron at its right end
    d.rounded_rectangle((10, 420, 300, 462), radius=4, fill="white", outline=BORDER, width=2)
    d.text((20, 430), "Norway", fill="black", font=f)
    d.line((270, 436, 278, 446, 286, 436), fill="black", width=3)
    # a sentence with one blue, underlined link word
    d.text((10, 500), "Read the", fill="black", font=f)
    x = 10 + d.textlength("Read the ", font=f)
    d.text((x, 500), "terms", fill=(0, 0, 238), font=f)
    w = d.textlength("terms", font=f)
    d.line((x, 526, x + w, 526), fill=(0, 0, 238), width=2)
    return im


@pytest.fixture(scope="module")
def screen() -> ScreenText:
    return describe_screen(form())


def _by_kind(screen: ScreenText, kind: str) -> list[ScreenElement]:
    return [e for e in screen.elements if e.kind == kind]


def test_kinds_and_merge_rules(screen):
    labels = [e.label for e in screen.elements]
    assert "'Submit' button" in labels
    assert "text field containing 'alice'" in labels
    assert "text area containing the text 'hello world'" in labels
    assert "checkbox 'Remember' (checked)" in labels
    assert "radio button 'Guest'" in labels
    assert "dropdown showing 'Norway'" in labels
    assert "'terms' link" in labels
    # Text merged into a control leaves the OCR list; labels of boxes stay (clickable too).
    texts = [e.text for e in screen.texts]
    assert "Submit" not in texts and "alice" not in texts and "Norway" not in texts
    assert "Remember" in texts and "Please sign in" in texts


def test_boxes_are_in_image_pixels_and_sorted_by_y(screen):
    button = _by_kind(screen, "button")[0]
    assert button.box.contains(Box(10, 60, 150, 110).center)
    assert abs(button.box.left - 10) <= 3 and abs(button.box.bottom - 110) <= 3
    link = _by_kind(screen, "link")[0]
    assert 500 <= link.box.center.y <= 530 and link.box.left > 80  # only the blue word
    tops = [round(e.box.top) for e in screen.elements]
    assert tops == sorted(tops)


def test_observation_layout_follows_the_paper(screen):
    text = screen.to_text()
    ocr, det = text.split("\n\nObject Detector:\n")
    assert ocr.startswith("OCR:\n'Please sign in': [")
    assert "'Submit' button: [" in det
    merged = screen.to_text(layout="merged").splitlines()
    assert len(merged) == len(screen.elements)
    doubled = screen.to_text(to_model=lambda b: Box(b.left * 2, b.top * 2, b.right * 2, b.bottom * 2))
    b = _by_kind(screen, "button")[0].box
    assert f"'Submit' button: [{round(2 * b.left)}, {round(2 * b.top)}," in doubled
    with pytest.raises(ValueError, match="layout"):
        screen.to_text(layout="html")


def test_find_and_at(screen):
    assert screen.find("'Submit' button").kind == "button"
    assert screen.find("text field containing 'alice': [1, 2, 3, 4]").text == "alice"
    assert screen.find("Remember").kind == "text"
    assert screen.find("nothing like this") is None
    hit = screen.at(_by_kind(screen, "checkbox")[0].box.center)
    assert hit[0].kind == "checkbox"


def test_ignore_regions_and_a_custom_detector():
    image = form()
    st = describe_screen(image, ignore=[Box(0, 0, 520, 50)])
    assert all(e.text != "Please sign in" for e in st.elements)

    class NoControls:
        def detect(self, image, lines):
            return []

    assert isinstance(NoControls(), ElementDetector) and isinstance(OpenCvDetector(), ElementDetector)
    plain = describe_screen(image, detector=NoControls())
    assert plain.controls == [] and any(e.text == "Submit" for e in plain.texts)


def test_quotes_and_bad_input():
    e = ScreenElement("button", "Don't", Box(0, 0, 10, 10))
    assert e.label == '"Don\'t" button'
    with pytest.raises(TypeError, match="PIL image"):
        describe_screen("shot.png")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="too small"):
        describe_screen(Image.new("RGB", (1, 1)))


def test_describe_screen_command(tmp_path, capsys):
    path = tmp_path / "form.png"
    form().save(path)
    assert describe_screen_command([str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OCR:\n") and "'Submit' button: [" in out
    assert describe_screen_command([str(path), "--json", "--ignore", "0,0,520,50"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["size"] == [520, 620]
    assert any(e["label"] == "'Submit' button" for e in data["elements"])
    assert describe_screen_command([str(tmp_path / "missing.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("regionfocus describe-screen: error: no such image") and len(err.splitlines()) == 1
    assert describe_screen_command([str(path), "--ignore", "1,2,3"]) == 2
    assert "--ignore wants x1,y1,x2,y2" in capsys.readouterr().err


def _sentence(words: list[str], size: int = 18) -> tuple[Image.Image, TextLine, list[Box]]:
    """A line of running text drawn with a proportional font, its line box (as OCR gives it,
    with a margin) and each word's true box."""
    f = _font(size)
    im = Image.new("RGB", (900, 60), "white")
    d = ImageDraw.Draw(im)
    # A code span's tinted background, under the third word: not ink.
    text = " ".join(words)
    truth = []
    for i, w in enumerate(words):
        x0 = 20 + d.textlength(" ".join(words[:i]) + (" " if i else ""), font=f)
        truth.append(Box(x0, 15, x0 + d.textlength(w, font=f), 15 + size))
    d.rectangle((truth[2].left - 3, 12, truth[2].right + 3, 18 + size), fill=(236, 240, 243))
    d.text((20, 15), text, fill="black", font=f)
    return im, TextLine(text, 0.95, Box(12, 10, 30 + d.textlength(text, font=f), 20 + size)), truth


def test_words_of_a_line_get_their_own_boxes():
    words = "Use the urldefrag() function, or WWWWW iiiii when a link sits mid-sentence".split()
    im, line, truth = _sentence(words)
    [placed] = with_words(im, [line])
    assert len(placed.words) == len(words)
    for w, t in zip(placed.words, truth, strict=True):
        assert t.contains(w.center), (w, t)
        assert abs(w.left - t.left) <= 3 and abs(w.right - t.right) <= 3


def test_split_words_without_ink_gaps_keeps_the_advance_estimate():
    line = TextLine("ab cd", 0.9, Box(0, 0, 100, 10))
    words = split_words(line, [True] * 100)  # no gap anywhere: nothing to snap to
    assert len(words) == 2 and words[0].left == 0 and words[1].right == 100
    assert 40 < words[0].right < 60


def test_a_phrase_inside_a_longer_line_is_located_in_its_own_box():
    words = "Use the urldefrag() function, or WWWWW iiiii when a link sits mid-sentence".split()
    im, line, truth = _sentence(words)
    screen = describe_screen(im, lines=[line], detector=OpenCvDetector())
    [entry] = screen.texts
    assert entry.box == line.box and entry.text == line.text  # the description keeps the line
    assert "words" in entry.to_dict()
    hit = screen.locate("urldefrag()")
    assert hit is not None and truth[2].contains(hit.center)
    assert not truth[2].contains(entry.center)  # the line's centre is elsewhere
    two = screen.locate("WWWWW iiiii")
    assert two is not None and truth[5].left - 3 <= two.box.left and two.box.right <= truth[6].right + 3
    assert screen.find("'urldefrag'").box == screen.locate("urldefrag").box
    assert screen.locate("nowhere to be seen") is None


def _line(text, left, top, right, bottom):
    return TextLine(text, 0.99, Box(left, top, right, bottom))


def test_a_filled_outline_holding_rows_of_text_is_a_menu_of_items():
    # MiniWoB++ click-menu as described at zoom 2: one grey outline, four item rows.
    rows = [("Jocelyne", 108), ("Olwen", 155), ("Jayne", 190), ("Jinny", 225)]
    lines = [_line(t, 20, y + 12, 90, y + 30) for t, y in rows]
    out = merge(lines, [DetectedElement("button", Box(8, 108, 115, 255))])
    assert [(e.kind, e.text) for e in out] == [("button", t) for t, _ in rows]
    # Each item is clicked on its own row: the boxes tile the outline from top to bottom.
    assert [e.box.top for e in out][0] == 108 and out[-1].box.bottom == 255
    assert all(a.box.bottom == b.box.top for a, b in zip(out, out[1:], strict=False))
    assert all(e.box.contains(ln.box.center) for e, ln in zip(out, lines, strict=True))
    # One row of text in an outline stays one button.
    one = merge([_line("Submit", 30, 115, 90, 135)], [DetectedElement("button", Box(8, 108, 115, 140))])
    assert [(e.kind, e.text) for e in one] == [("button", "Submit")]


def test_a_cursor_after_a_shell_prompt_is_the_terminals_text_field():
    lines = [_line("Last login: Wed Nov 25 2026", 18, 169, 229, 187), _line("user$", 10, 186, 59, 207)]
    cursor = DetectedElement("button", Box(57, 188, 68, 206))
    out = merge(lines, [cursor])
    field = [e for e in out if e.kind == "text_field"]
    assert len(field) == 1 and field[0].box.left == 57 and field[0].box.right >= 229
    assert [e.text for e in out if e.kind == "text"] == ["Last login: Wed Nov 25 2026", "user$"]
    # The same block with no prompt before it stays what the detector said.
    plain = merge([_line("Name", 10, 186, 59, 207)], [cursor])
    assert [e.kind for e in plain] == ["text", "button"]


def test_a_huge_unreadable_glyph_does_not_wipe_out_the_fields_under_it():
    # MiniWoB++ focus-text-2: three empty fields, read by the recogniser as one "1" covering
    # the whole screen at confidence 0.25.
    image = Image.new("RGB", (500, 560), "white")
    draw = ImageDraw.Draw(image)
    boxes = [(36, 116, 292, 159), (28, 193, 284, 236), (40, 282, 296, 325)]
    for b in boxes:
        draw.rounded_rectangle(b, radius=3, outline=(118, 118, 118), width=1)
    glyph = [TextLine("1", 0.247, Box(0, 0, 499, 559))]
    described = describe_screen(image, lines=glyph)
    fields = [e for e in described.elements if e.kind in ("text_field", "text_area")]
    assert len(fields) == 3
    assert all(f.box.contains(Box(*b).center) for f, b in zip(fields, boxes, strict=True))
    assert not [e for e in described.elements if e.kind == "text"]
