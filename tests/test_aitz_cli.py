"""`regionfocus aitz`: scoring a predictions file, and a teacher-forced run of an agent over the
episodes (with CoAT, the gold chain reaches the model), resumable, every episode recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regionfocus.actions import Action, ActionType
from regionfocus.aitz.cli import main
from regionfocus.geometry import Point
from regionfocus.kit.runlog import read_records
from regionfocus.model import ModelReply, Usage

from .test_coat_aitz import sample  # noqa: F401 - the AITZ-shaped episodes as a fixture

GOLD = {  # per (episode, step): what a perfect agent does, as regionfocus actions
    ("E1", 0): Action(ActionType.CLICK, Point(60, 120)),
    ("E1", 1): Action(ActionType.TYPE, text="alarm clock"),
    ("E1", 2): Action(ActionType.HOTKEY, keys=("enter",)),
    ("E1", 3): Action(ActionType.FINISHED, text="done"),
    ("E2", 0): Action(ActionType.SCROLL, direction="down"),  # the finger swipes up
    ("E2", 1): Action(ActionType.HOTKEY, keys=("home",)),
}


class StepModel:
    """An agent that answers each step from a script keyed by (episode, turns so far); it keeps
    every query so the test can see what the model was shown. ``fail`` steps raise."""

    name = "scripted"

    def __init__(self, answers, fail=()):
        self.answers, self.fail, self.queries = answers, set(fail), []

    async def act(self, image, query, *, zoomed=False):
        self.queries.append(query)
        key = (_episode_of(query), len(query.turns))
        if key in self.fail:
            raise RuntimeError("HTTP 500: scripted server error")
        action = self.answers.get(key)
        return ModelReply(
            f"Action: {action.describe() if action else 'nothing'}", action=action, usage=Usage()
        )


def _episode_of(query) -> str:
    return query.instruction.split("#", 1)[1].split()[0] if "#" in query.instruction else "E1"


def _tag_episodes(root: Path) -> None:
    """Give each episode its own instruction ("... #E2") so the script can tell them apart."""
    for f in root.rglob("*.json"):
        steps = json.loads(f.read_text())
        for s in steps:
            s["instruction"] = f"{s['instruction']} #{s['episode_id']}"
        f.write_text(json.dumps(steps))


def _predictions(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_score_a_predictions_file(sample, tmp_path, capsys):  # noqa: F811
    rows = [
        {"episode_id": "E1", "step_id": 0, "prediction": {"type": "click", "point": [62, 118]}},
        {"episode_id": "E1", "step_id": 1, "prediction": {"type": "type", "text": "alarm clock"}},
        {"episode_id": "E1", "step_id": 2, "prediction": {"type": "press", "button": "enter"}},
        {"episode_id": "E1", "step_id": 3, "prediction": {"type": "stop"}},
        {
            "episode_id": "E2",
            "step_id": 0,
            "prediction": {"type": "scroll", "direction": "down"},
        },  # wrong way
    ]
    assert main(["score", str(sample), str(_predictions(tmp_path / "p.jsonl", rows))]) == 0
    out = capsys.readouterr().out
    # E1 all right; E2 wrong at its first step (and its second unanswered): success 1 of 2.
    assert "success 0.500, goal progress 0.500" in out
    assert "format hit rate 0.833" in out  # 5 of 6 steps answered
    # The released evaluator's click gold point [0, 0]: the click at (62, 118) misses, so E1 fails.
    argv = ["score", str(sample), str(tmp_path / "p.jsonl"), "--click-gold-at-origin"]
    assert main(argv) == 0
    assert "success 0.000, goal progress 0.000" in capsys.readouterr().out


def test_score_names_a_bad_line(sample, tmp_path, capsys):  # noqa: F811
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"episode_id": "E1", "step_id": 0, "prediction": {"type": "click", "point": [1]}}\n')
    assert main(["score", str(sample), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1" in err and "point must be [x, y]" in err and "Traceback" not in err


def test_run_teacher_forced_with_coat_resumes_and_retries(sample, tmp_path, capsys):  # noqa: F811
    _tag_episodes(sample)
    out = sample.with_name(sample.name + "-run")  # beside the data: its files are not episodes
    argv = ["run", str(sample), "--out", str(out), "--agent", "ocr", "--no-progress", "--reasoning", "coat"]
    answers = {(ep, n): a for (ep, n), a in GOLD.items()}
    flaky = StepModel(answers, fail={("E2", 1)})
    assert main(argv, model=flaky) == 0
    recs = {r["id"]: r for r in read_records(out / "records.jsonl")}
    assert recs["E1"]["status"] == "ok" and recs["E1"]["success"] and recs["E1"]["goal_progress"] == 1.0
    assert recs["E2"]["status"] == "partial" and "500" in recs["E2"]["lost"]
    # Teacher forcing: step k is shown the k gold steps before it, and with CoAT their annotated
    # chain (the sample's "desc 0", "result 0", ...) reaches the model's instruction.
    last_e1 = max((q for q in flaky.queries if _episode_of(q) == "E1"), key=lambda q: len(q.turns))
    assert len(last_e1.turns) == 3
    assert "desc 0" in last_e1.instruction and "result 1" in last_e1.instruction
    summary = (out / "summary.md").read_text()
    assert "2 episodes finished: 0 error(s)" in summary and "1 partial; --retry-errors reruns them" in summary
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert {(p["episode_id"], p["step_id"]) for p in preds} == set(GOLD)

    # A rerun runs nothing; --retry-errors reruns the partial episode against a healthy agent.
    healthy = StepModel(answers)
    assert main(argv, model=healthy) == 0 and healthy.queries == []
    assert main([*argv, "--retry-errors"], model=healthy) == 0
    assert {_episode_of(q) for q in healthy.queries} == {"E2"}
    recs = {r["id"]: r for r in read_records(out / "records.jsonl")}
    assert recs["E2"]["status"] == "ok" and recs["E2"]["success"]
    assert "success 1.000, goal progress 1.000" in capsys.readouterr().out


def test_run_refuses_a_changed_setting(sample, tmp_path, capsys):  # noqa: F811
    out = sample.with_name(sample.name + "-run")
    base = ["run", str(sample), "--out", str(out), "--agent", "ocr", "--no-progress"]
    assert main(base, model=StepModel({})) == 0
    assert main([*base, "--reasoning", "coat"], model=StepModel({})) == 2
    assert "reasoning" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["bogus"], ["run"], ["score", "x"]])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2


def test_run_pins_the_episodes_by_content(sample, tmp_path, capsys):  # noqa: F811
    """Issue 37 item 12: changed episodes at the same path exit 2 naming the file; the same
    episodes at another path resume without running anything again."""
    import shutil

    out = sample.with_name(sample.name + "-run")
    run = ["run", "--out", str(out), "--agent", "ocr", "--no-progress"]
    assert main([run[0], str(sample), *run[1:]], model=StepModel({})) == 0
    moved = sample.with_name(sample.name + "-moved")
    shutil.copytree(sample, moved)
    again = StepModel({})
    assert main([run[0], str(moved), *run[1:]], model=again) == 0 and again.queries == []
    e1 = moved / "general" / "E1" / "E1.json"
    steps = json.loads(e1.read_text())
    steps[0]["result_touch_yx"] = steps[0]["result_lift_yx"] = "[0.7, 0.3]"  # another gold click
    e1.write_text(json.dumps(steps))
    capsys.readouterr()
    assert main([run[0], str(moved), *run[1:]], model=StepModel({})) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "the data changed" in err and "general/E1/E1.json (1)" in err and "E2" not in err
