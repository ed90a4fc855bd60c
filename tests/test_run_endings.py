"""How runs end, said plainly: a run whose every sample failed exits 3 with the count in its last
lines; a disk with no room (a real full tmpfs in a private mount namespace) exits 2 naming the
folder and resumes when rerun, leaving no torn line; `report` on an interrupted folder says
"N of M selected".
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.kit.command import ALL_FAILED
from regionfocus.kit.runlog import read_records
from regionfocus.screenspot_pro.cli import main

from .test_coat_aitz import sample  # noqa: F401 - the AITZ-shaped episodes as a fixture
from .test_screenspot_helpers import ColourModel, fresh_dataset

ROOT = Path(__file__).resolve().parents[1]

# Mount a tmpfs of SIZE KiB on MNT in a mount namespace of its own (gone with the process, so
# nothing is left mounted whatever happens), run the command there, then copy what it left on
# that disk to SAVE for the test to read.
_TINY_DISK = textwrap.dedent(
    """
    mnt=$1; save=$2; size=$3; shift 3
    mount -t tmpfs -o size="${size}k" tmpfs "$mnt" || exit 97
    "$@"; rc=$?
    cp -a "$mnt"/. "$save"/
    exit $rc
    """
)


def _can_mount_a_tiny_disk() -> str | None:
    """None when this machine lets us mount a tmpfs in a private namespace, else why not."""
    if shutil.which("unshare") is None:
        return "no unshare (util-linux)"
    probe = subprocess.run(
        ["unshare", "--mount", "--map-root-user", "sh", "-c", "mount -t tmpfs -o size=8k tmpfs /mnt"],
        capture_output=True,
        text=True,
    )
    return None if probe.returncode == 0 else f"cannot mount a tmpfs here: {probe.stderr.strip()}"


@pytest.fixture(scope="module")
def tiny_disk():
    why = _can_mount_a_tiny_disk()
    if why:
        pytest.skip(why)

    def run(mnt: Path, save: Path, size_kb: int, argv: list[str]) -> subprocess.CompletedProcess:
        mnt.mkdir(parents=True, exist_ok=True)
        save.mkdir(parents=True, exist_ok=True)
        cmd = ["unshare", "--mount", "--map-root-user", "sh", "-c", _TINY_DISK, "sh"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [*cmd, str(mnt), str(save), str(size_kb), *argv],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        assert proc.returncode != 97, proc.stderr
        return proc

    return run


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return fresh_dataset(tmp_path_factory.mktemp("endings") / "data")


def _argv(data: Path, out: Path, *extra: str) -> list[str]:
    return ["--data", str(data), "--out", str(out), "--agent", "ocr", "--no-progress", *extra]


def _whole_lines(path: Path) -> list[dict]:
    """Every line of a log, each a whole JSON record, the file ending in a newline."""
    raw = path.read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), raw[-80:]
    return [json.loads(line) for line in raw.decode("utf-8").splitlines()]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_run_whose_every_sample_failed_exits_3_with_the_count_last(data: Path, tmp_path: Path, capsys):
    """The model server is down (nothing listens on its port): the real HTTP client's calls are
    refused, every sample is recorded as an error, and the run says so instead of exiting 0
    under a table of zeros."""
    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    backend = OpenAIBackend([base_url], "qwen-test", timeout=10, max_retries=0)
    model = get_adapter("qwen2.5-vl", backend=backend)
    out = tmp_path / "run"
    argv = ["--data", str(data), "--out", str(out), "--no-progress", "--agent", "qwen2.5-vl"]
    assert main([*argv, "--base-url", base_url, "--model", "qwen-test"], model=model) == ALL_FAILED
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1].startswith("9 samples finished: every one failed, nothing was measured (first: appa_")
    assert "rerun with --retry-errors" in printed[-1]
    assert {r["status"] for r in read_records(out / "records.jsonl")} == {"error"}
    summary = (out / "summary.md").read_text()
    assert "Errors (counted wrong, kept in the denominator): 9." in summary


@pytest.mark.slow  # Chromium
def test_a_browsing_run_whose_every_task_failed_exits_3(tmp_path: Path, capsys):
    """The same for `regionfocus webvoyager`: a MiniWoB++ episode whose every model call was
    refused is an error (it measured nothing), not a partial task, and the run exits 3."""
    from regionfocus.webvoyager.cli import main as webvoyager_main

    out = tmp_path / "wv"
    argv = [
        "--tasks", "miniwob:click-button", "--agent", "qwen2.5-vl", "--model", "q",
        "--base-url", f"http://127.0.0.1:{_closed_port()}/v1", "--no-regionfocus", "--max-steps", "1",
        "--viewport", "500x560", "--no-progress", "--out", str(out),
        "--no-preflight",  # the run itself meets the dead server: every call of the task fails
    ]  # fmt: skip
    assert webvoyager_main(argv) == ALL_FAILED
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(
        "1 task finished: every one failed, nothing was measured (first: click-button--0: "
    )
    (rec,) = read_records(out / "records.jsonl")
    assert rec["status"] == "error" and rec["error"].startswith("all 1 model call(s) failed; first: ")
    summary = json.loads((out / "summary.json").read_text())["overall"]
    assert (summary["tasks"], summary["errors"], summary["partial"]) == (1, 1, 0)


def test_an_aitz_run_whose_every_episode_failed_exits_3(sample, capsys):  # noqa: F811
    from regionfocus.aitz.cli import main as aitz_main

    from .test_aitz_cli import GOLD, StepModel

    out = sample.with_name(sample.name + "-run")  # beside the data: its files are not episodes
    down = StepModel({}, fail=set(GOLD))  # every step's call: HTTP 500
    argv = ["run", str(sample), "--out", str(out), "--agent", "ocr", "--no-progress"]
    assert aitz_main(argv, model=down) == ALL_FAILED
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("2 episodes finished: every one failed, nothing was measured (first: E1: ")
    assert "every one failed" in (out / "summary.md").read_text()


def test_a_finished_run_names_its_errors_last(data: Path, tmp_path: Path, capsys):
    assert main(_argv(data, tmp_path / "run"), model=ColourModel()) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == (
        "9 samples finished: 1 error(s) (scored wrong, kept in the denominator), 0 partial; "
        "--retry-errors reruns them"
    )


def test_report_of_an_interrupted_run_says_how_many_of_those_selected(data: Path, tmp_path: Path, capsys):
    out = tmp_path / "run"
    assert main(_argv(data, out), model=ColourModel()) == 0
    # A run killed after 7 samples: the log is append-only, so it holds the first 7 lines.
    lines = (out / "records.jsonl").read_text().splitlines(keepends=True)
    (out / "records.jsonl").write_text("".join(lines[:7]))
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert "7 samples of 9 selected (rerun the same command to finish)" in (out / "summary.md").read_text()
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("7 of 9 selected samples finished (rerunning the run's command finishes the rest)")


def test_a_full_disk_stops_the_run_naming_the_folder_and_a_rerun_resumes(
    tiny_disk, data: Path, tmp_path: Path, capsys
):
    """A real ENOSPC: the run folder is on a 32 KiB tmpfs, room for its lock, its config and a
    few records. The run stops with exit 2 naming the folder and how to resume; every line
    left is whole; the same command, rerun once there is room, finishes with the numbers of a
    run that never stopped."""
    mnt, save = tmp_path / "disk", tmp_path / "saved"
    out = mnt / "run"
    code = "import sys; from tests.test_screenspot_helpers import cli_main; sys.exit(cli_main())"
    argv = _argv(data, out, "--concurrency", "1")
    proc = tiny_disk(mnt, save, 32, [sys.executable, "-c", code, *argv])
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 2 and "Traceback" not in proc.stderr  # the "N samples from" line, then the error
    assert err[-1].startswith(
        f"regionfocus screenspot-pro: error: {out}: no room left on its disk to record "
    )
    assert "(No space left on device)" in err[-1] and "rerun the same command: it resumes" in err[-1]
    kept = _whole_lines(save / "run" / "records.jsonl")
    assert 1 <= len(kept) < 9 and all(r["status"] == "ok" for r in kept)  # no made-up error record

    shutil.copytree(save / "run", out)  # space freed: the folder back where the command writes
    assert main(argv, model=ColourModel()) == 0
    printed = capsys.readouterr().out
    assert printed.strip().splitlines()[-1].startswith("9 samples finished: 1 error(s)")
    ids = [r["id"] for r in _whole_lines(out / "records.jsonl")]
    assert len(ids) == 9 == len(set(ids))  # each sample once: the finished ones were not rerun
    overall = json.loads((out / "results.json").read_text())["metrics"]["overall"]
    assert (overall["num_correct_action"], overall["num_total"]) == (6, 9)  # the clean run's 66.7 %


def test_a_refused_append_is_undone_at_the_files_end_not_the_stale_position(tiny_disk, tmp_path: Path):
    """Two appends the full disk cuts short, one after the other (a record, then the error
    record that would stand for it): each undo must cut back to where its own line began. The
    file position after the first undo is past the end, so an undo to it left the second
    line's start behind, a torn last line."""
    script = textwrap.dedent(
        """
        import sys
        from regionfocus.kit.runlog import RecordLog, RunFolder, RunFolderFull
        root = sys.argv[1]
        with RecordLog(root + "/log/records.jsonl") as log:
            log.append({"id": "small", "x": 1})
            for rid in ("big", "bigger"):
                try:
                    log.append({"id": rid, "text": "y" * 40000})
                except OSError as e:
                    print(rid, e.strerror)
        with RunFolder(root + "/folder", {}, {}) as folder:
            folder.add({"id": "small", "x": 1})
            try:
                folder.add({"id": "big", "text": "y" * 40000},
                           fallback=lambda m: {"id": "big", "status": "error", "error": m, "pad": "z" * 40000})
            except RunFolderFull as e:
                print("full:", e)
        """
    )
    mnt, save = tmp_path / "disk", tmp_path / "saved"
    proc = tiny_disk(mnt, save, 16, [sys.executable, "-c", script, str(mnt)])
    assert proc.returncode == 0, proc.stderr
    assert "big No space left on device" in proc.stdout and "bigger No space left on device" in proc.stdout
    assert [r["id"] for r in _whole_lines(save / "log" / "records.jsonl")] == ["small"]
    assert f"full: {mnt / 'folder'}: no room left" in proc.stdout
    assert [r["id"] for r in _whole_lines(save / "folder" / "records.jsonl")] == ["small"]
