"""The OCR agent through a multi-step plan (adapters/agents/task_plan.py, with MiniWoB++'s
grammar as the runner hands it for MiniWoB++ tasks) on a rendered form: a text field, three
checkboxes and a Submit button drawn with PIL, read by the real rapidocr engine and the
weight-free control detector. The steps it takes are checked as the turns of the episode
accumulate (each action "changed the page", as a live loop would report)."""

from __future__ import annotations

import asyncio

import pytest
from PIL import Image, ImageDraw

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.agents.ocr import OcrAgent
from regionfocus.adapters.agents.ocr_items import screen_items
from regionfocus.adapters.agents.task_plan import CHANGED
from regionfocus.adapters.perception.ocr_text import TextLine, text_lines
from regionfocus.adapters.perception.ui_detect import DetectedElement
from regionfocus.geometry import Box, Point
from regionfocus.model import Avoid, Option, Query, Turn, Verdict
from regionfocus.webvoyager.miniwob_grammar import plan_instruction
from tests.test_ocr_agent import font

WORDS = ("Alpha", "Beta", "Gamma")


def render_form(scale: float = 1.0) -> tuple[Image.Image, dict[str, Box]]:
    """A form at 1x: "Name" over a text field, three labelled checkboxes, a Submit button.
    Returns the image (scaled by ``scale``) and each part's box in its pixels."""
    img = Image.new("RGB", (480, 420), "white")
    d = ImageDraw.Draw(img)
    f = font(20)
    parts = {}
    d.text((20, 20), "Name", fill=(20, 20, 20), font=f)
    parts["field"] = Box(20, 50, 300, 84)
    d.rectangle((20, 50, 300, 84), outline=(118, 118, 118), fill="white", width=1)
    for i, word in enumerate(WORDS):
        y = 110 + 40 * i
        d.rectangle((22, y, 40, y + 18), outline=(118, 118, 118), fill="white", width=2)
        d.text((52, y - 3), word, fill=(20, 20, 20), font=f)
        parts[word] = Box(22, y, 40 + 100, y + 18)  # the box and its label: one row
    parts["Submit"] = Box(20, 240, 150, 284)
    d.rounded_rectangle((20, 240, 150, 284), radius=3, outline=(118, 118, 118), fill=(239, 239, 239))
    d.text((50, 250), "Submit", fill=(20, 20, 20), font=f)
    if scale != 1.0:
        img = img.resize((round(480 * scale), round(420 * scale)), Image.Resampling.LANCZOS)
        parts = {
            k: Box(b.left * scale, b.top * scale, b.right * scale, b.bottom * scale) for k, b in parts.items()
        }
    return img, parts


@pytest.fixture(scope="module")
def agent() -> OcrAgent:
    return OcrAgent(task_grammar=plan_instruction)


def run_plan(agent: OcrAgent, image: Image.Image, instruction: str, steps: int, outcome: str = CHANGED):
    """The agent's actions over ``steps`` steps on an unchanging screen, each reported with
    ``outcome``."""
    turns: list[Turn] = []
    actions = []
    for _ in range(steps):
        reply = asyncio.run(agent.act(image, Query(instruction, mode="agent", turns=tuple(turns))))
        actions.append(reply.action)
        if reply.action is None or reply.action.type in (ActionType.FINISHED, ActionType.CALL_USER):
            break
        turns.append(Turn(None, image.size, reply.action, reply.text, outcome))
    return actions


def test_select_then_submit_takes_one_step_per_goal_then_finishes(agent):
    image, parts = render_form()
    actions = run_plan(agent, image, "Select Alpha, Gamma and click Submit.", 5)
    assert [a.type for a in actions] == [ActionType.CLICK] * 3 + [ActionType.FINISHED]
    assert parts["Alpha"].contains(actions[0].point)
    assert parts["Gamma"].contains(actions[1].point)
    assert parts["Submit"].contains(actions[2].point)
    assert [a.extras["goal"] for a in actions[:3]] == [0, 1, 2]


def test_a_checkbox_is_clicked_on_its_box_not_its_label(agent):
    image, _ = render_form()
    (first, *_) = run_plan(agent, image, "Select Beta and click Submit.", 1)
    assert Box(18, 146, 44, 172).contains(first.point)  # Beta's box (22..40, 150..168), padded


def test_an_action_without_effect_does_not_advance_the_plan(agent):
    image, parts = render_form()
    actions = run_plan(agent, image, "Select Alpha, Gamma and click Submit.", 3, outcome="no visible effect")
    assert len(actions) == 3
    assert all(parts["Alpha"].contains(a.point) for a in actions)


def test_enter_text_types_into_the_field_then_submits_on_a_downscaled_screen(agent):
    # 2.6x: 1.36 MP, over the 1 MP budget, so boxes come back from the budget frame.
    image, parts = render_form(scale=2.6)
    assert agent.input_size(image.size) != image.size
    actions = run_plan(agent, image, 'Enter "hello" into the text field and press Submit.', 4)
    assert [a.type for a in actions] == [ActionType.TYPE, ActionType.CLICK, ActionType.FINISHED]
    assert actions[0].text == "hello" and parts["field"].contains(actions[0].point)
    assert parts["Submit"].contains(actions[1].point)


def test_a_task_it_cannot_see_ends_at_once(agent):
    image, _ = render_form()
    (only,) = run_plan(agent, image, "Click on a red circle.", 5)
    assert only.type == ActionType.CALL_USER and "cannot do this task" in only.text


def test_focus_point_judge_and_choice_follow_the_current_goal(agent):
    image, parts = render_form()
    done = Turn(None, image.size, run_plan(agent, image, "Select Beta and click Submit.", 1)[0], "", CHANGED)
    q = Query("Select Beta and click Submit.", mode="agent", turns=(done,))  # Beta done: Submit next
    focal = asyncio.run(agent.propose_point(image, q, Avoid())).point
    assert parts["Submit"].contains(focal)
    assert asyncio.run(agent.judge(image, q, parts["Submit"].center)).verdict == Verdict.YES
    assert asyncio.run(agent.judge(image, q, parts["Gamma"].center)).verdict == Verdict.NO
    opts = [
        Option(1, Action(ActionType.CLICK, parts["Gamma"].center), True),
        Option(2, Action(ActionType.CLICK, parts["Submit"].center), True),
    ]
    assert asyncio.run(agent.choose(image, q, opts)).choice == 2


def test_a_goal_not_in_sight_is_no_action_and_the_focus_goes_to_unread_marks(agent):
    image, _ = render_form()
    q = Query("Select Delta and click Submit.", mode="agent")
    assert asyncio.run(agent.act(image, q)).action is None  # RegionFocus's no-action trigger
    focal = asyncio.run(agent.propose_point(image, q, Avoid())).point
    assert focal is not None and Box(0, 0, 480, 420).contains(focal)


def test_with_no_evidence_at_all_the_focus_is_the_middle_of_the_page_read(agent):
    # The page sits in the top-left of a large blank screen (MiniWoB++'s 200 px task in 1440 px).
    image = Image.new("RGB", (1440, 1440), "white")
    ImageDraw.Draw(image).text((20, 20), "Ready", fill=(20, 20, 20), font=font(28))
    q = Query('Expand the pie menu below and click on the item labeled "J".', mode="agent")
    reply = asyncio.run(agent.propose_point(image, q, Avoid()))
    assert "the middle of what is read" in reply.text and Box(0, 0, 300, 200).contains(reply.point)


def test_screen_items_map_controls_and_labels():
    lines = [
        TextLine("Alpha", 1.0, Box(30, 10, 70, 24)),
        TextLine("Submit", 1.0, Box(20, 50, 60, 64)),
        TextLine("mm/dd/yyyy", 1.0, Box(12, 92, 90, 106)),
        TextLine("二", 0.9, Box(0, 120, 200, 400)),  # a stack of fields read as one glyph
    ]
    kept = text_lines(lines)
    assert [ln.text for ln in kept] == ["Alpha", "Submit", "mm/dd/yyyy"]
    controls = [
        DetectedElement("checkbox", Box(10, 10, 24, 24), checked=True),
        DetectedElement("button", Box(10, 44, 80, 70)),
        DetectedElement("button", Box(18, 48, 62, 66)),  # the caption's own outline: nested
        DetectedElement("dropdown", Box(8, 88, 120, 110)),
        DetectedElement("text_area", Box(8, 120, 120, 200)),
    ]

    class Seen2x:  # the budget image at half the given size
        sx = sy = 2.0

    items = screen_items(Seen2x(), kept, controls)
    got = {(i.role, i.label): (i.box, dict(i.attrs)) for i in items if i.role != "text"}
    assert got == {
        ("checkbox", "Alpha"): (Box(20, 20, 48, 48), {"checked": "true"}),
        ("button", "Submit"): (Box(20, 88, 160, 140), {}),
        ("Date", "mm/dd/yyyy"): (Box(24, 176, 240, 220), {}),  # from its first segment on
        ("textbox", ""): (Box(16, 240, 240, 400), {"multiline": "true"}),
    }
    assert Point(100, 34) in [i.box.center for i in items if i.role == "text"]  # "Alpha" at 2x


def render_tabs(tabs: bool) -> tuple[Image.Image, dict[str, Box]]:
    """Three tabs in a row (the first one active: filled blue) or a section bar, and a Submit."""
    img = Image.new("RGB", (480, 420), "white")
    d = ImageDraw.Draw(img)
    f = font(20)
    parts = {}
    for i, name in enumerate(("Tab #1", "Tab #2", "Tab #3") if tabs else ()):
        box = (20 + 110 * i, 20, 124 + 110 * i, 62)
        d.rounded_rectangle(
            box, radius=3, outline=(160, 160, 160), fill=(0, 118, 255) if i == 0 else (246, 246, 246)
        )
        d.text((box[0] + 18, 30), name, fill="white" if i == 0 else (60, 60, 60), font=f)
        parts[name] = Box(*box)
    parts["Section #4"] = Box(20, 110, 440, 144)
    if not tabs:
        d.rounded_rectangle((20, 110, 440, 144), radius=3, outline=(0, 90, 200), fill=(0, 118, 255))
        d.text((30, 115), "Section #4", fill="white", font=f)
    parts["Submit"] = Box(20, 240, 150, 284)
    d.rounded_rectangle((20, 240, 150, 284), radius=3, outline=(118, 118, 118), fill=(239, 239, 239))
    d.text((50, 250), "Submit", fill=(20, 20, 20), font=f)
    return img, parts


def test_tabs_are_switched_while_the_link_is_not_in_sight(agent):
    image, parts = render_tabs(tabs=True)
    (first, *_) = run_plan(agent, image, 'Switch between the tabs to find and click on the link "ut".', 1)
    assert first.extras.get("reveal") and parts["Tab #2"].contains(first.point)  # Tab #1 is the open one


def test_a_section_bar_is_opened_then_submit_pressed(agent):
    image, parts = render_tabs(tabs=False)
    actions = run_plan(agent, image, "Expand the section below and click submit.", 3)
    assert [a.type for a in actions[:2]] == [ActionType.CLICK] * 2
    assert parts["Section #4"].contains(actions[0].point)
    assert parts["Submit"].contains(actions[1].point)


class Seen1x:  # the budget image at the given size
    sx = sy = 1.0


@pytest.mark.parametrize("glyph", ["0", "Q", "©", "%"])
def test_a_dropdown_ending_in_a_lone_glyph_at_its_right_end_is_a_time_input(glyph):
    # The clock icon of a time input, read as whatever single character the OCR makes of it
    # (not a list of known misreadings): the field is a time input, typed from its first segment.
    field = DetectedElement("dropdown", Box(10, 10, 170, 40))
    lines = [TextLine("-- : -- --", 1.0, Box(18, 16, 90, 34)), TextLine(glyph, 0.8, Box(146, 16, 160, 34))]
    (item,) = [i for i in screen_items(Seen1x(), lines, [field]) if i.role != "text"]
    assert item.role == "InputTime" and item.box.left == 18


def test_a_lone_character_that_is_not_at_the_right_end_is_the_dropdowns_text():
    field = DetectedElement("dropdown", Box(10, 10, 170, 40))
    for text in ("5", "Item 5"):
        lines = [TextLine(text, 1.0, Box(18, 16, 18 + 10 * len(text), 34))]
        (item,) = [i for i in screen_items(Seen1x(), lines, [field]) if i.role != "text"]
        assert item.role == "combobox", text


def test_without_a_grammar_the_ocr_agent_reads_a_generic_sequence(agent):
    image, parts = render_form()
    bare = OcrAgent()
    actions = run_plan(bare, image, "Type hello into the Name field, then click Submit.", 4)
    assert [a.type for a in actions] == [ActionType.TYPE, ActionType.CLICK, ActionType.FINISHED]
    assert actions[0].text == "hello" and parts["field"].contains(actions[0].point)  # not on "Name"
    assert parts["Submit"].contains(actions[1].point)
    # MiniWoB++'s phrasing is not the generic reading's: without its grammar nothing is named
    # "Alpha, Gamma", so there is no action (RegionFocus's cue), not a checkbox plan.
    assert run_plan(bare, image, "Select Alpha, Gamma and click Submit.", 1) == [None]
