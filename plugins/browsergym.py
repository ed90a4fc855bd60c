"""RegionFocus around a BrowserGym or AgentLab agent: ``RegionFocusArgs(inner=<agent args>, ...)``.

BrowserGym runs an agent from its arguments (``AbstractAgentArgs.make_agent()``), in its own loop
(``browsergym.experiments.ExpArgs``; AgentLab's ``Study`` builds the same ``ExpArgs``). The wrapped
agent is an ordinary BrowserGym ``Agent``: each step it asks the inner agent, reads the inner
agent's action string without running it (:mod:`._bgym_actions`), and hands the screenshot and that
action to a :class:`~regionfocus.plugins.focus.Focus`, whose triggers (the inner agent's click
changed nothing, repeated itself, BrowserGym reported an error for it, or gave nothing BrowserGym can
parse) decide whether a RegionFocus round replaces it. A replaced action is ``mouse_click(x, y)`` in
screenshot pixels (BrowserGym divides by the page's scale factor); every other step executes the
inner agent's own string, untouched. What the round did goes where BrowserGym keeps an agent's
per-step record: the trace in ``AgentInfo.extra_info["regionfocus"]``, the counts in
``AgentInfo.stats`` (``rf_triggered``, ``rf_calls``, ``rf_prompt_tokens``, ``rf_completion_tokens``;
``summary_info.json`` sums them as ``stats.cum_rf_*``), and the star map the model chose on as
``regionfocus_choice_step_<n>.png`` in the experiment's folder.

Needs BrowserGym (``pip install "regionfocus[browsergym]"``), not AgentLab. On a machine without
downloads, run BrowserGym inside :func:`offline_browsergym` (Debian's Chromium, the ``miniwob``
wheel's pages, tiktoken's vocabulary from a wheel).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

try:
    from browsergym.core.action.base import AbstractActionSet
    from browsergym.core.action.highlevel import HighLevelActionSet
    from browsergym.experiments import AbstractAgentArgs, Agent, AgentInfo
    from browsergym.utils.obs import IGNORED_AXTREE_PROPERTIES, flatten_axtree_to_str
except ModuleNotFoundError as e:  # a one-line answer instead of a traceback into BrowserGym
    raise ModuleNotFoundError(
        f"regionfocus.plugins.browsergym needs BrowserGym ({e.name} is missing): "
        "pip install 'regionfocus[browsergym]'"
    ) from e

from regionfocus.actions import Action, ActionType
from regionfocus.config import RegionFocusConfig
from regionfocus.geometry import Box, Point

from ._bgym_actions import Reading, read_action, write_action
from ._bgym_offline import miniwob_url, offline_browsergym, seed_tiktoken_cache, use_offline_browsergym
from .focus import Decision, Focus

log = logging.getLogger(__name__)

STATS = ("rf_triggered", "rf_calls", "rf_prompt_tokens", "rf_completion_tokens")
_TREE_IGNORED = (*IGNORED_AXTREE_PROPERTIES, "focused")
# An inner agent may name what its step is after (a button, a field) as the round's instruction;
# without it a round grounds the task's goal.
STEP_GOAL = "step_goal"


class UnionActionSet(AbstractActionSet):
    """The inner agent's action set, plus BrowserGym's ``coord`` actions for refined clicks.

    A string goes to the inner set first (so the inner agent's actions mean what they always
    meant); only one the inner set cannot turn into code goes to the ``coord`` set, and when
    neither can, the inner set's error stands (BrowserGym reports it as the step's
    ``last_action_error``, as it would without RegionFocus). Descriptions are the inner set's.
    """

    def __init__(self, inner: AbstractActionSet):
        super().__init__(strict=getattr(inner, "strict", False))
        self.inner = inner
        self.coord = HighLevelActionSet(subsets=["coord"], demo_mode=getattr(inner, "demo_mode", None))

    def describe(self, with_long_description: bool = True, with_examples: bool = True) -> str:
        return self.inner.describe(with_long_description=with_long_description, with_examples=with_examples)

    def example_action(self, abstract: bool) -> str:
        return self.inner.example_action(abstract)

    def to_python_code(self, action) -> str:
        try:
            return self.inner.to_python_code(action)
        except Exception as first:
            try:
                return self.coord.to_python_code(action)
            except Exception:
                raise first from None

    def parses(self, action: str) -> bool:
        """Whether BrowserGym can turn ``action`` into code (its parser only; nothing runs)."""
        try:
            self.to_python_code(action)
        except Exception:
            return False
        return True


@dataclass
class _Seen:
    """What the wrapper needs of one raw BrowserGym observation, taken before the inner agent's
    own preprocessing (which may drop the screenshot or the element boxes)."""

    screenshot: Any
    elements: Mapping[str, Mapping]
    url: str | None
    goal: str
    error: str | None
    tree: str | None

    @classmethod
    def of(cls, obs: Mapping) -> _Seen:
        tree = None
        if isinstance(obs.get("axtree_object"), Mapping):
            # Without the focused flag: a click beside a button blurs it, which the tree says and
            # the screen does not show (Chromium draws no ring for a mouse focus); a focus the
            # screen shows (a caret, a ring) is still a pixel change.
            tree = flatten_axtree_to_str(obs["axtree_object"], ignored_properties=_TREE_IGNORED)
        elif isinstance(obs.get("axtree_txt"), str):
            tree = obs["axtree_txt"]
        goal = obs.get("goal") if isinstance(obs.get("goal"), str) else ""
        if not goal.strip():
            users = [
                m
                for m in obs.get("chat_messages") or ()
                if isinstance(m, Mapping) and m.get("role") == "user"
            ]
            goal = str(users[-1].get("message", "")) if users else ""
        return cls(
            screenshot=obs.get("screenshot"),
            elements=obs.get("extra_element_properties") or {},
            url=obs.get("url") if isinstance(obs.get("url"), str) else None,
            goal=goal,
            error=obs.get("last_action_error") or None,
            tree=tree,
        )


class RegionFocusAgent(Agent):
    """The inner BrowserGym agent with RegionFocus around it (made by :class:`RegionFocusArgs`)."""

    def __init__(self, inner: Agent, focus: Focus, image_dir: str | Path | None = None):
        self.inner = inner
        self.focus = focus
        self.image_dir = Path(image_dir) if image_dir else None
        self.action_set = UnionActionSet(inner.action_set)
        self._seen: _Seen | None = None
        self._step = 0
        self._rest: Point | None = None  # where the pointer rests after the last pointer action
        self._left: Box | None = None  # the element the last pointer action moved it off

    def obs_preprocessor(self, obs: dict) -> Any:
        self._seen = _Seen.of(obs)
        return self.inner.obs_preprocessor(obs)

    def get_action(self, obs: Any) -> tuple[str | None, Any]:
        seen, self._seen = self._seen, None
        if seen is None:  # called without BrowserGym's preprocessing step: read what obs carries
            seen = _Seen.of(obs if isinstance(obs, Mapping) else {})
        step, self._step = self._step, self._step + 1
        action, info = self.inner.get_action(obs)
        if action is None or seen.screenshot is None or not seen.goal.strip():
            # None ends BrowserGym's episode; without a screenshot or a goal no round can run.
            return action, _with(info, {k: 0 for k in STATS}, None)

        reading = read_action(action, seen.elements, _size(seen.screenshot))
        proposed = self._proposal(action, reading)
        instruction = _step_goal(info) or seen.goal
        decision = self.focus.step(
            seen.screenshot,
            proposed,
            instruction=instruction,
            text=str(_get(info, "think") or ""),
            url=seen.url,
            tree=seen.tree,
            error=seen.error,
            ignore=(self._left,) if self._left else (),
            refine=proposed is None or proposed.point is not None,
        )
        executed, point = action, reading.action.point if reading.action else None
        if decision.refined and (written := write_action(decision.action)):
            executed, point = written, decision.action.point
        self._moved_to(point, seen.elements)
        trace = {
            **decision.trace,
            "step": step,
            "instruction": instruction,
            "proposed": action,
            "read": reading.call or reading.why,
            "executed": executed,
            "choice_image": self._save_choice(decision, step),
        }
        return executed, _with(info, decision.stats, trace)

    def _proposal(self, action: str, reading: Reading) -> Action | None:
        """The inner action as the wrapper sees it: a pointer action it read (a round may
        replace it); anything else BrowserGym can parse, as an action without a point that
        passes through untouched (no round: Focus only records it); None for what BrowserGym's
        own parser rejects (the paper's "no parseable action": a round may act instead)."""
        if reading.action is not None:
            return reading.action
        if not isinstance(action, str) or not action.strip() or not self.action_set.parses(action):
            return None
        return Action(ActionType.WAIT, text=action, extras={"browsergym": "other"})

    def _moved_to(self, point: Point | None, elements: Mapping[str, Mapping]) -> None:
        """Note where the executed action puts the pointer. BrowserGym's screenshots show hover
        styles, and a pointer moving off a button repaints it: a click that did nothing elsewhere
        would look like a change. The element the pointer leaves (the smallest clickable box
        around its old place that does not hold the new one) is left out of the next pixel
        comparison; its tree state still counts."""
        self._left = None
        if point is None:
            return
        if self._rest is not None:
            box = element_box_at(elements, self._rest)
            if box is not None and not box.contains(point):
                self._left = box
        self._rest = point

    def _save_choice(self, decision: Decision, step: int) -> str | None:
        if decision.choice_image is None:
            return None
        folder = self.image_dir or experiment_dir()
        return save_choice_image(decision.choice_image, folder, step) if folder else None


@dataclass(kw_only=True)
class RegionFocusArgs(AbstractAgentArgs):
    """BrowserGym/AgentLab agent arguments that wrap ``inner`` (any ``AbstractAgentArgs``) with
    RegionFocus.

    ``agent``: the grounding model RegionFocus rounds use, named like the harnesses' ``--agent``
    (``"ocr"``: the offline stand-in; a served family such as ``"uitars-1.5"`` at ``base_url``
    serving ``model``; ``"claude"``/``"gemini"``/``"openai"`` hosted, key in ``api_key_env``).
    ``config``: a :class:`~regionfocus.config.RegionFocusConfig` or a dict of its fields.
    ``judge``: the self-judge trigger (a call per pointer step). ``enabled=False``: the same
    bookkeeping and stats, never a round. ``options``: the rest of
    :func:`~regionfocus.adapters.build.build_grounder`'s settings. ``image_dir``: where choice
    images go (default: the experiment's folder). ``offline``: make BrowserGym in the process
    that makes the agent use the local Chromium, the ``miniwob`` wheel's pages and a seeded
    tiktoken cache (:func:`use_offline_browsergym`), for AgentLab's parallel workers on a machine
    without Playwright's own Chromium.

    The grounding model is built once per process, on first ``make_agent``, and reused (reset)
    for every episode; :meth:`close` (AgentLab calls it after a study) closes it. Pickles without
    it, so AgentLab's parallel workers each build their own.
    """

    inner: AbstractAgentArgs
    agent: str = "ocr"
    base_url: str | list[str] | None = None
    model: str | None = None
    config: RegionFocusConfig | dict | None = None
    api_key_env: str | None = None
    backend: str = "http"
    judge: bool = False
    enabled: bool = True
    options: dict = field(default_factory=dict)
    image_dir: str | None = None
    offline: bool = False

    def __post_init__(self) -> None:
        if not callable(getattr(self.inner, "make_agent", None)):
            raise TypeError(
                f"RegionFocusArgs(inner=...) must be BrowserGym agent arguments with make_agent(), "
                f"got {type(self.inner).__name__}"
            )
        if not isinstance(self.agent, str) or not self.agent:
            raise ValueError(
                f"RegionFocusArgs(agent=...) must name a grounding model family, got {self.agent!r}"
            )
        if self.agent_name is None:
            self.agent_name = (
                f"RegionFocus-{getattr(self.inner, 'agent_name', None) or type(self.inner).__name__}"
            )
        super().__post_init__()
        self._focus: Focus | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_focus"] = None  # threads and clients stay in the process that made them
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_focus", None)

    def focus(self) -> Focus:
        """The :class:`Focus` this process's agents share (built on first use)."""
        if self._focus is None:
            self._focus = Focus(
                self.agent,
                base_url=self.base_url,
                model=self.model,
                config=self.config,
                api_key_env=self.api_key_env,
                backend=self.backend,
                judge=self.judge,
                enabled=self.enabled,
                **self.options,
            )
        return self._focus

    def make_agent(self) -> RegionFocusAgent:
        if self.offline:  # BrowserGym makes its browser right after this, in this process
            use_offline_browsergym()
        focus = self.focus()
        focus.reset()  # one episode per agent
        return RegionFocusAgent(self.inner.make_agent(), focus, self.image_dir)

    # AgentLab's hooks, forwarded to the inner arguments where they have them.
    def set_benchmark(self, benchmark: Any, demo_mode: bool) -> None:
        if hasattr(self.inner, "set_benchmark"):
            self.inner.set_benchmark(benchmark, demo_mode)

    def set_reproducibility_mode(self) -> None:
        if not hasattr(self.inner, "set_reproducibility_mode"):
            raise NotImplementedError(
                f"set_reproducibility_mode is not implemented for the inner agent {type(self.inner).__name__}"
            )
        self.inner.set_reproducibility_mode()

    def prepare(self) -> Any:
        return self.inner.prepare() if hasattr(self.inner, "prepare") else None

    def close(self) -> Any:
        try:
            return self.inner.close() if hasattr(self.inner, "close") else None
        finally:
            if self._focus is not None:
                self._focus.close()
                self._focus = None


def experiment_dir() -> Path | None:
    """The folder of the experiment running now. BrowserGym gives an agent no handle on it, but
    ``ExpArgs.run`` (BrowserGym's and AgentLab's) logs to ``<exp_dir>/experiment.log`` through a
    root-logger file handler for the length of the run: its folder is the experiment's."""
    for handler in logging.getLogger().handlers:
        name = getattr(handler, "baseFilename", None)
        if isinstance(handler, logging.FileHandler) and name and Path(name).name == "experiment.log":
            return Path(name).parent
    return None


def element_box_at(elements: Mapping[str, Mapping], point: Point) -> Box | None:
    """The smallest visible clickable element box (``extra_element_properties``: x, y, w, h in
    screenshot pixels) holding ``point``, as a :class:`~regionfocus.geometry.Box`."""
    best: Box | None = None
    for props in elements.values():
        bbox = props.get("bbox") if isinstance(props, Mapping) else None
        if not props.get("clickable") or not props.get("visibility") or not isinstance(bbox, (list, tuple)):
            continue
        try:
            x, y, w, h = (float(v) for v in bbox)
        except (TypeError, ValueError):
            continue
        if w <= 0 or h <= 0:
            continue
        box = Box(x, y, x + w, y + h)
        if box.contains(point) and (best is None or box.area < best.area):
            best = box
    return best


def save_choice_image(image: Any, folder: str | Path, step: int) -> str | None:
    """Write ``image`` as ``regionfocus_choice_step_<step>.png`` in ``folder`` (beside BrowserGym's
    ``screenshot_step_<step>.png``), whole or not at all; its path, or None when it could not be
    written (logged: a lost picture does not end the episode)."""
    path = Path(folder) / f"regionfocus_choice_step_{step}.png"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        image.save(tmp, format="PNG")
        os.replace(tmp, path)
    except OSError as e:
        log.warning("could not save the RegionFocus choice image %s: %s", path, e)
        tmp.unlink(missing_ok=True)
        return None
    return str(path)


def _size(screenshot: Any) -> tuple[int, int]:
    shape = getattr(screenshot, "shape", None)
    if shape is not None and len(shape) >= 2:
        return int(shape[1]), int(shape[0])
    size = getattr(screenshot, "size", None)
    return (int(size[0]), int(size[1])) if isinstance(size, tuple) else (0, 0)


def _get(info: Any, key: str) -> Any:
    if isinstance(info, Mapping):
        return info.get(key)
    return getattr(info, key, None)


def _step_goal(info: Any) -> str | None:
    extra = _get(info, "extra_info")
    goal = extra.get(STEP_GOAL) if isinstance(extra, Mapping) else None
    return goal if isinstance(goal, str) and goal.strip() else None


def _with(info: Any, stats: Mapping[str, int], trace: dict | None) -> Any:
    """The inner agent's info with our stats and trace added (its own entries kept)."""
    merged_stats = {**(_get(info, "stats") or {}), **stats}
    extra = dict(_get(info, "extra_info") or {})
    if trace is not None:
        extra["regionfocus"] = trace
    if isinstance(info, AgentInfo):
        return replace(info, stats=merged_stats, extra_info=extra)
    if isinstance(info, Mapping):
        return {**info, "stats": merged_stats, "extra_info": extra}
    return AgentInfo(stats=merged_stats, extra_info=extra)


__all__ = [
    "RegionFocusAgent",
    "RegionFocusArgs",
    "UnionActionSet",
    "experiment_dir",
    "miniwob_url",
    "offline_browsergym",
    "save_choice_image",
    "seed_tiktoken_cache",
    "use_offline_browsergym",
]
