"""The run log under what a night of real runs brings: records holding NaN or lone surrogates,
a record that cannot be written, a disk that refuses a write half-way, a second writer, a
folder whose configuration went missing, settings pinned since a later release."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from regionfocus.kit import atomic
from regionfocus.kit.runlog import (
    RunFolder,
    RunFolderBusy,
    RunFolderError,
    RunRecord,
    atomic_write_json,
    config_diff,
    read_records,
)

ROOT = Path(__file__).resolve().parent.parent


def folder_holder(folder: Path) -> subprocess.Popen:
    """Another process that has opened ``folder`` (it holds the lock until killed)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from regionfocus.kit.runlog import RunFolder; "
            "f = RunFolder(sys.argv[1], {}, {}); print('locked', flush=True); sys.stdin.read()",
            str(folder),
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "locked"
    return holder


def _strict(line: str) -> dict:
    def refuse(c: str):
        raise AssertionError(f"non-finite constant {c}")

    return json.loads(line, parse_constant=refuse)


def test_non_finite_numbers_and_lone_surrogates_are_written_not_refused(tmp_path: Path):
    with RunFolder(tmp_path, {}, {}) as folder:
        stored = folder.add(
            {
                "id": "s1",
                "score": float("nan"),
                "trace": {"calls": [{"time": float("inf"), "text": "ok \ud800 then \udfff"}]},
                "points": [[1.5, float("-inf")]],
                "\ud83d": "a key with a lone surrogate",
            }
        )
        folder.add({"id": "s2", "score": 1.0})
    lines = (tmp_path / "records.jsonl").read_bytes().decode("utf-8").splitlines()
    first = _strict(lines[0])
    assert first["score"] is None and first["points"] == [[1.5, None]]
    assert first["trace"]["calls"][0] == {"time": None, "text": "ok \ufffd then \ufffd"}
    assert first["\ufffd"] == "a key with a lone surrogate"
    assert stored == first  # what the caller is told was stored is what was stored
    assert _strict(lines[1])["score"] == 1.0


def test_a_record_that_cannot_be_written_becomes_an_error_record(tmp_path: Path, caplog):
    with RunFolder(tmp_path, {}, {}) as folder:
        stored = folder.add({"id": "s1", "payload": object()})  # no JSON form at all
        folder.add({"id": "s2", "ok": True})  # the run goes on
    recs = {r["id"]: r for r in read_records(tmp_path / "records.jsonl")}
    assert recs["s1"]["status"] == "error" and "could not be written" in recs["s1"]["error"]
    assert stored["status"] == "error"
    assert recs["s2"]["status"] == "ok"
    assert "s1" in caplog.text
    with RunFolder(tmp_path, {}, {}, retry_errors=True) as again:
        assert "s1" not in again.done and "s2" in again.done


def test_a_write_the_disk_refuses_half_way_leaves_no_torn_line(tmp_path: Path):
    """A file-size limit cuts the long record mid-line (as a full disk does): the line is removed
    again, no error record is made up for a sample the disk refused (a rerun resumes it), the
    folder is named, and the log takes records again once there is room."""
    script = textwrap.dedent(
        """
        import os, resource, signal, sys
        from regionfocus.kit.runlog import RunFolder, RunFolderFull
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death, as ENOSPC would be
        with RunFolder(sys.argv[1], {}, {}) as folder:
            folder.add({"id": "small", "x": 1})
            size = os.path.getsize(os.path.join(sys.argv[1], "records.jsonl"))
            resource.setrlimit(resource.RLIMIT_FSIZE, (size + 1500, resource.RLIM_INFINITY))
            try:
                folder.add({"id": "big", "text": "y" * 20000})
            except RunFolderFull as e:
                print(e)
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            folder.add({"id": "after", "x": 2})
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert str(tmp_path) in proc.stdout and "rerun the same command" in proc.stdout
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    recs = [_strict(line) for line in lines]  # every line whole
    assert [r["id"] for r in recs] == ["small", "after"]


def test_partial_samples_are_kept_on_resume_and_rerun_with_retry_errors(tmp_path: Path):
    with RunFolder(tmp_path, {}, {}) as folder:
        folder.add(RunRecord("ok1"))
        folder.add(RunRecord("part", "partial", None, {"lost": "1 of 5 model call(s) failed (judge)"}))
        folder.add(RunRecord("err", "error", "boom"))
    with RunFolder(tmp_path, {}, {}) as keep:
        assert set(keep.done) == {"ok1", "part", "err"}
    with RunFolder(tmp_path, {}, {}, retry_errors=True) as retry:
        assert set(retry.done) == {"ok1"}


def test_one_writer_per_folder_and_the_lock_goes_with_the_holder(tmp_path: Path):
    first = RunFolder(tmp_path, {}, {})
    with pytest.raises(RunFolderBusy) as busy:
        RunFolder(tmp_path, {}, {})
    assert f"pid {os.getpid()}" in str(busy.value) and "this process" in str(busy.value)
    first.close()
    RunFolder(tmp_path, {}, {}).close()  # released on close

    # Another process: named by pid; it dies without closing anything and the lock is gone.
    holder = folder_holder(tmp_path)
    try:
        with pytest.raises(RunFolderBusy) as busy:
            RunFolder(tmp_path, {}, {})
        msg = str(busy.value)
        assert f"pid {holder.pid}" in msg and "this process" not in msg and "--out" in msg
    finally:
        holder.kill()
        holder.wait(timeout=30)
    RunFolder(tmp_path, {}, {}).close()  # SIGKILL released it: a crashed run can be resumed


def test_records_without_a_config_are_refused_with_the_flag_that_starts_fresh(tmp_path: Path):
    with RunFolder(tmp_path, {"agent": "ocr"}, {}) as folder:
        folder.add(RunRecord("s1"))
    (tmp_path / "config.json").unlink()
    with pytest.raises(RunFolderError) as e:
        RunFolder(tmp_path, {"agent": "ocr"}, {}, fresh_hint="--out")
    assert "no config.json" in str(e.value) and "--out" in str(e.value)
    assert not (tmp_path / "config.json").exists()  # nothing pinned without a word
    # an empty log (a run that stopped before its first record) is not a run to protect
    (tmp_path / "records.jsonl").write_text("")
    RunFolder(tmp_path, {"agent": "ocr"}, {}).close()


def test_request_settings_pinned_later_compare_as_what_earlier_folders_ran_with():
    old = {"agent": "qwen2.5-vl", "temperature": 0.0}  # pinned before "request" existed
    png = {**old, "request": {"family": "Qwen25VL", "image_format": "png", "transport": "data-url"}}
    assert config_diff(old, png) == []
    jpeg = {**old, "request": {"family": "Qwen25VL", "image_format": "jpeg", "image_quality": 95}}
    diffs = config_diff(old, jpeg)
    assert "request.image_format: 'png' in the folder, 'jpeg' now" in diffs
    assert "request.image_quality: None in the folder, 95 now" in diffs
    assert not any("family" in d for d in diffs)  # unknowable for an old folder: not compared
    assert config_diff(png, {**png, "request": {**png["request"], "transport": "local-bmp"}}) == [
        "request.transport: 'data-url' in the folder, 'local-bmp' now"
    ]


def test_atomic_writes_never_touch_the_process_umask(tmp_path: Path, monkeypatch):
    """Setting the umask to read it races every other thread's file creation."""
    mask = os.umask(0o022)
    os.umask(mask)

    def forbidden(_mask: int) -> int:
        raise AssertionError("os.umask called while other threads may create files")

    monkeypatch.setattr(atomic.os, "umask", forbidden)
    atomic_write_json(tmp_path / "new.json", {"a": 1})
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o666 & ~mask
    os.chmod(tmp_path / "new.json", 0o640)
    atomic_write_json(tmp_path / "new.json", {"a": 2})  # a replaced file keeps its mode
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["new.json"]  # no temp file left


def test_a_damaged_or_missing_config_gives_one_advice(tmp_path: Path):
    with RunFolder(tmp_path, {"agent": "ocr"}, {}) as folder:
        folder.add(RunRecord("s1"))
    config = tmp_path / "config.json"
    whole = config.read_text()
    advice = set()
    for damage in (lambda: config.write_text(whole[:20]), config.unlink, lambda: config.write_text("[]")):
        damage()
        with pytest.raises(RunFolderError) as e:
            RunFolder(tmp_path, {"agent": "ocr"}, {})
        assert "the 1 record(s) in its records.jsonl" in str(e.value)
        advice.add(str(e.value).split("; ", 1)[1])
    assert advice == {"start a fresh folder with --out DIR (this folder is left as it is)"}


@pytest.mark.slow
def test_a_damaged_or_missing_config_has_one_way_out_and_following_it_works(tmp_path: Path, capsys):
    """Issue 37 item 17: a truncated config.json said "delete it"; deleted, the folder said "records
    but no config.json". Now both (and a foreign config.json) give the same advice, and doing
    what it says finishes the run."""
    from regionfocus.screenspot_pro.cli import main

    from .test_screenspot_helpers import ColourModel, fresh_dataset

    data, run = fresh_dataset(tmp_path / "data"), tmp_path / "run"

    def argv(out: Path) -> list[str]:
        return ["--data", str(data), "--out", str(out), "--agent", "ocr", "--no-progress", "--no-regionfocus"]

    assert main([*argv(run), "--limit", "2"], model=ColourModel()) == 0
    config = run / "config.json"
    whole = config.read_text()
    advice = []
    for damage in (
        lambda: config.write_text(whole[: len(whole) // 2]),
        config.unlink,
        lambda: config.write_text("[]"),
    ):
        damage()
        capsys.readouterr()
        assert main(argv(run), model=ColourModel()) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert "the 2 record(s) in its records.jsonl" in err
        advice.append(err.split("; ", 1)[1])
    assert len(set(advice)) == 1 and "start a fresh folder with --out DIR" in advice[0]
    assert "delete it" not in " ".join(advice)
    assert len((run / "records.jsonl").read_text().splitlines()) == 2  # left as it is
    assert main([*argv(tmp_path / "fresh"), "--limit", "2"], model=ColourModel()) == 0  # the advice, followed


def test_a_damaged_config_without_records_is_pinned_afresh(tmp_path: Path):
    (tmp_path / "config.json").write_text('{"identity": {"agent": "o')  # a run that stopped first
    with RunFolder(tmp_path, {"agent": "ocr"}, {}) as folder:
        folder.add(RunRecord("s1"))
    assert json.loads((tmp_path / "config.json").read_text())["identity"] == {"agent": "ocr"}
