"""RegionFocus around an OSWorld-style agent: ``predict(instruction, obs) -> (response, actions)``.

OSWorld's agents (mm_agents/agent.py's ``PromptAgent.predict`` and the agents written to its
interface) get the observation dict the environment returns (``obs["screenshot"]``: PNG bytes;
``obs["accessibility_tree"]``: XML or None) and answer with their response and a list of actions:
pyautogui code strings, or the control strings ``"WAIT"``, ``"DONE"``, ``"FAIL"``
(desktop_env/desktop_env.py's ``DesktopEnv.step``), or dicts carrying the code as ``"command"``.
The runner (lib_run_single.py) executes each action in turn. Read in xlang-ai/OSWorld's fork
pkueecszc/OSWorld @ be0b6285d58df9e12bc3d67238642ec177c6fd40 (the upstream repository is not
in the search index).

:class:`OSWorldFocus` is an agent of the same shape around the caller's agent. Each step it asks
the agent, reads the first action's code without running it (:mod:`.pyautogui_code`: which call
is refined and why), hands the screenshot and that click to :class:`~.focus.Focus`, and writes
the point Focus returns back into the same code: only the two coordinate literals change. Every
other action, and every string it cannot read (typing, keys, opaque or hostile code, a syntax
error, computed coordinates), goes back to the runner exactly as the agent wrote it; Focus is
told what ran (so the next screenshot's change is put down to the right action), never asked to
replace it.

The cursor: OSWorld's Linux server pastes the pointer's image into every screenshot with its
top-left corner at the pointer (desktop_env/server/main.py, ``capture_screen_with_cursor``),
so a click that changed nothing still moves a cursor across the screenshot. The pointer is
where the last executed code left it (tracked from the literals of the actions returned; lost
after code that could not be read, until the next point); the box ``cursor_box`` around it, in
both screenshots, does not count as a change.

Screen and screenshot: pyautogui's coordinates are the screen's logical pixels. On a HiDPI
screen the screenshot has more pixels than that; pass ``screen_size=(width, height)`` (the
logical size, e.g. ``pyautogui.size()`` on the machine) and points are scaled both ways.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.geometry import Box, Point

from .focus import Decision, Focus, as_image
from .pyautogui_code import CodeReading, read_code

# The pixels a drawn cursor may cover, as offsets from the pointer (screen pixels: left, top,
# right, bottom): OSWorld's Linux screenshots paste the cursor image (24 or 32 px square in the
# usual themes) right and down from the pointer. Kept tight: a change a click makes only inside
# this box (a small checkbox's right-lower part) is not seen in the pixels, only in the tree.
CURSOR_BOX = (0.0, 0.0, 32.0, 32.0)
LOG_NAME = "regionfocus.jsonl"
_CONTROL = {
    "WAIT": Action(ActionType.WAIT),
    "DONE": Action(ActionType.FINISHED),
    "FAIL": Action(ActionType.FINISHED),
}


class OSWorldFocus:
    """An OSWorld-style agent whose first click of a step RegionFocus may correct.

    ``agent``: any object with ``predict(instruction, obs) -> (response, actions)``; its other
    attributes are reachable through this one. ``focus``: a :class:`~.focus.Focus`, or the
    grounding model's family name with ``focus_options`` for one (``base_url``, ``model``,
    ``config``, ``api_key_env``, ``backend``, ...; ``"ocr"``: the offline stand-in); a Focus built
    here is closed by :meth:`close`. ``screen_size``: the screen's logical size when the
    screenshot's differs (HiDPI). ``cursor``: where the pointer is at the first screenshot, when
    known (screen pixels). ``cursor_box``: the drawn cursor's extent around the pointer.
    ``use_tree``: compare ``obs["accessibility_tree"]`` too when telling whether a click changed
    anything. ``goal``: ``goal(instruction, response, code) -> str`` names what a round grounds
    (default: the task instruction). ``log_dir``: a folder for one JSON line per step
    (``regionfocus.jsonl``) and the image-as-map of each round that chose on one.
    """

    def __init__(
        self,
        agent: Any,
        focus: Focus | str = "ocr",
        *,
        screen_size: tuple[int, int] | None = None,
        cursor: tuple[float, float] | None = None,
        cursor_box: tuple[float, float, float, float] = CURSOR_BOX,
        use_tree: bool = True,
        goal: Callable[[str, Any, str], str] | None = None,
        log_dir: str | os.PathLike | None = None,
        **focus_options: Any,
    ):
        if not callable(getattr(agent, "predict", None)):
            raise TypeError(f"agent must have predict(instruction, obs), got {type(agent).__name__}")
        self.screen_size = _check_size(screen_size)
        self.cursor_box = _check_box(cursor_box)
        self.agent = agent
        self.use_tree = use_tree
        self.goal = goal
        self.log_dir = Path(log_dir) if log_dir is not None else None
        if isinstance(focus, Focus):
            if focus_options:
                raise TypeError(
                    f"focus options {sorted(focus_options)} need a family name, not a ready Focus"
                )
            self.focus, self._owns_focus = focus, False
        elif isinstance(focus, str):
            self.focus, self._owns_focus = Focus(focus, **focus_options), True
        else:
            raise TypeError(f"focus must be a Focus or a family name, got {type(focus).__name__}")
        self._start(cursor)

    def _start(self, cursor: tuple[float, float] | None) -> None:
        self.pointer: Point | None = Point(*map(float, cursor)) if cursor is not None else None
        self.steps: list[dict[str, Any]] = []
        self.stats = {
            "rf_triggered": 0,
            "rf_calls": 0,
            "rf_prompt_tokens": 0,
            "rf_completion_tokens": 0,
            "rf_refined": 0,
        }

    # ------------------------------------------------------------------ the agent's interface
    def predict(self, instruction: str, obs: dict) -> tuple[Any, Any]:
        """The agent's ``(response, actions)``, with the first action's click corrected when a
        RegionFocus round chose another point. ``response`` is returned as the agent gave it."""
        if not isinstance(obs, dict) or "screenshot" not in obs:
            raise ValueError("obs must be OSWorld's observation dict with the 'screenshot' PNG bytes")
        response, actions = self.agent.predict(instruction, obs)
        shot = as_image(obs["screenshot"])
        sx, sy = self._scale(shot)
        record: dict[str, Any] = {"step": len(self.steps) + 1}
        out = actions
        if isinstance(actions, (list, tuple)) and actions:
            first = actions[0]
            code = first.get("command") if isinstance(first, dict) else first
            reading = read_code(code)
            decision = self._decide(shot, reading, instruction, response, obs, sx, sy)
            record.update(self._account(decision, reading))
            new_code = self._written(reading, decision, sx, sy)
            if new_code is not None:
                out = _replace_first(actions, new_code)
                record.update(code=reading.code, refined_code=new_code)
                self._save_choice(decision, record["step"])
        else:
            record.update(reason=f"no action to execute ({type(actions).__name__})")
        self._follow_pointer(out, self.screen_size or shot.size)
        self._log(record)
        return response, out

    def reset(self, *args: Any, cursor: tuple[float, float] | None = None, **kwargs: Any) -> None:
        """Reset the agent (with the arguments given) and the episode: stars, the actions on
        the current screen, the tracked pointer (``cursor``: where it now is, when known)."""
        reset = getattr(self.agent, "reset", None)
        if callable(reset):
            reset(*args, **kwargs)
        self.focus.reset()
        self._start(cursor)

    def close(self) -> None:
        """Close the Focus built here (a Focus passed in stays the caller's)."""
        if self._owns_focus:
            self.focus.close()

    def __enter__(self) -> OSWorldFocus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("agent", "focus"):
            raise AttributeError(name)
        return getattr(self.agent, name)

    # ------------------------------------------------------------------ one step
    def _decide(self, shot, reading: CodeReading, instruction, response, obs, sx, sy) -> Decision:
        text = response if isinstance(response, str) else ""
        goal = self.goal(instruction, response, reading.code) if self.goal else instruction
        if reading.target is not None:
            proposed = reading.action()
        elif reading.code.strip() in _CONTROL:
            proposed = _CONTROL[reading.code.strip()]
        else:
            proposed = reading.action() or Action(ActionType.WAIT, extras={"opaque": reading.reason})
        proposed = proposed.map_points(lambda p: Point(p.x * sx, p.y * sy))
        tree = obs.get("accessibility_tree") if self.use_tree else None
        return self.focus.step(
            shot,
            proposed,
            instruction=goal or instruction,
            text=text,
            tree=tree if isinstance(tree, str) else None,
            ignore=self._cursor_ignore(sx, sy),
            refine=reading.target is not None,
        )

    def _written(self, reading: CodeReading, decision: Decision, sx: float, sy: float) -> str | None:
        """The code with the round's point, or None when the agent's code stands."""
        action = decision.action
        if not decision.refined or reading.target is None or action is None or action.point is None:
            return None
        w, h = self.screen_size or (None, None)
        x, y = action.point.x / sx, action.point.y / sy
        if w is not None:
            x, y = min(max(x, 0.0), w - 1.0), min(max(y, 0.0), h - 1.0)
        return reading.with_point(Point(x, y))

    def _account(self, decision: Decision, reading: CodeReading) -> dict[str, Any]:
        for k, v in decision.stats.items():
            self.stats[k] = self.stats.get(k, 0) + v
        refined = decision.refined and reading.target is not None
        self.stats["rf_refined"] += int(refined)
        return {
            "refinable": reading.target is not None,
            "reason": reading.reason,
            "trigger": decision.trigger,
            "refined": refined,
            "stats": decision.stats,
            "trace": decision.trace,
        }

    # ------------------------------------------------------------------ the cursor
    def _scale(self, shot: Image.Image) -> tuple[float, float]:
        if self.screen_size is None:
            return 1.0, 1.0
        return shot.width / self.screen_size[0], shot.height / self.screen_size[1]

    def _cursor_ignore(self, sx: float, sy: float) -> tuple[Box, ...]:
        if self.pointer is None:
            return ()
        left, top, right, bottom = self.cursor_box
        p = self.pointer
        return (Box((p.x + left) * sx, (p.y + top) * sy, (p.x + right) * sx, (p.y + bottom) * sy),)

    def _follow_pointer(self, actions: Any, screen: tuple[int, int]) -> None:
        """Where the pointer is once the runner has executed ``actions`` (screen pixels; the
        pointer stops at the screen's edge, wherever the code sent it)."""
        if not isinstance(actions, (list, tuple)):
            return
        for a in actions:
            code = a.get("command") if isinstance(a, dict) else a
            if isinstance(code, str) and code.strip() in _CONTROL:
                continue
            r = read_code(code)
            if not r.plain:
                self.pointer = None  # it may have moved the pointer anywhere
                continue
            for call in r.calls:
                if call.point is not None:
                    x, y = call.point.x, call.point.y
                    self.pointer = Point(min(max(x, 0.0), screen[0] - 1.0), min(max(y, 0.0), screen[1] - 1.0))
                elif call.name in ("moveRel", "move", "dragRel", "drag"):
                    self.pointer = None

    # ------------------------------------------------------------------ results
    def _log(self, record: dict[str, Any]) -> None:
        self.steps.append(record)
        if self.log_dir is None:
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / LOG_NAME, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, default=str) + "\n")

    def _save_choice(self, decision: Decision, step: int) -> None:
        if self.log_dir is not None and decision.choice_image is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            path = self.log_dir / f"regionfocus_step_{step}.png"
            tmp = path.with_suffix(".png.tmp")
            decision.choice_image.save(tmp, format="PNG")
            os.replace(tmp, path)


def _replace_first(actions: Sequence[Any], code: str) -> list[Any]:
    first = actions[0]
    new = {**first, "command": code} if isinstance(first, dict) else code
    return [new, *actions[1:]]


def _check_size(size: Any) -> tuple[int, int] | None:
    if size is None:
        return None
    try:
        w, h = (int(v) for v in size)
    except (TypeError, ValueError):
        raise ValueError(f"screen_size must be (width, height) in pixels, got {size!r}") from None
    if w < 1 or h < 1:
        raise ValueError(f"screen_size must be positive, got {size!r}")
    return w, h


def _check_box(box: Any) -> tuple[float, float, float, float]:
    try:
        left, top, right, bottom = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ValueError(f"cursor_box must be (left, top, right, bottom) offsets, got {box!r}") from None
    if right <= left or bottom <= top:
        raise ValueError(f"cursor_box must have right > left and bottom > top, got {box!r}")
    return left, top, right, bottom
