"""The whole `regionfocus screenspot-pro` command through the real Qwen2.5-VL adapter and the
real OpenAI-compatible HTTP backend, against the local chat-completions server.

The server answers in Qwen2.5-VL's own format (``<tool_call>`` computer_use calls, coordinates
in pixels of the image the request carried, i.e. the smart_resized frame) and perceives with
the same colour-seeing double as the in-process tests: it finds the target on the image it
was sent, so its points are right only if the adapter's frames and the harness's maps are.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from screenspot_pro.cli import main

from .chat_server import ChatServer, Reply, request_images, request_text
from .test_screenspot_helpers import ColourModel, expected_outcomes, fresh_dataset

_SEE = ColourModel()


def _tool_call(action: str, x: float, y: float) -> str:
    args = {"action": action, "coordinate": [round(x), round(y)]}
    return f"<tool_call>\n{json.dumps({'name': 'computer_use', 'arguments': args})}\n</tool_call>"


def qwen_like(body: dict) -> Reply:
    """Answer one request the way Qwen2.5-VL would, from what the image shows."""
    text = request_text(body)
    (image,) = request_images(body)
    m = re.search(r"#([0-9a-f]{6})", text)
    colour = tuple(int(m.group(1)[i : i + 2], 16) for i in (0, 2, 4))
    if "[error]" in text:
        return Reply.client_error(400, "this model cannot serve the request")
    if "[mute]" in text:
        return Reply.text("I cannot find it on the screen.")
    box = _SEE.find(image, colour)
    if "Verdict:" in text:  # the self-judge: is the point (model frame) on the target?
        px = re.search(r"at \[(\d+), (\d+)\]", text)
        x, y = float(px.group(1)), float(px.group(2))
        ok = "[doubt]" not in text and box is not None and box[0] <= x <= box[2] and box[1] <= y <= box[3]
        return Reply.text(
            f"The star is {'on' if ok else 'not on'} the swatch.\nVerdict: {'YES' if ok else 'NO'}"
        )
    if "Choice: N" in text:
        return Reply.text("Choice: 1")
    if "most relevant point" in text:
        p = _SEE.rough(image, colour)
        return Reply.text(_tool_call("mouse_move", p.x, p.y))
    zoomed = "magnified view" in text
    if zoomed and "[doubt]" in text:
        return Reply.text(_tool_call("left_click", 3, 3))
    if box is None:
        if zoomed:
            return Reply.text("The swatch is not visible in this view.")
        return Reply.text(_tool_call("left_click", image.width / 2, image.height / 2))
    return Reply.text(_tool_call("left_click", (box[0] + box[2]) / 2, (box[1] + box[3]) / 2))


@pytest.mark.slow
def test_cli_through_http_backend_in_qwen_format(tmp_path: Path, capsys):
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    with ChatServer(responder=qwen_like, model="qwen-test") as srv:
        argv = [
            "--data", str(data), "--out", str(out), "--no-progress",
            "--agent", "qwen2.5-vl", "--base-url", srv.base_url, "--model", "qwen-test",
            "--timeout", "30", "--concurrency", "3",
        ]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
        chat_requests = srv.stats.chat_requests
    printed = capsys.readouterr().out
    assert "+ RegionFocus" in printed

    recs = {r["id"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())}
    assert {i: (r["baseline"]["correctness"], r["final"]["correctness"]) for i, r in recs.items()} == (
        expected_outcomes()
    )
    assert recs["appb_2"]["status"] == "error" and "400" in recs["appb_2"]["error"]
    assert "<tool_call>" in recs["appa_1"]["final"]["raw_response"]
    assert recs["appa_1"]["prompt_tokens"] > 0
    assert chat_requests == sum(r["n_calls"] for r in recs.values())

    doc = json.loads((out / "results.json").read_text())
    assert (
        doc["metrics"]["overall"]["num_correct_action"] == 6 and doc["metrics"]["overall"]["num_total"] == 9
    )
    base = json.loads((out / "results_baseline.json").read_text())
    assert base["metrics"]["overall"]["num_correct_action"] == 4
    ident = json.loads((out / "config.json").read_text())["identity"]
    assert ident["agent"] == "qwen2.5-vl" and ident["model"] == "qwen-test"
    page = (out / "report.html").read_text()
    assert "&lt;tool_call&gt;" in page and "<tool_call>" not in page
