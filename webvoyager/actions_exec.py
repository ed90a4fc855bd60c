"""Execute a regionfocus :class:`~regionfocus.actions.Action` in a Playwright page.

Points are viewport CSS pixels, which equal screenshot pixels because pages render at device
scale 1. Text a model wrote only ever reaches the page as keystrokes: nothing here evaluates
it, opens it as a URL or passes it to a shell.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from playwright.async_api import Page

from regionfocus.actions import Action, ActionType

# Model key names (UI-TARS "ctrl c", Qwen ["ctrl", "c"]) -> Playwright key names.
_KEY_NAMES = {
    "ctrl": "Control",
    "control": "Control",
    "alt": "Alt",
    "option": "Alt",
    "shift": "Shift",
    "cmd": "Meta",
    "command": "Meta",
    "meta": "Meta",
    "win": "Meta",
    "super": "Meta",
    "enter": "Enter",
    "return": "Enter",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "backspace": "Backspace",
    "delete": "Delete",
    "del": "Delete",
    "space": "Space",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "arrowup": "ArrowUp",
    "arrowdown": "ArrowDown",
    "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight",
    "pageup": "PageUp",
    "pagedown": "PageDown",
    "page_up": "PageUp",
    "page_down": "PageDown",
    "home": "Home",
    "end": "End",
    "insert": "Insert",
    "capslock": "CapsLock",
}
_FUNCTION_KEYS = {f"f{i}": f"F{i}" for i in range(1, 13)}

# One wheel notch in Chromium scrolls 100 CSS px; see scroll_delta.
WHEEL_NOTCH_PX = 100.0
MAX_NOTCHES = 25


class ActionError(Exception):
    """An action that cannot be executed as given (unknown key, missing point). Recorded as the
    step's error; never ends the run."""


def playwright_key(name: str) -> str:
    """One model key name as Playwright spells it; raises ActionError naming an unknown key."""
    k = name.strip()
    low = k.lower()
    if low in _KEY_NAMES:
        return _KEY_NAMES[low]
    if low in _FUNCTION_KEYS:
        return _FUNCTION_KEYS[low]
    if len(k) == 1 and k.isprintable():
        return low if k.isalpha() else k
    raise ActionError(f"unknown key {name!r}")


def key_combo(keys: tuple[str, ...]) -> str:
    """("ctrl", "shift", "t") -> "Control+Shift+t"; a single "ctrl+c" string is split too."""
    parts: list[str] = []
    for k in keys:
        bits = [b for b in k.replace("+", " ").split() if b] if len(k) > 1 else [k]
        parts.extend(bits)
    if not parts:
        raise ActionError("hotkey without keys")
    return "+".join(playwright_key(p) for p in parts)


def scroll_delta(action: Action, viewport: tuple[int, int]) -> tuple[float, float]:
    """(dx, dy) wheel delta in CSS px. ``amount``: wheel notches of 100 px when <= 25 (Qwen's
    ``pixels`` are notch-like small numbers), else pixels; default half the viewport."""
    direction = (action.direction or "down").lower()
    if direction not in ("up", "down", "left", "right"):
        raise ActionError(f"unknown scroll direction {action.direction!r}")
    horizontal = direction in ("left", "right")
    if action.amount:
        a = abs(float(action.amount))
        dist = a * WHEEL_NOTCH_PX if a <= MAX_NOTCHES else a
    else:
        dist = (viewport[0] if horizontal else viewport[1]) * 0.5
    sign = -1.0 if direction in ("up", "left") else 1.0
    return (sign * dist, 0.0) if horizontal else (0.0, sign * dist)


@dataclass
class ExecOptions:
    viewport: tuple[int, int]
    wait_s: float = 2.0  # a WAIT action's default length (seconds)
    nav_timeout_s: float = 30.0


def _need_point(action: Action):
    if action.point is None:
        raise ActionError(f"{action.type.value} needs a point")
    return action.point


async def execute(page: Page, action: Action, opts: ExecOptions) -> None:
    """Perform ``action`` on ``page``. Raises ActionError for malformed actions and lets
    Playwright errors (navigation failures, a crashed page) propagate to the caller, which
    records them as the step's error."""
    t = action.type
    mouse, keyboard = page.mouse, page.keyboard
    if t in (ActionType.CLICK, ActionType.DOUBLE_CLICK, ActionType.RIGHT_CLICK, ActionType.MIDDLE_CLICK):
        p = _need_point(action)
        button = {ActionType.RIGHT_CLICK: "right", ActionType.MIDDLE_CLICK: "middle"}.get(t, "left")
        await mouse.move(p.x, p.y)
        # Modifiers held through the click: ctrl adds an option to a multiple selection.
        held = key_combo(action.keys).split("+") if action.keys else []
        for k in held:
            await keyboard.down(k)
        try:
            if t == ActionType.DOUBLE_CLICK:
                await mouse.dblclick(p.x, p.y)
            else:
                await mouse.click(p.x, p.y, button=button)
        finally:
            for k in reversed(held):
                await keyboard.up(k)
    elif t == ActionType.HOVER:
        p = _need_point(action)
        await mouse.move(p.x, p.y, steps=2)
    elif t == ActionType.DRAG:
        p = _need_point(action)
        if action.end_point is None:
            raise ActionError("drag needs an end point")
        await mouse.move(p.x, p.y)
        await mouse.down()
        await mouse.move(action.end_point.x, action.end_point.y, steps=12)
        await mouse.up()
    elif t == ActionType.TYPE:
        if action.point is not None:  # the model named the field: focus it first
            await mouse.click(action.point.x, action.point.y)
        if action.text:
            await keyboard.type(action.text)
        if action.submit:
            await keyboard.press("Enter")
    elif t == ActionType.HOTKEY:
        await keyboard.press(key_combo(action.keys))
    elif t == ActionType.SCROLL:
        dx, dy = scroll_delta(action, opts.viewport)
        p = action.point
        x, y = (p.x, p.y) if p is not None else (opts.viewport[0] / 2, opts.viewport[1] / 2)
        await mouse.move(x, y)
        await mouse.wheel(dx, dy)
    elif t == ActionType.WAIT:
        await asyncio.sleep(float(action.amount) if action.amount else opts.wait_s)
    elif t == ActionType.BACK:
        # None when there is no history entry: the effect check then reports "no effect".
        await page.go_back(timeout=opts.nav_timeout_s * 1000, wait_until="domcontentloaded")
    elif t in (ActionType.FINISHED, ActionType.CALL_USER):
        return  # the loop ends the task; nothing to do in the page
    else:  # pragma: no cover - every ActionType is handled above
        raise ActionError(f"unsupported action {t.value}")
