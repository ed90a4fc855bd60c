"""A Chromium that does not start: every command that launches one says so in one line and exits 2,
writing nothing (regionfocus/kit/chromium.py, ``ChromiumLaunchError``).

The bad browsers are real processes Playwright really launches: /bin/false, a script that writes
Chromium-style lines to stderr and exits 1, a script whose interpreter is missing, a file that
is not executable, a folder, a path that does not exist. None needs a working Chromium, so
these tests are fast; Playwright's driver is started by the ones that get as far as a launch.
Two more cases come from Playwright's own settings: ``PLAYWRIGHT_NODEJS_PATH`` naming no program
(its driver does not start, as when a Playwright install lacks its Node.js) and
``PLAYWRIGHT_BROWSERS_PATH`` naming an empty folder (Playwright's own Chromium not downloaded).
"""

from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from regionfocus.kit import chromium
from regionfocus.kit.chromium import ChromiumChoice, ChromiumLaunchError, choose_chromium, launched
from regionfocus.screenspot_pro.cli import main as screenspot_main
from regionfocus.webvoyager.a11y_cli import a11y_command
from regionfocus.webvoyager.cli import main as webvoyager_main
from regionfocus.webvoyager.screen_text_eval import main as screen_text_main

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "benchmarks" / "pages"
NOISE = "running as root: Chromium's sandbox cannot start"  # kit/chromium.py's one warning as root


def _script(path: Path, body: str, mode: int = 0o755) -> str:
    path.write_text(body)
    path.chmod(mode)
    return str(path)


@pytest.fixture
def bad(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """name -> (executable, what the error line must say about it)."""
    crash = _script(
        tmp_path / "crash.sh",
        "#!/bin/sh\n"
        "echo '[7:7:0101/000000.000001:WARNING:chrome/app/x.cc:12] a warning every start prints' >&2\n"
        "echo '[7:9:0101/000000.000001:ERROR:dbus/bus.cc:408] Failed to connect to the bus: no socket' >&2\n"
        "echo '[7:7:0101/000000.000002:ERROR:chrome/app/y.cc:34] libnss3.so: cannot open shared object' >&2\n"
        "exit 1\n",
    )
    plain = _script(tmp_path / "plain.sh", "#!/bin/sh\necho 'cannot open display' >&2\nexit 1\n")
    interpreter = _script(tmp_path / "interp.sh", "#!/nonexistent/sh\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    return {
        "false": ("/bin/false", "exited at start (exit code 1) and wrote nothing on stderr"),
        "crash": (crash, "exited at start (exit code 1): libnss3.so: cannot open shared object"),
        "plain": (plain, "exited at start (exit code 1): cannot open display"),
        "interpreter": (interpreter, "cannot be run (no such file, or the interpreter"),
        "not-executable": (_script(tmp_path / "chrome", "x", 0o644), "is not executable (permission denied)"),
        "folder": (str(folder), "is a folder, not Chromium's executable"),
        "missing": (str(tmp_path / "no" / "chromium"), "does not exist"),
    }


def _one_error(err: str, prog: str) -> str:
    """The one error line of a command's stderr; anything else there is a known note."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(f"{prog}: error: ")]
    assert len(errors) == 1, err
    others = [line for line in lines if line not in errors]
    assert all(line.startswith(("built-in data: rendering", NOISE)) for line in others), err
    return errors[0]


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def no_asyncio_noise(caplog):
    """After the test: nothing asyncio reports late, such as a future whose error nobody read
    (it prints a whole traceback after the command's line)."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    yield
    gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


# --------------------------------------------------------------------------- webvoyager
RUN = ["--tasks", "miniwob:click-button", "--agent", "ocr", "--no-progress", "--no-browser-sandbox"]


@pytest.mark.parametrize(
    "case", ["false", "crash", "plain", "interpreter", "not-executable", "folder", "missing"]
)
def test_webvoyager_bad_browser_one_line_exit_2_no_folder(case, bad, tmp_path, capsys, no_asyncio_noise):
    executable, cause = bad[case]
    out = tmp_path / "run"
    assert webvoyager_main([*RUN, "--browser", executable, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line: no call log, no command line, no traceback
    line = _one_error(err, "regionfocus webvoyager")
    assert line.startswith(
        f"regionfocus webvoyager: error: Chromium did not start: --browser {executable} {cause}"
    )
    assert not out.exists()  # no folder for a rerun to trip over


def test_a_folder_with_records_is_left_exactly_as_it_was(bad, tmp_path, capsys):
    # Chromium starts before the folder is opened: neither its config.json nor its log nor its lock
    # is touched by a run that cannot start (a real run's folder, resumed: the slow test below).
    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_text('{"schema_version": 2, "identity": {}, "invocation": {}}\n')
    (out / "records.jsonl").write_text('{"id": "miniwob.click-button.s0", "status": "ok"}\n')
    before = _files(out)
    assert webvoyager_main([*RUN, "--browser", bad["crash"][0], "--out", str(out)]) == 2
    _one_error(capsys.readouterr().err, "regionfocus webvoyager")
    assert _files(out) == before


def test_screen_text_eval_bad_browser(bad, tmp_path, capsys, no_asyncio_noise):
    # --no-preflight: nothing is asked of the (absent) model server before the browser starts.
    out = tmp_path / "run"
    argv = ["--out", str(out), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--no-preflight"]
    assert screen_text_main([*argv, "--browser", bad["crash"][0], "--no-browser-sandbox"]) == 2
    line = _one_error(capsys.readouterr().err, "regionfocus screen-text-eval")
    assert f"--browser {bad['crash'][0]} exited at start (exit code 1): libnss3.so" in line
    assert not out.exists()


def test_a11y_bad_browser(bad, capsys, no_asyncio_noise):
    for case in ("plain", "missing"):
        executable, cause = bad[case]
        assert a11y_command([str(PAGE / "modal-dialog.html"), "--browser", executable]) == 2
        line = _one_error(capsys.readouterr().err, "regionfocus a11y")
        assert line.startswith(
            f"regionfocus a11y: error: Chromium did not start: --browser {executable} {cause}"
        )


# ------------------------------------------------------------------------ screenspot-pro
def test_screenspot_builtin_bad_browser_renders_nothing(bad, tmp_path, monkeypatch, capsys, no_asyncio_noise):
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))  # an empty cache: the set must be rendered
    out = tmp_path / "run"
    argv = ["--data", "builtin", "--agent", "ocr", "--out", str(out), "--browser", bad["crash"][0]]
    assert screenspot_main(argv) == 2
    line = _one_error(capsys.readouterr().err, "regionfocus screenspot-pro")
    assert line.startswith(
        "regionfocus screenspot-pro: error: could not render the built-in data set: Chromium did not start: "
        f"--browser {bad['crash'][0]} exited at start (exit code 1): libnss3.so"
    )
    assert not out.exists()
    assert [p for p in cache.rglob("*") if p.is_file() and "regionfocus" in p.parts] == []


def test_screenspot_build_sample_bad_browser(bad, tmp_path, capsys):
    target = tmp_path / "set"
    assert screenspot_main(["build-sample", str(target), "--browser", "/bin/false"]) == 2
    line = _one_error(capsys.readouterr().err, "regionfocus screenspot-pro build-sample")
    assert line.endswith(f"--browser /bin/false {bad['false'][1]}")
    assert not target.exists()  # and no half-built folder beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "chrome",
        "crash.sh",
        "folder",
        "interp.sh",
        "plain.sh",
    ]


# ------------------------------------------------------------- no Chromium, no driver
def test_no_chromium_at_all_says_how_to_install(tmp_path, monkeypatch, capsys, no_asyncio_noise):
    # Debian's Chromium absent (its path moved to one that does not exist) and Playwright's own
    # build not downloaded (an empty PLAYWRIGHT_BROWSERS_PATH): the README's set-up is named.
    monkeypatch.setattr(chromium, "DEBIAN_CHROMIUM", str(tmp_path / "usr-lib-chromium"))
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "browsers"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    install = "`bash scripts/setup.sh` installs Debian's (apt-get install chromium), or --browser PATH names another"
    out = tmp_path / "run"
    assert webvoyager_main([*RUN, "--out", str(out)]) == 2
    line = _one_error(capsys.readouterr().err, "regionfocus webvoyager")
    assert "not installed and Playwright's own is not downloaded" in line and line.endswith(install)
    assert screenspot_main(["--data", "builtin", "--agent", "ocr", "--out", str(out)]) == 2
    line = _one_error(capsys.readouterr().err, "regionfocus screenspot-pro")
    assert f"no Chromium ({tmp_path / 'usr-lib-chromium'} is not installed)" in line and line.endswith(
        install
    )
    assert not out.exists()


def test_playwright_without_its_driver(tmp_path, monkeypatch, capsys, no_asyncio_noise):
    monkeypatch.setenv("PLAYWRIGHT_NODEJS_PATH", str(tmp_path / "node"))
    out = tmp_path / "run"
    assert webvoyager_main([*RUN, "--out", str(out)]) == 2
    line = _one_error(capsys.readouterr().err, "regionfocus webvoyager")
    assert line.startswith(
        "regionfocus webvoyager: error: Chromium did not start: Playwright's driver did not run"
    )
    assert str(tmp_path / "node") in line and "`bash scripts/setup.sh` reinstalls Playwright" in line
    assert not out.exists()


# ------------------------------------------------------------------- the one home itself
def test_choose_chromium_checks_before_anything_starts(bad):
    for case in ("not-executable", "folder", "missing"):
        with pytest.raises(ChromiumLaunchError, match="chromium=/"):
            choose_chromium(bad[case][0], "chromium=")
    assert choose_chromium("/bin/false") == ChromiumChoice("/bin/false", "--browser", given=True)


async def test_launched_raises_one_line_and_leaves_no_driver(bad):
    with pytest.raises(ChromiumLaunchError) as got:
        async with launched(ChromiumChoice(bad["crash"][0], "browser_path=", given=True), sandbox=False):
            pass
    assert str(got.value) == (
        f"Chromium did not start: browser_path={bad['crash'][0]} exited at start (exit code 1): "
        "libnss3.so: cannot open shared object"
    )


def test_browsergym_offline_launch_names_chromium_keyword(bad):
    # The plug-in's set-up hands BrowserGym a Playwright whose launch defaults to chromium=PATH.
    from playwright.sync_api import sync_playwright

    from regionfocus.plugins._bgym_offline import _settings, _with_local_chromium

    with pytest.raises(ChromiumLaunchError, match=r"chromium=/\S+ does not exist"):
        _settings(bad["missing"][0], None, token_counts=False)
    choice, _ = _settings("/bin/false", None, token_counts=False)
    with sync_playwright() as pw:
        launch = _with_local_chromium(pw.chromium.launch, choice)
        with pytest.raises(ChromiumLaunchError) as got:
            launch(headless=True)
    assert str(got.value) == f"Chromium did not start: chromium=/bin/false {bad['false'][1]}"


# ------------------------------------------------------------------------------- slow
@pytest.mark.slow
def test_the_reported_command_in_a_shell(tmp_path):
    """`regionfocus webvoyager --browser /bin/false` as a user types it: one line, exit 2."""
    exe = Path(sys.executable).with_name("regionfocus")
    out = tmp_path / "run"
    argv = [str(exe), "webvoyager", *RUN, "--browser", "/bin/false", "--out", str(out)]
    got = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert got.returncode == 2, got.stderr
    assert got.stderr == (
        "regionfocus webvoyager: error: Chromium did not start: --browser /bin/false exited at start "
        "(exit code 1) and wrote nothing on stderr\n"
    )
    env = {**os.environ, "PLAYWRIGHT_NODEJS_PATH": str(tmp_path / "node")}
    got = subprocess.run(
        argv[:-4] + ["--out", str(out)], capture_output=True, text=True, timeout=300, env=env
    )
    assert got.returncode == 2 and got.stderr.count("\n") == 1, got.stderr  # no late asyncio traceback
    assert "Playwright's driver did not run" in got.stderr
    assert not out.exists()


@pytest.mark.slow
def test_a_real_run_folder_resumes_after_a_bad_browser(tmp_path, capsys):
    """A real one-task run, a rerun with a bad --browser (nothing touched), then the right browser
    resumes it: the finished task is not run again."""
    if not os.path.isfile(chromium.DEBIAN_CHROMIUM):
        pytest.skip("needs Debian's Chromium")
    out = tmp_path / "run"
    argv = [*RUN, "--max-steps", "1", "--out", str(out)]
    assert webvoyager_main(argv) == 0
    capsys.readouterr()
    records = (out / "records.jsonl").read_bytes()
    assert records.count(b"\n") == 1
    before = _files(out)
    assert webvoyager_main([*argv, "--browser", "/bin/false"]) == 2
    _one_error(capsys.readouterr().err, "regionfocus webvoyager")
    assert _files(out) == before
    assert webvoyager_main(argv) == 0
    assert (out / "records.jsonl").read_bytes() == records  # resumed: nothing rerun, nothing added
    assert "1 task finished" in capsys.readouterr().out


@pytest.mark.slow
async def test_a_real_chromium_that_crashes_at_start(monkeypatch):
    """Debian's Chromium, headed with no display: it exits at once; its own error line is shown."""
    from regionfocus.webvoyager.browser import Browser

    if not os.path.isfile(chromium.DEBIAN_CHROMIUM):
        pytest.skip("needs Debian's Chromium")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    browser = Browser(headless=False, sandbox=False)
    with pytest.raises(ChromiumLaunchError) as got:
        await browser.start()
    assert str(got.value).startswith(
        f"Chromium did not start: {chromium.DEBIAN_CHROMIUM} (the default; --browser PATH chooses another) "
        "exited at start (exit code 1): Missing X server or $DISPLAY"
    )
    assert "\n" not in str(got.value)
    assert browser.playwright_browser is None and browser._pw is None  # nothing left running
