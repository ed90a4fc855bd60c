"""Typed actions, triggers and the configuration."""

import pytest

from regionfocus import Action, ActionType, Effect, Point, RegionFocusConfig, Verdict
from regionfocus.actions import click
from regionfocus.triggers import NoAction, NoEffect, Repeat, SelfJudge, TriggerState, any_of


def test_same_as_is_tolerant_in_space_only():
    a = click(100, 100)
    assert a.same_as(click(105, 103), radius=8)
    assert not a.same_as(click(120, 100), radius=8)
    assert not a.same_as(Action(ActionType.DOUBLE_CLICK, Point(100, 100)), radius=8)
    t1 = Action(ActionType.TYPE, Point(5, 5), text="hello")
    assert t1.same_as(Action(ActionType.TYPE, Point(6, 5), text="hello "), radius=3)
    assert not t1.same_as(Action(ActionType.TYPE, Point(6, 5), text="world"), radius=3)
    assert not t1.same_as(Action(ActionType.TYPE, None, text="hello"), radius=3)
    assert not a.same_as(None)


def test_action_round_trip_and_mapping():
    d = Action(ActionType.DRAG, Point(1, 2), Point(3, 4))
    assert Action.from_dict(d.to_dict()) == d
    h = Action(ActionType.HOTKEY, keys=("ctrl", "c"))
    assert Action.from_dict(h.to_dict()) == h and not h.is_point_action
    moved = d.map_points(lambda p: Point(p.x * 2, p.y + 1))
    assert moved.point == Point(2, 3) and moved.end_point == Point(6, 5)
    assert Action(ActionType.SCROLL, Point(1, 1), direction="down").is_point_action
    assert not Action(ActionType.TYPE, Point(1, 1), text="x").is_point_action


def test_triggers():
    clicked = click(10, 10)
    assert NoAction().fires(TriggerState(None))
    assert NoEffect().fires(TriggerState(None, [clicked], Effect(changed=False)))
    assert not NoEffect().fires(TriggerState(None, [clicked], Effect(changed=True)))
    assert not NoEffect().fires(
        TriggerState(None, [Action(ActionType.HOTKEY, keys=("enter",))], Effect(False))
    )
    assert Repeat(2, 5).fires(TriggerState(click(12, 11), [clicked]))
    assert not Repeat(3, 5).fires(TriggerState(click(12, 11), [clicked]))
    assert Repeat(3, 5).fires(TriggerState(click(12, 11), [clicked, click(9, 9)]))
    assert SelfJudge().fires(TriggerState(clicked, verdict=Verdict.NO))
    assert not SelfJudge().fires(TriggerState(clicked, verdict=Verdict.YES))
    assert SelfJudge("reject").fires(TriggerState(clicked, verdict=Verdict.UNKNOWN))
    assert not SelfJudge("accept").fires(TriggerState(clicked, verdict=Verdict.UNKNOWN))
    assert any_of([NoAction(), Repeat()], TriggerState(click(10, 10), [clicked])) == "repeat"
    assert any_of([NoAction(), Repeat()], TriggerState(click(90, 10), [clicked])) is None


def test_config_defaults_toml_and_errors(tmp_path):
    cfg = RegionFocusConfig()
    assert (cfg.proposer, cfg.aggregation, cfg.history, cfg.rounds_per_sample) == (
        "fixed",
        "image",
        "image",
        1,
    )
    f = tmp_path / "rf.toml"
    f.write_text(
        '[regionfocus]\nproposer = "layout"\nratios = [[0.5, 0.5], [0.25, 0.25]]\nmerge_radius = 4\n'
    )
    loaded = RegionFocusConfig.from_toml(f)
    assert (
        loaded.proposer == "layout"
        and loaded.ratios == ((0.5, 0.5), (0.25, 0.25))
        and loaded.merge_radius == 4
    )
    assert RegionFocusConfig.from_dict(loaded.to_dict()) == loaded
    assert loaded.replace(proposer=None).proposer == "layout"  # unset flags keep the file's value
    with pytest.raises(ValueError, match="aggregation='stars'"):
        RegionFocusConfig(aggregation="stars")
    with pytest.raises(ValueError, match="unknown config keys: bogus"):
        cfg.replace(bogus=1)
    with pytest.raises(ValueError, match="ratios"):
        RegionFocusConfig(ratios=((0.5, 1.5),))
    bad = tmp_path / "bad.toml"
    bad.write_text("proposer = [")
    with pytest.raises(ValueError, match="bad.toml: invalid TOML"):
        RegionFocusConfig.from_toml(bad)
    with pytest.raises(FileNotFoundError, match="missing.toml"):
        RegionFocusConfig.from_toml(tmp_path / "missing.toml")
