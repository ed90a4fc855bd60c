"""The screen-to-text LLM agent: a text-only model drives the computer from screenshots alone.

After Sasagawa and Kawahara (Waseda), "環境依存情報を利用しない大規模言語モデルによるコンピュータータスク
自動化手法": each step the screenshot becomes text (:func:`regionfocus.adapters.perception.screen_text.describe_screen`,
§3.2), and the LLM is prompted ReAct-style (§3.3: an Auto-GPT-like system prompt stating the
role, constraints, commands, how boxes are written and the output format; a user prompt with
the task, the executed actions and the observation; a one-shot exemplar per task, §4.1) to
answer with its thoughts and a *list* of mouse/keyboard commands (Appendix B: MOVE_COORDS,
CLICK_COORDS, DBLCLICK_COORDS, MOUSEDOWN_COORDS, MOUSEUP_COORDS, SCROLL_UP_COORDS,
SCROLL_DOWN_COORDS, PRESS_KEY with <Enter>, <Backspace>, C-a, C-c, C-x, C-v, and TYPE_TEXT).
Two commands are ours: CLICK_ELEMENT (click the centre of an element named as the observation
names it) and DONE (end the task with an answer, for open-ended tasks; MiniWoB++ ends itself).

The answer is parsed into :class:`regionfocus.actions.Action` data with a JSON reader and, for
answers that are not quite JSON (the paper's own Table 5 example is not), a field-by-field
reader; nothing a model wrote is ever evaluated. Points are in pixels of the screenshot.

RegionFocus for this text-only agent, which neither paper has, is the core's round driving
:class:`~regionfocus.adapters.agents.react_model.ReactModel` with aggregation and history in
text: each zoomed view is described anew at its higher resolution, the LLM proposes one command
per view, the candidates and the tried points come back as numbered lists in text.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.agents import agent_prompt
from regionfocus.adapters.backends.base import ChatBackend, Message
from regionfocus.adapters.model_text import STRICT_JSON, bounded, json_objects, sound_action
from regionfocus.adapters.perception.screen_text import ScreenText, describe_screen
from regionfocus.adapters.perception.ui_detect import ElementDetector
from regionfocus.adapters.reasoning.coat import (
    CoatConfig,
    CoatHistory,
    CoatParts,
    CoatStep,
    coat_context,
    coat_from_mapping,
    coat_instructions,
)
from regionfocus.geometry import Point, clamp_point
from regionfocus.model import Usage

# ----------------------------------------------------------------------------------- prompt
SYSTEM_PROMPT = agent_prompt("text_system.txt")

COMMANDS = (
    "MOVE_COORDS",
    "CLICK_COORDS",
    "DBLCLICK_COORDS",
    "MOUSEDOWN_COORDS",
    "MOUSEUP_COORDS",
    "SCROLL_UP_COORDS",
    "SCROLL_DOWN_COORDS",
    "PRESS_KEY",
    "TYPE_TEXT",
    "CLICK_ELEMENT",
    "DONE",
)
# Appendix B's keys, and the Action keys they stand for.
KEYS: dict[str, tuple[str, ...]] = {
    "<enter>": ("enter",),
    "<backspace>": ("backspace",),
    "c-a": ("ctrl", "a"),
    "c-c": ("ctrl", "c"),
    "c-x": ("ctrl", "x"),
    "c-v": ("ctrl", "v"),
}
_POINT_COMMANDS = {
    "MOVE_COORDS": ActionType.HOVER,
    "CLICK_COORDS": ActionType.CLICK,
    "DBLCLICK_COORDS": ActionType.DOUBLE_CLICK,
}


# ----------------------------------------------------------------------------------- exemplars
@dataclass(frozen=True)
class Exemplar:
    """One worked example (a user prompt and the answer to it), shown before the real request.
    ``task``: the MiniWoB++ task name it belongs to; ``prompt``/``answer``: message texts."""

    task: str
    prompt: str
    answer: str

    def messages(self) -> list[Message]:
        return [{"role": "user", "content": self.prompt}, {"role": "assistant", "content": self.answer}]


def exemplar_tasks() -> list[str]:
    """Tasks with a shipped exemplar (adapters/agents/exemplars/<task>.json)."""
    root = resources.files("regionfocus.adapters.agents") / "exemplars"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".json"))


def load_exemplar(task: str) -> Exemplar | None:
    """The shipped one-shot exemplar for MiniWoB++ ``task``, or None. The file holds
    ``{"task", "instruction", "observation", "answer"}``; ``answer`` is the JSON object the
    model should have written, ``observation`` a screen-to-text description in the paper's
    layout (written from real screenshots of another seed)."""
    path = resources.files("regionfocus.adapters.agents") / "exemplars" / f"{task}.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in ("instruction", "observation", "answer"):
        if key not in data:
            raise ValueError(f"exemplar {path}: missing key {key!r}")
    prompt = user_prompt(data["instruction"], data["observation"], "", 1)
    return Exemplar(task, prompt, json.dumps(data["answer"], indent=2, ensure_ascii=False))


def user_prompt(instruction: str, observation: str, history: str, number: int) -> str:
    """The user message (Appendix C, Table 4): the task, the history, the observation."""
    parts = [f"Task:\n{instruction}"]
    if history:
        parts.append(history)
    parts.append(f"Observation {number}:\n{observation}")
    return "\n\n".join(parts)


# ----------------------------------------------------------------------------------- parsing
class CommandError(ValueError):
    """A command that cannot become an action (unknown name, missing or bad argument)."""


@dataclass
class ParsedAnswer:
    """What an answer said. ``actions``: screenshot pixels, in order; ``commands``: each
    action as a canonical command line (for the history), aligned with ``actions``;
    ``thoughts``: the thoughts object (strings); ``errors``: commands that were skipped, why."""

    actions: list[Action] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    thoughts: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    found_json: bool = False


_FIELD_RE = r'"{name}"\s*:\s*"((?:[^"\\]|\\.)*)"'
_COMMAND_RE = re.compile(r'"name"\s*:\s*"([A-Za-z_]+)"\s*,\s*"args"\s*:\s*(\{[^{}]*\})', re.S)


def _unescape(s: str) -> str:
    try:
        return json.loads(f'"{s}"')
    except json.JSONDecodeError:
        return s


def _coords(args: dict, size: tuple[int, int] | None) -> Point:
    raw = args.get("coords", args.get("coordinates", args.get("point")))
    if raw is None and "x" in args and "y" in args:
        raw = [args["x"], args["y"]]
    if not isinstance(raw, (list, tuple)) or len(raw) < 2:
        raise CommandError(f"needs coords [x, y], got {raw!r}")
    try:
        x, y = float(raw[0]), float(raw[1])
    except (TypeError, ValueError):
        raise CommandError(f"coords must be numbers, got {raw!r}") from None
    if not (math.isfinite(x) and math.isfinite(y)):
        raise CommandError(f"coords must be finite, got {raw!r}")
    p = Point(x, y)
    if size is not None:
        w, h = size
        if not (-0.05 * w <= x <= 1.05 * w and -0.05 * h <= y <= 1.05 * h):
            raise CommandError(f"coords {raw!r} lie outside the {w}x{h} screen")
        p = clamp_point(p, size)
    return p


def to_action(
    name: str,
    args: dict,
    *,
    screen: ScreenText | None = None,
    from_model: Any = None,
) -> Action:
    """One command as an action (MOUSEDOWN/MOUSEUP pairs are joined by :func:`parse_answer`).
    ``from_model``: maps a point written in the model's frame to screenshot pixels (None:
    identity); ``screen``: resolves CLICK_ELEMENT and bounds the coordinates. Raises
    :class:`CommandError`."""
    name = name.strip().upper()
    size = screen.size if screen is not None else None
    if not isinstance(args, dict):
        raise CommandError(f"{name}: args must be an object, got {args!r}")

    def pt() -> Point:
        p = _coords(args, None if from_model else size)
        return from_model(p) if from_model else p

    if name in _POINT_COMMANDS:
        return Action(_POINT_COMMANDS[name], pt())
    if name in ("SCROLL_UP_COORDS", "SCROLL_DOWN_COORDS"):
        return Action(ActionType.SCROLL, pt(), direction="up" if "UP" in name else "down")
    if name == "PRESS_KEY":
        key = str(args.get("key", args.get("keys", ""))).strip()
        keys = KEYS.get(key.lower())
        if keys is None:
            raise CommandError(f"PRESS_KEY: key must be one of {', '.join(KEYS)}; got {key!r}")
        return Action(ActionType.HOTKEY, keys=keys)
    if name == "TYPE_TEXT":
        text = args.get("text", args.get("content"))
        if not isinstance(text, str) or not text:
            raise CommandError(f"TYPE_TEXT: needs a non-empty text, got {text!r}")
        return Action(ActionType.TYPE, text=text)
    if name == "CLICK_ELEMENT":
        label = args.get("element", args.get("label"))
        if not isinstance(label, str) or not label.strip():
            raise CommandError(f"CLICK_ELEMENT: needs an element label, got {label!r}")
        el = screen.find(label) if screen is not None else None
        if el is None:
            raise CommandError(f"CLICK_ELEMENT: no element {label!r} in the observation")
        return Action(ActionType.CLICK, el.center, extras={"element": el.label})
    if name == "DONE":
        answer = args.get("answer", args.get("text", ""))
        return Action(ActionType.FINISHED, text=str(answer) if answer is not None else "")
    if name in ("MOUSEDOWN_COORDS", "MOUSEUP_COORDS"):
        raise CommandError(f"{name} must come in a MOUSEDOWN_COORDS / MOUSEUP_COORDS pair")
    raise CommandError(f"unknown command {name!r}; known: {', '.join(COMMANDS)}")


def format_command(action: Action) -> str:
    """An action as the command line the history shows (screenshot pixels, rounded)."""

    def xy(p: Point | None) -> str:
        return f"[{round(p.x)}, {round(p.y)}]" if p is not None else "[]"

    t = action.type
    if t == ActionType.CLICK:
        return f"CLICK_COORDS {xy(action.point)}"
    if t == ActionType.DOUBLE_CLICK:
        return f"DBLCLICK_COORDS {xy(action.point)}"
    if t == ActionType.HOVER:
        return f"MOVE_COORDS {xy(action.point)}"
    if t == ActionType.DRAG:
        return f"MOUSEDOWN_COORDS {xy(action.point)}, MOUSEUP_COORDS {xy(action.end_point)}"
    if t == ActionType.SCROLL:
        return f"SCROLL_{(action.direction or 'down').upper()}_COORDS {xy(action.point)}"
    if t == ActionType.HOTKEY:
        # Appendix B spells the keys "<Enter>", "<Backspace>", "C-a", ...
        shown = {
            v: (k[0] + k[1:].capitalize() if k.startswith("<") else k.capitalize()) for k, v in KEYS.items()
        }
        return f"PRESS_KEY {shown.get(tuple(action.keys), '+'.join(action.keys))}"
    if t == ActionType.TYPE:
        return f"TYPE_TEXT {json.dumps(action.text, ensure_ascii=False)}"
    if t == ActionType.FINISHED:
        return f"DONE {json.dumps(action.text, ensure_ascii=False)}"
    return action.describe()


def parse_answer(text: str, *, screen: ScreenText | None = None, from_model: Any = None) -> ParsedAnswer:
    """The thoughts and the commands of a ReAct answer, commands as actions in order.

    Reads the first JSON object with "commands" or "thoughts"; failing that, reads
    ``"name": ..., "args": {...}`` pairs and thought fields one by one (answers that are almost
    JSON, like the paper's Table 5). A MOUSEDOWN_COORDS followed by a MOUSEUP_COORDS becomes one
    drag. Bad commands are skipped and reported in ``errors``; never raises, never evaluates.
    """
    out = ParsedAnswer()
    body = re.sub(r"```(?:json)?", "", bounded(text))
    obj = next((o for o in json_objects(body) if "commands" in o or "thoughts" in o), None)
    raw_cmds: list[tuple[str, Any]] = []
    if obj is not None:
        out.found_json = True
        th = obj.get("thoughts")
        if isinstance(th, dict):
            out.thoughts = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in th.items()}
        cmds = obj.get("commands", [])
        if isinstance(cmds, dict):
            cmds = [cmds]
        if not isinstance(cmds, list):
            out.errors.append(f"commands must be a list, got {type(cmds).__name__}")
            cmds = []
        for c in cmds:
            if isinstance(c, dict) and isinstance(c.get("name"), str):
                raw_cmds.append((c["name"], c.get("args", {})))
            else:
                out.errors.append(f"not a command object: {str(c)[:80]!r}")
    else:
        for key in ("text", "reasoning", "plan", "criticism", "speak"):
            m = re.search(_FIELD_RE.format(name=key), body)
            if m:
                out.thoughts[key] = _unescape(m.group(1))
        for m in _COMMAND_RE.finditer(body):
            try:
                args = STRICT_JSON.decode(m.group(2))
            except json.JSONDecodeError:
                out.errors.append(f"{m.group(1)}: args are not JSON: {m.group(2)[:80]!r}")
                continue
            raw_cmds.append((m.group(1), args))
    if not raw_cmds and not out.errors:
        out.errors.append("no commands in the answer")
    pending: Point | None = None
    for name, args in raw_cmds:
        up = name.strip().upper()
        try:
            if up == "MOUSEDOWN_COORDS":
                pending = to_action("CLICK_COORDS", args, screen=screen, from_model=from_model).point
                continue
            if up == "MOUSEUP_COORDS":
                if pending is None:
                    raise CommandError("MOUSEUP_COORDS without a MOUSEDOWN_COORDS before it")
                end = to_action("CLICK_COORDS", args, screen=screen, from_model=from_model).point
                action = Action(ActionType.DRAG, pending, end)
                pending = None
            else:
                action = to_action(name, args, screen=screen, from_model=from_model)
        except CommandError as e:
            out.errors.append(f"{name}: {e}")
            continue
        action = sound_action(action)
        if action is None:
            out.errors.append(f"{name}: a number in it is not finite")
            continue
        out.actions.append(action)
        out.commands.append(format_command(action))
    if pending is not None:
        out.errors.append("MOUSEDOWN_COORDS without a MOUSEUP_COORDS after it")
    return out


# ----------------------------------------------------------------------------------- agent
@dataclass
class ReactStep:
    """One step of the agent. ``actions`` (screenshot pixels) and ``commands`` are aligned;
    empty ``actions`` means the model decided nothing usable (the paper counts that as a failed
    episode). ``raw``: the model's text; ``screen``: the observation it was given;
    ``coat``: the CoAT parts it wrote (when CoAT is on); ``prompt``: the last user message."""

    actions: list[Action]
    commands: list[str]
    raw: str
    thoughts: dict[str, str]
    screen: ScreenText
    errors: list[str] = field(default_factory=list)
    coat: CoatParts | None = None
    prompt: str = ""
    usage: Usage = field(default_factory=Usage)

    def to_dict(self) -> dict:
        return {
            "actions": [a.to_dict() for a in self.actions],
            "commands": self.commands,
            "raw": self.raw,
            "thoughts": self.thoughts,
            "errors": self.errors,
            "coat": None
            if self.coat is None
            else {k: v for k, v in self.coat.__dict__.items() if k != "rest"},
            "latency_s": round(self.usage.latency_s, 3),
            "error": self.usage.error,
        }


class ReactAgent:
    """The screen-to-text ReAct policy over any chat backend (text-only messages).

    ``backend``: an :class:`regionfocus.adapters.backends.base.ChatBackend`, e.g.
    ``OpenAIBackend(["http://127.0.0.1:8000/v1"], model="gpt-4")``. ``task``: the MiniWoB++
    task name whose shipped exemplar is shown one-shot (or pass ``exemplar`` directly; neither:
    zero-shot). ``coat``: a :class:`~regionfocus.adapters.reasoning.coat.CoatConfig` to carry Chain-of-Action-Thought
    (the parts are asked for inside "thoughts" and the history becomes the CoAT chain); None for
    the paper's plain history of executed actions. ``detector``/``min_conf``: passed to
    :func:`~regionfocus.adapters.perception.screen_text.describe_screen`. ``max_tokens``: 512 as the paper's default
    (Appendix B); temperature 0.

    Use::

        agent = ReactAgent(backend, task="click-button")
        history = CoatHistory()
        step = await agent.next_actions(screenshot, instruction, history)
        for action, command in zip(step.actions, step.commands):
            result = await env.act(action)                       # effect check after each
            history.append(agent.history_step(step, command, outcome="changed the screen"))
    """

    name = "screen-text"

    def __init__(
        self,
        backend: ChatBackend,
        *,
        task: str | None = None,
        exemplar: Exemplar | None = None,
        coat: CoatConfig | None = None,
        detector: ElementDetector | None = None,
        min_conf: float = 0.3,
        max_tokens: int = 512,
        temperature: float = 0.0,
        layout: str = "paper",
    ):
        if backend is None:
            raise ValueError(
                "ReactAgent needs a chat backend (e.g. regionfocus.adapters.backends.OpenAIBackend)"
            )
        if layout not in ("paper", "merged"):
            raise ValueError(f"layout must be 'paper' or 'merged', got {layout!r}")
        self.backend = backend
        self.exemplar = exemplar if exemplar is not None else (load_exemplar(task) if task else None)
        self.coat = coat
        self.detector = detector
        self.min_conf = float(min_conf)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.layout = layout

    # -------------------------------------------------------------- observation
    async def describe(self, image: Image.Image) -> ScreenText:
        return await asyncio.to_thread(describe_screen, image, detector=self.detector, min_conf=self.min_conf)

    def system_prompt(self) -> str:
        if self.coat is None or not self.coat.enabled:
            return SYSTEM_PROMPT
        return SYSTEM_PROMPT + "\n\n" + coat_instructions(self.coat, style="json")

    def history_text(self, history: CoatHistory) -> str:
        if self.coat is not None:
            return coat_context(history, self.coat)
        if not history.steps:
            return ""
        lines = ["Executed actions:"]
        for i, s in enumerate(history.steps, 1):
            lines.append(f"{i}. {s.action}" + (f" ({s.outcome})" if s.outcome else ""))
        return "\n".join(lines)

    def messages(self, instruction: str, screen: ScreenText, history: CoatHistory) -> list[Message]:
        """The request: system prompt, the exemplar pair, then the task, history and observation."""
        msgs: list[Message] = [{"role": "system", "content": self.system_prompt()}]
        if self.exemplar is not None:
            msgs.extend(self.exemplar.messages())
        prompt = user_prompt(
            instruction, screen.to_text(layout=self.layout), self.history_text(history), len(history) + 1
        )
        msgs.append({"role": "user", "content": prompt})
        return msgs

    async def _complete(self, msgs: list[Message], max_tokens: int | None = None) -> tuple[str, Usage]:
        try:
            resp = await self.backend.complete(
                msgs, max_tokens=max_tokens or self.max_tokens, temperature=self.temperature
            )
        except Exception as e:  # noqa: BLE001 - a failed call is a recorded step, not a crash
            return "", Usage(error=f"{type(e).__name__}: {e}")
        return resp.text, resp.usage

    # -------------------------------------------------------------- acting
    async def next_actions(
        self,
        image: Image.Image,
        instruction: str,
        history: CoatHistory | None = None,
        *,
        screen: ScreenText | None = None,
    ) -> ReactStep:
        """The commands for this screen, as actions in screenshot pixels, with the raw answer.

        ``image``: the current screenshot; ``history``: the executed steps so far (commands as
        :meth:`history_step` writes them); ``screen``: a description already made of this image.
        A failed model call or an answer with no usable command gives an empty ``actions`` and
        says why in ``errors``; never raises for what the model wrote.
        """
        history = history if history is not None else CoatHistory()
        if screen is None:
            screen = await self.describe(image)
        msgs = self.messages(instruction, screen, history)
        t0 = time.perf_counter()
        raw, usage = await self._complete(msgs)
        usage.latency_s = usage.latency_s or time.perf_counter() - t0
        if usage.error:
            return ReactStep([], [], "", {}, screen, [usage.error], prompt=msgs[-1]["content"], usage=usage)
        parsed = parse_answer(raw, screen=screen)
        parts = None
        if self.coat is not None:
            parts = coat_from_mapping(parsed.thoughts)
            # Set the chain's last result before the caller appends this step.
            history.set_last_result(parts.previous_action_result)
        return ReactStep(
            parsed.actions,
            parsed.commands,
            raw,
            parsed.thoughts,
            screen,
            parsed.errors,
            parts,
            msgs[-1]["content"],
            usage,
        )

    def history_step(self, step: ReactStep, command: str, outcome: str = "") -> CoatStep:
        """The history entry for one executed command of ``step`` (CoAT parts attached to it)."""
        return history_entry(step.coat, command, outcome)


def history_entry(parts: CoatParts | None, command: str, outcome: str = "") -> CoatStep:
    """The history entry for one executed command, with the CoAT parts of its answer if any."""
    if parts is None:
        return CoatStep(command, outcome=outcome)
    s = parts.step(command)
    return CoatStep(s.action, s.screen_description, s.action_think, s.action_description, "", outcome)
