"""`regionfocus screenspot-pro --second-agent/--second-base-url/--second-model`: the second model
of a strategy that routes between two (zoom-consistency), built from the command line, driven
over HTTP against two scripted OpenAI-compatible servers (tests/chat_server.py); its results
re-score exactly, its URL's credentials stay masked, and flags it cannot use exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regionfocus.adapters.redact import redact_url
from regionfocus.kit.runlog import read_records
from regionfocus.screenspot_pro.cli import main
from tests.chat_server import ChatServer, Reply

from .test_screenspot_helpers import fresh_dataset
from .test_strategies_mvp_router import colour_responder, official_verdict

SECRET = "s3cret"


def corner_responder(body: dict) -> Reply:
    """Qwen2.5-VL's answer at (20, 20) of whatever image it gets: on a crop, far from its centre."""
    cont = "20, 20]}}\n</tool_call>"
    if not body.get("continue_final_message"):
        cont = (
            '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": ['
            + cont
        )
    return Reply.text(cont)


@pytest.mark.slow  # a real model or engine end to end: seconds of CPU
def test_zoom_consistency_routes_between_the_agent_and_the_second_agent(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("RF_TEST_KEY", "k3y")
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    with ChatServer(corner_responder, model="m") as first, ChatServer(colour_responder, model="m2") as second:
        second_url = second.base_url.replace("://", f"://user:{SECRET}@", 1)
        argv = ["--data", str(data), "--out", str(out), "--no-progress", "--task", "appb_macos",
                "--agent", "qwen2.5-vl", "--base-url", first.base_url, "--model", "m",
                "--second-agent", "qwen2.5-vl", "--second-base-url", second_url, "--second-model", "m2",
                "--api-key-env", "RF_TEST_KEY", "--strategy", "zoom-consistency"]  # fmt: skip
        assert main(argv) == 0
        # the first: 4 baselines and 4 crops; the second: its own step 1 on each sample and a
        # crop on each but the [mute] one, where it gives no point
        assert first.stats.chat_requests == 8 and second.stats.chat_requests == 7
        assert {b["model"] for b in first.stats.bodies} == {"m"}
        assert {b["model"] for b in second.stats.bodies} == {"m2"}
        assert set(first.stats.auth_headers) == {"Bearer k3y"}  # --api-key-env serves both
        assert len(set(second.stats.auth_headers)) == 1 and second.stats.auth_headers[0].startswith("Basic ")
        # the same command again resumes: nothing is asked twice
        assert main(argv) == 0
        assert first.stats.chat_requests == 8 and second.stats.chat_requests == 7

    recs = {r["id"]: r for r in read_records(out / "records.jsonl")}
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs.values())
    for rid, r in recs.items():
        trace = r["strategies"]["zoom-consistency"]["trace"]
        endpoints = {c["kind"]: c["endpoint"] for c in trace["calls"]}
        assert endpoints["zoom"] == first.base_url and endpoints["second:baseline"] == redact_url(second_url)
        assert "***:***@127.0.0.1" in endpoints["second:baseline"]
        step = trace["steps"][0]
        point = r["strategies"]["zoom-consistency"]["point"]
        # the corner answer lies far from its crop's centre; the second model's colour answer on
        # a target it found lies nearer its own: that one is routed, and it is right
        if rid in ("appb_0", "appb_1"):
            assert step["chosen"] == "second" and step["first"]["consistency"] > step["second"]["consistency"]
            assert point == pytest.approx(step["second"]["point"], abs=1e-3)  # the trace rounds
            assert r["strategies"]["zoom-consistency"]["correctness"] == "correct"
            assert r["baseline"]["correctness"] == "wrong"
        else:  # [error]: the second answers its own crop's corner too; [mute]: it answers nothing
            assert step["chosen"] == "first"
            assert point == pytest.approx(step["first"]["point"], abs=1e-3)

    config = json.loads((out / "config.json").read_text())
    assert config["identity"]["second_agent"] == "qwen2.5-vl" and config["identity"]["second_model"] == "m2"
    assert config["invocation"]["second_base_urls"] == [redact_url(second_url)]
    assert not [p for p in out.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]

    path = out / "results_zoom-consistency.json"
    doc = json.loads(path.read_text())
    for d in doc["details"]:
        assert d["correctness"] == official_verdict(d["pred"], d, recs[d["id"]]["sample"]["img_size"])
    assert doc["metrics"]["overall"]["num_correct_action"] == 2
    before = path.read_bytes()
    path.unlink()
    assert main(["report", str(out)]) == 0
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--second-agent", "qwen2.5-vl", "--second-base-url", "http://127.0.0.1:9/v1", "--strategy",
          "zoomclick"], "no --strategy here uses a second model; the ones that do: zoom-consistency"),
        (["--second-agent", "qwen2.5-vl", "--second-base-url", "http://127.0.0.1:9/v1"],
         "no --strategy here uses a second model"),
        (["--second-base-url", "http://127.0.0.1:9/v1", "--strategy", "zoom-consistency"],
         "--second-base-url and --second-model need --second-agent"),
        (["--second-agent", "qwen2.5-vl", "--strategy", "zoom-consistency"],
         "--second-agent qwen2.5-vl needs --second-base-url"),
    ],
)  # fmt: skip
def test_second_model_flags_that_cannot_be_used_exit_2(tmp_path: Path, capsys, flags, message):
    argv = ["--data", str(tmp_path / "absent"), "--out", str(tmp_path / "run"), "--agent", "qwen2.5-vl",
            "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *flags]  # fmt: skip
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_one_model_run_pins_no_second_model_keys(tmp_path: Path):
    """Folders made before --second-* hold none of its keys, so they still resume."""
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    with ChatServer(colour_responder, model="m") as srv:
        argv = ["--data", str(data), "--out", str(out), "--no-progress", "--task", "appb_macos", "--limit", "1",
                "--agent", "qwen2.5-vl", "--base-url", srv.base_url, "--model", "m",
                "--strategy", "zoom-consistency"]  # fmt: skip
        assert main(argv) == 0
    config = json.loads((out / "config.json").read_text())
    assert not [
        k for part in config.values() if isinstance(part, dict) for k in part if k.startswith("second")
    ]
