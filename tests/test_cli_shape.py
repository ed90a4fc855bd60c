"""One command shape (issue 33, item 2): every harness command ends through
``regionfocus.kit.command.run_command``, so the same bad input gives the same exit code and
the same one-line error in ``screenspot-pro`` and ``webvoyager``; ``--strategy`` is the same
comma list in both; Ctrl-C exits 130 with the resume message in both; and no function of a
``cli.py`` grows past 60 lines."""

from __future__ import annotations

import ast
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from regionfocus.aitz.cli import main as aitz_main
from regionfocus.screenspot_pro.cli import main as screenspot_main
from regionfocus.webvoyager.cli import main as webvoyager_main

from .test_screenspot_helpers import ColourModel, fresh_dataset

ROOT = Path(__file__).resolve().parents[1]
LONGEST = 60


def _cli_files() -> list[Path]:
    """Every command-line module of ours: cli.py, cli_args.py and the *_cli.py tools."""
    packages = ("regionfocus", "adapters", "screenspot_pro", "webvoyager", "aitz")
    return sorted(
        {
            p
            for pkg in packages
            for name in ("cli.py", "cli_args.py", "*_cli.py")
            for p in (ROOT / pkg).rglob(name)
        }
    )


def test_no_function_in_a_command_line_module_is_longer_than_60_lines():
    files = _cli_files()
    assert {"screenspot_pro", "webvoyager", "aitz", "adapters", "regionfocus"} <= {
        p.parent.name for p in files
    }
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in files
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > LONGEST
    ]
    assert not long, "split these into smaller functions: " + "; ".join(long)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return fresh_dataset(tmp_path_factory.mktemp("cli-shape") / "data")


def _error(capsys) -> str:
    """The command's stderr, which must be one line without a traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


BAD = {
    "unknown agent": (["--agent", "qwen9-vl"], "argument --agent: unknown adapter 'qwen9-vl'; known: "),
    "bad strategy": (["--strategy", "regionfocus,zoomklick"], "--strategy: unknown 'zoomklick'; known: "),
    "empty strategy": (["--strategy", ","], "--strategy: unknown ','"),
    "bad shard": (["--shard", "2/2"], "argument --shard: --shard 2/2: need 0 <= I < N"),
    "shard syntax": (["--shard", "1of2"], "argument --shard: "),
    "concurrency": (["--concurrency", "0"], "argument --concurrency: must be a whole number >= 1, got '0'"),
    "unknown flag": (["--concurency", "2"], "unrecognized arguments: --concurency 2"),
    "text history contradiction": (["--text-history", "--history", "image"], "--text-history contradicts"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_the_same_bad_input_gives_both_harnesses_the_same_code_and_line(
    case, data: Path, tmp_path: Path, capsys
):
    extra, message = BAD[case]
    screenspot = ["--data", str(data), "--out", str(tmp_path / "s"), "--no-progress", *extra]
    webvoyager = ["--tasks", "miniwob:click-button", "--out", str(tmp_path / "w"), "--no-progress", *extra]
    assert screenspot_main(screenspot) == 2
    s_err = _error(capsys)
    assert webvoyager_main(webvoyager) == 2
    w_err = _error(capsys)
    assert s_err.startswith("regionfocus screenspot-pro: error: ") and message in s_err
    assert w_err.startswith("regionfocus webvoyager: error: ") and message in w_err
    assert s_err.split(": error: ", 1)[1] == w_err.split(": error: ", 1)[1]
    assert not (tmp_path / "s").exists() and not (tmp_path / "w").exists()  # refused before any run


def test_a_missing_data_or_task_file_is_one_line_naming_it(tmp_path: Path, capsys):
    missing = tmp_path / "nowhere"
    assert screenspot_main(["--data", str(missing), "--no-progress"]) == 2
    assert str(missing) in _error(capsys)
    assert webvoyager_main(["--tasks", f"{missing}.jsonl", "--no-progress"]) == 2
    assert f"{missing}.jsonl" in _error(capsys)
    assert aitz_main(["run", str(missing), "--no-progress"]) == 2
    assert str(missing) in _error(capsys)


@pytest.mark.parametrize(
    "main, argv",
    [
        (screenspot_main, ["report"]),
        (screenspot_main, ["compare", "only-one"]),
        (webvoyager_main, ["judge", "somewhere"]),
        (webvoyager_main, ["merge", "out"]),
        (aitz_main, ["score", "only-data"]),
        (aitz_main, ["bogus"]),
    ],
)
def test_subcommands_with_bad_flags_exit_2_in_one_line_naming_the_subcommand(main, argv, capsys):
    assert main(argv) == 2
    err = _error(capsys)
    head, _, message = err.partition(": error: ")
    assert message and (head.endswith(argv[0]) or repr(argv[0]) in message)


def test_subcommands_without_a_run_folder_exit_2_naming_it(tmp_path: Path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    for sub in (["report", str(empty)], ["compare", str(empty), str(empty)]):
        assert webvoyager_main(sub) == 2
        err = _error(capsys)
        assert err.startswith(f"regionfocus webvoyager {sub[0]}: error: {empty} holds no run")


def test_help_lists_every_subcommand_with_its_summary(capsys):
    from regionfocus.screenspot_pro import cli as sspro
    from regionfocus.screenspot_pro.formats import FORMATS
    from regionfocus.webvoyager import cli as wv

    for main, module in ((screenspot_main, sspro), (webvoyager_main, wv)):
        assert main(["--help"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        for name, sub in module.SUBCOMMANDS.items():
            assert f"{module.PROG} {name} {sub.args} {sub.summary}" in out
        assert "--strategy NAMES" in out and "default: runs/" in out
    assert screenspot_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f" {f.title} " in out and f.pattern in out for f in FORMATS)  # the layouts, from the table
    assert aitz_main(["--help"]) == 0
    assert "regionfocus aitz score DATA" in capsys.readouterr().out


def test_strategy_list_runs_every_name_on_screenspot_pro(data: Path, tmp_path: Path, capsys):
    out = tmp_path / "run"
    argv = ["--data", str(data), "--out", str(out), "--no-progress", "--limit", "2"]
    assert screenspot_main([*argv, "--strategy", "regionfocus,narrowing"], model=ColourModel()) == 0
    assert (out / "results.json").is_file() and (out / "results_iterative-narrowing.json").is_file()


@pytest.mark.slow  # Chromium, two strategies' episodes
def test_strategy_list_runs_each_name_in_its_own_webvoyager_folder(tmp_path: Path, capsys):
    out = tmp_path / "wv"
    argv = ["--tasks", "miniwob:click-button", "--agent", "ocr", "--out", str(out), "--no-progress"]
    assert webvoyager_main([*argv, "--strategy", "regionfocus,zoomclick"]) == 0
    for name in ("regionfocus", "zoomclick"):
        config = json.loads((out / name / "config.json").read_text())
        pinned = json.dumps(config)
        assert ('"strategy": "zoomclick"' in pinned) == (name == "zoomclick")
        assert len((out / name / "records.jsonl").read_text().splitlines()) == 1
    assert not (out / "records.jsonl").exists()
    # one name: --out itself, as before
    assert (
        webvoyager_main([*argv[:4], "--out", str(tmp_path / "one"), "--no-progress", "--strategy", "dimo"])
        == 0
    )
    assert '"strategy": "dimo-gui"' in (tmp_path / "one" / "config.json").read_text()


class _SilentServer:
    """A TCP server that takes connections and never answers: a model server that hangs, so a
    run is surely in flight when it is interrupted. ``asked`` is set at the first request."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.asked = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.asked.set()

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


def _interrupt(argv: list[str], server: _SilentServer) -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "regionfocus.cli", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        while not server.asked.wait(0.1):
            if proc.poll() is not None:
                raise AssertionError(f"the run ended before asking the model: {proc.communicate()}")
        time.sleep(0.2)  # the request is in flight
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err.decode()


@pytest.mark.slow  # two subprocesses, one with Chromium
@pytest.mark.parametrize("harness", ["screenspot-pro", "webvoyager"])
def test_ctrl_c_exits_130_with_the_resume_message_in_both_harnesses(harness, tmp_path: Path):
    server = _SilentServer()
    model = ["--agent", "qwen2.5-vl", "--base-url", server.base_url, "--model", "m", "--timeout", "600"]
    if harness == "screenspot-pro":
        where = ["--data", str(fresh_dataset(tmp_path / "data")), "--limit", "1"]
    else:
        where = ["--tasks", "miniwob:click-button"]
    try:
        code, err = _interrupt(
            [harness, *where, *model, "--out", str(tmp_path / "run"), "--no-progress"], server
        )
    finally:
        server.close()
    unit = "samples" if harness == "screenspot-pro" else "tasks"
    assert code == 130, err
    assert f"interrupted: finished {unit} are saved; rerun the same command to resume" in err
    assert "Traceback" not in err
