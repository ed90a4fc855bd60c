"""Typed GUI actions: the union of the UI-TARS and Qwen2.5-VL computer-use action spaces.

Actions are data. Points are in screenshot pixels; adapters convert from their model's frame
before building one. Nothing here ever executes anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum

from .geometry import Point


class ActionType(str, Enum):
    CLICK = "click"  # UI-TARS click / left_single; Qwen left_click
    DOUBLE_CLICK = "double_click"  # UI-TARS left_double; Qwen double_click
    RIGHT_CLICK = "right_click"  # UI-TARS right_single; Qwen right_click
    MIDDLE_CLICK = "middle_click"  # Qwen middle_click
    HOVER = "hover"  # UI-TARS hover; Qwen mouse_move
    DRAG = "drag"  # UI-TARS drag(start_box, end_box); Qwen left_click_drag
    TYPE = "type"  # text; submit=True when UI-TARS content ends with "\n"
    HOTKEY = "hotkey"  # UI-TARS hotkey(key='ctrl c'); Qwen key(keys=[...])
    SCROLL = "scroll"  # optional point, direction up/down/left/right
    WAIT = "wait"
    BACK = "back"  # browser history back (WebVoyager's GoBack)
    FINISHED = "finished"  # UI-TARS finished(content); Qwen terminate / answer
    CALL_USER = "call_user"


POINTER_TYPES = frozenset(
    {
        ActionType.CLICK,
        ActionType.DOUBLE_CLICK,
        ActionType.RIGHT_CLICK,
        ActionType.MIDDLE_CLICK,
        ActionType.HOVER,
        ActionType.DRAG,
    }
)


@dataclass(frozen=True)
class Action:
    """One GUI action.

    ``point``: where a pointer action lands (drag: its start), scroll's anchor, or the field a
    typed text goes into when the model named one. ``end_point``: a drag's end. ``text``: typed
    content or a final answer. ``keys``: a key combination, lower-case names ("ctrl", "c").
    """

    type: ActionType
    point: Point | None = None
    end_point: Point | None = None
    text: str = ""
    keys: tuple[str, ...] = ()
    direction: str | None = None
    amount: float | None = None
    submit: bool = False
    extras: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def points(self) -> list[Point]:
        return [p for p in (self.point, self.end_point) if p is not None]

    @property
    def is_point_action(self) -> bool:
        """True when the action's outcome depends on where it lands (what RegionFocus refines)."""
        return self.point is not None and (self.type in POINTER_TYPES or self.type == ActionType.SCROLL)

    def map_points(self, fn: Callable[[Point], Point]) -> Action:
        """The same action with every point passed through ``fn`` (e.g. view -> screenshot)."""
        return replace(
            self,
            point=fn(self.point) if self.point is not None else None,
            end_point=fn(self.end_point) if self.end_point is not None else None,
        )

    def same_as(self, other: Action | None, radius: float = 0.0) -> bool:
        """Tolerant equality for the repeat trigger and candidate merging: same type, same text
        and keys, each point within ``radius`` pixels of its counterpart."""
        if other is None or self.type != other.type:
            return False
        if self.text.strip() != other.text.strip() or self.keys != other.keys:
            return False
        if self.direction != other.direction or self.submit != other.submit:
            return False
        for a, b in ((self.point, other.point), (self.end_point, other.end_point)):
            if (a is None) != (b is None):
                return False
            if a is not None and a.distance(b) > radius:
                return False
        return True

    def describe(self) -> str:
        """A short canonical text, used for text options, history lines and reports."""
        parts = [self.type.value]
        if self.point is not None:
            parts.append(f"({self.point.x:.0f}, {self.point.y:.0f})")
        if self.end_point is not None:
            parts.append(f"-> ({self.end_point.x:.0f}, {self.end_point.y:.0f})")
        return " ".join(parts + self.detail_words("[enter]"))

    def detail_words(self, enter: str) -> list[str]:
        """What a description says after the points: the keys, the direction, the text (quoted)
        and ``enter`` when the typing is submitted."""
        words = []
        if self.keys:
            words.append("+".join(self.keys))
        if self.direction:
            words.append(self.direction)
        if self.text:
            words.append(repr(self.text))
        if self.submit:
            words.append(enter)
        return words

    def to_dict(self) -> dict:
        d: dict = {"type": self.type.value}
        if self.point is not None:
            d["point"] = [self.point.x, self.point.y]
        if self.end_point is not None:
            d["end_point"] = [self.end_point.x, self.end_point.y]
        for name in ("text", "direction", "amount"):
            if getattr(self, name):
                d[name] = getattr(self, name)
        if self.keys:
            d["keys"] = list(self.keys)
        if self.submit:
            d["submit"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Action:
        return cls(
            type=ActionType(d["type"]),
            point=Point.from_list(d["point"]) if d.get("point") else None,
            end_point=Point.from_list(d["end_point"]) if d.get("end_point") else None,
            text=d.get("text", ""),
            keys=tuple(d.get("keys", ())),
            direction=d.get("direction"),
            amount=d.get("amount"),
            submit=bool(d.get("submit", False)),
        )


def click(x: float, y: float) -> Action:
    """Shorthand used by tests, scripts and the OCR agent."""
    return Action(ActionType.CLICK, Point(x, y))
