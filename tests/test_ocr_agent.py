"""The OCR agent on rendered screens, with the real rapidocr engine (models from its wheel).

Screens are drawn with PIL and DejaVu fonts: a 3840x2160 "application" whose menus and sidebar
are large enough to read at the one-megapixel budget, plus a panel of tiny labels that are not.
One agent (and so one OCR cache) is shared by the module's tests; the engine is process-wide.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from regionfocus.actions import ActionType, click
from regionfocus.adapters.agents.ocr import OcrAgent, budget_size
from regionfocus.adapters.perception.ocr_text import TextLine, echo_lines, match_line, parse_instruction
from regionfocus.agent import RegionFocusAgent
from regionfocus.geometry import Box, Point, box_around
from regionfocus.model import Avoid, GroundingModel, Option, Query, Verdict
from regionfocus.stars import draw_stars
from regionfocus.views import crop_view

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
SCREEN = (3840, 2160)

MENU = ["File", "Edit", "View", "Insert", "Format", "Tools", "Window", "Help"]
SIDEBAR = ["Dashboard", "Projects", "Calendar", "Messages", "Analytics", "Billing", "Team members"]
TINY_WORDS = [
    "Ledger", "Voucher", "Payroll", "Tariff", "Rebate", "Escrow", "Dividend", "Accrual", "Surplus",
    "Quota", "Margin", "Refund", "Audit", "Budget", "Invoice", "Receipt", "Deposit", "Pension",
    "Bond", "Equity", "Yield", "Coupon", "Levy", "Annuity",
]  # fmt: skip


def font(px: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(FONT_DIR / "DejaVuSans.ttf"), px)


@dataclass
class Screen:
    image: Image.Image
    labels: dict[str, Box]  # text -> XYXY box in screenshot pixels
    tiny: list[str]


def draw_label(d: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, px: int) -> Box:
    f = font(px)
    d.text(xy, text, fill=(25, 25, 25), font=f)
    return Box(*d.textbbox(xy, text, font=f))


def render_app(seed: int = 0, tiny_px: int = 8, panel_at: tuple[int, int] | None = None) -> Screen:
    """A 4K application screen. Menu (30 px), sidebar (26 px) and heading (56 px) are readable
    at a 1 MP budget; a panel of 24 ``tiny_px`` labels ("Word Word", first words all distinct)
    at ``panel_at`` is not."""
    rng = random.Random(seed)
    img = Image.new("RGB", SCREEN, (242, 243, 245))
    d = ImageDraw.Draw(img)
    labels: dict[str, Box] = {}
    d.rectangle((0, 0, SCREEN[0], 70), fill=(225, 228, 232))
    x = 30
    for m in MENU:
        labels[m] = draw_label(d, (x, 18), m, 30)
        x = labels[m].right + 70
    d.rectangle((0, 70, 560, SCREEN[1]), fill=(232, 235, 238))
    for i, s in enumerate(SIDEBAR):
        labels[s] = draw_label(d, (40, 140 + i * 90), s, 26)
    labels["Workspace Overview"] = draw_label(d, (700, 140), "Workspace Overview", 56)
    labels["Sync status: all changes saved"] = draw_label(d, (700, 260), "Sync status: all changes saved", 30)
    # The tiny panel: 3 columns x 8 rows of two-word labels.
    px, py = panel_at or (rng.randint(1400, 2900), rng.randint(700, 1600))
    d.rectangle(
        (px - 20, py - 20, px + 3 * 14 * tiny_px + 40, py + 8 * 3 * tiny_px + 20), outline=(190, 190, 195)
    )
    words = TINY_WORDS[:]
    rng.shuffle(words)
    tiny = []
    for r in range(8):
        for c in range(3):
            k = r * 3 + c  # 4k + 7 is odd, so the two words always differ
            text = f"{words[k]} {words[(5 * k + 7) % len(words)]}"
            labels[text] = draw_label(d, (px + c * 14 * tiny_px, py + r * 3 * tiny_px), text, tiny_px)
            tiny.append(text)
    return Screen(img, labels, tiny)


# ---------------------------------------------------------------- instruction parsing

PARSE_TABLE = [
    ('click "Submit"', "click", "Submit", ""),
    ("click 'OK'", "click", "OK", ""),
    ("Click on \u201cSign in\u201d", "click", "Sign in", ""),
    ("click Export", "click", "Export", ""),
    ("click on the Save button", "click", "Save", ""),
    ("open the Pricing link", "click", "Pricing", ""),
    ("select Dark mode", "click", "Dark mode", ""),
    ("press Enter", "click", "Enter", ""),
    ("choose the Export option", "click", "Export", ""),
    ("check Remember me", "click", "Remember me", ""),
    ("double-click the Report icon", "double_click", "Report", ""),
    ("right click on Desktop", "right_click", "Desktop", ""),
    ("go to Settings.", "click", "Settings", ""),
    ('enter "alice" into the Username field', "type", "Username", "alice"),
    ("type 'hello world' in Search", "type", "Search", "hello world"),
    ('fill the Email field with "a@b.c"', "type", "Email", "a@b.c"),
    ('search for "cats"', "type", "search", "cats"),
    ('type "abc"', "type", "", "abc"),
    ("enter bob into Name", "type", "Name", "bob"),
    ("Team members", "click", "Team members", ""),
    ("the user's profile", "click", "user's profile", ""),
    ("Click button ONE.", "click", "button ONE", ""),
]


@pytest.mark.parametrize("instruction,kind,target,value", PARSE_TABLE)
def test_parse_instruction(instruction, kind, target, value):
    p = parse_instruction(instruction)
    assert (p.kind, p.target, p.value) == (kind, target, value)


def test_parse_trims_where_qualifiers_as_a_weaker_variant():
    p = parse_instruction("click the Save button in the toolbar")
    assert p.variants[0][1] == 1.0 and ("Save", 0.97) in p.variants


def test_match_locates_a_label_inside_a_longer_line():
    line = TextLine("Submit Cancel", 0.99, Box(100, 10, 230, 30))
    m = match_line("Cancel", line)
    assert m is not None and m.similarity == 1.0
    assert 160 < m.box.center.x < 230 and m.box.left > 150
    # A short target inside an unrelated word is not a match.
    assert match_line("OK", TextLine("Look here", 0.99, Box(0, 0, 90, 20))).score < 0.75


def test_parse_offers_the_label_after_a_leading_role_word():
    assert ("ONE", 0.97) in parse_instruction("Click button ONE.").variants
    # A quoted label is taken as written.
    assert parse_instruction('click the "link Home" entry').variants == (("link Home", 1.0),)


def test_match_box_follows_glyph_widths_in_a_proportional_font():
    # Where "In" really is in a rendered line: narrow glyphs (i, l, t, punctuation) before it
    # put it well left of its share of the character count.
    text, f = "ultrices mi,. In cursus cursus.", font(24)
    left = 10 + f.getlength(text[: text.index("In")])
    right = left + f.getlength("In")
    line = TextLine(text, 0.95, Box(10, 100, 10 + f.getlength(text), 124))
    m = match_line("In", line)
    assert m is not None and left <= m.box.center.x <= right, (m.box, left, right)


def _line(text: str, x: float, y: float, h: float = 12.0) -> TextLine:
    return TextLine(text, 0.95, Box(x, y, x + 0.55 * h * len(text), y + h))


ECHO_TABLE = [
    # (instruction, lines, indices that echo it)
    (
        'Click on the link "In".',
        [
            _line('Click on the link "In".', 2, 2),
            _line("ultrices mi,. In cursus cursus.", 2, 90),
            _line("In", 40, 120),
        ],
        {0},
    ),
    (
        "Click button ONE.",
        [_line("Click button ONE.", 2, 2), _line("ONE", 30, 140), _line("TWO", 90, 140)],
        {0},
    ),
    ('Click on the "ok" button.', [_line('Click on the "ok" button.', 2, 2), _line("ok", 50, 120)], {0}),
    (  # the header wraps: its last row is the bare target, in quotes
        'Navigate through the file tree. Find and click on the folder or file named "Briana".',
        [
            _line("Navigate through the file tree. Find", 2, 2),
            _line("and click on the folder or file named", 2, 16),
            _line('"Briana".', 2, 30),
            _line("Briana", 30, 150),
        ],
        {0, 1, 2},
    ),
    (  # split over two rows with no row holding two instruction words alone
        'Click on the link "In".',
        [_line("Click on the", 2, 2), _line('link "In".', 2, 16), _line("In", 60, 150)],
        {0, 1},
    ),
    # Lines that only contain the target are never echoes, however many of its words they have.
    ('click "Sync status: all changes saved"', [_line("Sync status: all changes saved", 700, 260)], set()),
    ("open the File menu", [_line("File menu", 10, 10), _line("File", 10, 60)], set()),
    ("open the File menu", [_line("Open the File menu", 10, 10)], {0}),
    # One instruction word beside the target is a label, not an echo.
    ('click the "ok" button', [_line("Click OK", 10, 10)], set()),
    # Two instruction words among many others: prose, not the instruction.
    (
        'Click on the link "In".',
        [_line("Click any link In this long paragraph of unrelated prose words", 10, 10)],
        set(),
    ),
    # The target far below an echo is not part of it.
    ("Click button ONE.", [_line("Click button ONE.", 2, 2), _line("ONE", 2, 40)], {0}),
    # An instruction that is all target has nothing to echo.
    ("Team members", [_line("Team members", 10, 10)], set()),
]


@pytest.mark.parametrize("instruction,lines,expected", ECHO_TABLE)
def test_echo_rule(instruction, lines, expected):
    assert set(echo_lines(instruction, parse_instruction(instruction), lines)) == expected


# ---------------------------------------------------------------- the agent on a 4K screen


@pytest.fixture(scope="module")
def agent() -> OcrAgent:
    return OcrAgent()


@pytest.fixture(scope="module")
def screen() -> Screen:
    return render_app(seed=3, tiny_px=8, panel_at=(2600, 1400))


def run(coro):
    import asyncio

    return asyncio.run(coro)


def test_protocol_and_budget(agent):
    assert isinstance(agent, GroundingModel)
    w, h = agent.input_size(SCREEN)
    assert w * h <= 1_000_000 and abs(w / h - 16 / 9) < 0.01
    assert agent.input_size((800, 600)) == (800, 600)
    assert budget_size((4000, 100), 10_000) == (632, 15)
    with pytest.raises(ValueError, match="budget"):
        OcrAgent(budget=10)


def test_finds_large_text_at_the_budget(agent, screen):
    for label in ("Analytics", "Format", "Team members"):
        reply = run(agent.act(screen.image, Query(f'click "{label}"')))
        assert reply.action is not None, reply.text
        assert reply.action.type == ActionType.CLICK
        assert screen.labels[label].contains(reply.action.point), (label, reply.text)
        assert reply.action.extras["score"] >= agent.act_threshold


def test_misses_tiny_text_at_the_budget(agent, screen):
    target = screen.tiny[4]
    reply = run(agent.act(screen.image, Query(f'click "{target}"')))
    assert reply.action is None or not screen.labels[target].contains(reply.action.point), reply.text


def test_finds_tiny_text_in_a_zoomed_view(agent, screen):
    target = screen.tiny[4]
    box = screen.labels[target]
    # The paper's smallest box (0.3 x 0.3), not centred on the label.
    region = box_around(
        Point(box.center.x + 150, box.center.y - 90), 0.3 * SCREEN[0], 0.3 * SCREEN[1], SCREEN
    )
    view = crop_view(screen.image, region, agent.input_size(SCREEN))
    reply = run(agent.act(view.image, Query(f'click "{target}"'), zoomed=True))
    assert reply.action is not None, reply.text
    assert box.contains(view.transform.view_to_screen(reply.action.point)), reply.text


def test_type_instruction_gives_type_at_the_field(agent, screen):
    reply = run(agent.act(screen.image, Query('enter "Q3 plan" into the Projects field')))
    assert reply.action is not None and reply.action.type == ActionType.TYPE
    assert reply.action.text == "Q3 plan"
    assert screen.labels["Projects"].contains(reply.action.point)
    # No field named: type where the focus is, without a point.
    bare = run(agent.act(screen.image, Query('type "hello"')))
    assert bare.action is not None and bare.action.type == ActionType.TYPE and bare.action.point is None
    # A named field that is not on screen: no action, so RegionFocus can look closer.
    assert run(agent.act(screen.image, Query('enter "x" into the Zebra field'))).action is None


def test_judge_yes_on_the_label_no_elsewhere(agent, screen):
    q = Query("click on the Calendar button")
    run(agent.act(screen.image, q))  # the clean screen, as the self-judge flow sees it first
    right = screen.labels["Calendar"].center
    wrong = screen.labels["Billing"].center
    yes = run(agent.judge(draw_stars(screen.image, [right], [""]), q, right))
    no = run(agent.judge(draw_stars(screen.image, [wrong], [""]), q, wrong))
    empty = Point(2000, 1000)
    nothing = run(agent.judge(draw_stars(screen.image, [empty], [""]), q, empty))
    assert yes.verdict == Verdict.YES, yes.text
    assert no.verdict == Verdict.NO and "Billing" in no.text, no.text
    assert nothing.verdict == Verdict.NO, nothing.text


def test_judge_reads_through_the_star_without_a_clean_copy(screen):
    fresh = OcrAgent()  # has never seen the clean screen
    q = Query('click "Workspace Overview"')
    p = screen.labels["Workspace Overview"].center
    reply = run(fresh.judge(draw_stars(screen.image, [p], [""]), q, p))
    assert reply.verdict == Verdict.YES, reply.text


def test_choose_picks_the_star_on_the_label(agent, screen):
    q = Query('click "Messages"')
    pts = [screen.labels["Dashboard"].center, screen.labels["Messages"].center, screen.labels["Help"].center]
    options = [Option(i + 1, click(p.x, p.y), True) for i, p in enumerate(pts)]
    image = draw_stars(screen.image, pts)
    reply = run(agent.choose(image, q, options))
    assert reply.choice == 2, reply.text
    # The same options in another order: the choice follows the label, not the number.
    options = [Option(i + 1, click(p.x, p.y), True) for i, p in enumerate(reversed(pts))]
    reply = run(agent.choose(draw_stars(screen.image, pts[::-1]), q, options))
    assert reply.choice == 2 and "2:" in reply.text


def test_propose_point_avoids_stars(agent, screen):
    q = Query('click "Analytics"')
    first = run(agent.propose_point(screen.image, q, Avoid(on_image=False))).point
    assert screen.labels["Analytics"].contains(first)
    starred = draw_stars(screen.image, [first])
    second = run(agent.propose_point(starred, q, Avoid([first]))).point
    assert second is not None and second.distance(first) > 40


def render_task_page() -> tuple[Image.Image, str, Box, Box]:
    """A MiniWoB++-like page: the instruction printed in a header, the link in the text below.
    Returns the image, the instruction, the header line's box and the link's box."""
    img = Image.new("RGB", (640, 360), "white")
    d = ImageDraw.Draw(img)
    d.rectangle((0, 0, 640, 70), fill=(255, 255, 0))
    instruction = 'Click on the link "Ultrices".'
    header = draw_label(d, (12, 20), instruction, 22)
    before = "Tortor dui sed quis egestas. Pretium mi "
    draw_label(d, (12, 160), before, 22)
    link = draw_label(d, (12 + font(22).getlength(before), 160), "Ultrices", 22)
    draw_label(d, (link.right + 6, 160), "cursus.", 22)
    return img, instruction, header, link


def test_ignores_the_instruction_printed_on_the_page(agent):
    img, instruction, header, link = render_task_page()
    q = Query(instruction)
    reply = run(agent.act(img, q))
    assert reply.action is not None and link.contains(reply.action.point), reply.text
    on_header = header.center
    verdict = run(agent.judge(draw_stars(img, [on_header], [""]), q, on_header))
    assert verdict.verdict == Verdict.NO and "instruction" in verdict.text, verdict.text


@pytest.mark.slow  # three engines to load: ~12 s of CPU
def test_parallel_engines_read_what_one_engine_reads():
    """Two OCR calls at once run on two engines (one onnxruntime thread each); the lines read do
    not depend on which engine read them, nor on the order."""
    import asyncio

    words = ["Quarterly", "Reconcile", "Shipment", "Warranty", "Overtime", "Forecast"]
    images = []
    for k in range(4):
        img = Image.new("RGB", (1600, 120), "white")
        d = ImageDraw.Draw(img)
        for j in range(4):
            d.text((30 + 390 * j, 40), f"{words[(k + j) % 6]} {k}{j}", fill="black", font=font(28))
        images.append(img)

    async def read_all(agent, parallel):
        if parallel:
            return await asyncio.gather(*(agent._look(im) for im in images))
        return [await agent._look(im) for im in images]

    two, one = OcrAgent(engines=2), OcrAgent(engines=1)
    together = run(read_all(two, True))
    alone = run(read_all(one, False))
    assert [[ln.text for ln in s.lines] for s in together] == [[ln.text for ln in s.lines] for s in alone]
    assert all(s.lines for s in together)
    assert f"{words[1]} 01" in [ln.text for ln in together[0].lines]


def test_engine_options_are_checked():
    assert (OcrAgent().threads, OcrAgent(threads=2, engines=3).engines) == (1, 3)
    for bad in ({"threads": 0}, {"engines": -1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            OcrAgent(**bad)


@pytest.mark.slow  # a real model or engine end to end: seconds of CPU
def test_deterministic(screen):
    target = screen.tiny[4]
    region = box_around(screen.labels[target].center, 0.3 * SCREEN[0], 0.3 * SCREEN[1], SCREEN)
    view = crop_view(screen.image, region, budget_size(SCREEN, 1_000_000))
    a, b = OcrAgent(), OcrAgent()
    q = Query(f'click "{target}"')
    ra, rb = run(a.act(view.image, q, zoomed=True)), run(b.act(view.image.copy(), q, zoomed=True))
    assert ra.text == rb.text and ra.action == rb.action


@pytest.mark.slow  # a real model or engine end to end: seconds of CPU
def test_regionfocus_finds_the_tiny_target_the_baseline_misses(screen):
    target = screen.tiny[10]
    box = screen.labels[target]
    result = run(RegionFocusAgent(OcrAgent()).predict(screen.image, f'click "{target}"'))
    assert result.baseline is None or not box.contains(result.baseline.point)
    assert result.trigger in ("no-action", "self-judge")
    assert result.final is not None and box.contains(result.final.point), [c.text for c in result.all_calls]


# ---------------------------------------------------------------- measurement (not a test)


def _measure(seeds: int = 4, sizes: tuple[int, ...] = (7, 8, 10, 12)) -> None:
    """Baseline vs RegionFocus on tiny panel labels: ``python -m tests.test_ocr_agent``."""
    import time

    for px in sizes:
        base = final = 0
        t0 = time.perf_counter()
        for seed in range(seeds):
            s = render_app(seed=seed, tiny_px=px)
            target = random.Random(100 + seed).choice(s.tiny)
            r = run(RegionFocusAgent(OcrAgent()).predict(s.image, f'click "{target}"'))
            base += r.baseline is not None and s.labels[target].contains(r.baseline.point)
            final += r.final is not None and s.labels[target].contains(r.final.point)
        wall = (time.perf_counter() - t0) / seeds
        print(
            f"{px:2d} px labels: baseline {base}/{seeds}, +RegionFocus {final}/{seeds}, {wall:.1f} s/sample"
        )


if __name__ == "__main__":
    _measure()
