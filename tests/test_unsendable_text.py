"""A lone surrogate in a data set's text (issue 37, item 16): ``"\\ud800"`` is valid JSON and
decodes to a string UTF-8 has no form for, so every request carrying it fails with
UnicodeEncodeError, on every retry. It is refused at load, naming the sample, before any run
folder or model call (the other choice, sending it with the character replaced, would change
the text the benchmark asks about)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.aitz.cli import main as aitz_main
from regionfocus.screenspot_pro.cli import main

from .chat_server import ChatServer, Reply
from .test_coat_aitz import sample  # noqa: F401 - the AITZ-shaped episodes as a fixture
from .test_screenspot_helpers import ColourModel, edit_record, fresh_dataset

LONE = "click the swatch \ud800 #dc1e1e"


def test_no_request_can_carry_a_lone_surrogate():
    """Why it is refused: the real client fails on it before anything is sent."""

    async def ask() -> None:
        async with OpenAIBackend([srv.base_url], "m", timeout=10, max_retries=1, backoff=0.01) as b:
            await b.complete([{"role": "user", "content": [{"type": "text", "text": LONE}]}])

    with ChatServer(responder=lambda body: Reply.text("(1, 2)"), model="m") as srv:
        with pytest.raises(UnicodeEncodeError):
            asyncio.run(ask())
        assert srv.stats.chat_requests == 0


def test_screenspot_refuses_it_at_load_naming_the_sample(tmp_path: Path, capsys):
    data = fresh_dataset(tmp_path / "data")
    edit_record(data, "appa_windows", 2, instruction=LONE)
    raw = (data / "annotations" / "appa_windows.json").read_text()
    assert "\\ud800" in raw and json.loads(raw)[2]["instruction"] == LONE  # valid JSON, as the issue says
    out = tmp_path / "run"
    argv = ["--data", str(data), "--out", str(out), "--agent", "ocr", "--no-progress"]
    model = ColourModel()
    assert main(argv, model=model) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "appa_windows.json[2] (id 'appa_2')" in err
    assert "instruction holds a lone surrogate (\\ud800 at character 17)" in err
    assert not (out / "records.jsonl").exists() and model.calls == []


def test_aitz_refuses_it_at_load_naming_the_step(sample, capsys):  # noqa: F811
    e2 = sample / "general" / "E2" / "E2.json"
    steps = json.loads(e2.read_text())
    steps[1]["ui_text"] = json.dumps(["Home", "\ud800"])  # inside the JSON string, as released
    e2.write_text(json.dumps(steps))
    out = sample.with_name(sample.name + "-run")
    assert aitz_main(["run", str(sample), "--out", str(out), "--agent", "ocr", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "E2.json step 1: field 'ui_text' holds a lone surrogate (\\ud800 at character 0)" in err
    assert not out.exists()
