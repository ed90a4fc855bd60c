"""MiniWoB++'s instruction grammar, as a plan of goals for the CPU stand-in agents.

The task pages of the click-, enter-, focus- and choose- families phrase their instructions in a
small fixed set of forms: "Select A, B and click Submit.", "Enter "v" into the text field and
press Submit.", "Focus into the 2nd textbox.", "Select A>B>C" (a menu path), "Switch between the
tabs to find and click on the link "X".", "Expand the pie menu below and click on the item
labeled "J".", "Click on a "textarea" widget.", "Enter 7:55 PM as the time ...". This module reads
exactly those forms into the generic :class:`~regionfocus.adapters.agents.task_plan.Plan` the
agents work through; the agents themselves know only a generic reading (click, type into, select
from a named thing). The runner hands this grammar to an agent for MiniWoB++ tasks
(:func:`grammar_for`), so the wording of one benchmark's pages stays with that benchmark.

What no CPU agent can see (a colour, a shade, a shape, words by meaning) is a plan with
``cannot`` set: the agent says so at the first step and the episode ends.
"""

from __future__ import annotations

import re

from regionfocus.adapters.agents.task_plan import Goal, Plan, TaskGrammar
from regionfocus.adapters.perception.ocr_text import find_quoted, parse_instruction

from .tasks import WebTask

# click-widget's widget names, as the roles of ROLE_GROUPS.
WIDGETS = {
    "button": "button",
    "checkbox": "check",
    "radio": "check",
    "text": "textline",
    "textarea": "textarea",
    "textbox": "textline",
}

_SUBMIT_TAIL = re.compile(
    r",?\s+(?:and\s+)?(?:then\s+)?(?:click|press|hit)\s+(?:on\s+)?(?:the\s+)?\"?submit\"?(?:\s+button)?$",
    re.I,
)
# click-menu's second clause joins with a bare "and": "..., and then find and click on the item".
_THEN = re.compile(r",?\s+(?:and\s+)?then\s+|(?<!find)\s+and\s+(?=click\s+on\s+the\s+item\b)", re.I)
# The tasks that ask for what neither CPU agent reads: click-color, click-shades,
# click-checkboxes-soft and click-shape's size/colour/shape descriptions, anchored to those
# forms so that a page's own sentence about colours is not taken for one.
_LOOKS = r"(?:large|small|red|green|blue|aqua|black|magenta|yellow)"
_CANNOT = (
    (re.compile(r"^click\s+on\s+the\s+\w+\s+colou?red\s+box$", re.I), "it asks for a colour"),
    (re.compile(r"^select\s+all\s+the\s+shades\s+of\s+\w+\b", re.I), "it asks for shades of a colour"),
    (re.compile(r"^select\s+words\s+similar\s+to\b", re.I), "it asks for words by meaning"),
    (
        re.compile(rf"^click\s+on\s+an?\s+(?:{_LOOKS}\b.*|circle|rectangle|triangle|shape|item)$", re.I),
        "it asks for a drawn shape by its look",
    ),
)
_SELECT = re.compile(
    r"^(?:select|check|tick|mark)\s+(?P<items>.+?)(?:\s+from\s+the\s+(?P<where>scroll\s+list|list|drop-?down))?$",
    re.I,
)
_AS_VALUE = re.compile(
    r"^(?:enter|type|select|choose|pick|input|set)\s+(?P<value>\S+(?:\s*[ap]\.?m\.?)?)\s+as\s+the\s+(?P<what>date|time)$",
    re.I,
)
_TYPE = re.compile(
    r"^(?:enter|type|input|write|fill\s+in)\s+(?:the\s+(?:password|text|value)\s+)?(?P<value>\"[^\"]*\"|'[^']*'|\S+)"
    r"(?:\s+in\s+all\s+(?P<case>upper|lower)\s+case(?:\s+letters)?)?\s+(?:into|in|to)\s+(?P<field>.+)$",
    re.I,
)
_ORDINAL = r"(?:the\s+)?(?:(?P<n>\d+)(?:st|nd|rd|th)\s+)?"
_FIELD_WORDS = r"(?:input\s+)?(?:text\s*box|textbox|text\s+field|text\s+input|input\s+field|input|field|box)"
_FOCUS = re.compile(rf"^(?:focus|click)\s+(?:into|on|in)\s+{_ORDINAL}{_FIELD_WORDS}$", re.I)
_FIND = re.compile(
    r"^(?:switch\s+between\s+the\s+tabs|expand\s+the\s+sections?(?:\s+below)?),?\s+to\s+find\s+and\s+click\s+"
    r"(?:on\s+)?the\s+link\s+(?P<target>.+)$",
    re.I,
)
_EXPAND = re.compile(r"^expand\s+the\s+(?P<what>section|pie\s+menu)(?:\s+below)?$", re.I)
_ITEM = re.compile(
    r"^(?:find\s+and\s+)?click\s+on\s+the\s+item\s+(?:labeled\s+|named\s+)?(?P<target>.+)$",
    re.I,
)
_WIDGET = re.compile(r"^click\s+on\s+an?\s+\"?(?P<w>[a-z]+)\"?\s+widget$", re.I)
_BUTTON_ONLY = re.compile(r"^click\s+(?:on\s+)?the\s+button$", re.I)
# click-pie's menu opens from its centre button, drawn as a "+".
PIE_BUTTON = "+"


def _unquote(text: str) -> str:
    quoted = find_quoted(text)
    return quoted[0] if quoted else text.strip().strip(".").strip()


def _items(text: str) -> list[str]:
    parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", text)
    return [_unquote(p) for p in parts if p.strip()]


def _typed(value: str, what: str) -> str:
    """What to type into a date or time field for ``value`` as the page wrote it: Chromium's
    date field takes the digits of mm/dd/yyyy; its time field hh, mm, then A or P."""
    if what == "date":
        return re.sub(r"\D", "", value)
    m = re.match(r"(\d{1,2}):(\d{2})\s*([ap])?", value, re.I)
    if not m:
        return value
    half = f"{m.group(3).upper()}M" if m.group(3) else ""
    return f"{int(m.group(1)):02d}{m.group(2)}{half}"


def _clause(text: str) -> list[Goal] | None:
    """The goals of one clause, or None when the clause is not one this grammar knows."""
    if m := _AS_VALUE.match(text):
        what = m.group("what").lower()
        if what == "date" and re.match(r"(?:select|choose|pick)\b", text, re.I):  # a picker, not a field
            return [Goal("date", role="field", value=m.group("value"))]
        return [Goal("type", role="field", value=_typed(m.group("value"), what), ordinal=1, at_left=True)]
    if m := _FOCUS.match(text):
        return [Goal("focus", role="field", ordinal=int(m.group("n") or 1))]
    if m := _TYPE.match(text):
        value = _unquote(m.group("value"))
        if m.group("case"):
            value = value.upper() if m.group("case").lower() == "upper" else value.lower()
        fld = m.group("field")
        if re.search(r"\bboth\b", fld, re.I):
            return [Goal("type", role="field", value=value, ordinal=n) for n in (1, 2)]
        quoted = find_quoted(fld)
        return [
            Goal(
                "type",
                target=quoted[0] if quoted else "",
                role="field",
                value=value,
                ordinal=0 if quoted else 1,
            )
        ]
    if m := _FIND.match(text):
        return [Goal("find", target=_unquote(m.group("target")), role="link", reveal="tab")]
    if m := _EXPAND.match(text):
        if "pie" in m.group("what").lower():
            return [Goal("click", target=PIE_BUTTON)]
        return [Goal("reveal", role="tab")]
    if m := _WIDGET.match(text):
        role = WIDGETS.get(m.group("w").lower())
        return [Goal("click", role=role, ordinal=1)] if role else None
    if _BUTTON_ONLY.match(text):
        return [Goal("click", role="button", ordinal=1)]
    if m := _ITEM.match(text):
        return [Goal("click", target=_unquote(m.group("target")))]
    if m := _SELECT.match(text):
        items, where = m.group("items"), (m.group("where") or "").lower()
        if ">" in items:  # a menu path: hover the parents, click the leaf
            path = [p.strip() for p in items.split(">") if p.strip()]
            return [Goal("hover", target=p, role="menuitem") for p in path[:-1]] + [
                Goal("click", target=path[-1], role="menuitem")
            ]
        names = [] if re.fullmatch(r"nothing|none", items.strip(), re.I) else _items(items)
        if where in ("list", "dropdown", "drop-down"):
            return [Goal("select", role="combobox", value=n) for n in names]
        if where:  # a multiple-selection list: ctrl adds to the selection
            return [
                Goal("click", target=n, role="option", keys=("ctrl",) if i else ())
                for i, n in enumerate(names)
            ]
        return [Goal("click", target=n, role="check") for n in names]
    return None


def plan_instruction(instruction: str) -> Plan | None:
    """The plan of a MiniWoB++ instruction; None for a one-step one (or one this grammar does
    not know), which the agents read with their one-step reading."""
    text = " ".join(instruction.split()).strip().rstrip(".").strip()
    for pattern, why in _CANNOT:
        if pattern.search(text):
            return Plan(cannot=f"cannot do this task: {why}")
    submit = False
    if m := _SUBMIT_TAIL.search(text):
        text, submit = text[: m.start()], True
    goals: list[Goal] = []
    clauses = [c for c in _THEN.split(text) if c.strip()]
    for clause in clauses:
        found = _clause(clause.strip().rstrip(",").strip())
        if found is None:
            if len(clauses) == 1 and not submit:
                return None
            parsed = parse_instruction(clause)
            if not parsed.target:
                return None
            found = [Goal(parsed.kind, target=parsed.target, value=parsed.value, variants=parsed.variants)]
        goals += found
    if submit:
        goals.append(Goal("click", target="Submit", role="button"))
    return Plan(tuple(goals))


def grammar_for(task: WebTask) -> TaskGrammar | None:
    """The instruction grammar an agent should read ``task`` with: this one for a MiniWoB++
    page, None (the agent's generic reading) for any other task."""
    return plan_instruction if task.kind == "miniwob" else None
