"""Reading and rewriting the pyautogui code an OSWorld-style agent returns, without running it.

The code is parsed with :mod:`ast` and never evaluated: a value counts only when it is written
as a literal (``100``, ``-5``, ``(100, 200)``, ``'right'``, ``pyautogui.RIGHT``). A string is
*plain* when every statement is ``import pyautogui``/``import time`` (``as`` allowed), ``pass``, a
bare string, ``print("...")``, ``time.sleep(literal)`` or a call of a known pyautogui input function
with literal arguments.
Anything else (another module, a name, arithmetic, an assignment, a loop, a syntax error) makes
the string opaque: it has no target and is handed back byte for byte.

Which call is refined: the first click-type call (``click``, ``leftClick``, ``doubleClick``,
``rightClick``, ``middleClick``, ``tripleClick``), and only when nothing before it can have
changed the screen (only ``moveTo``, ``keyDown``/``keyUp`` and sleeps may come first): that is
the one click that lands on the screen the agent looked at. A later click lands on a screen
nobody has seen yet, so it is kept as written. A click without coordinates after a
``moveTo(x, y)`` clicks where the move went: the move's literals are the ones refined.

Coordinates here are pyautogui's, i.e. logical screen pixels; the wrapper scales them to
screenshot pixels when the two differ (plugins/osworld.py).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field

from regionfocus.actions import Action, ActionType
from regionfocus.geometry import Point

# OSWorld's control strings (desktop_env/desktop_env.py, DesktopEnv.step): not code.
SPECIAL = frozenset({"WAIT", "DONE", "FAIL"})

CLICKS = frozenset({"click", "leftClick", "doubleClick", "rightClick", "middleClick", "tripleClick"})
# Calls that leave the screen as the agent saw it, so a click after them is still refinable.
_NEUTRAL = frozenset({"moveTo", "keyDown", "keyUp", "sleep"})
_KNOWN = CLICKS | {
    "moveTo",
    "moveRel",
    "move",
    "dragTo",
    "dragRel",
    "drag",
    "mouseDown",
    "mouseUp",
    "scroll",
    "hscroll",
    "vscroll",
    "typewrite",
    "write",
    "press",
    "hotkey",
    "keyDown",
    "keyUp",
    "sleep",
}
# pyautogui's positional parameters (pyautogui 0.9.54's signatures) after x and y, for the
# few that decide what kind of click it is.
_CLICK_PARAMS = {
    "click": ("x", "y", "clicks", "interval", "button"),
    "doubleClick": ("x", "y", "interval", "button"),
    "tripleClick": ("x", "y", "interval", "button"),
}
_BUTTON_CONSTANTS = {
    "LEFT": "left",
    "RIGHT": "right",
    "MIDDLE": "middle",
    "PRIMARY": "primary",
    "SECONDARY": "secondary",
}
_NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Literal:
    """One number written in the code: its span ``code[start:end]`` and value."""

    start: int
    end: int
    value: float
    is_int: bool


@dataclass(frozen=True)
class Call:
    """One call of a plain string: the function (``"sleep"`` for ``time.sleep`` too) and its
    literal arguments; ``xy`` holds the point's two literals when the call names one."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    xy: tuple[Literal, Literal] | None = None

    @property
    def point(self) -> Point | None:
        return Point(self.xy[0].value, self.xy[1].value) if self.xy else None

    def param(self, name: str, default=None):
        """An argument by pyautogui's name for it, positional or keyword."""
        if name in self.kwargs:
            return self.kwargs[name]
        names = _CLICK_PARAMS.get(self.name, ())
        if name in names and names.index(name) < len(self.args):
            return self.args[names.index(name)]
        return default


@dataclass(frozen=True)
class CodeReading:
    """What a code string says. ``calls`` is empty for an opaque string; ``click`` is the
    refinable click and ``target`` the call whose literals carry its point (the click itself,
    or the ``moveTo`` before a click without coordinates); ``reason`` says why there is none."""

    code: str
    calls: tuple[Call, ...] = ()
    click: Call | None = None
    target: Call | None = None
    reason: str = ""

    @property
    def plain(self) -> bool:
        return bool(self.calls)

    @property
    def point(self) -> Point | None:
        return self.target.point if self.target else None

    def action(self) -> Action | None:
        """The code as one :class:`Action` in pyautogui's coordinates: the refinable click, else
        a description of the first call (typing, keys, scroll, a move or drag: never refined),
        else None (opaque code)."""
        if self.click is not None and self.target is not None:
            return Action(_click_type(self.click), self.target.point, extras=_click_extras(self.click))
        return describe(self.calls[0], self.calls) if self.calls else None

    def with_point(self, point: Point) -> str:
        """The same code with the target's two literals replaced by ``point`` (rounded to whole
        pixels where the code wrote integers); every other character is kept."""
        if self.target is None:
            raise ValueError(f"no refinable click in the code ({self.reason})")
        out = self.code
        for lit, value in sorted(
            zip(self.target.xy, (point.x, point.y), strict=True), key=lambda p: -p[0].start
        ):
            out = out[: lit.start] + _number(value, lit.is_int) + out[lit.end :]
        return out


def read_code(code: str) -> CodeReading:
    """Read one action string. Never raises on what an agent wrote: an unreadable string comes
    back opaque, with the reason."""
    if not isinstance(code, str):
        return CodeReading(str(code), reason=f"not a string: {type(code).__name__}")
    if code.strip() in SPECIAL:
        return CodeReading(code, reason=f"control string {code.strip()}")
    try:
        tree = ast.parse(code, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:  # ValueError: a NUL byte
        return CodeReading(code, reason=f"not Python: {type(e).__name__}")
    try:
        calls = _Reader(code).calls(tree)
    except _Opaque as e:
        return CodeReading(code, reason=str(e))
    if not calls:
        return CodeReading(code, reason="no pyautogui call")
    click, target, reason = _find_target(calls)
    return CodeReading(code, tuple(calls), click, target, reason)


def describe(first: Call, calls: tuple[Call, ...] = ()) -> Action | None:
    """An action standing for a call that is not refined (what the wrapper's history keeps)."""
    n = first.name
    if n in ("typewrite", "write") and first.args and isinstance(first.args[0], str):
        return Action(ActionType.TYPE, text=first.args[0])
    if n in ("press", "hotkey", "typewrite", "write") and first.args:
        keys = first.args[0] if isinstance(first.args[0], (list, tuple)) else first.args
        return Action(ActionType.HOTKEY, keys=tuple(str(k).lower() for k in keys))
    if n in ("scroll", "vscroll", "hscroll") and first.args and isinstance(first.args[0], (int, float)):
        amount = first.args[0]
        side = ("right", "left") if n == "hscroll" else ("up", "down")
        return Action(ActionType.SCROLL, first.point, direction=side[amount < 0], amount=abs(amount))
    if n in ("moveTo", "dragTo") and first.point is not None:
        drag = next((c for c in calls[1:2] if c.name == "dragTo" and c.point is not None), None)
        if n == "dragTo":
            return Action(ActionType.DRAG, end_point=first.point)
        if drag is not None:
            return Action(ActionType.DRAG, first.point, drag.point)
        return Action(ActionType.HOVER, first.point)
    if n in ("sleep",):
        return Action(ActionType.WAIT)
    return None


# ------------------------------------------------------------------ internals
class _Opaque(Exception):
    pass


class _Reader:
    def __init__(self, code: str):
        self.code = code
        starts, pos = [0], 0
        for m in _NEWLINE.finditer(code):
            pos = m.end()
            starts.append(pos)
        self.line_starts = starts
        self.gui = {"pyautogui"}  # OSWorld runs every action with pyautogui and time imported
        self.time = {"time"}

    def calls(self, tree: ast.Module) -> list[Call]:
        out = []
        for stmt in tree.body:
            where = f"line {getattr(stmt, 'lineno', '?')}"
            if isinstance(stmt, ast.Pass) or (
                isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            ):
                continue  # a bare string: UI-TARS's code opens with its thought as one
            if self._is_print(stmt):
                continue  # Agent S ends a click with print("Click Success")
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.name not in ("pyautogui", "time"):
                        raise _Opaque(f"{where}: imports {alias.name}")
                    (self.gui if alias.name == "pyautogui" else self.time).add(alias.asname or alias.name)
                continue
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
                raise _Opaque(f"{where}: {type(stmt).__name__} statement")
            out.append(self._call(stmt.value, where))
        return out

    def _is_print(self, stmt: ast.stmt) -> bool:
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return False
        call = stmt.value
        if not (isinstance(call.func, ast.Name) and call.func.id == "print") or call.keywords:
            return False
        return all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)

    def _call(self, node: ast.Call, where: str) -> Call:
        f = node.func
        if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)):
            raise _Opaque(f"{where}: a call of something other than pyautogui")
        owner, name = f.value.id, f.attr
        if not ((owner in self.gui and name in _KNOWN) or (owner in self.time and name == "sleep")):
            raise _Opaque(f"{where}: calls {owner}.{name}")
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise _Opaque(f"{where}: unpacked arguments")
        args = tuple(self._value(a, where) for a in node.args)
        kwargs = {k.arg: self._value(k.value, where) for k in node.keywords}
        xy = self._xy(node, name) if owner in self.gui else None
        return Call(name, args, kwargs, xy)

    def _value(self, node: ast.expr, where: str):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in self.gui
            and node.attr in _BUTTON_CONSTANTS
        ):
            return _BUTTON_CONSTANTS[node.attr]
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
            raise _Opaque(f"{where}: a computed argument ({type(node).__name__})") from e

    def _xy(self, node: ast.Call, name: str) -> tuple[Literal, Literal] | None:
        """The point's literals: ``f(x, y)``, ``f(x=.., y=..)``, ``f((x, y))``, ``f(x=(x, y))``.
        scroll's point is its keywords or its 2nd and 3rd arguments."""
        if name in ("moveRel", "move", "dragRel", "drag", "typewrite", "write", "press", "hotkey"):
            return None
        if name in ("keyDown", "keyUp", "sleep"):
            return None
        offset = 1 if name in ("scroll", "hscroll", "vscroll") else 0
        kw = {k.arg: k.value for k in node.keywords}
        pos = list(node.args[offset : offset + 2])
        if ("x" in kw and len(pos) > 0) or ("y" in kw and len(pos) > 1):
            return None  # x or y given twice: pyautogui raises TypeError, there is no point
        x = kw.get("x", pos[0] if pos else None)
        y = kw.get("y", pos[1] if len(pos) > 1 else None)
        if x is not None and y is None and isinstance(x, (ast.Tuple, ast.List)) and len(x.elts) == 2:
            x, y = x.elts
        if x is None or y is None:
            return None
        a, b = self._literal(x), self._literal(y)
        return (a, b) if a and b else None

    def _literal(self, node: ast.expr) -> Literal | None:
        inner, sign = node, 1
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner, sign = node.operand, -1 if isinstance(node.op, ast.USub) else 1
        if not isinstance(inner, ast.Constant) or isinstance(inner.value, bool):
            return None
        if not isinstance(inner.value, (int, float)):
            return None
        try:
            value = float(sign * inner.value)
        except OverflowError:  # an integer literal too long for a float
            return None
        if not math.isfinite(value):
            return None
        start = self._offset(node.lineno, node.col_offset)
        end = self._offset(node.end_lineno, node.end_col_offset)
        if ast.literal_eval(self.code[start:end]) != sign * inner.value:  # the span is the literal itself
            raise _Opaque("a coordinate whose text could not be located")
        return Literal(start, end, value, isinstance(inner.value, int))

    def _offset(self, lineno: int, col: int) -> int:
        """ast's columns count UTF-8 bytes; the code is a str."""
        start = self.line_starts[lineno - 1]
        line = self.code[start:]
        return start + len(line.encode("utf-8")[:col].decode("utf-8", errors="strict"))


def _find_target(calls: list[Call]) -> tuple[Call | None, Call | None, str]:
    moved: Call | None = None
    for c in calls:
        if c.name in CLICKS:
            if c.xy is not None:
                return c, c, ""
            if _has_point_args(c):
                return None, None, f"{c.name}: its point is not two numbers"
            if moved is not None:
                return c, moved, ""
            return None, None, f"{c.name} without coordinates"
        if c.name not in _NEUTRAL:
            return None, None, f"{c.name} comes before any click"
        if c.name == "moveTo":
            moved = c if c.xy is not None else None
    return None, None, "no click"


def _has_point_args(c: Call) -> bool:
    return bool(c.args) or "x" in c.kwargs or "y" in c.kwargs


def _click_type(c: Call) -> ActionType:
    if c.name == "doubleClick":
        return ActionType.DOUBLE_CLICK
    if c.name == "rightClick":
        return ActionType.RIGHT_CLICK
    if c.name == "middleClick":
        return ActionType.MIDDLE_CLICK
    if c.name == "click":
        button = str(c.param("button", "left")).lower()
        if c.param("clicks", 1) == 2:
            return ActionType.DOUBLE_CLICK
        if button in ("right", "secondary"):
            return ActionType.RIGHT_CLICK
        if button == "middle":
            return ActionType.MIDDLE_CLICK
    return ActionType.CLICK


def _click_extras(c: Call) -> dict:
    extras = {"call": c.name}
    clicks = 3 if c.name == "tripleClick" else c.param("clicks", None)
    if clicks not in (None, 1, 2):
        extras["clicks"] = clicks
    return extras


def _number(value: float, is_int: bool) -> str:
    value = float(value)  # a model's numpy float prints as np.float64(...) otherwise
    return str(int(round(value))) if is_int else repr(round(value, 2))
