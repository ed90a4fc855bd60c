"""The screen-to-text suite's task specs, its tables and the screen-text-eval preset's flags
(no browser: the slow runs are in tests/test_screen_text_miniwob.py)."""

from __future__ import annotations

import pytest

from regionfocus.webvoyager.screen_text_eval import main as eval_main
from regionfocus.webvoyager.screen_text_suite import load_suite, success_table, suite_tasks


def test_the_parts_split_the_suite_and_lists_name_known_tasks():
    suite = load_suite()
    ones, ns = suite_tasks("screen-to-text:1-step"), suite_tasks("screen-to-text:n-step")
    assert sorted(ones + ns) == sorted(suite_tasks("screen-to-text")) and set(ns) <= suite.n_step
    assert not set(suite.excluded) & set(suite.tasks)
    assert suite_tasks("screen-to-text:click-button, enter-text") == ["click-button", "enter-text"]
    with pytest.raises(ValueError, match="unknown MiniWoB.. task.s.: click-nothing"):
        suite_tasks("screen-to-text:click-nothing")
    with pytest.raises(ValueError, match="no task"):
        suite_tasks("screen-to-text:")


def test_tables_put_the_papers_numbers_beside_ours():
    records = [
        {"web_name": "click-button", "success": True, "model_steps": 1},
        {"web_name": "click-button", "success": False, "model_steps": 10},
        {"web_name": "click-collapsible", "success": True, "model_steps": 2},
    ]
    table = success_table(records, "ours")
    assert "ours                              0.750      2         3" in table  # mean of 0.5 and 1
    assert "ours                        0.500 (  1)     1.000 (  1)     2.000" in table
    assert "gpt-4 (paper)                     0.907     74         -" in table
    assert "gpt-3.5-turbo (paper)             0.874     60" in table


def test_the_preset_refuses_seeds_it_cannot_translate(capsys):
    for seeds in ("1,5,9", "9-3"):
        assert eval_main(["--seeds", seeds, "--model", "m"]) == 2  # through run_command: one line
        err = capsys.readouterr().err
        assert err.startswith("regionfocus screen-text-eval: error: --seeds must be one seed or a range")
        assert len(err.strip().splitlines()) == 1
    assert eval_main(["--recall"]) == 2
    assert "benchmarks.screen_text_recall" in capsys.readouterr().err
