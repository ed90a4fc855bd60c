"""The commands refuse nonsense where it is parsed, tell a log they are alive, and give advice
that works: each through the real command, as a user meets it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from regionfocus.aitz.cli import main as aitz_main
from regionfocus.kit.progress import Progress
from regionfocus.screenspot_pro.cli import main as screenspot_main
from regionfocus.webvoyager.cli import main as webvoyager_main
from regionfocus.webvoyager.rundir import RunDir
from regionfocus.webvoyager.runner import _progress as webvoyager_progress

from .test_screenspot_helpers import ColourModel, fresh_dataset

# (flag, bad value) pairs every harness must refuse at parse time, whatever the agent: the data
# path does not exist, so a refusal that waited for the data would name the data instead.
SCREENSPOT_NONSENSE = [
    ("--rounds", "0"),
    ("--limit", "-1"),
    ("--limit", "0"),
    ("--max-in-flight", "0"),
    ("--timeout", "-5"),
    ("--timeout", "nan"),
    ("--image-quality", "500"),
    ("--image-quality", "0"),
    ("--concurrency", "0"),
    ("--temperature", "-1"),
    ("--star-scale", "0"),
    ("--max-rounds-per-screen", "0"),
    ("--image-workers", "0"),
]


@pytest.mark.parametrize(("flag", "value"), SCREENSPOT_NONSENSE)
def test_screenspot_refuses_nonsense_flags_at_parse_time_with_the_ocr_agent(flag, value, capsys):
    code = screenspot_main(["--data", "/nonexistent/data", "--agent", "ocr", flag, value])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"argument {flag}" in err and repr(value) in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--max-steps", "0"], "--max-steps"),
        (["--concurrency", "-2"], "--concurrency"),
        (["--episodes-per-task", "0"], "--episodes-per-task"),
        (["--timeout", "-5"], "--timeout"),
        (["--image-quality", "500"], "--image-quality"),
        (["--rounds", "0"], "--rounds"),
    ],
)
def test_webvoyager_refuses_nonsense_flags_at_parse_time(argv, flag, capsys, tmp_path):
    code = webvoyager_main(
        ["--tasks", "miniwob:click-button", "--agent", "ocr", "--out", str(tmp_path), *argv]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"argument {flag}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "config.json").exists()


def test_aitz_refuses_a_negative_limit(capsys):
    assert aitz_main(["run", "--data", "/nonexistent", "--agent", "ocr", "--limit", "-1"]) == 2
    assert "argument --limit" in capsys.readouterr().err


def test_an_unknown_group_or_app_lists_what_the_data_holds(tmp_path: Path, capsys):
    data = fresh_dataset(tmp_path / "data")
    for flag in ("--group", "--app"):
        argv = ["--data", str(data), "--out", str(tmp_path / "run"), flag, "Nope"]
        assert screenspot_main(argv, model=ColourModel()) == 2
        err = capsys.readouterr().err
        assert f"{flag}: no sample has 'Nope'; the selected files hold " in err, err
        listed = err.rsplit("hold ", 1)[1].strip()
        assert listed and listed != "none"
    assert not (tmp_path / "run").exists()


def test_a_run_whose_output_is_no_terminal_writes_progress_lines(tmp_path: Path, capsys, monkeypatch):
    """Under Slurm or nohup the output is a file: a line every so often (here every sample)
    with samples done, errors, rate and time left, where a bar would stay silent."""
    monkeypatch.setenv("REGIONFOCUS_PROGRESS_EVERY", "1e-9")
    data = fresh_dataset(tmp_path / "data")
    argv = ["--data", str(data), "--out", str(tmp_path / "run"), "--limit", "3"]
    assert screenspot_main(argv, model=ColourModel(broken=False)) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("screenspot-pro: ")]
    assert len(lines) >= 3, err
    assert (
        lines[-1].startswith("screenspot-pro: 3/3 samples (100 %), 0 errors, ") and "samples/min" in lines[-1]
    )
    assert "\r" not in err  # no bar redrawn in a file
    # --no-progress: silent
    argv = ["--data", str(data), "--out", str(tmp_path / "run2"), "--limit", "2", "--no-progress"]
    assert screenspot_main(argv, model=ColourModel(broken=False)) == 0
    assert "screenspot-pro: " not in capsys.readouterr().err


def test_webvoyager_shows_lines_not_a_bar_when_piped():
    """webvoyager drew its tqdm bar into a pipe; now it writes the same lines as the others."""
    stream = io.StringIO()
    bar = webvoyager_progress(4, 1, True)
    assert bar.bar is None and bar.lines  # pytest's stderr is no terminal
    bar.stream, bar.every = stream, 0.0
    bar.update(error=True, note="success 0/1 this run")
    bar.close()
    out = stream.getvalue()
    assert out.startswith("webvoyager: 2/4 tasks (50 %), 1 errors") and "success 0/1 this run" in out
    assert webvoyager_progress(4, 0, False).lines is False


def test_progress_lines_count_rate_and_time_left_from_this_process_only():
    now = [0.0]
    stream = io.StringIO()
    p = Progress(10, desc="job", unit="sample", initial=4, stream=stream, every=30, clock=lambda: now[0])
    now[0] = 10.0
    p.update()  # 10 s < 30 s: no line yet
    assert stream.getvalue() == ""
    now[0] = 60.0
    p.update(error=True)
    # two finished here in 60 s: 2/min; four left: about 2 min
    assert (
        stream.getvalue().strip() == "job: 6/10 samples (60 %), 1 errors, 2.0 samples/min, about 2m00s left"
    )


def test_screenspot_compare_names_a_webvoyager_folder(tmp_path: Path, capsys):
    wv = RunDir(tmp_path / "wv")
    wv.open({"agent": "ocr", "tasks": "miniwob:click-button", "concurrency": 1}, selected=["a"])
    wv.folder.close()
    data = fresh_dataset(tmp_path / "data")
    ours = tmp_path / "ours"
    assert (
        screenspot_main(
            ["--data", str(data), "--out", str(ours), "--limit", "1", "--no-progress"], model=ColourModel()
        )
        == 0
    )
    capsys.readouterr()
    assert screenspot_main(["compare", str(ours), str(tmp_path / "wv")]) == 2
    err = capsys.readouterr().err
    assert "is a webvoyager run folder" in err and "regionfocus webvoyager compare" in err
    assert "fix or remove that line" not in err and len(err.strip().splitlines()) == 1
    assert screenspot_main(["compare", str(ours), str(tmp_path / "nothing")]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_a_smaller_limit_into_the_same_folder_advises_what_works(tmp_path: Path, capsys):
    """Not "remove that line" from records.jsonl: a folder of its own, or a larger --limit."""
    data = fresh_dataset(tmp_path / "data")
    run = tmp_path / "run"
    base = ["--data", str(data), "--no-progress"]
    assert screenspot_main([*base, "--out", str(run), "--limit", "3"], model=ColourModel(broken=False)) == 0
    capsys.readouterr()
    assert screenspot_main([*base, "--out", str(run), "--limit", "1"], model=ColourModel(broken=False)) == 2
    err = capsys.readouterr().err
    assert "--out DIR" in err.strip().splitlines()[-1] and "remove that line" not in err
    assert err.count("error:") == 1 and "Traceback" not in err
    # both ways out work as said
    assert screenspot_main([*base, "--out", str(tmp_path / "own"), "--limit", "1"], model=ColourModel()) == 0
    assert screenspot_main([*base, "--out", str(run), "--limit", "4"], model=ColourModel(broken=False)) == 0
    assert "4 samples finished" in capsys.readouterr().out
