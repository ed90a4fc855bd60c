"""`regionfocus webvoyager judge` checks its judge model before the first task is judged, as
every harness command checks its model (tests/test_preflight.py): a dead server, an unknown
model or a missing key ends it with exit 2 in one line naming the cause, before any judge call
and without writing anything to the run folder. It used to judge every task with failing calls,
write each verdict as unknown and exit 0. ``--no-preflight`` skips the request (never the key).
The judge's server is the real local OpenAI-compatible one the other checks use."""

from __future__ import annotations

from pathlib import Path

import pytest

from regionfocus.webvoyager.cli import main

from .chat_server import ChatServer
from .provider_servers import closed_port
from .test_preflight import _one_error_line
from .test_webvoyager_unit import _fake_run

JUDGE = "judge-vlm"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run folder with two answered tasks, each with its screenshots."""
    root = tmp_path / "run"
    _fake_run(
        root,
        [
            {"id": "Apple--0", "web_name": "Apple", "ques": "Find an iPhone.", "answer": "$799", "steps": 2},
            {"id": "ArXiv--0", "web_name": "ArXiv", "ques": "Find a paper.", "answer": "2401.1", "steps": 1},
        ],
    ).close()
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _judge(root: Path, base_url: str, *extra: str) -> int:
    return main(["judge", str(root), "--base-url", base_url, "--model", JUDGE, "--repeats", "1", *extra])


def test_a_dead_judge_server_ends_the_command_before_any_task_is_judged(run_dir: Path, capsys):
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    before = _files(run_dir)
    assert _judge(run_dir, dead) == 2
    err = _one_error_line(capsys)
    assert err.startswith("regionfocus webvoyager judge: error: ")
    assert f"the server at {dead} cannot be reached" in err and "--no-preflight" in err
    assert _files(run_dir) == before  # no judge.json, no report rewritten


def test_an_unknown_judge_model_is_named_and_nothing_is_asked(run_dir: Path, capsys):
    before = _files(run_dir)
    with ChatServer(responder="SUCCESS", model="Qwen/Qwen2.5-VL-72B-Instruct") as srv:
        assert _judge(run_dir, srv.base_url) == 2
        assert srv.stats.chat_requests == 0 and srv.stats.requests == 1  # one GET /models
    err = _one_error_line(capsys)
    assert f"does not serve model {JUDGE!r} (it lists: Qwen/Qwen2.5-VL-72B-Instruct); check --model" in err
    assert _files(run_dir) == before


@pytest.mark.parametrize("flag", [(), ("--no-preflight",)])
def test_a_missing_key_is_named_before_anything_even_without_the_request(run_dir, capsys, monkeypatch, flag):
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    before = _files(run_dir)
    with ChatServer(responder="SUCCESS", model=JUDGE) as srv:
        assert _judge(run_dir, srv.base_url, "--api-key-env", "JUDGE_KEY", *flag) == 2
        assert srv.stats.requests == 0
    assert "no API key: set JUDGE_KEY" in _one_error_line(capsys)
    assert _files(run_dir) == before


def test_a_healthy_judge_is_asked_once_then_judges(run_dir: Path, capsys):
    with ChatServer(responder="The answer is shown. SUCCESS", model=JUDGE) as srv:
        assert _judge(run_dir, srv.base_url) == 0, capsys.readouterr().err
        assert srv.stats.requests - srv.stats.chat_requests == 1 and srv.stats.chat_requests == 2
    assert (run_dir / "judge.json").is_file() and "100.0" in capsys.readouterr().out


def test_no_preflight_judges_through_a_gateway_without_the_name_listed(run_dir: Path, capsys):
    with ChatServer(responder="SUCCESS", model="router-alias") as srv:
        assert _judge(run_dir, srv.base_url, "--no-preflight") == 0, capsys.readouterr().err
        assert srv.stats.requests == srv.stats.chat_requests == 2  # no GET /models at all
