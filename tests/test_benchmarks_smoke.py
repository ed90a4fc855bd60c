"""Smoke runs of every benchmark script at minimal sizes, so they keep working as the code
they measure changes. They check that each script runs through the real stack and prints its
table rows; they never check timings (a benchmark must not fail on a slow machine)."""

from __future__ import annotations

import re

import pytest

from benchmarks import critical_path, overhead, scale_out, throughput
from benchmarks._common import family_reply, image_size_from_data_url, synthetic_screen


def table_rows(out: str, title: str) -> list[list[str]]:
    """The body rows of the Markdown table printed under ``### title...``."""
    block = out.split(f"### {title}", 1)[1].split("\n\n", 2)[1]
    lines = [ln for ln in block.splitlines() if ln.startswith("|")][2:]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]


def table_headers(out: str, title: str) -> list[str]:
    block = out.split(f"### {title}", 1)[1].split("\n\n", 2)[1]
    return [c.strip() for c in block.splitlines()[0].strip("|").split("|")]


def test_family_responder_answers_what_each_adapter_parses():
    from regionfocus.adapters.backends.encoding import encode_data_url
    from regionfocus.adapters.registry import get_adapter

    img = synthetic_screen(1, (560, 420))
    url = encode_data_url(img, "jpeg", 90)
    assert image_size_from_data_url(url) == (560, 420)
    body = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]}
    for family in ("uitars-1.0", "uitars-1.5", "qwen2.5-vl", "qwen3-vl"):
        adapter = get_adapter(family)
        text = family_reply(
            family,
            {
                **body,
                "messages": [*body["messages"], {"role": "user", "content": "Find the most relevant point"}],
            },
        )
        point = adapter.parse_point(text, 560, 420)
        assert (
            point is not None
            and point.x == pytest.approx(0.43 * 560, abs=1)
            and point.y == pytest.approx(0.37 * 420, abs=1)
        )
        assert "Verdict: NO" in family_reply(
            family, {"messages": [{"role": "user", "content": "Verdict: YES"}]}
        )


def test_overhead_prints_every_stage_and_format(capsys):
    overhead.main(["--size", "640x360", "--repeat", "1", "--formats", "png:90,jpeg:90"])
    out = capsys.readouterr().out
    stages = [r[0] for r in table_rows(out, "Stages of one round")]
    assert "proposals: fixed ratios" in stages and any(s.startswith("view 3") for s in stages)
    assert "adapter resize: view (snapped)" in stages
    snapped = next(
        r for r in table_rows(out, "Stages of one round") if r[0] == "adapter resize: view (snapped)"
    )
    assert snapped[4] == "already model size: identity"
    formats = [r[0] for r in table_rows(out, "Encoding one")]
    assert formats[0].startswith("png") and "jpeg q90" in formats and formats[-1] == "reference full-res PNG"
    assert len(table_rows(out, "Round overhead")) == 3


@pytest.mark.slow
def test_critical_path_runs_a_full_round_over_http(capsys):
    rows = critical_path.main(
        "--size 560x420 --latency 0.05 --repeats 1 --screens 1 --family uitars-1.5".split()
    )
    out = capsys.readouterr().out
    printed = table_rows(out, "Critical path through HTTP")
    assert [r[1] for r in printed] == ["round", "round in predict", "predict"]
    # focal + 4 candidates + choice (alone and inside predict); act + judge + the same round
    assert [r[3] for r in rows] == [6, 6, 8]
    assert all(float(r[4]) > 0 for r in printed)


@pytest.mark.slow
def test_throughput_and_scale_out_print_their_rows(capsys):
    throughput.main("--size 560x420 --latency 0.02 --in-flight 2 --per-slot 2 --screens 1".split())
    scale_out.main("--size 560x420 --latency 0.02 --servers 1 2 --samples-per-server 2 --screens 1".split())
    out = capsys.readouterr().out
    rows = table_rows(out, "Throughput")
    assert [(r[0], r[2]) for r in rows] == [("2", "4")]  # 2 in flight, 2 per slot
    assert all(r[3] == "0" for r in rows)  # no failed samples
    headers = table_headers(out, "Throughput")
    for r in rows:
        cell = dict(zip(headers, r, strict=True))
        assert int(cell["peak RSS MB"]) > 0
        assert float(cell["stand-in server CPU s/sample"]) > 0
        # the client's bound is a positive rate no higher than the ideal
        assert 0 < float(cell["client bound"]) <= float(cell["ideal"])
    rows = table_rows(out, "Scale-out")
    paths = ["client-side", "vllm-router sticky_least_loaded", "vllm-router consistent_hash"]
    assert [(r[0], r[2]) for r in rows] == [(p, n) for n in ("1", "2") for p in paths]
    assert all(r[4] == "0" for r in rows)
    assert re.fullmatch(r"\d+\.\d\dx", rows[3][-2]) and re.fullmatch(r"\d+ %", rows[4][-1])
    rows = table_rows(out, "Shards")  # one process, then 2 shards merged: every sample, no error
    assert [(r[0], r[1], r[2]) for r in rows] == [("1", "4", "0"), ("2", "4", "0")]


@pytest.mark.slow
def test_client_cpu_prints_every_transport(capsys):
    from benchmarks import client_cpu

    client_cpu.main(
        ["--size", "560x420", "--max-pixels", "0", "--samples", "1", "--repeats", "1", "--latency", "0.02"]
    )
    out = capsys.readouterr().out
    rows = table_rows(out, "Client CPU per sample")
    assert [r[1] for r in rows] == ["png", "jpeg", "local"]
    assert all(float(r[2]) > 0 and float(r[3]) > 0 for r in rows)  # CPU and bytes measured
    rows = table_rows(out, "One model-size image per transport")
    assert [r[0] for r in rows] == ["data png", "data jpeg q95", "file:// bmp", "file:// png"]


def test_parse_hostile_prints_every_parser_and_the_wrapped_package(capsys):
    from benchmarks import parse_hostile

    parse_hostile.main(["--kb", "2", "--ui-tars-package"])
    rows = table_rows(capsys.readouterr().out, "worst CPU seconds")
    assert [r[0] for r in rows] == [*parse_hostile.PARSERS, "ui-tars package (wrapped)"]
    assert all(r[1] == "2" and float(r[3]) >= 0 for r in rows)
    # The wrapper reads a well-formed answer as parse_uitars does, so the timing compares like with like.
    text = "Thought: Save.\nAction: click(start_box='<|box_start|>(96,40)<|box_end|>')"
    assert parse_hostile.uitars_package(text) == parse_hostile.parse_uitars(text)


def _records(folder, rows) -> None:
    """A run folder as the CLI leaves it: records.jsonl lines (an episode that ended in an error,
    rerun by --retry-errors: its last line wins)."""
    import json

    folder.mkdir()
    keys = ("web_name", "seed", "success", "ended", "steps", "wall_s")
    lines = [
        json.dumps(
            {
                "id": f"{r[0]}--{r[1]}",
                "status": "error" if r[3] == "error" else "ok",
                **dict(zip(keys, r, strict=True)),
            }
        )
        for r in rows
    ]
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")


def test_miniwob_families_tables_from_run_folders(tmp_path, capsys):
    import json

    from benchmarks import miniwob_families

    assert set(miniwob_families.family_tasks()) == set(miniwob_families.KIND)  # every task has a kind
    assert set(miniwob_families.KIND.values()) == set(miniwob_families.KINDS)
    _records(
        tmp_path / "before-a11y-rf",
        [("click-button", 0, True, "done", 1, 2.0), ("click-button", 1, False, "error", 10, 9.0),
         ("click-button", 1, True, "done", 2, 3.0), ("click-button", 2, True, "done", 1, 1.0),
         ("enter-text", 0, False, "no-action", 3, 4.0), ("focus-text", 0, True, "done", 1, 1.0)],
    )  # fmt: skip
    (tmp_path / "before-a11y-rf" / "client_cpu.json").write_text(
        json.dumps([{"cpu_s": 30.0}, {"cpu_s": 6.0}])
    )
    _records(tmp_path / "after-a11y-rf", [("click-button", 0, False, "call_user", 4, 5.0)])
    folders = [str(tmp_path / "before-a11y-rf"), str(tmp_path / "after-a11y-rf")]
    assert miniwob_families.main(["--from", *folders, "--tasks", "click-button,enter-text,focus-text"]) == 0
    out = capsys.readouterr().out
    assert table_headers(out, "Success per task") == ["task", "kind", "before-a11y-rf", "after-a11y-rf"]
    rows = {r[0]: r[1:] for r in table_rows(out, "Success per task")}
    assert rows["click-button"] == ["click", "3/3", "0/1"]  # seed 1's resumed line replaced its first
    assert rows["enter-text"] == ["type", "0/1", "-"]
    assert rows["**click-\\* mean** (1)"] == ["", "1.00 (3/3)", "0.00 (0/1)"]
    assert rows["**kind focus** (1)"] == ["", "1.00 (1/1)", "-"]
    assert rows["**all** (3)"] == ["", "0.80 (4/5)", "0.00 (0/1)"]
    ends = {(r[0], r[1]): r[2:] for r in table_rows(out, "Steps, endings and cost")}
    assert ends[("before-a11y-rf", "all")] == ["5", "1.6", "done 4, no-action 1", "2.2", "36 (7.2/ep)"]
    assert ends[("after-a11y-rf", "click-*")] == ["1", "4.0", "call_user 1", "5.0", "-"]
    with pytest.raises(SystemExit):
        miniwob_families.main(["--agents", "ocr", "--jobs", "3"])  # more browsers than the cores


@pytest.mark.slow
def test_phrase_recall_on_one_task(capsys):
    import asyncio

    from benchmarks import screen_text_recall

    rows = asyncio.run(screen_text_recall.measure_recall(["click-link"], [0]))
    (row,) = rows
    assert row.phrases >= 5 and row.pointed <= row.phrases and row.located <= row.unique <= row.phrases
    assert row.pointed / row.phrases >= 0.8 and row.located / row.unique >= 0.6  # the OCR reads running text
    table = {r[0]: r[1:] for r in screen_text_recall.phrase_rows(rows)}
    assert table["click-*"][:3] == ["1", "1", str(row.phrases)] and table["all"] == table["click-*"]
    assert "enter-*" not in table  # a family without pages gets no row
    assert [r[0] for r in screen_text_recall.phrase_rows(rows, per_task=True)] == ["click-link", "all"]
