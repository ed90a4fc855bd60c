"""Multi-step instructions as a plan of goals, for the CPU stand-in agents (a11y and OCR).

A one-step grounding instruction ("Click on the link "In".") is :func:`ocr_text.parse_instruction`'s
job. A live task may also say several things at once: type this into that field, then click
that button; select an option from a list and click Save. A :data:`TaskGrammar` turns such an
instruction into :class:`Goal` s; :func:`generic_plan` is the reading every agent has (click,
type into, select from, check or hover a named thing, in sequence), and a benchmark whose pages
word their instructions in a fixed way hands the agent its own grammar instead (MiniWoB++'s
lives in ``webvoyager/miniwob_grammar.py``, given by the runner). :func:`current_goal` finds the
goal to work on from the episode's history (``Query.turns``), so an agent keeps no state of its
own and a RegionFocus round asking about a zoomed view gets the same goal as the step it refines.

Progress is read from the actions themselves: every action an agent takes for a goal carries
``extras["goal"]`` (its index); a goal is done once such an action changed the page, or was
executed at all when marked ``extras["blind"]`` (a button pressed on the way to a later goal,
which may change nothing visible). An action that only reveals (a tab switched while looking
for a link) carries ``extras["reveal"]`` and finishes nothing. An instruction asking for what no
CPU agent can see is a :class:`Plan` with ``cannot`` set (a grammar decides which): the agent
says so and the episode ends.

:func:`ground` resolves a goal against the screen as an agent read it (:class:`ScreenItem`: a name,
a box in pixels of the image asked about, a role), so both agents share one resolver: the a11y
agent passes its tree, the OCR agent its lines and detected controls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.perception.ocr_text import (
    ParsedInstruction,
    TextLine,
    best_matches,
    echo_lines,
    find_quoted,
    fold,
    parse_instruction,
)
from regionfocus.geometry import Box, Point
from regionfocus.model import Query, Turn

CHANGED = "changed the page"  # regionfocus.loop.Step.outcome of an action with an effect

# Roles a goal's element may have; a goal naming a checkbox takes a radio button as well.
ROLE_GROUPS = {
    "button": ("button",),
    "check": ("checkbox", "radio", "option"),
    "option": ("option",),
    "link": ("link",),
    "tab": ("tab",),
    "menuitem": ("menuitem",),
    "field": ("textbox", "searchbox", "Date", "InputTime", "date", "time"),
    "combobox": ("combobox",),
    "listbox": ("listbox",),
    "textarea": ("textbox",),
    "textline": ("textbox",),
}
# A state some roles must (True) or must not (False) have: a text area is a multi-line textbox.
ROLE_STATES = {"textarea": ("multiline", True), "textline": ("multiline", False)}


@dataclass(frozen=True)
class Goal:
    """One thing to do. ``kind``: click | hover | type | focus | select | find | reveal | date.
    ``target``: the name to look for ("" = by role and ``ordinal``); ``role``: a key of
    :data:`ROLE_GROUPS` ("" = any); ``value``: the text to type or the option to select;
    ``ordinal``: 1-based position among the role's elements (0 = by name or the first);
    ``keys``: modifiers held while clicking (ctrl adds an option to a multiple selection);
    ``reveal``: for ``find``, the role of what is switched while the target is not in sight;
    ``at_left``: type with the pointer at the field's left end (a date field's first part);
    ``variants``: phrasings of ``target`` with their weights, as ``parse_instruction`` gives."""

    kind: str
    target: str = ""
    role: str = ""
    value: str = ""
    ordinal: int = 0
    keys: tuple[str, ...] = ()
    reveal: str = ""
    at_left: bool = False
    variants: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Plan:
    goals: tuple[Goal, ...] = ()
    cannot: str = ""  # why no CPU agent can do this task ("" = it can)


@dataclass(frozen=True)
class ScreenItem:
    """One element of the screen as an agent read it: ``box`` in pixels of the image asked
    about; ``role``: an accessibility role, or "text" for a plain OCR line; ``attrs``: states
    ("checked", "selected", "expanded") when the reader knows them; ``interactive``: False for
    what the reader knows to be static text."""

    label: str
    box: Box
    role: str = "text"
    attrs: Mapping[str, str] = field(default_factory=dict)
    interactive: bool = True


# A benchmark's own reading of its instructions: the plan, or None for a one-step instruction.
TaskGrammar = Callable[[str], Plan | None]


# ------------------------------------------------------------------ the generic reading
# Steps of a sequence: "A, then B", "A and then B", "A; B", and "A and click B" (a verb after
# "and" starts a new step; "Select A and B" stays one).
_STEPS = re.compile(
    r";\s*(?:then\s+)?|,?\s+(?:and\s+)?then\s+|,?\s+and\s+(?=(?:click|press|hit|tap|type|enter|select|choose)\b)",
    re.I,
)
_SELECT_FROM = re.compile(
    r"^(?:select|choose|pick)\s+(?P<value>.+?)\s+(?:from|in)\s+(?:the\s+)?(?P<list>.+?)$", re.I
)
_LIST_WORDS = re.compile(r"\s*\b(?:drop-?down|list(?:\s*box)?|menu|select)$", re.I)
_CHECK = re.compile(r"^(?:check|tick)\s+(?P<items>.+)$", re.I)
_HOVER = re.compile(r"^(?:hover|mouse)\s+(?:over\s+|on\s+)?(?P<target>.+)$", re.I)
# What names a field only by its kind: "the text field", "the input box".
_FIELD_ONLY = re.compile(r"^(?:text|input|textbox|text\s*box|field|box|area|\s)*$", re.I)


def _name(text: str) -> str:
    quoted = find_quoted(text)
    return quoted[0] if quoted else text.strip().strip(".").strip()


def _generic_clause(text: str) -> tuple[list[Goal], bool] | None:
    """The goals of one clause and whether it is a plain one-step click (which, alone, the
    agents' one-step reading serves as before); None when it names nothing."""
    if m := _SELECT_FROM.match(text):
        where = _LIST_WORDS.sub("", m.group("list")).strip()
        quoted = find_quoted(m.group("list"))
        target = quoted[0] if quoted else where
        return [Goal("select", target=target, role="combobox", value=_name(m.group("value")))], False
    if m := _CHECK.match(text):
        names = [_name(p) for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", m.group("items")) if p.strip()]
        return [Goal("click", target=n, role="check") for n in names], False
    if m := _HOVER.match(text):
        return [Goal("hover", target=_name(m.group("target")))], False
    parsed = parse_instruction(text)
    if parsed.kind == "type":
        named = bool(parsed.target) and not _FIELD_ONLY.fullmatch(parsed.target)
        goal = Goal(
            "type",
            target=parsed.target if named else "",
            role="field",
            value=parsed.value,
            ordinal=0 if named else 1,
            variants=parsed.variants if named else (),
        )
        return [goal], False
    if not parsed.target:
        return None
    return [Goal(parsed.kind, target=parsed.target, variants=parsed.variants)], True


def generic_plan(instruction: str) -> Plan | None:
    """The reading every agent has: a sequence of clicks on, typing into, selecting from,
    checking or hovering named things. None for a single click (the one-step reading) or an
    instruction with a step that names nothing."""
    text = " ".join(instruction.split()).strip().rstrip(".").strip()
    clauses = [c.strip().rstrip(",").strip() for c in _STEPS.split(text) if c.strip()]
    goals: list[Goal] = []
    plain = True
    for clause in clauses:
        found = _generic_clause(clause)
        if found is None:
            return None
        goals += found[0]
        plain = plain and found[1]
    if not goals or (len(clauses) == 1 and plain):
        return None
    return Plan(tuple(goals))


def current_goal(plan: Plan, turns: Sequence[Turn]) -> tuple[int, Goal] | None:
    """The first goal no action has finished yet, with its index; None when all are done."""
    done = 0
    for t in turns:
        a = t.action
        if a is None or a.extras.get("reveal") or t.outcome.startswith("error"):
            continue
        if t.outcome != CHANGED and not a.extras.get("blind"):
            continue
        g = a.extras.get("goal")
        if isinstance(g, int):
            done = max(done, g + 1)
    return (done, plan.goals[done]) if done < len(plan.goals) else None


# ------------------------------------------------------------------ grounding a goal
MONTHS = ("january february march april may june july august september october november december").split()
NOT_NAMES = frozenset({"RootWebArea", "WebArea"})  # the page itself is named after the task
# What date pickers write on the controls that page a month forward or back.
PAGE_LABELS = {
    "Next": ("next", "next month", ">", "›", "»"),
    "Prev": ("prev", "previous", "previous month", "<", "‹", "«"),
}


@dataclass(frozen=True)
class Grounded:
    """The action for a goal (None when the screen does not show its element), why, and the
    element it acts on."""

    action: Action | None
    why: str
    element: ScreenItem | None = None


def _named(
    target: str, variants, plan: Plan, instruction: str, items: Sequence[ScreenItem], roles: tuple[str, ...]
) -> list[tuple[float, ScreenItem]]:
    """Items named like ``target``, best first. Echoes of the instruction are left out, where
    every name the plan lists counts as a target word (a list of checkboxes repeats the
    instruction's words by design); an item of one of ``roles`` beats a plain one, a control
    beats static text (and wins a tie with a plain OCR line). A name of punctuation only ("+")
    is matched as written."""
    items = [s for s in items if s.role not in NOT_NAMES]
    if not fold(target):
        return [(1.0, s) for s in items if s.label.strip() == target.strip()]
    parsed = ParsedInstruction("click", target, "", variants or ((target, 1.0),))
    # Each name as its narrowest phrasing: "button ONE" names "ONE", and "button" stays an
    # instruction word that marks the header's "button TWO." as an echo.
    names = " ".join((g.variants[-1][0] if g.variants else g.target) for g in plan.goals if g.target)
    lines = [TextLine(s.label, 1.0, s.box) for s in items]
    echo = echo_lines(instruction, ParsedInstruction("click", names, "", ((names, 1.0),)), lines)
    out = []
    exact = {fold(v) for v, _ in parsed.variants}
    for m in best_matches(parsed, lines):
        s = items[m.line]
        # A control named exactly the target is the target, whatever text surrounds it.
        if m.line in echo and not (s.role != "text" and s.interactive and fold(s.label) in exact):
            continue
        factor = (1.0 if not roles or s.role in roles else 0.97) * (1.0 if s.interactive else 0.97)
        out.append((m.score * factor, s))
    out.sort(key=lambda t: (-round(t[0], 6), t[1].role == "text", t[1].box.top, t[1].box.left))
    return out


def _of_role(items: Sequence[ScreenItem], role: str) -> list[ScreenItem]:
    roles = ROLE_GROUPS.get(role, ())
    state, wanted = ROLE_STATES.get(role, ("", True))
    return [
        s
        for s in items
        if s.role in roles and s.box.area > 0 and (not state or (s.attrs.get(state) == "true") == wanted)
    ]


def _revealing(index: int, turns: Sequence[Turn]) -> list[str]:
    """The names goal ``index`` has revealed so far (tabs switched to, sections opened)."""
    return [
        t.action.extras.get("revealed", "")
        for t in turns
        if t.action is not None and t.action.extras.get("goal") == index and t.action.extras.get("reveal")
    ]


def _reveal(index: int, s: ScreenItem, why: str) -> Grounded:
    extras = {"goal": index, "reveal": True, "revealed": s.label}
    return Grounded(Action(ActionType.CLICK, s.box.center, extras=extras), why, s)


def _find(goal: Goal, index: int, plan: Plan, query: Query, items, threshold: float) -> Grounded:
    """Click the link when in sight, else switch to the next tab (or open the next section)
    not yet tried, in screen order."""
    named = _named(goal.target, goal.variants, plan, query.instruction, items, ROLE_GROUPS["link"])
    if named and named[0][0] >= threshold:
        s = named[0][1]
        return Grounded(
            Action(ActionType.CLICK, s.box.center, extras={"goal": index}), f'link "{s.label}"', s
        )
    tried = _revealing(index, query.turns)
    tabs = [s for s in _of_role(items, goal.reveal) if s.attrs.get("selected") != "true"]
    if not tabs:
        return Grounded(None, f'"{goal.target}" not in sight and nothing to switch to')
    fresh = [s for s in tabs if s.label not in tried]
    if not fresh:  # every one was opened: the link is there but unread (RegionFocus zooms in)
        return Grounded(None, f'"{goal.target}" not read after opening {len(tried)}: {", ".join(tried)}')
    s = fresh[0]
    return _reveal(index, s, f'"{goal.target}" not in sight: switch to "{s.label}"')


def _pick_date(goal: Goal, index: int, items: Sequence[ScreenItem]) -> Grounded:
    """A date picker: open it from its field, page to the month, click the day."""
    month, day, year = (int(x) for x in goal.value.split("/"))
    header = next((s for s in items if s.label.strip().lower() in MONTHS), None)
    if header is None:
        fields = _of_role(items, "field")
        if not fields:
            return Grounded(None, "no date field in sight")
        return _reveal(index, fields[0], "open the date picker")
    row = [
        s
        for s in items
        if re.fullmatch(r"\d{4}", s.label.strip()) and abs(s.box.center.y - header.box.center.y) < 8
    ]
    shown_year = int(row[0].label) if row else year
    diff = (year - shown_year) * 12 + month - (MONTHS.index(header.label.strip().lower()) + 1)
    if diff:
        word = "Next" if diff > 0 else "Prev"
        step = next((s for s in items if s.label.strip() == word), None) or next(
            (s for s in items if s.label.strip().lower() in PAGE_LABELS[word]), None
        )
        if step is None:
            return Grounded(None, f"the picker shows {header.label} {shown_year}; no {word} to page with")
        return _reveal(index, step, f"the picker shows {header.label} {shown_year}: {word}")
    days = [s for s in items if s.label.strip() == str(day) and s.box.top > header.box.bottom]
    days.sort(key=lambda s: (s.role not in ROLE_GROUPS["link"], s.box.top))
    if not days:
        return Grounded(None, f"day {day} not in sight")
    s = days[0]
    return Grounded(Action(ActionType.CLICK, s.box.center, extras={"goal": index}), f"day {day}", s)


def _field_of_label(label: ScreenItem, items: Sequence[ScreenItem], role: str) -> ScreenItem | None:
    """The field a plain text label names: the nearest one of ``role`` starting below it (in
    its column) or to its right (on its row), as forms lay labels out."""
    near = []
    for f in _of_role(items, role):
        below = (
            f.box.top >= label.box.center.y
            and f.box.left <= label.box.right
            and f.box.right >= label.box.left
        )
        right = f.box.left >= label.box.center.x and f.box.top <= label.box.center.y <= f.box.bottom
        if below or right:
            near.append((f.box.center.distance(label.box.center), f))
    return min(near, key=lambda t: t[0])[1] if near else None


def _scrolled_out(s: ScreenItem, items: Sequence[ScreenItem]) -> tuple[ScreenItem, str] | None:
    """The list box ``s`` (an option) is hidden in, and which way to scroll it."""
    for box in _of_role(items, "listbox"):
        b = box.box
        if b.left <= s.box.center.x <= b.right and not b.top <= s.box.center.y <= b.bottom:
            return box, "down" if s.box.center.y > b.bottom else "up"
    return None


def ground(plan: Plan, index: int, items: Sequence[ScreenItem], query: Query, threshold: float) -> Grounded:
    """The action doing goal ``index`` of ``plan`` on the screen ``items``."""
    goal = plan.goals[index]
    tag = {"goal": index}
    if goal.kind == "find":
        return _find(goal, index, plan, query, items, threshold)
    if goal.kind == "date":
        return _pick_date(goal, index, items)
    if goal.target:
        named = _named(
            goal.target, goal.variants, plan, query.instruction, items, ROLE_GROUPS.get(goal.role, ())
        )
        if not named or named[0][0] < threshold:
            near = f'; best "{named[0][1].label}" {named[0][0]:.2f}' if named else ""
            return Grounded(None, f'no element named like "{goal.target}"{near}')
        s = named[0][1]
        if goal.role == "field" and s.role == "text":  # an OCR reader's field is named by its label
            s = _field_of_label(s, items, goal.role) or s
    else:
        pool = _of_role(items, goal.role)
        if goal.kind == "reveal":
            pool = [s for s in pool if s.attrs.get("expanded") != "true"]
        n = max(goal.ordinal, 1)
        if len(pool) < n:
            return Grounded(None, f"no {goal.role or 'element'} #{n} in sight ({len(pool)} seen)")
        s = pool[n - 1]
    p = s.box.center
    if goal.role == "option" and (hidden := _scrolled_out(s, items)) is not None:
        box, way = hidden
        action = Action(
            ActionType.SCROLL, box.box.center, direction=way, amount=1, extras={**tag, "reveal": True}
        )
        return Grounded(action, f'"{s.label}" is scrolled out of its list: scroll {way}', s)
    if goal.kind in ("type", "select"):
        if goal.at_left:
            p = Point(s.box.left + min(12.0, s.box.width / 4), p.y)
        action = Action(ActionType.TYPE, p, text=goal.value, submit=goal.kind == "select", extras=tag)
    elif goal.kind == "hover":
        action = Action(ActionType.HOVER, p, extras=tag)
    else:
        # A button pressed on the way to a later goal may change nothing visible (a sequence
        # of buttons that only records the presses): its click counts once executed.
        if goal.kind == "click" and goal.role in ("", "button") and index < len(plan.goals) - 1:
            tag = {**tag, "blind": True}
        action = Action(ActionType.CLICK, p, keys=goal.keys, extras=tag)
    return Grounded(action, f'{goal.kind} [{s.role}] "{s.label}"', s)


# ------------------------------------------------------------------ what an agent calls
def plan_of(query: Query, grammar: TaskGrammar | None = None) -> Plan | None:
    """The plan of a live task's instruction, read by ``grammar`` (the task's benchmark's) or
    else :func:`generic_plan`; None for a grounding query or a one-step instruction (the
    agent's own one-step reading applies)."""
    if query.mode != "agent":
        return None
    return (grammar or generic_plan)(query.instruction)


def next_step(
    plan: Plan, query: Query, items: Sequence[ScreenItem], threshold: float
) -> tuple[str, Action | None]:
    """What an agent answers on this screen: why, and the action (call_user for a task it
    cannot do, finished once every goal is done, None when the goal's element is not in sight)."""
    if plan.cannot:
        return plan.cannot, Action(ActionType.CALL_USER, text=plan.cannot)
    cur = current_goal(plan, query.turns)
    if cur is None:
        return "every step of the task is done", Action(ActionType.FINISHED)
    g = ground(plan, cur[0], items, query, threshold)
    return (f"{g.action.describe()} {g.why}" if g.action is not None else g.why), g.action


def goal_element(
    plan: Plan, query: Query, items: Sequence[ScreenItem], threshold: float
) -> ScreenItem | None:
    """The element the current goal acts on, for RegionFocus's focal point, judge and choice."""
    cur = None if plan.cannot else current_goal(plan, query.turns)
    if cur is None:
        return None
    return ground(plan, cur[0], items, query, threshold).element
