"""The BrowserGym/AgentLab plug-in (plugins/browsergym.py) on real MiniWoB++ tasks, run by
BrowserGym's own runner (``ExpArgs``), scored by BrowserGym's reward; one Playwright for the module
(``offline_browsergym``: Debian's Chromium, the ``miniwob`` wheel's pages, tiktoken's vocabulary
from the bpe-openai wheel), one OCR grounding model for the wrapped runs.

The inner agents are the demos of benchmarks/bgym_demo_agents.py: one that clicks elements by id,
one whose coordinate clicks land 12 px right of their targets (on MiniWoB++'s blank page: the
screen stays byte-identical). The tests without a browser (action sets, arguments, pickling) are
fast. BrowserGym is not in .venv (its Playwright pin, pyproject.toml's ``browsergym`` extra):
``bash scripts/check_browsergym_env.sh --test`` runs this file in the plug-in's own environment.
"""

from __future__ import annotations

import gzip
import json
import logging
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

pytest.importorskip(
    "browsergym.experiments",
    reason="BrowserGym is not installed here: scripts/check_browsergym_env.sh --test",
)

from browsergym.core.action.highlevel import HighLevelActionSet  # noqa: E402
from browsergym.experiments import AbstractAgentArgs, Agent, AgentInfo, EnvArgs, ExpArgs  # noqa: E402

from benchmarks.bgym_demo_agents import PageReader, PageReaderArgs  # noqa: E402
from regionfocus.plugins.browsergym import (  # noqa: E402
    RegionFocusAgent,
    RegionFocusArgs,
    UnionActionSet,
    experiment_dir,
    offline_browsergym,
    save_choice_image,
)

TASK = "miniwob.click-button"
SEED = 0


# ------------------------------------------------------------------ without a browser (fast)
def test_the_action_set_takes_the_inner_agents_actions_and_refined_clicks():
    union = UnionActionSet(HighLevelActionSet(subsets=["bid"], multiaction=False))
    assert "def click(" in union.to_python_code("click('13')")
    assert "def mouse_click(" not in union.to_python_code("click('13')")
    coord = union.to_python_code("mouse_click(10.5, 20.0)")  # not the inner set's: the coord set's
    assert "def mouse_click(" in coord and coord.rstrip().endswith("mouse_click(10.5, 20.0)")
    # Neither set takes it: the inner set's own error stands (its parser reads two calls here).
    with pytest.raises(ValueError, match="only single-actions are allowed"):
        union.to_python_code("__import__('os').system('true')")
    with pytest.raises(NameError, match="Invalid action type 'goto'"):  # in neither set
        union.to_python_code("goto('http://example.com')")
    with pytest.raises(ValueError, match="empty action"):
        union.to_python_code("I would click the button")
    assert union.parses("click('13')") and not union.parses("") and not union.parses("hello world")
    assert union.describe(with_long_description=False) == union.inner.describe(with_long_description=False)


@dataclass
class HookedArgs(AbstractAgentArgs):
    """Inner arguments with AgentLab's hooks, recording calls."""

    calls: tuple = ()

    def make_agent(self) -> Agent:
        return PageReader()

    def set_benchmark(self, benchmark, demo_mode):
        self.calls += (("set_benchmark", benchmark, demo_mode),)

    def set_reproducibility_mode(self):
        self.calls += ("set_reproducibility_mode",)

    def prepare(self):
        self.calls += ("prepare",)

    def close(self):
        self.calls += ("close",)


def test_the_arguments_forward_agentlabs_hooks_and_pickle_without_their_model():
    args = RegionFocusArgs(inner=HookedArgs(), agent="a11y")  # a grounding model that loads nothing
    assert args.agent_name == "RegionFocus-HookedArgs"
    args.set_benchmark("miniwob", False)
    args.set_reproducibility_mode()
    args.prepare()
    agent = args.make_agent()
    assert isinstance(agent, RegionFocusAgent) and isinstance(agent.inner, PageReader)
    assert args._focus is not None and args.make_agent().focus is agent.focus  # one model, reused
    copy = pickle.loads(pickle.dumps(args))  # what ExpArgs.prepare and AgentLab's workers do
    assert copy._focus is None and copy.inner.calls == args.inner.calls and copy.agent == "a11y"
    args.close()
    assert args._focus is None
    assert args.inner.calls == (
        ("set_benchmark", "miniwob", False),
        "set_reproducibility_mode",
        "prepare",
        "close",
    )

    plain = RegionFocusArgs(inner=PageReaderArgs())  # bgym's own AbstractAgentArgs: no such hooks
    plain.set_benchmark("miniwob", True)  # nothing to forward
    with pytest.raises(NotImplementedError, match="inner agent PageReaderArgs"):
        plain.set_reproducibility_mode()
    with pytest.raises(TypeError, match="must be BrowserGym agent arguments with make_agent"):
        RegionFocusArgs(inner="PageReader")
    with pytest.raises(ValueError, match="must name a grounding model family"):
        RegionFocusArgs(inner=PageReaderArgs(), agent="")


def test_choice_images_go_to_the_running_experiments_folder(tmp_path):
    assert experiment_dir() is None
    handler = logging.FileHandler(tmp_path / "experiment.log")  # as ExpArgs.run logs its run
    logging.getLogger().addHandler(handler)
    try:
        assert experiment_dir() == tmp_path
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    image = Image.new("RGB", (8, 6), (255, 20, 147))
    path = save_choice_image(image, tmp_path, 3)
    assert path == str(tmp_path / "regionfocus_choice_step_3.png")
    assert Image.open(path).getpixel((2, 2)) == (255, 20, 147)
    assert save_choice_image(image, tmp_path / "missing" / "folder", 1) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["experiment.log", "regionfocus_choice_step_3.png"]


# ------------------------------------------------------------------ BrowserGym's runner (slow)
@pytest.fixture(scope="module")
def bgym():
    with offline_browsergym() as pw:
        yield pw


@pytest.fixture(scope="module")
def ocr_args():
    """Wrapped-agent arguments around the offset clicker, sharing one OCR model."""
    args = RegionFocusArgs(inner=PageReaderArgs(offset=12), agent="ocr")
    yield args
    args.close()


def run(args, root: Path, task: str = TASK, seed: int = SEED, max_steps: int = 4):
    exp = ExpArgs(agent_args=args, env_args=EnvArgs(task_name=task, task_seed=seed, max_steps=max_steps))
    exp.prepare(root)
    exp.run()
    folder = Path(exp.exp_dir)
    summary = json.loads((folder / "summary_info.json").read_text())
    steps = []
    for i in range(summary["n_steps"] + 1):
        with gzip.open(folder / f"step_{i}.pkl.gz") as f:
            steps.append(pickle.load(f))
    return folder, summary, steps


def trace(step) -> dict:
    info = step.agent_info
    extra = info.get("extra_info") if isinstance(info, dict) else info.extra_info
    return (extra or {}).get("regionfocus") or {}


@pytest.mark.slow
def test_clicks_that_change_nothing_are_refined_and_win_browsergyms_reward(bgym, ocr_args, tmp_path):
    folder, plain, _ = run(PageReaderArgs(offset=12), tmp_path / "plain")
    assert plain["cum_reward"] == 0 and plain["err_msg"] is None
    shots = [np.asarray(Image.open(folder / f"screenshot_step_{i}.png")) for i in range(2)]
    assert np.array_equal(shots[0], shots[1])  # the inner agent's click changed nothing

    folder, summary, steps = run(ocr_args, tmp_path / "wrapped")
    assert summary["err_msg"] is None and summary["cum_reward"] == 1.0
    traces = [trace(s) for s in steps[:-1]]
    refined = [t for t in traces if t.get("source") == "regionfocus"]
    assert refined, traces
    first = refined[0]
    assert first["trigger"] == "no-effect" and first["read"] == "mouse_click"
    assert first["proposed"].startswith("mouse_click(") and first["executed"].startswith("mouse_click(")
    assert first["executed"] != first["proposed"]
    # The refined click lies on the target the inner agent was after, in screenshot pixels.
    step = steps[traces.index(first)]
    x, y = (float(v) for v in first["executed"][len("mouse_click(") : -1].split(","))
    target = first["instruction"].split('"')[1]
    boxes = [
        step.obs["extra_element_properties"][n["browsergym_id"]]["bbox"]
        for n in step.obs["axtree_object"]["nodes"]
        if n.get("browsergym_id") and (n.get("name") or {}).get("value") == target
    ]
    assert any(bx <= x <= bx + bw and by <= y <= by + bh for bx, by, bw, bh in boxes), (x, y, boxes)
    # What BrowserGym sums into summary_info.json is what the steps reported.
    per_step = [s.stats or {} for s in steps]
    for key in ("rf_triggered", "rf_calls", "rf_prompt_tokens", "rf_completion_tokens"):
        assert summary[f"stats.cum_{key}"] == sum(st.get(key, 0) for st in per_step)
    assert summary["stats.cum_rf_triggered"] >= 1 and summary["stats.cum_rf_calls"] >= 1


@pytest.mark.slow
def test_an_agent_that_hits_its_targets_is_left_alone(bgym, tmp_path):
    args = RegionFocusArgs(inner=PageReaderArgs(), agent="ocr")
    try:
        _, summary, steps = run(args, tmp_path)
    finally:
        args.close()
    assert summary["cum_reward"] == 1.0 and summary["stats.cum_rf_triggered"] == 0
    first = trace(steps[0])
    assert first["read"] == "click" and first["executed"] == first["proposed"] == steps[0].action
    assert first["proposed"].startswith("click('")


class Scripted(Agent):
    """An inner agent that says what it is told, in order."""

    def __init__(self, actions):
        self.actions = list(actions)
        self.action_set = HighLevelActionSet(subsets=["bid", "coord"])

    def obs_preprocessor(self, obs):
        return dict(obs)

    def get_action(self, obs):
        return (self.actions.pop(0) if self.actions else None), AgentInfo()


@dataclass
class ScriptedArgs(AbstractAgentArgs):
    actions: tuple = ()

    def make_agent(self):
        return Scripted(self.actions)


@pytest.mark.slow
def test_hostile_and_unknown_actions_pass_through_and_are_never_run_by_us(bgym, ocr_args, tmp_path):
    marker = tmp_path / "pwned"
    hostile = f"__import__('os').system('touch {marker}')"
    other = "fill('999', 'hello')"  # parseable, not a pointer action: untouched, no round
    off = RegionFocusArgs(inner=ScriptedArgs(actions=(other, hostile)), agent="a11y", enabled=False)
    try:
        _, summary, steps = run(off, tmp_path / "off")
    finally:
        off.close()
    assert [s.action for s in steps[:2]] == [other, hostile]  # executed as given...
    assert "Invalid action type '__import__'" in steps[2].obs["last_action_error"]  # ...BrowserGym refused it
    assert trace(steps[1])["read"] == "not a pointer action we read" and not marker.exists()

    args = RegionFocusArgs(inner=ScriptedArgs(actions=(other, hostile)), agent="ocr")
    try:
        _, summary, steps = run(args, tmp_path / "on")
    finally:
        args.close()
    first, second = trace(steps[0]), trace(steps[1])
    assert first["executed"] == other and first["source"] == "agent" and first["round"] is None
    # Nothing BrowserGym can parse is the paper's "no action": a round acts instead.
    assert second["proposed"] == hostile and second["trigger"] == "no-action"
    assert second["executed"] != hostile and not marker.exists()


@pytest.mark.slow
def test_a_miss_right_after_a_refined_click_is_noticed_at_once(bgym, ocr_args, tmp_path):
    """click-button-sequence: the refined click leaves the pointer on button ONE, focused; the
    inner agent's next click lands beside TWO and moves the pointer off ONE, which repaints ONE's
    hover style and blurs it. Neither is an effect of that click: the next step's trigger is
    no-effect, not a repeat one step later."""
    _, summary, steps = run(ocr_args, tmp_path, task="miniwob.click-button-sequence", seed=0, max_steps=5)
    traces = [trace(s) for s in steps[:-1]]
    assert [t.get("trigger") for t in traces] == [None, "no-effect", None, "no-effect"], traces
    assert [t["source"] for t in traces] == ["agent", "regionfocus", "agent", "regionfocus"]
    assert summary["cum_reward"] == 1.0
