"""Replies that are no answer (issue 30, items 1-3): a reply the model did not finish
(``finish_reason: "length"``, cut mid-number, in text or in structured tool-call arguments), a
reply with no text (``content: null``), and a body that inflates to gigabytes.

What must hold: none of them is scored as an answer. Each is a failed call, retried like a
malformed body, then an error (or a partial sample) that summary.md names and
``--retry-errors`` reruns; a huge body is refused once the cap is read, without the client
holding it. The lenient readers never close a number that was cut.

The backend tests run against the real local server (tests/chat_server.py) through the real
openai client; the whole runs are ``regionfocus screenspot-pro`` with the real Qwen2.5-VL adapter
against the hostile server (tests/hostile.py), as tests/test_hostile_runs.py does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regionfocus.actions import ActionType
from regionfocus.adapters.backends.base import MAX_REPLY_BYTES, UnfinishedReply, finished_text
from regionfocus.adapters.backends.openai_http import BackendError, OpenAIBackend
from regionfocus.adapters.families.grounders import parse_xy_json
from regionfocus.adapters.families.qwen import parse_qwen
from regionfocus.adapters.families.uitars import parse_uitars
from regionfocus.kit.command import ALL_FAILED
from regionfocus.screenspot_pro.cli import main, run_parser

from .chat_server import ChatServer, Reply
from .hostile import Hostile, colour_sample_of, cut_mid_number, gzip_completion
from .hostile_run import IDS_BY_COLOUR, quick_model, results, run_argv
from .test_screenspot_helpers import fresh_dataset
from .test_screenspot_http import QwenLike

# A Qwen2.5-VL grounding answer, and what reaches the parser when it stops at max_tokens one
# digit into its y (the issue's "[188, 6" for [188, 64]).
QWEN = (
    "The Save button is in the toolbar.\n<tool_call>\n"
    '{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [188, 64]}}\n</tool_call>'
)
QWEN_CUT = cut_mid_number(QWEN.split("]")[0] + "]")  # '... "coordinate": [188, 6'
TOOL_CALL = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [188, 64]}}


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": text}]}]


def backend(server: ChatServer, **kw) -> OpenAIBackend:
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 30.0)
    return OpenAIBackend([server.base_url], model="test-model", **kw)


def structured(arguments: str, finish_reason: str) -> Reply:
    call = {"id": "c1", "type": "function", "function": {"name": "computer_use", "arguments": arguments}}
    return Reply(content=None, tool_calls=[call], finish_reason=finish_reason)


@pytest.fixture
def server():
    with ChatServer() as srv:
        yield srv


# ------------------------------------------------------------------ item 1: cut replies
def test_the_cut_reply_is_what_the_issue_saw():
    assert QWEN_CUT.endswith('"coordinate": [188, 6')
    assert cut_mid_number("Selected point: 12") == "Selected point: 1"


async def test_a_reply_cut_at_max_tokens_is_retried_not_answered(server):
    server.script(Reply.text(QWEN_CUT, finish_reason="length"), Reply.text(QWEN))
    async with backend(server) as b:
        out = await b.complete(user("click Save"))
    assert out.text == QWEN  # the second attempt's whole answer, never the cut one
    assert server.stats.chat_requests == 2


@pytest.mark.parametrize("reason", ["length", "content_filter", "abort", None])
async def test_a_reply_the_model_did_not_finish_fails_once_retries_are_spent(server, reason):
    server.set_responder(Reply.text(QWEN_CUT, finish_reason=reason))
    async with backend(server, max_retries=2) as b:
        with pytest.raises(BackendError) as info:
            await b.complete(user("click Save"))
    err = info.value
    assert err.retryable and err.attempts == 3 and server.stats.chat_requests == 3
    shown = reason if reason is not None else "none given"
    assert f"the model did not finish its reply (stop reason from the server: {shown})" in str(err)


async def test_tool_call_arguments_cut_mid_number_are_no_click(server):
    args = json.dumps(TOOL_CALL["arguments"])
    server.set_responder(structured(cut_mid_number(args), "length"))
    async with backend(server, max_retries=1) as b:
        with pytest.raises(BackendError, match="did not finish"):
            await b.complete(user("click Save"))


async def test_a_finished_tool_call_is_an_answer(server):
    # finish_reason "tool_calls": the model ended its turn by calling the tool, arguments whole.
    server.set_responder(structured(json.dumps(TOOL_CALL["arguments"]), "tool_calls"))
    async with backend(server) as b:
        out = await b.complete(user("click Save"))
    action = parse_qwen(out.text)
    assert action.type == ActionType.CLICK and (action.point.x, action.point.y) == (188, 64)


async def test_one_cut_choice_of_n_fails_the_call(server):
    whole = {"index": 0, "message": {"role": "assistant", "content": QWEN}, "finish_reason": "stop"}
    cut = {"index": 1, "message": {"role": "assistant", "content": QWEN_CUT}, "finish_reason": "length"}
    server.script(Reply(choices=[whole, cut]), Reply(choices=[whole, {**whole, "index": 1}]))
    async with backend(server) as b:
        outs, _ = await b.complete_n(user("click Save"), n=2, logprobs=False)
    assert [text for text, _ in outs] == [QWEN, QWEN]
    assert server.stats.chat_requests == 2


# ------------------------------------------------------------------ item 2: no text
async def test_content_null_is_a_failed_call(server):
    server.set_responder(Reply(content=None))
    async with backend(server, max_retries=1) as b:
        with pytest.raises(BackendError, match="the reply from the server has no text") as info:
            await b.complete(user("click Save"))
    assert info.value.retryable and server.stats.chat_requests == 2


async def test_a_refusal_is_a_failed_call_that_says_so(server):
    refusal = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    server.set_responder(Reply(choices=[{"index": 0, "message": refusal, "finish_reason": "stop"}]))
    async with backend(server, max_retries=0) as b:
        with pytest.raises(BackendError, match='the model refused: "I can\'t help with that."'):
            await b.complete(user("click Save"))


async def test_an_empty_answer_the_model_finished_is_its_answer(server):
    # It wrote nothing and ended its turn: the parser finds no action (a wrong answer, as the
    # official harness scores it); asking again at temperature 0 would get the same.
    server.set_responder(Reply.text(""))
    async with backend(server) as b:
        assert (await b.complete(user("click Save"))).text == ""
    assert server.stats.chat_requests == 1


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -3, 2.5])
async def test_token_counts_that_are_no_counts_are_none(server, bad):
    # A record sums its calls' counts and the run log's contract wants whole numbers.
    server.set_responder(Reply.text(QWEN, prompt_tokens=bad, completion_tokens=bad))
    async with backend(server) as b:
        usage = (await b.complete(user("click Save"))).usage
    assert usage.prompt_tokens is None and usage.completion_tokens is None


def test_the_shared_rule_for_other_providers():
    # The hosted-provider backends call the same rule with their own words for "finished".
    anthropic = frozenset({"end_turn", "stop_sequence", "tool_use"})
    assert finished_text("ok", "end_turn", anthropic, "Anthropic") == "ok"
    with pytest.raises(UnfinishedReply, match=r"stop reason from Anthropic: max_tokens"):
        finished_text("[188, 6", "max_tokens", anthropic, "Anthropic")
    with pytest.raises(UnfinishedReply, match="has no text"):
        finished_text(None, "end_turn", anthropic, "Anthropic")


# ------------------------------------------------------------------ the lenient readers
@pytest.mark.parametrize(
    "reply",
    [
        QWEN_CUT,  # the issue's [188, 6
        QWEN_CUT.replace("[188, 6", "[188, 64"),  # 64 may have been 640
        QWEN_CUT.replace("[188, 6", "[188, "),  # the y never came
        QWEN_CUT.replace("[188, 6", "[188.5"),
        QWEN_CUT.replace("[188, 6", "[-"),
        QWEN_CUT.replace('"left_click", "coordinate": [188, 6', '"left_click", "coordinate": "(188, 6'),
        '{"action": "left_click", "coordinate": [188, 6',  # no tags at all
        QWEN_CUT.replace('"coordinate": [188, 6', '"coordinate": [10, 20, 30'),  # a box, cut
    ],
)
def test_qwen_reader_never_closes_a_cut_number(reply):
    assert parse_qwen(reply) is None


@pytest.mark.parametrize(
    "reply",
    [
        QWEN.replace("}}\n</tool_call>", "}"),  # the last brace and the closing tag missing
        QWEN.replace("}}\n</tool_call>", ""),  # both braces missing after a whole array
        QWEN.replace("]}}\n</tool_call>", " ]"),
    ],
)
def test_qwen_reader_still_closes_what_a_finished_reply_left_open(reply):
    action = parse_qwen(reply)
    assert action is not None and (action.point.x, action.point.y) == (188, 64)


@pytest.mark.parametrize(
    "reply",
    [
        "Thought: Save is in the toolbar.\nAction: click(start_box='(188,6",
        "Thought: Save is in the toolbar.\nAction: click(start_box='<|box_start|>(188,6",
        "Thought: Save is in the toolbar.\nAction: click(start_box=(188,6",
        "Action: click(start_box='<|box_start|>(100,200,",  # UI-TARS 1.0's box, cut after x1,y1
    ],
)
def test_uitars_reader_never_reads_a_cut_point(reply):
    assert parse_uitars(reply) is None


def test_uitars_reader_still_reads_a_whole_point_with_its_closers_missing():
    action = parse_uitars("Thought: Save is in the toolbar.\nAction: click(start_box='(188,64)")
    assert (action.point.x, action.point.y) == (188, 64)
    # A value the model closed is its answer, cut or not (it wrote the quote).
    assert parse_uitars("Action: type(content='hello world')").text == "hello world"


def test_holo2_reader_never_reads_a_cut_y():
    assert parse_xy_json('{"x": 552, "y": 40') is None
    assert parse_xy_json('{"x": 552, "y": 404.') is None
    action = parse_xy_json('{"x": 552, "y": 404}')
    assert (action.point.x, action.point.y) == (552, 404)


# ------------------------------------------------------------------ item 3: reply size
async def test_a_reply_that_inflates_past_the_cap_is_a_failed_call(server):
    server.script(
        Reply(body=gzip_completion(64 * 2**20), headers={"Content-Encoding": "gzip"}), Reply.text(QWEN)
    )
    async with backend(server, max_reply_bytes=2**20) as b:
        out = await b.complete(user("click Save"))
        assert out.text == QWEN  # the retry's answer
        server.set_responder(Reply(body=gzip_completion(64 * 2**20), headers={"Content-Encoding": "gzip"}))
        with pytest.raises(BackendError) as info:
            await b.complete(user("click Save"))
    assert "reply larger than 1048576 bytes after decompression (--max-reply-bytes)" in str(info.value)
    assert info.value.retryable


async def test_an_error_page_past_the_cap_is_cut_short_too(server):
    page = Reply(status=500, body=gzip_completion(64 * 2**20), headers={"Content-Encoding": "gzip"})
    server.set_responder(page)
    async with backend(server, max_reply_bytes=2**20, max_retries=0) as b:
        with pytest.raises(BackendError, match="reply larger than 1048576 bytes"):
            await b.complete(user("click Save"))


async def test_a_compressed_reply_under_the_cap_is_read_whole(server):
    size = 3 * 2**20
    server.set_responder(Reply(body=gzip_completion(size), headers={"Content-Encoding": "gzip"}))
    async with backend(server) as b:
        out = await b.complete(user("click Save"))
    assert out.text == "A" * size  # 3 MiB: under the default cap


def test_the_flag_reaches_the_backend_and_refuses_nonsense(tmp_path: Path, capsys):
    from regionfocus.adapters.cli_args import build_model

    base = [
        "--data",
        str(tmp_path),
        "--agent",
        "qwen2.5-vl",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
    ]
    args = run_parser().parse_args(base)
    assert args.max_reply_bytes == MAX_REPLY_BYTES
    model = build_model(run_parser().parse_args([*base, "--max-reply-bytes", "1000"]))
    assert model.backend.max_reply_bytes == 1000
    assert main([*base, "--max-reply-bytes", "0"]) == 2
    assert "--max-reply-bytes: must be a whole number of bytes >= 1, got '0'" in capsys.readouterr().err


# ------------------------------------------------------------------ whole runs
@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """(server, data, run folder): one run against the healthy server, the results every healed
    run must equal. The server stays up for the module's runs, so an error record's text (which
    names the server's URL) is the same in all of them."""
    root = tmp_path_factory.mktemp("cut-replies")
    data = fresh_dataset(root / "data")
    with ChatServer(responder=QwenLike(), model="qwen-test") as srv:
        assert main(run_argv(data, root / "clean", srv), model=quick_model(srv)) == 0
        yield srv, data, root / "clean"


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["cut", "cut-tool", "null"])
def test_every_reply_unfinished_then_retry_errors_gives_the_cleanresults(clean_run, tmp_path: Path, fault):
    srv, data, clean = clean_run
    out = tmp_path / "run"
    hostile = Hostile(QwenLike(), colour_sample_of(IDS_BY_COLOUR), every=fault)
    srv.set_responder(hostile)
    try:
        # every sample failed: the run says so in its exit code
        assert main(run_argv(data, out, srv), model=quick_model(srv)) == ALL_FAILED
        assert hostile.seen  # the fault fired
        records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
        assert len(records) == len(IDS_BY_COLOUR)
        # Not one cut or empty reply was scored as an answer: every sample failed its first call.
        assert all(r["status"] == "error" for r in records), [(r["id"], r["status"]) for r in records]
        final, _ = results(out)
        assert final["metrics"]["overall"]["num_correct_action"] == 0
        summary = (out / "summary.md").read_text()
        assert f"Errors (counted wrong, kept in the denominator): {len(records)}." in summary
        said = (
            "has no text"
            if fault == "null"
            else "did not finish its reply (stop reason from the server: length)"
        )
        assert "## Errors (first 5)" in summary and said in summary

    finally:
        srv.set_responder(QwenLike())
    assert main(run_argv(data, out, srv, "--retry-errors"), model=quick_model(srv)) == 0
    assert results(out) == results(clean)


@pytest.mark.slow
def test_a_cut_call_inside_a_round_makes_a_partial_sample_named_in_the_summary(clean_run, tmp_path: Path):
    srv, data, clean = clean_run
    out = tmp_path / "run"
    faults = {("appa_1", "view"): "cut", ("appb_0", "judge"): "cut", ("appa_4", "focal"): "null"}
    hostile = Hostile(QwenLike(), colour_sample_of(IDS_BY_COLOUR), faults)
    srv.set_responder(hostile)
    try:
        assert main(run_argv(data, out, srv), model=quick_model(srv)) == 0
        assert {(s, c) for s, c, _ in hostile.seen} == set(faults)
        recs = {r["id"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())}
        assert {i for i, r in recs.items() if r["status"] == "partial"} == {"appa_1", "appb_0", "appa_4"}
        assert "did not finish its reply" in recs["appa_1"]["lost"]
        assert "has no text" in recs["appa_4"]["lost"]
        summary = (out / "summary.md").read_text()
        assert "Partial (some model calls failed; scored as answered, kept in the denominator): 3." in summary
        assert "## Partial samples (first 5)" in summary and "appa_1" in summary
    finally:
        srv.set_responder(QwenLike())
    assert main(run_argv(data, out, srv, "--retry-errors"), model=quick_model(srv)) == 0
    assert results(out) == results(clean)


@pytest.mark.slow
def test_a_2gb_gzip_reply_leaves_the_client_under_1gb():
    from benchmarks.reply_size import peak_rss

    with ChatServer(responder=Reply(body=gzip_completion(), headers={"Content-Encoding": "gzip"})) as srv:
        mb, got, _ = peak_rss(srv.base_url, MAX_REPLY_BYTES)
    assert got == {
        "error": f"reply larger than {MAX_REPLY_BYTES} bytes after decompression (--max-reply-bytes)"
    }
    assert mb < 1024, f"peak RSS {mb:.0f} MB"


# ------------------------------------------------------------------ issue 37 item 8: a zoom view's cut call
@pytest.mark.slow
def test_zoom_replies_cut_mid_number_are_failed_calls_and_retry_errors_heals_them(clean_run, tmp_path: Path):
    """A view's tool call whose arguments stop inside a number, under ``finish_reason:
    "tool_calls"``: the reader refuses it, and so must locate_in_view's bare-number fallback,
    which read (644, 4) off the cut arguments and scored the sample ok. It is a failed call (the
    sample partial), so --retry-errors against the healed server gives the clean run's results."""
    srv, data, clean = clean_run
    out = tmp_path / "run"
    cut = ("appa_1", "appa_3", "appb_1")  # small targets: only a zoomed view finds them
    hostile = Hostile(QwenLike(), colour_sample_of(IDS_BY_COLOUR), {(s, "view"): "cut-args" for s in cut})
    srv.set_responder(hostile)
    try:
        assert main(run_argv(data, out, srv), model=quick_model(srv)) == 0
        assert {s for s, _, _ in hostile.seen} == set(cut)  # the fault fired
        recs = {r["id"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())}
        assert {i for i, r in recs.items() if r["status"] == "partial"} == set(cut)
        for sid in cut:
            assert "stop inside a number" in recs[sid]["lost"], recs[sid]["lost"]
            assert recs[sid]["final"]["correctness"] == "wrong"  # no view found it: the baseline's guess
    finally:
        srv.set_responder(QwenLike())
    assert main(run_argv(data, out, srv, "--retry-errors"), model=quick_model(srv)) == 0
    assert results(out) == results(clean)


def _call(arguments) -> str:
    return "<tool_call>" + json.dumps({"name": "computer_use", "arguments": arguments}) + "</tool_call>"


def test_a_tool_call_cut_inside_a_number_is_a_failed_call_for_every_request():
    """The server's tool parser passes the cut text on under "tool_calls": whatever asked (the
    baseline, the judge, a focal point, a view), the reply is no answer."""
    from types import SimpleNamespace as NS

    from regionfocus.adapters.backends.base import UnfinishedReply
    from regionfocus.adapters.backends.openai_replies import choice_text
    from regionfocus.adapters.families.round_requests import left_open

    def choice(arguments: str):
        call = NS(function=NS(name="computer_use", arguments=arguments))
        return NS(message=NS(content=None, tool_calls=[call], refusal=None), finish_reason="tool_calls")

    cut = '{"action": "left_click", "coordinate": [644, 4'
    for args in (cut, cut[: -len("4")]):  # "[644, ": the y never came
        with pytest.raises(UnfinishedReply, match="stop inside a number"):
            choice_text(choice(args))
    assert '"coordinate": [644, 40]' in choice_text(choice(cut + "0]}"))  # whole arguments
    assert "<tool_call>" in choice_text(choice('{"action": "left_click", "coordinate": [644, 40]'))
    for text in ("(644, 4", "click(start_box='(644,4", '{"coordinate": [644, 4', "[644, "):
        assert left_open(text), text
    for text in ("644, 40", "(644, 40)", "The swatch's centre: 644, 40", "at (644, 40) it is"):
        assert not left_open(text), text
