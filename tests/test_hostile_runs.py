"""Whole `regionfocus screenspot-pro` runs against a server that misbehaves the way real ones do
under load: failed calls on chosen calls of chosen samples, non-finite numbers, lone
surrogates, a 300 KB reply. The model is the real Qwen2.5-VL adapter over the real HTTP
backend; the server answers from what it sees (tests/test_screenspot_http.py's QwenLike).

What must hold: every sample gets exactly one record, strict JSON in valid UTF-8; a sample that
lost calls is "partial" (scored as answered, counted); ``--retry-errors`` against the healed
server gives exactly the numbers of a run that never failed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regionfocus.screenspot_pro.cli import main

from .chat_server import ChatServer
from .hostile import Hostile, colour_sample_of
from .hostile_run import IDS_BY_COLOUR, quick_model, run_argv, scores, strict_lines
from .test_screenspot_helpers import fresh_dataset
from .test_screenspot_http import QwenLike

pytestmark = pytest.mark.slow


def test_hostile_replies_finish_with_one_record_per_sample(tmp_path: Path, capsys):
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    faults = {
        ("appa_0", "act"): "nan",
        ("appa_2", "act"): "inf",
        ("appa_4", "act"): "nan-literal",
        ("appb_0", "judge"): "surrogate",
        ("appb_1", "act"): "surrogate",
        ("appa_1", "view"): "huge",
        ("appa_3", "act"): "nan-usage",
        ("appb_3", "focal"): "huge",
    }
    hostile = Hostile(QwenLike(), colour_sample_of(IDS_BY_COLOUR), faults)
    with ChatServer(responder=hostile, model="qwen-test") as srv:
        code = main(run_argv(data, out, srv), model=quick_model(srv))
    assert code == 0, capsys.readouterr().err
    # every fault fired
    assert {(s, c) for s, c, _ in hostile.seen} == set(faults)

    lines = strict_lines(out / "records.jsonl")
    ids = [r["id"] for r in lines]
    assert sorted(ids) == sorted(IDS_BY_COLOUR.values())  # exactly one record each
    recs = {r["id"]: r for r in lines}
    # A non-finite number is no answer: the parse fails and the round runs, never a NaN point.
    for sid in ("appa_0", "appa_2", "appa_4"):
        assert recs[sid]["baseline"]["point"] is None, recs[sid]["baseline"]
        assert recs[sid]["trigger"] == "no-action"
    # the surrogate became U+FFFD in the stored text; the server's NaN token counts are null
    judge = next(c for c in recs["appb_0"]["trace"]["calls"] if c["kind"] == "judge")
    assert "\ufffd" in judge["text"]
    assert recs["appa_3"]["trace"]["calls"][0].get("prompt_tokens") is None
    # the 300 KB reply is kept (truncated or whole) without stopping anything
    assert recs["appa_1"]["status"] in ("ok", "partial")
    for name in ("summary.md", "report.html", "results.json"):
        (out / name).read_text(encoding="utf-8")


def test_lost_view_calls_make_partial_samples_and_retry_heals_them(tmp_path: Path, capsys):
    data = fresh_dataset(tmp_path / "data")
    clean, faulty = tmp_path / "clean", tmp_path / "faulty"
    with ChatServer(responder=QwenLike(), model="qwen-test") as srv:
        assert main(run_argv(data, clean, srv), model=quick_model(srv)) == 0
        # The small targets are only found in the zoomed views: losing the views loses them.
        lose_views = ("appa_1", "appa_3", "appb_1")
        faults = {(s, "view"): "500" for s in lose_views}
        # and one of each of our own requests, on samples of their own
        faults |= {("appb_0", "judge"): "500", ("appa_4", "focal"): "500", ("appa_4", "choose"): "500"}
        hostile = Hostile(QwenLike(), colour_sample_of(IDS_BY_COLOUR), faults)
        srv.set_responder(hostile)
        assert main(run_argv(data, faulty, srv), model=quick_model(srv)) == 0
        assert {(s, c) for s, c, _ in hostile.seen} == set(faults)  # every fault fired
        recs = {r["id"]: r for r in strict_lines(faulty / "records.jsonl")}
        partial = {*lose_views, "appb_0", "appa_4"}
        assert {i for i, r in recs.items() if r["status"] == "partial"} == partial
        for sid in lose_views:
            assert "candidate" in recs[sid]["lost"] and "500" in recs[sid]["lost"]
            assert recs[sid]["final"]["correctness"] == "wrong"  # the baseline's guess stayed
        assert "(judge)" in recs["appb_0"]["lost"]
        assert "focal" in recs["appa_4"]["lost"] and "choose" in recs["appa_4"]["lost"]
        assert scores(faulty) != scores(clean)
        summary = (faulty / "summary.md").read_text()
        assert "Partial (some model calls failed; scored as answered, kept in the denominator): 5." in summary
        assert "## Partial samples" in summary and "appa_1" in summary
        html = (faulty / "report.html").read_text()
        assert html.count('data-status="partial"') == 5 and "5 partial" in html
        official = json.loads((faulty / "results.json").read_text())["details"]
        assert sum(d.get("status") == "partial" for d in official) == 5

        # Resuming without --retry-errors keeps them; with it, the healed server reruns them.
        srv.set_responder(QwenLike())
        assert main(run_argv(data, faulty, srv), model=quick_model(srv)) == 0
        assert sum(r["status"] == "partial" for r in strict_lines(faulty / "records.jsonl")) == 5
        assert main(run_argv(data, faulty, srv, "--retry-errors"), model=quick_model(srv)) == 0
    healed = {r["id"]: r for r in strict_lines(faulty / "records.jsonl")}
    before = {r["id"]: r for r in strict_lines(clean / "records.jsonl")}
    assert {i: r["status"] for i, r in healed.items()} == {i: r["status"] for i, r in before.items()}
    assert scores(faulty) == scores(clean)
    for sid in healed:
        assert healed[sid]["final"]["point"] == before[sid]["final"]["point"]
