"""A11y-Compressor's phases, hit testing, the a11y proposer, the no-target trigger and the a11y
grounder on hand-built element lists (pure functions, no browser)."""

from __future__ import annotations

import asyncio

import pytest
from PIL import Image

from regionfocus.a11y import (
    A11yElement,
    block_threshold,
    compress,
    compress_text,
    dedupe,
    detect_by_keywords,
    detect_modal,
    element_at,
    hits_interactive,
    instruction_keywords,
    linearize,
    modal_score,
    observation_text,
    reading_order,
    reduce_elements,
    structure,
)
from regionfocus.actions import Action, ActionType
from regionfocus.adapters.agents.a11y_agent import A11yAgent
from regionfocus.adapters.registry import get_adapter
from regionfocus.geometry import Box, Point, ViewTransform
from regionfocus.model import Option, Query, Verdict
from regionfocus.proposers.a11y import A11yProposer
from regionfocus.proposers.base import ProposalContext
from regionfocus.triggers import NoTarget, TriggerState

VIEW = (1000, 800)


def el(role, name="", x=0, y=0, w=80, h=20, *, id="", parent="", interactive=None, **kw) -> A11yElement:
    if interactive is None:
        interactive = role in ("button", "link", "textbox", "checkbox")
    return A11yElement(
        role, name, box=Box(x, y, x + w, y + h), interactive=interactive, node_id=id, parent=parent, **kw
    )


def page_with_banner() -> list[A11yElement]:
    """A page: navigation, content, a footer with policy links, and a bottom cookie banner
    made of plain generics (no dialog role)."""
    return [
        el("RootWebArea", "Shop", 0, 0, 1000, 800, id="root"),
        el("navigation", "", 0, 0, 1000, 40, id="nav", parent="root"),
        el("link", "Home", 10, 10, 50, 20, id="l1", parent="nav"),
        el("link", "Settings", 70, 10, 70, 20, id="l2", parent="nav"),
        el("main", "", 0, 50, 1000, 500, id="main", parent="root"),
        el("heading", "Spring sale", 10, 60, 300, 30, id="h1", parent="main"),
        el("paragraph", "", 10, 100, 600, 20, id="p1", parent="main", text="Everything must go."),
        el("button", "Add to cart", 10, 140, 100, 30, id="b1", parent="main"),
        el("contentinfo", "", 0, 560, 1000, 40, id="foot", parent="root"),
        el("link", "Privacy policy", 10, 570, 100, 20, id="f1", parent="foot"),
        el("link", "Cookie policy", 120, 570, 100, 20, id="f2", parent="foot"),
        el("generic", "", 0, 700, 1000, 100, id="ban", parent="root"),
        el("StaticText", "We use cookies to improve the site.", 10, 720, 300, 20, id="t1", parent="ban"),
        el("button", "Reject", 700, 720, 80, 30, id="r", parent="ban"),
        el("button", "Accept all", 800, 720, 100, 30, id="a", parent="ban"),
    ]


# ------------------------------------------------------------------ baseline
def test_linearize_lists_every_node_with_top_left_and_size_through_the_model_frame():
    els = [
        el("button", "OK", 100, 50, 40, 20),
        el("button", "Hidden", 10, 10, 40, 20, visible=False),
        el("link", "Far", 10, 5000, 40, 20),
        el("generic", "", 0, 0, 10, 10, interactive=False),  # says nothing: no row
    ]
    text = linearize(els, lambda p: (p.x / 2, p.y / 2))
    rows = text.splitlines()
    assert rows[0].startswith("role\tname\ttext\tposition")
    assert rows[1] == "button\tOK\t\t(50, 25)\t(20, 10)"
    assert len(rows) == 4  # hidden and off-screen kept (the baseline's redundancy)
    assert len(linearize(els, viewport=VIEW).splitlines()) == 3  # on-screen only drops "Far"


# ------------------------------------------------------------------ phase 1
def test_modal_by_attribute_takes_the_dialog_subtree():
    els = [
        el("main", "", 0, 0, 1000, 800, id="m"),
        el("button", "Buy", 10, 10, id="b", parent="m"),
        el("dialog", "Sign in", 300, 200, 400, 300, id="d"),
        el("generic", "", 310, 210, 380, 280, id="g", parent="d"),
        el("button", "Login", 320, 400, id="x", parent="g"),
    ]
    r = detect_modal(els, VIEW)
    assert [e.node_id for e in r.modal] == ["d", "g", "x"]
    assert r.methods == ["attribute"]
    # a dialog off screen or invisible is not in front of anything
    off = [*els[:2], el("dialog", "Sign in", 300, 2000, 400, 300, id="d")]
    assert detect_modal(off, VIEW).modal == []


def test_keyword_banner_found_and_footer_policy_links_rejected():
    els = page_with_banner()
    ids, notes = detect_by_keywords(els, VIEW)
    assert {"ban", "t1", "r", "a"} <= ids
    assert not ids & {"f1", "f2", "l2", "b1"}, notes
    assert any("no closing or cancel control" in n or "too few" in n for n in notes)


def test_keyword_rejects_navigation_with_setting_words():
    els = [
        el("navigation", "", 0, 0, 1000, 40, id="nav"),
        el("link", "Settings", 10, 10, id="a", parent="nav"),
        el("link", "Privacy", 100, 10, id="b", parent="nav"),
        el("button", "Close", 190, 10, id="c", parent="nav"),
    ]
    ids, notes = detect_by_keywords(els, VIEW)
    assert ids == set()
    assert any("navigation" in n for n in notes)


def test_modal_score_follows_appendix_a5():
    dialog = el("dialog", "x", interactive=False)
    ok = el("button", "OK")
    heading = el("heading", "Title", interactive=False)
    # +2 (dialog tag) + 2 (w_decide: "OK" on a control); fewer than 3 but one tag > 0: no -3
    assert modal_score([dialog, ok]) == pytest.approx(4.0)
    # two decorative elements alone: -0.5 - 0.5 - 3
    assert modal_score([heading, heading]) == pytest.approx(-4.0)
    # six or more: +1
    assert modal_score([el("generic", interactive=False)] * 6) == pytest.approx(-3.0 + 1.0)


def test_temporal_new_popup_is_modal_scroll_alone_is_not():
    base = [el("link", f"Item {i}", 10, 40 * i, id=f"i{i}") for i in range(20)]
    popup = [
        el("generic", "", 300, 200, 300, 200, id="p", interactive=False),
        el("heading", "Join us", 310, 210, id="ph", parent="p"),
        el("button", "No thanks", 310, 300, id="pn", parent="p"),
    ]
    r = detect_modal([*base, *popup], VIEW, previous=base)
    assert r.same_screen is True and "temporal" in r.methods
    assert {e.node_id for e in r.modal} == {"p", "ph", "pn"}
    # next step: the popup stays and is tracked although nothing is new any more
    r2 = detect_modal([*base, *popup], VIEW, previous=[*base, *popup], previous_modal=r.modal)
    assert {e.node_id for e in r2.modal} == {"p", "ph", "pn"} and "tracked" in r2.methods
    # the whole page scrolled by 100 px: the global shift explains every move, nothing is new
    scrolled = [el("link", f"Item {i}", 10, 40 * i - 100, id=f"s{i}") for i in range(20)]
    r3 = detect_modal(scrolled, VIEW, previous=base)
    assert r3.same_screen is True and r3.modal == []


def _page_and_backdrop(paint: int):
    """Twenty links (paint order 1) and a viewport-wide layer of ``paint`` holding a panel."""
    base = [el("link", f"Item {i}", 10, 40 * i, id=f"i{i}", paint_order=1) for i in range(20)]
    layer = el("generic", "", 0, 0, *VIEW, id="scrim", interactive=False, fixed=True, paint_order=paint)
    panel = [
        el("heading", "Before you go", 400, 300, id="ph", parent="scrim", paint_order=paint),
        el("button", "Continue", 400, 340, id="pc", parent="scrim", paint_order=paint),
    ]
    return base, [layer, *panel]


def test_a_layer_covers_the_page_only_when_painted_over_it():
    from regionfocus.a11y import covering_layer

    base, (layer, *panel) = _page_and_backdrop(2)
    assert covering_layer([layer], [*base, layer, *panel], VIEW) is layer
    # the same layer in the page's own flow (painted with it) or behind it covers nothing
    for paint in (1, 0):
        base, (flat, *panel) = _page_and_backdrop(paint)
        assert covering_layer([flat], [*base, flat, *panel], VIEW) is None
    # a banner a third of the screen high is no cover
    strip = el("generic", "", 0, 500, 1000, 300, id="strip", interactive=False, paint_order=2)
    assert covering_layer([strip], [*base, strip], VIEW) is None


def test_a_new_covering_layer_is_modal_whatever_it_says_and_marks_carry_the_difference():
    from regionfocus.a11y import APPEARED, mark_appeared

    base, popup = _page_and_backdrop(2)
    # App. A.5 alone scores the panel below T_modal: -0.5 (heading) + 0 ("Continue"), < 3 elements
    assert modal_score(popup) < 1.0
    r = detect_modal([*base, *popup], VIEW, previous=base)
    assert r.methods == ["temporal"] and {e.node_id for e in r.modal} == {"scrim", "ph", "pc"}
    assert any("covers the page" in n for n in r.notes)
    # the same difference as marks on one snapshot (how the browser tree hands it over)
    marked = mark_appeared([*base, *popup], base, VIEW)
    assert {e.node_id for e in marked if e.attributes.get(APPEARED)} == {"scrim", "ph", "pc"}
    r2 = detect_modal(marked, VIEW)
    assert r2.methods == ["temporal"] and {e.node_id for e in r2.modal} == {"scrim", "ph", "pc"}
    assert detect_modal([*base, *popup], VIEW).modal == []  # no marks, no keywords: nothing
    # content that was in the previous tree (scrolled into view) is not marked, even when
    # App. A's shift cannot explain its move
    before = [el("link", "Item", 10, 60 * i, id=f"i{i}", paint_order=1) for i in range(30)]
    scrolled = [el("link", "Item", 10, 60 * i - 330, id=f"i{i}", paint_order=1) for i in range(30)]
    assert not any(e.attributes.get(APPEARED) for e in mark_appeared(scrolled, before, VIEW))
    renamed = [el("link", "Item", 10, 60 * i - 330, id=f"n{i}", paint_order=1) for i in range(30)]
    assert any(e.attributes.get(APPEARED) for e in mark_appeared(renamed, before, VIEW))


# ------------------------------------------------------------------ phase 2
def test_reduce_drops_invisible_offscreen_and_empty_nodes():
    els = [
        el("button", "Shown", 10, 10),
        el("button", "Hidden", 10, 40, visible=False),
        el("button", "Below", 10, 900),
        el("generic", "", 10, 70, interactive=False),
        el("InlineTextBox", "Shown", 10, 10, interactive=False),
    ]
    assert [e.name for e in reduce_elements(els, VIEW)] == ["Shown"]


def test_dedupe_follows_table4_priorities():
    button = el("button", "OK", 100, 100, 40, 20)
    static = el("StaticText", "OK", 104, 102, 30, 16, interactive=False)
    link = el("link", "Read more", 100, 200, 80, 20)
    static_longer = el("StaticText", "Read more", 108, 201, 70, 18, interactive=False)
    h1 = el("heading", "Results", 100, 300, 100, 20, interactive=False)
    h_text = el("StaticText", "Results", 102, 302, 96, 18, interactive=False)
    long_label = el("StaticText", "OK, keep all my settings", 100, 100, 200, 20, interactive=False)
    kept = dedupe([button, static, link, static_longer, h1, h_text])
    assert kept == [button, link, h1]
    # a label more than twice as long means something else: not merged
    assert dedupe([button, long_label]) == [button, long_label]
    # equal names on one row, farther than 20 px apart but overlapping horizontally: merged
    a = el("StaticText", "Total", 100, 100, 200, 20, interactive=False)
    b = el("StaticText", "Total", 120, 125, 60, 20, interactive=False)
    assert dedupe([a, b]) == [a]  # a tie keeps the first of equal length


def test_static_text_under_a_control_or_holding_block_is_dropped():
    els = [
        el("button", "Close", 10, 10, id="b"),
        el("StaticText", "×", 12, 12, 10, 10, id="t", parent="b", interactive=False),
        el("paragraph", "", 10, 100, 600, 40, id="p", interactive=False, text="A long run. Another run."),
        el("StaticText", "Another run.", 200, 100, 100, 20, id="r", parent="p", interactive=False),
    ]
    assert [e.node_id for e in dedupe(els)] == ["b", "p"]


def test_text_compression_keeps_keyword_context_else_leading_chars():
    assert instruction_keywords("Please click the Settings button to find the dark mode") == [
        "settings",
        "dark",
        "mode",
    ]
    text = "x" * 120 + " enable dark mode here " + "y" * 120
    out = compress_text(text, ["dark"])
    i = text.index("dark")
    assert out == "..." + text[i - 50 : i + 4 + 50] + "..."
    assert compress_text(text, ["absent"]) == text[:100] + "..."
    assert compress_text("short text", ["absent"]) == "short text"
    # whole words only: "mode" must not match inside "model"
    assert compress_text("m" * 120 + " model", ["mode"]) == "m" * 100 + "..."


# ------------------------------------------------------------------ phase 3
def test_reading_order_rows_then_columns():
    a = el("button", "A", 300, 100, 40, 20)
    b = el("button", "B", 10, 104, 40, 20)  # same row as A (centres 4 px apart)
    c = el("button", "C", 10, 200, 40, 20)
    assert [e.name for e in reading_order([c, a, b])] == ["B", "A", "C"]


def test_block_threshold_and_blocks():
    rows = [el("link", f"L{i}", 300, 100 + 20 * i, 40, 16) for i in range(5)]
    far = [el("link", f"F{i}", 300, 600 + 20 * i, 40, 16) for i in range(5)]
    ordered = reading_order([*rows, *far])
    theta = block_threshold(ordered)
    assert theta == pytest.approx(40 * 3)  # G_base floored at 40 px, N = 3
    regions = structure([], [*rows, *far], VIEW)
    assert [r.name for r in regions] == ["CONTENT"]
    assert [len(b) for b in regions[0].blocks] == [5, 5]
    # without landmarks, a top band of links is a header and a left column of links navigation
    top = [el("link", f"T{i}", 100 * i + 300, 10, 40, 16) for i in range(3)]
    left = [el("link", f"N{i}", 10, 200 + 30 * i, 40, 16) for i in range(3)]
    names = [r.name for r in structure([], [*top, *left, *rows], VIEW)]
    assert names == ["HEADER", "NAVIGATION", "CONTENT"]


def test_regions_from_landmarks_modal_first():
    els = page_with_banner()
    r = detect_modal(els, VIEW)
    m, b = reduce_elements(r.modal, VIEW), reduce_elements(r.background, VIEW, tree=els)
    regions = structure(m, b, VIEW, els)
    assert [x.name for x in regions] == ["MODAL", "NAVIGATION", "CONTENT", "FOOTER"]
    assert [e.name for e in regions[1].elements] == ["Home", "Settings"]


def test_compress_renders_centres_and_ablations():
    els = page_with_banner()
    full = compress(els, "add to cart", viewport=VIEW, to_model=lambda p: (p.x / 10, p.y / 10))
    lines = full.text.splitlines()
    assert lines[0] == "MODAL:"
    assert '[button] "Accept all" @ (85, 74)' in lines  # centre (850, 735) / 10
    assert "NAVIGATION:" in lines and "FOOTER:" in lines
    # modal only: baseline rows (top-left and size), modal rows under MODAL:, then BACKGROUND:
    only_modal = compress(els, viewport=VIEW, phases=["modal"]).text.splitlines()
    assert only_modal[1] == "MODAL:" and "BACKGROUND:" in only_modal
    assert "button\tAccept all\t\t(800, 720)\t(100, 30)" in only_modal
    # reduce only: centre lines, no headers
    only_reduce = compress(els, viewport=VIEW, phases=["reduce"]).text
    assert "MODAL:" not in only_reduce and '[button] "Add to cart" @ (60, 155)' in only_reduce
    # structure only: regions, no MODAL (the banner sits in CONTENT)
    only_struct = compress(els, viewport=VIEW, phases=["structure"]).text
    assert "MODAL:" not in only_struct and "CONTENT:" in only_struct
    with pytest.raises(ValueError, match="unknown a11y phase"):
        compress(els, viewport=VIEW, phases=["modal", "zoom"])
    assert len(full.text) < len(linearize(els))
    text, state = observation_text("compressed-a11y", els, VIEW, "add to cart")
    assert text == compress(els, "add to cart", viewport=VIEW).text and state.modal
    assert observation_text("a11y", els, VIEW)[0] == linearize(els)
    assert observation_text("screenshot", els, VIEW) == ("", None)
    with pytest.raises(ValueError, match="unknown observation"):
        observation_text("html", els, VIEW)


# ------------------------------------------------------------------ hit testing, trigger
def test_hit_testing_front_most_and_modal_blocks_background():
    under = el("button", "Behind", 100, 100, 100, 40, paint_order=1)
    over = el("generic", "Cover", 90, 90, 200, 100, paint_order=5, interactive=False)
    assert element_at([under, over], Point(120, 110)) is over
    assert element_at([under, over], Point(120, 110), interactive=True) is under
    assert element_at([under], Point(500, 500)) is None
    ok = el("button", "OK", 400, 300, 60, 30)
    assert hits_interactive([under, ok], Point(120, 110)) is under
    assert hits_interactive([under, ok], Point(120, 110), modal=[ok]) is None


def test_no_target_trigger():
    els = [el("button", "Save", 100, 100, 80, 30), el("StaticText", "Label", 100, 200, interactive=False)]
    t = NoTarget()
    click = lambda x, y: Action(ActionType.CLICK, Point(x, y))  # noqa: E731
    assert t.fires(TriggerState(click(500, 500), elements=els))
    assert t.fires(TriggerState(click(110, 205), elements=els))  # static text is no target
    assert not t.fires(TriggerState(click(140, 115), elements=els))
    assert not t.fires(TriggerState(click(500, 500)))  # no tree: cannot tell
    assert not t.fires(TriggerState(Action(ActionType.TYPE, text="hi"), elements=els))
    assert t.fires(TriggerState(click(140, 115), elements=els, modal=[els[1]]))


# ------------------------------------------------------------------ proposer
def test_a11y_proposer_boxes_hold_the_focal_group_modal_first():
    els = page_with_banner()
    shot = Image.new("RGB", VIEW)
    prop = A11yProposer()
    focal = Point(60, 155)  # "Add to cart"
    ctx = ProposalContext(shot, focal, Query("add to cart"), elements=els)
    boxes = asyncio.run(prop.propose(ctx))
    assert 1 < len(boxes) <= 4
    assert boxes[0].contains(Point(850, 735))  # the banner (modal) first
    assert boxes[1].contains(focal) and boxes[1].area < 0.5 * VIEW[0] * VIEW[1]
    assert all(0 <= b.left and b.right <= VIEW[0] and 0 <= b.top and b.bottom <= VIEW[1] for b in boxes)
    assert ctx.replies == []
    # without a tree: the fixed ratios, and the trace says so
    ctx2 = ProposalContext(shot, focal, Query("add to cart"))
    boxes2 = asyncio.run(prop.propose(ctx2))
    assert len(boxes2) == 4 and "no accessibility tree" in ctx2.replies[0][1].text


# ------------------------------------------------------------------ grounder
def grounder_screen() -> list[A11yElement]:
    return [
        el(
            "StaticText",
            'Click on the "Submit" button, then close the dialog.',
            0,
            0,
            300,
            20,
            interactive=False,
        ),
        el("StaticText", "Submit", 10, 50, 60, 20, interactive=False),
        el("button", "Submit", 200, 100, 80, 30),
        el("button", "Cancel", 300, 100, 80, 30),
        el("button", "Close", 400, 300, 20, 20),
    ]


def test_a11y_agent_clicks_the_control_not_the_echo_or_static_text():
    agent = get_adapter("a11y")
    assert isinstance(agent, A11yAgent)
    agent.set_elements(grounder_screen(), VIEW)
    img = Image.new("RGB", VIEW)
    r = asyncio.run(agent.act(img, Query('Click on the "Submit" button')))
    assert r.action.type == ActionType.CLICK and r.point == Point(240, 115)
    r = asyncio.run(agent.act(img, Query('Close the dialog box by clicking the "x".')))
    assert r.point == Point(410, 310)  # the × icon's accessible name is "Close"
    assert asyncio.run(agent.act(img, Query("Click Delete"))).action is None
    # a zoomed view of the box (200, 50)-(500, 350) at 2x: the point comes back in view pixels
    view = ViewTransform(Box(200, 50, 500, 350), 2.0, 2.0)
    r = asyncio.run(agent.act(Image.new("RGB", (600, 600)), Query("Click Cancel", view=view), zoomed=True))
    assert r.point == Point((340 - 200) * 2, (115 - 50) * 2)
    j = asyncio.run(agent.judge(img, Query("Click Cancel"), Point(330, 110)))
    assert j.verdict == Verdict.YES
    assert asyncio.run(agent.judge(img, Query("Click Cancel"), Point(230, 110))).verdict == Verdict.NO
    opts = [
        Option(1, Action(ActionType.CLICK, Point(230, 110)), True),
        Option(2, Action(ActionType.CLICK, Point(330, 110)), True),
    ]
    assert asyncio.run(agent.choose(img, Query("Click Cancel"), opts)).choice == 2


def test_a11y_agent_without_tree_says_so():
    r = asyncio.run(A11yAgent().act(Image.new("RGB", VIEW), Query("Click Submit")))
    assert r.action is None and "set_elements" in r.text
    with pytest.raises(ValueError, match="threshold"):
        A11yAgent(act_threshold=2)
