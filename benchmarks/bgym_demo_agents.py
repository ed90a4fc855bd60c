"""Two demo BrowserGym agents for MiniWoB++ (not models, not part of the product): what
``benchmarks/browsergym_miniwob.py`` and ``tests/test_plugin_browsergym.py`` wrap with RegionFocus.

:class:`PageReaderArgs` reads the task's goal for the names of what to click (quoted phrases,
"Select A, B and click Submit", "Click button ONE, then click button TWO", "Click on Tab #2"),
finds each name in BrowserGym's accessibility tree and clicks it. ``offset=0``: by element
(``click('<bid>')``, BrowserGym's own action). ``offset>0``: by coordinates, ``offset`` pixels to the
right of the element's box (``mouse_click(x, y)`` in screenshot pixels): a grounding error of a
fixed size, so its clicks land beside their targets.

Both keep to one target until its own box on the screenshot changed, then move to the next; they stop
(``None``, which ends BrowserGym's episode) when the goal names nothing they can find or every
target is done. Each step states its target as ``extra_info["step_goal"]``, the instruction a
RegionFocus round grounds (``regionfocus.plugins.browsergym.STEP_GOAL``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from browsergym.core.action.highlevel import HighLevelActionSet
from browsergym.experiments import AbstractAgentArgs, Agent, AgentInfo

# Roles a named target may have in the tree (what a click can act on).
CLICKABLE = frozenset({"button", "link", "checkbox", "radio", "tab", "menuitem", "option", "treeitem"})
_QUOTED = re.compile(r'"([^"]+)"')
_SELECT = re.compile(r"^Select (.+?)(?: from the [\w ]+)? and click Submit", re.IGNORECASE)
_BUTTONS = re.compile(r"\bbutton ([A-Z]+)\b")
_TAB = re.compile(r"\b(Tab #\d+)")


def targets_of(goal: str) -> list[str]:
    """The names the goal asks to click, in order ([] when it names none this agent reads)."""
    m = _SELECT.match(goal.strip())
    if m:
        names = [] if m.group(1).strip().lower() == "nothing" else re.split(r",\s*|\s+and\s+", m.group(1))
        return [n.strip() for n in names if n.strip()] + ["Submit"]
    if quoted := _QUOTED.findall(goal):
        return quoted
    if buttons := _BUTTONS.findall(goal):
        return buttons
    return _TAB.findall(goal)


def _value(field) -> str:
    return str(field.get("value", "")) if isinstance(field, dict) else ""


def find_element(obs: dict, name: str) -> tuple[str, list[float]] | None:
    """(bid, box x, y, w, h in screenshot pixels) of the first visible clickable element called
    ``name`` (case-insensitive), else of the nearest element holding a text of that name (a link
    MiniWoB++ draws as a styled ``span``), or None."""
    boxes = obs.get("extra_element_properties") or {}
    want = name.strip().casefold()
    nodes = (obs.get("axtree_object") or {}).get("nodes", ())
    by_id = {n.get("nodeId"): n for n in nodes}

    def box_of(bid):
        props = boxes.get(bid) or {}
        box = props.get("bbox")
        return box if box and props.get("visibility", 0) > 0 and box[2] > 0 and box[3] > 0 else None

    texts = []
    for node in nodes:
        if node.get("ignored") or _value(node.get("name")).strip().casefold() != want:
            continue
        bid, role = node.get("browsergym_id"), _value(node.get("role"))
        if bid and role in CLICKABLE and (box := box_of(bid)):
            return bid, box
        if role == "StaticText":
            texts.append(node)
    for node in texts:  # up from the text to the first element with an id and a box
        seen = 0
        while node is not None and seen < 8:
            bid = node.get("browsergym_id")
            if bid and (box := box_of(bid)):
                return bid, box
            node, seen = by_id.get(node.get("parentId")), seen + 1
    return None


def _crop_digest(screenshot, box) -> str:
    x, y, w, h = (int(round(v)) for v in box)
    return hashlib.sha1(screenshot[max(y, 0) : y + h, max(x, 0) : x + w].tobytes()).hexdigest()


class PageReader(Agent):
    """See the module docstring. Keeps the raw observation (no DOM flattening): it needs the
    tree object and the boxes, and it is the cheapest preprocessing."""

    def __init__(self, offset: float = 0.0):
        self.offset = offset
        self.action_set = HighLevelActionSet(subsets=["coord"] if offset else ["bid"], multiaction=False)
        self.done: list[str] = []
        # (target, its box, digest of the screenshot inside that box) of the last click: a target
        # is done once its own box looks different (pressed, checked, hovered, gone). Pixels
        # elsewhere are not looked at: the pointer leaving the element it rested on repaints that
        # element, which says nothing about the click just made.
        self.last: tuple[str, list[float], str] | None = None

    def obs_preprocessor(self, obs: dict) -> dict:
        return dict(obs)

    def get_action(self, obs: dict) -> tuple[str | None, AgentInfo]:
        shot = obs["screenshot"]
        if self.last is not None and _crop_digest(shot, self.last[1]) != self.last[2]:
            self.done.append(self.last[0])
        todo = [t for t in targets_of(obs.get("goal") or "") if t not in self.done]
        found = find_element(obs, todo[0]) if todo else None
        if found is None:
            self.last = None
            return None, AgentInfo(think=f"nothing to click for {todo[:1] or 'the goal'}")
        bid, box = found
        x, y, w, h = box
        self.last = (todo[0], box, _crop_digest(shot, box))
        if self.offset:
            action = f"mouse_click({x + w + self.offset:.1f}, {y + h / 2:.1f})"
        else:
            action = f"click({bid!r})"
        return action, AgentInfo(
            think=f'click "{todo[0]}"', extra_info={"step_goal": f'Click on "{todo[0]}".'}
        )


@dataclass
class PageReaderArgs(AbstractAgentArgs):
    """A :class:`PageReader` (``offset`` pixels right of its targets; 0: by element)."""

    offset: float = 0.0

    def __post_init__(self) -> None:
        if self.agent_name is None:
            self.agent_name = f"PageReader-offset{self.offset:g}" if self.offset else "PageReader"
        super().__post_init__()

    def make_agent(self) -> PageReader:
        return PageReader(self.offset)
