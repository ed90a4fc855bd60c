"""The ScreenSpot-Pro runner, run folder, reports and CLI, with the colour-seeing model double.

The double stands in for the VLM only; dataset, runner, RegionFocus, metrics and reports are
the real code. Expected outcomes follow from how the double perceives (see its docstring).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from regionfocus import RegionFocusConfig
from regionfocus.agent import RegionFocusAgent
from regionfocus.kit.runlog import RunFolderError, read_records
from regionfocus.screenspot_pro.cli import main
from regionfocus.screenspot_pro.dataset import load_dataset
from regionfocus.screenspot_pro.report import compare_runs, write_reports
from regionfocus.screenspot_pro.runner import run_samples, run_screenspot

from .hostile import MARKUP, MARKUP_ESCAPED
from .test_screenspot_helpers import ColourModel, expected_outcomes, fresh_dataset, make_dataset

ROOT = Path(__file__).resolve().parents[1]


def _run(samples, run_dir, model=None, config=None, **kw):
    return asyncio.run(
        run_screenspot(
            samples, model or ColourModel(), config or RegionFocusConfig(), run_dir, progress=False, **kw
        )
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return fresh_dataset(tmp_path_factory.mktemp("ssp") / "data")


@pytest.fixture(scope="module")
def rf_run(data, tmp_path_factory) -> Path:
    """One RegionFocus run over the default dataset, shared by the read-only tests."""
    run_dir = tmp_path_factory.mktemp("runs") / "rf"
    _run(load_dataset(data), run_dir, identity={"agent": "colour", "data": str(data)})
    return run_dir


@pytest.fixture(scope="module")
def base_run(data, tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("runs") / "base"
    model = ColourModel()
    _run(load_dataset(data), run_dir, model=model, enabled=False)
    assert set(model.calls) == {"act"}  # no judge, no RegionFocus
    return run_dir


def _records(run_dir: Path) -> dict[str, dict]:
    return {r["id"]: r for r in read_records(run_dir / "records.jsonl")}


def test_one_pass_scores_baseline_and_regionfocus(rf_run: Path):
    recs = _records(rf_run)
    assert {i: (r["baseline"]["correctness"], r["final"]["correctness"]) for i, r in recs.items()} == (
        expected_outcomes()
    )
    err = recs["appb_2"]
    assert err["status"] == "error" and "connection refused" in err["error"]
    assert recs["appb_3"]["status"] == "ok" and recs["appb_3"]["final"]["point"] is None
    fixed = recs["appa_1"]
    assert fixed["trigger"] == "self-judge" and fixed["verdict"] == "no"
    assert fixed["trace"]["rounds"][0]["focal"] is not None and len(fixed["trace"]["rounds"][0]["boxes"]) == 4
    # The final answer's raw text is the zoomed candidate's, the baseline's the first answer.
    assert fixed["final"]["raw_response"] != fixed["baseline"]["raw_response"]
    assert "click(start_box=" in fixed["final"]["raw_response"]
    assert fixed["n_calls"] == len(fixed["trace"]["calls"]) + sum(
        len(r["calls"]) for r in fixed["trace"]["rounds"]
    )
    assert fixed["prompt_tokens"] == 100 * fixed["n_calls"]


def test_official_results_keep_errors_in_the_denominator(rf_run: Path):
    exp = expected_outcomes()
    for name, col in (("results.json", 1), ("results_baseline.json", 0)):
        doc = json.loads((rf_run / name).read_text())
        overall = doc["metrics"]["overall"]
        assert overall["num_total"] == len(exp) == len(doc["details"])
        assert overall["num_correct_action"] == sum(v[col] == "correct" for v in exp.values())
        assert overall["wrong_format_num"] == 1
        office = doc["metrics"]["leaderboard_simple_style"]["group:Office"]
        assert office["num_total"] == 2 and office["num_correct_action"] == 0  # error + wrong format
        assert [d["id"] for d in doc["details"]] == sorted(exp)  # dataset order
        err = next(d for d in doc["details"] if d["id"] == "appb_2")
        assert err["correctness"] == "wrong" and err["status"] == "error"


def test_summary_reports_judge_flips_and_cost(rf_run: Path):
    text = (rf_run / "summary.md").read_text()
    table1 = text.split("## Table 1 layout")[1].split("\n## ")[0]
    rows = {line.split("|")[1].strip(): line for line in table1.splitlines() if line.startswith("| ")}
    # Overall avg: baseline 4/9, + RegionFocus 6/9.
    assert rows["baseline"].rstrip(" |").endswith("44.4")
    assert rows["+ RegionFocus"].rstrip(" |").endswith("66.7")
    assert "rejected 3 wrong and 1 right baselines" in text
    assert "accepted 3 right and 0 wrong baselines" in text
    assert "wrong→right 3, right→wrong 1" in text
    # appb_2's baseline call failed: an error with no round spent on it (issue 37 item 15).
    assert "Trigger rate: 5/9" in text
    assert "appb_2: all 1 model call(s) failed" in text
    assert "| CAD | appb | 2 | 50.0 | 100.0 |" in text


def _wilson_pct(k: int, n: int) -> str:
    """The Wilson score interval by its formula (z for 95 %), as the summary prints it."""
    z = 1.959963984540054
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return f"{100 * k / n:.1f} [{100 * (centre - half):.1f}–{100 * (centre + half):.1f}]"


def test_summary_gives_intervals_and_the_paired_test(rf_run: Path):
    text = (rf_run / "summary.md").read_text()
    section = text.split("## Accuracy with 95 % intervals")[1].split("\n## ")[0]
    rows = {
        line.split("|")[1].strip(): line.split("|")[2].strip()
        for line in section.splitlines()[3:]
        if line.startswith("| ")
    }
    assert rows == {"baseline": _wilson_pct(4, 9), "+ RegionFocus": _wilson_pct(6, 9)}
    paired = text.split("## Paired comparisons")[1].split("\n## ")[0]
    row = next(line for line in paired.splitlines() if line.startswith("| + RegionFocus"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # 3 samples only RegionFocus got right, 1 only the baseline: exact McNemar is a two-sided
    # binomial test of 1 in 4 at one half, 2 * (1 + 4) / 16.
    assert cells[:3] == ["+ RegionFocus", "baseline", "9"]
    assert cells[4:] == ["3", "1", "0.625"]
    assert cells[3].startswith("+22.2 [")  # (6 - 4) / 9
    lo, hi = (float(v) for v in cells[3].split("[")[1].rstrip("]").split(","))
    assert -100 <= lo < 22.2 < hi <= 100
    # A resample's difference is a whole number of samples out of 9.
    assert all(abs(v * 9 / 100 - round(v * 9 / 100)) < 0.01 for v in (lo, hi))


def test_no_regionfocus_is_the_same_baseline(rf_run: Path, base_run: Path):
    rf, base = _records(rf_run), _records(base_run)
    assert set(rf) == set(base)
    for i, r in base.items():
        assert r["final"] == r["baseline"]
        assert r["baseline"]["point"] == rf[i]["baseline"]["point"]
        assert r["trigger"] is None and r["trace"]["rounds"] == []
    assert "+ RegionFocus" not in (base_run / "summary.md").read_text()


def test_html_report_escapes_model_text(rf_run: Path, tmp_path: Path):
    page = (rf_run / "report.html").read_text()
    assert page.count("<script") == 1  # ours, at the end
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert page.count('class="card"') == 9
    assert page.count("data:image/jpeg;base64,") == 18  # overview + crop per sample
    for outcome in ("wrong→right", "right→wrong", "error"):
        assert f'data-outcome="{outcome}"' in page
    assert '<select id="f-app" data-filter="app">' in page and '<option value="appc">' in page
    # the overlay is drawn over each image in screenshot pixels: the ground truth, B and F marks
    assert page.count("<svg viewBox=") == 18 and 'stroke="#00c800"' in page
    # Markup in every text a data set or a model writes (instruction, application, thoughts and
    # answers, call errors, verdict, a sample's error), rebuilt by the CLI from the records alone.
    records = [json.loads(line) for line in (rf_run / "records.jsonl").read_text().splitlines()]
    for r in records:
        r["sample"]["instruction"] += MARKUP
        r["sample"]["application"] = MARKUP
        r["verdict"] = MARKUP
        for c in r["trace"]["calls"] + [c for rnd in r["trace"]["rounds"] for c in rnd["calls"]]:
            c["text"], c["error"] = "Thought: " + MARKUP, MARKUP
        if r["status"] == "error":
            r["error"] = MARKUP
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["report", str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text()
    assert page.count("<script") == 1 and "<img src=x" not in page
    assert f'data-app="{MARKUP_ESCAPED}"' in page and f'<option value="{MARKUP_ESCAPED}">' in page
    assert (
        f"<pre>Thought: {MARKUP_ESCAPED}</pre>" in page and f"<div class=err>{MARKUP_ESCAPED}</div>" in page
    )
    assert f"<p class=err>error: {MARKUP_ESCAPED}</p>" in page and f"{MARKUP_ESCAPED}; trigger" in page
    assert page.count(MARKUP_ESCAPED) == page.count("{{ 7*7 }}") > 9 * 4  # written, never evaluated


def test_report_regenerated_from_records_alone(rf_run: Path, tmp_path: Path):
    run = tmp_path / "copy"
    run.mkdir()
    (run / "records.jsonl").write_bytes((rf_run / "records.jsonl").read_bytes())
    assert main(["report", str(run)]) == 0
    for name in ("results.json", "results_baseline.json"):
        assert json.loads((run / name).read_text()) == json.loads((rf_run / name).read_text())
    assert "rejected 3 wrong and 1 right baselines" in (run / "summary.md").read_text()
    assert (run / "report.html").exists()


def test_report_embeds_flips_and_errors_first_when_capped(rf_run: Path, tmp_path: Path):
    run = tmp_path / "capped"
    run.mkdir()
    (run / "records.jsonl").write_bytes((rf_run / "records.jsonl").read_bytes())
    write_reports(run, max_images=5)
    page = (run / "report.html").read_text()
    assert page.count("data:image/jpeg;base64,") == 10
    assert page.count("screenshot omitted") == 4
    cards = page.split('<section class="card"')[1:]
    with_images = {c.split('data-outcome="')[1].split('"')[0] for c in cards if "base64" in c}
    assert with_images == {"error", "right→wrong", "wrong→right"}  # 1 + 1 + 3: all flips and errors


def test_report_without_screenshots_says_so(rf_run: Path, tmp_path: Path):
    run = tmp_path / "moved"
    run.mkdir()
    lines = (rf_run / "records.jsonl").read_text().splitlines()
    moved = [json.loads(line) for line in lines]
    for r in moved:
        r["sample"]["img_path"] = str(tmp_path / "nowhere.png")
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in moved))
    write_reports(run)
    page = (run / "report.html").read_text()
    assert page.count("screenshot not available") == 9 and "base64" not in page


def test_compare_prints_both_runs(rf_run: Path, base_run: Path, capsys):
    assert main(["compare", str(rf_run), str(base_run)]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "A base" in line)
    assert header.split() == ["A", "base", "A", "+RF", "B", "base", "n"]
    overall = next(line for line in out.splitlines() if line.startswith("Overall"))
    assert overall.split() == ["Overall", "44.4", "66.7", "44.4", "9"]
    cad = next(line for line in out.splitlines() if line.startswith("CAD"))
    assert cad.split() == ["CAD", "50.0", "100.0", "50.0", "2"]
    assert "Creative" not in out  # groups neither run has are left out
    # The paired test of A's baseline against B's: the same answers, so no discordant pair.
    paired = next(line for line in out.splitlines() if line.startswith("A baseline"))
    assert paired.split()[-3:] == ["0", "0", "1.000"]


def test_compare_restricts_to_shared_samples(rf_run: Path, tmp_path: Path):
    part = tmp_path / "part"
    part.mkdir()
    lines = (rf_run / "records.jsonl").read_text().splitlines(keepends=True)
    (part / "records.jsonl").write_text("".join(lines[:4]))
    out = compare_runs(rf_run, part)
    assert "compared on the 4 they share" in out


def test_concurrency_is_bounded_and_used(data: Path, tmp_path: Path):
    model = ColourModel(latency=0.02)
    active: Counter[str] = Counter()
    peak = 0
    act = model.act

    async def tracking_act(image, query, *, zoomed=False):
        nonlocal peak
        active[query.instruction] += 1
        peak = max(peak, len(+active))
        try:
            return await act(image, query, zoomed=zoomed)
        finally:
            active[query.instruction] -= 1

    model.act = tracking_act  # observe the model's callers; the model's answers are unchanged
    samples = load_dataset(data)
    agent = RegionFocusAgent(model, RegionFocusConfig())
    asyncio.run(run_samples(samples, agent, tmp_path / "run", concurrency=2, progress=False))
    assert peak == 2


def test_resume_skips_finished_samples_and_rewrites_a_torn_line(data: Path, tmp_path: Path):
    samples = load_dataset(data)
    run = tmp_path / "run"
    _run(samples[:4], run)
    with open(run / "records.jsonl", "a") as f:
        f.write('{"id": "appb_0", "status": "o')  # a crash in the middle of an append
    model = ColourModel()
    seen: list[str] = []
    act = model.act

    async def tracking_act(image, query, *, zoomed=False):
        seen.append(query.instruction)
        return await act(image, query, zoomed=zoomed)

    model.act = tracking_act
    _run(samples, run, model=model)
    assert {s.instruction for s in samples[:4]}.isdisjoint(seen)
    lines = (run / "records.jsonl").read_text().splitlines()
    ids = [json.loads(line)["id"] for line in lines]  # every line parses: the torn one is gone
    assert sorted(ids) == sorted(s.id for s in samples)


def test_cancelled_run_is_resumable(data: Path, tmp_path: Path):
    samples = load_dataset(data)
    run = tmp_path / "run"

    async def start_then_cancel():
        task = asyncio.create_task(
            run_screenspot(
                samples, ColourModel(latency=0.03), RegionFocusConfig(), run, concurrency=2, progress=False
            )
        )
        while len(read_records(run / "records.jsonl")) < 3:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(start_then_cancel())
    partial = read_records(run / "records.jsonl")
    assert 3 <= len(partial) < len(samples)
    assert not (run / "results.json").exists()
    _run(samples, run)
    ids = [json.loads(line)["id"] for line in (run / "records.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(s.id for s in samples)


def test_retry_errors_reruns_only_failed_samples(data: Path, tmp_path: Path):
    samples = load_dataset(data)
    run = tmp_path / "run"
    _run(samples, run)
    fixed = ColourModel(broken=False)  # the server is back
    _run(samples, run, model=fixed)  # a plain resume leaves the error alone
    assert fixed.calls == []
    _run(samples, run, model=fixed, retry_errors=True)
    assert fixed.calls == ["act", "judge"]  # one sample, judged right at once
    assert len((run / "records.jsonl").read_text().splitlines()) == len(samples) + 1
    recs = _records(run)
    assert len(recs) == len(samples) and recs["appb_2"]["status"] == "ok"
    doc = json.loads((run / "results.json").read_text())
    assert doc["metrics"]["overall"]["num_correct_action"] == 7 and len(doc["details"]) == len(samples)


def test_a_folder_refuses_a_different_config(data: Path, tmp_path: Path):
    samples = load_dataset(data)[:2]
    run = tmp_path / "run"
    _run(samples, run)
    with pytest.raises(RunFolderError, match="regionfocus.aggregation: 'image' in the folder, 'text' now"):
        _run(samples, run, config=RegionFocusConfig(aggregation="text"))
    with pytest.raises(RunFolderError, match="regionfocus_enabled"):
        _run(samples, run, enabled=False)
    _run(samples, run, concurrency=1)  # how fast it runs is not part of the identity


def _cli_base(data: Path, out: Path) -> list[str]:
    return ["--data", str(data), "--out", str(out), "--agent", "ocr", "--no-progress"]


def test_cli_bad_input_exits_2_with_a_message(data: Path, tmp_path: Path, capsys):
    assert main(["--data", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "not a directory" in capsys.readouterr().err
    broken = make_dataset(tmp_path / "broken")
    ann = broken / "annotations" / "appa_windows.json"
    recs = json.loads(ann.read_text())
    recs[0]["bbox"] = [5000, 0, 5001, 1]
    del recs[1]["bbox"]
    recs[2]["extra"] = 1  # tolerated, as the official script tolerates it: not a problem
    ann.write_text(json.dumps(recs))
    assert main(_cli_base(broken, tmp_path / "o"), model=ColourModel()) == 2
    err = capsys.readouterr().err
    assert "2 problem(s)" in err and "outside the image" in err and "missing field(s): bbox" in err
    assert "extra" not in err
    assert "Traceback" not in err
    assert main(["--out", "x"]) == 2
    assert "--data" in capsys.readouterr().err
    assert main(_cli_base(data, tmp_path / "o") + ["--group", "Nope"], model=ColourModel()) == 2
    assert "--group: no sample has 'Nope'" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "nothing")]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_cli_help_teaches(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "example" in out and "--data builtin --agent ocr" in out
    for name in ("records.jsonl", "results.json", "results_baseline.json", "summary.md", "report.html"):
        assert name in out


def test_cli_run_prints_table1_and_refuses_other_settings(data: Path, tmp_path: Path, capsys):
    out = tmp_path / "run"
    assert main(_cli_base(data, out) + ["--concurrency", "3"], model=ColourModel()) == 0
    printed = capsys.readouterr().out
    assert "Overall" in printed and "+ RegionFocus" in printed
    last = [line for line in printed.splitlines() if line.startswith("+ RegionFocus")][0]
    assert last.split()[-1] == "66.7"
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["identity"]["agent"] == "ocr" and cfg["identity"]["regionfocus"]["proposer"] == "fixed"
    assert main(_cli_base(data, out) + ["--proposer", "predict-region"], model=ColourModel()) == 2
    assert "proposer: 'fixed' in the folder, 'predict-region' now" in capsys.readouterr().err


def _cli_proc(data: Path, out: Path) -> subprocess.Popen:
    code = "import sys; from tests.test_screenspot_helpers import cli_main; sys.exit(cli_main())"
    env = {**os.environ, "COLOUR_MODEL_LATENCY": "0.03", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", code, *_cli_base(data, out), "--concurrency", "2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_records(proc: subprocess.Popen, path: Path, n: int) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        have = len(read_records(path)) if path.exists() else 0
        if have >= n:
            return have
        if proc.poll() is not None:
            raise AssertionError(f"run ended early: {proc.communicate()}")
        time.sleep(0.02)
    raise AssertionError("no progress")


@pytest.mark.slow  # two subprocesses
def test_cli_interrupted_and_killed_then_resumed_runs_each_sample_once(tmp_path: Path):
    data = make_dataset(tmp_path / "data", copies=2)  # 18 samples
    out = tmp_path / "run"
    records = out / "records.jsonl"

    proc = _cli_proc(data, out)  # Ctrl-C: exit 130, a message, a consistent folder
    _wait_for_records(proc, records, 3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "rerun the same command to resume" in err and "Traceback" not in err
    after_int = len(read_records(records))

    proc = _cli_proc(data, out)  # a crash: no chance to clean up at all
    _wait_for_records(proc, records, after_int + 3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert len(read_records(records)) < 18

    proc = _cli_proc(data, out)
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "+ RegionFocus" in stdout
    ids = [json.loads(line)["id"] for line in records.read_text().splitlines()]
    assert len(ids) == 18 and len(set(ids)) == 18
    doc = json.loads((out / "results.json").read_text())
    assert doc["metrics"]["overall"]["num_total"] == 18
    assert doc["metrics"]["overall"]["num_correct_action"] == 12  # 6 of 9, twice


def test_report_prices_a_run_from_its_folder(data, tmp_path: Path):
    run = tmp_path / "run"
    _run(load_dataset(data), run, identity={"agent": "colour", "model": "colour-1", "data": str(data)})
    records = read_records(run / "records.jsonl")
    # The double names no model in its usage: its calls are the run's --model.
    rows = [r["cost"]["regionfocus"]["by_model"][""] for r in records if r["status"] != "error"]
    assert rows and all(t["calls"] and t["prompt_tokens"] == 100 * t["calls"] for t in rows)
    summary = (run / "summary.md").read_text()
    assert "- USD: baseline –, + RegionFocus –" in summary  # no price for this model: unknown, not $0
    assert "colour-1: no price in the built-in price table" in summary
    table = tmp_path / "prices.toml"
    table.write_text("[[model]]\nmatch = 'colour-*'\ninput = 2.0\noutput = 10.0\nsource = 'test'\n")
    assert main(["report", str(run), "--prices", str(table)]) == 0
    by_rec = [r["cost"]["regionfocus"].get("by_model", {}).get("") for r in records]
    usd = [(t["prompt_tokens"] * 2.0 + t["completion_tokens"] * 10.0) / 1e6 if t else 0.0 for t in by_rec]
    summary = (run / "summary.md").read_text()
    line = next(x for x in summary.splitlines() if x.startswith("- USD:"))
    assert f"+ RegionFocus ${sum(usd) / len(records):.4g}" in line and str(table) in line
    assert "colour-1: $2 input, $10 output per million tokens (test)" in summary
