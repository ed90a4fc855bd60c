"""Chain-of-Action-Thought (CoAT) context for any agent (Zhang et al., "Android in the Zoo:
Chain-of-Action-Thought for GUI Agents", §2.1; repository IMNearth/CoAT, commit bddd262).

Four parts per step, each switchable for the paper's ablation (Table 6 names them SD, PAR, AT,
AD):
- **screen description** (SD): the main content of the current screen (§2.1; Appendix A.2
  prompt: the screen type and the primary apps or widgets, under five sentences);
- **previous action result** (PAR): what the last action changed, comparing the screens before
  and after it (§2.1 "Action Result"; Appendix A.2: "By doing so, ...");
- **action think** (AT): the progress so far and the possible actions on this screen (Appendix
  A.2: "Think: ... Possible actions are ...");
- **next action description** (AD): the element or function the next action operates, in
  words ("click on the shopping cart icon").

How they are carried (§2.1): the history is the chain of previous action descriptions, each
with the result that followed it, instead of a bare list of past actions; the current step's
description and think come before the action. Here one model call per step writes all the
enabled parts: first the result of the previous action (it now sees the screen after it), then
the screen description, the think, the next action description, then the action in the agent's
own format. The AITZ annotation generated them with separate GPT-4V calls; a live agent has no
oracle, so the same call writes them (a documented choice).

Usage from any adapter::

    cfg = CoatConfig.parse("sd,par,at,ad")          # or CoatConfig() for all four
    system += "\\n\\n" + coat_instructions(cfg)       # the answer layout it asks for
    user = coat_context(history, cfg) + "\\n\\n" + user  # the chain so far
    parts = parse_coat(answer_text)                  # after the model answered
    action_text = parts.rest                         # hand this to the agent's own parser
    history.append(parts.step(action_summary))       # the action as executed
    history.set_last_result(parts.previous_action_result)  # filled on the next answer
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from regionfocus.adapters.model_text import bounded

_PART_KEYS = {
    "sd": "screen_description",
    "par": "previous_action_result",
    "at": "action_think",
    "ad": "next_action_description",
}
_HEADINGS = {
    "previous_action_result": "Previous action result",
    "screen_description": "Screen description",
    "action_think": "Action think",
    "next_action_description": "Next action description",
}
# The order the parts are written in one answer (see the module docstring).
_ORDER = ("previous_action_result", "screen_description", "action_think", "next_action_description")


@dataclass(frozen=True)
class CoatConfig:
    """Which CoAT parts the agent writes and carries. All on is the paper's CoAT; all off is
    the plain chain-of-action baseline (history = past actions only)."""

    screen_description: bool = True
    previous_action_result: bool = True
    action_think: bool = True
    next_action_description: bool = True

    @classmethod
    def parse(cls, spec: str) -> CoatConfig:
        """ "all" / "none" / a comma list of sd, par, at, ad (the paper's abbreviations, Table 6).
        Raises ValueError naming an unknown part."""
        s = spec.strip().lower()
        if s in ("all", "coat", ""):
            return cls()
        if s == "none":
            return cls(False, False, False, False)
        names = [p.strip() for p in s.split(",") if p.strip()]
        unknown = [n for n in names if n not in _PART_KEYS]
        if unknown:
            raise ValueError(f"unknown CoAT part(s) {', '.join(unknown)}; use sd, par, at, ad, all or none")
        return cls(**{v: (k in names) for k, v in _PART_KEYS.items()})

    @property
    def enabled(self) -> tuple[str, ...]:
        return tuple(p for p in _ORDER if getattr(self, p))

    def spec(self) -> str:
        inv = {v: k for k, v in _PART_KEYS.items()}
        return ",".join(inv[p] for p in self.enabled) or "none"


@dataclass(frozen=True)
class CoatStep:
    """One past step of the chain: what the agent saw, thought and did, and what followed.
    ``action``: the executed action in the agent's own words or format (always kept);
    ``action_result``: the model's own account of what the action changed, filled from the next
    answer's previous-action-result part; ``outcome``: what the environment reported ("changed
    the screen", "no visible effect", an error), kept apart because it is a fact, not a
    thought, and shown with or without CoAT."""

    action: str
    screen_description: str = ""
    action_think: str = ""
    action_description: str = ""
    action_result: str = ""
    outcome: str = ""


@dataclass
class CoatHistory:
    """The chain so far, oldest first."""

    steps: list[CoatStep] = field(default_factory=list)

    def append(self, step: CoatStep) -> None:
        self.steps.append(step)

    def set_last_result(self, result: str) -> None:
        """Attach ``result`` to the newest step when it has none yet (empty text is ignored)."""
        if self.steps and result.strip() and not self.steps[-1].action_result:
            self.steps[-1] = replace(self.steps[-1], action_result=result.strip())

    def __len__(self) -> int:
        return len(self.steps)


def coat_instructions(cfg: CoatConfig, style: str = "lines") -> str:
    """What to write before the action, one part per enabled part (empty when none is
    enabled). Appended to any agent's system prompt. ``style``: "lines" (labelled lines before
    the action, for agents answering in text) or "json" (keys of a JSON "thoughts" object, for
    agents answering in JSON, read back with :func:`coat_from_mapping`)."""
    asks = {
        "previous_action_result": "what your previous action changed on the screen, compared with "
        'the screen before it ("By doing so, ..."; write "None" at the first step)',
        "screen_description": "the main content of the current screen: its type and the primary "
        "widgets, in at most five sentences",
        "action_think": "the progress of the task so far in one sentence, then the possible actions "
        'on this screen ("Think: ... Possible actions are ...")',
        "next_action_description": "the element or function your next action operates, in words "
        '(e.g. "click on the Submit button")',
    }
    parts = cfg.enabled
    if not parts:
        return ""
    if style == "json":
        lines = ['Chain of action thought: inside "thoughts" also write these keys, in this order:']
        lines += [f'"{p}": {asks[p]}' for p in parts]
        return "\n".join(lines)
    if style != "lines":
        raise ValueError(f"style must be 'lines' or 'json', got {style!r}")
    lines = ["Before your action, write these parts, each on its own line starting with its label:"]
    lines += [f"{_HEADINGS[p]}: {asks[p]}" for p in parts]
    lines.append("Then write your action exactly as specified above.")
    return "\n".join(lines)


def coat_context(history: CoatHistory, cfg: CoatConfig, *, max_steps: int | None = None) -> str:
    """The history as CoAT carries it: each previous action described (its next-action
    description when enabled, else the action itself) with the result that followed it (when
    the previous-action-result part is enabled). ``max_steps``: keep only the most recent."""
    steps = history.steps[-max_steps:] if max_steps else history.steps
    if not steps:
        return "Previous actions: none"
    first = len(history.steps) - len(steps) + 1
    out = ["Previous actions:"]
    for i, s in enumerate(steps, first):
        what = s.action_description if (cfg.next_action_description and s.action_description) else ""
        line = f"Step {i}: {what} [{s.action}]" if what else f"Step {i}: {s.action}"
        if s.outcome:
            line += f" ({s.outcome})"
        if cfg.previous_action_result and s.action_result:
            line += f"\n  Result: {s.action_result}"
        out.append(line)
    return "\n".join(out)


@dataclass(frozen=True)
class CoatParts:
    """The parts parsed from one answer ("" when absent) and ``rest``: the answer with the
    labelled parts removed, for the agent's own action parser."""

    previous_action_result: str = ""
    screen_description: str = ""
    action_think: str = ""
    next_action_description: str = ""
    rest: str = ""

    def step(self, action: str) -> CoatStep:
        """This answer as a history step, with ``action`` as executed (its result comes later)."""
        return CoatStep(
            action=action,
            screen_description=self.screen_description,
            action_think=self.action_think,
            action_description=self.next_action_description,
        )


_LABEL_RE = re.compile(
    r"^\s*(?:[*#>-]+\s*)?(previous action result|screen description|action think|next action description)"
    r"\s*(?:\*\*)?\s*:\s*",
    re.I | re.M,
)
# A paragraph ends at the next label, a blank line, or a line starting another section of
# common agent formats (Thought:, Action:, a JSON object, a code fence).
_STOP_RE = re.compile(r"^\s*(?:thought|action|reflection|\{|```)\b", re.I)


def parse_coat(text: str) -> CoatParts:
    """The labelled CoAT parts of ``text`` (in any order; labels case-insensitive, may be
    bulleted or bold) and the remainder. A JSON answer with the parts as keys (as the ReAct
    agent writes them inside its "thoughts") is read by :func:`coat_from_mapping` instead."""
    found: dict[str, str] = {}
    keep: list[str] = []
    current: str | None = None
    for line in bounded(text).splitlines():
        m = _LABEL_RE.match(line)
        if m:
            current = m.group(1).lower().replace(" ", "_")
            found[current] = line[m.end() :].strip()
            continue
        if current is not None and line.strip() and not _STOP_RE.match(line):
            found[current] = (found[current] + " " + line.strip()).strip()
            continue
        current = None
        keep.append(line)
    return CoatParts(**{k: v for k, v in found.items()}, rest="\n".join(keep).strip())


def coat_from_mapping(d: dict) -> CoatParts:
    """CoAT parts from a JSON object's keys (snake_case, as :data:`_ORDER` names them)."""

    def get(key: str) -> str:
        v = d.get(key, "")
        return v.strip() if isinstance(v, str) else ""

    return CoatParts(**{k: get(k) for k in _ORDER})
