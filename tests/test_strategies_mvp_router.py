"""MVP (regionfocus/strategies/mvp.py) and the zoom-consistency router
(regionfocus/strategies/zoom_consistency.py): their geometry and choices against hand-computed
values of the official code's rules, with scripted models, and end to end through the
ScreenSpot-Pro harness against a scripted OpenAI-compatible server (tests/chat_server.py),
whose official-format results re-score exactly."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from regionfocus.actions import click
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.adapters.families.qwen import Qwen25Adapter
from regionfocus.agent import StaticPrediction
from regionfocus.geometry import Box, Point
from regionfocus.kit.flags import strategy_names as resolve
from regionfocus.kit.runlog import read_records
from regionfocus.model import ModelReply, Query, Usage
from regionfocus.screenspot_pro.cli import main
from regionfocus.screenspot_pro.strategies import fit_to_model, run_peers
from regionfocus.strategies import MVP, STRATEGIES, MVPGrid, ZoomConsistencyRouter, get_strategy
from regionfocus.strategies.cli import strategies_command
from regionfocus.strategies.mvp import AttentionModel, agreeing_groups, choose, grid_windows, ranked_windows
from regionfocus.strategies.zoom_consistency import Zoomed, consistency, half_crop, route
from tests.chat_server import ChatServer, Reply, request_images, request_text

from .test_screenspot_helpers import fresh_dataset

SIZE = (1600, 1000)
SHOT = Image.new("RGB", SIZE, (228, 228, 228))


@dataclass
class Scripted:
    """A grounder that knows where it will point, in screenshot pixels: ``full`` on the whole
    screenshot, ``zoomed(box)`` on a view of ``box`` (None: no answer). It answers in pixels of
    the image it is given, as an adapter does; it sees an image at most ``cap`` px on its long
    side (None: as given)."""

    full: Point | None
    zoomed: object = None
    cap: int | None = None
    seen: list[tuple[str, tuple[int, int]]] = field(default_factory=list)

    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        s = min(1.0, self.cap / max(size)) if self.cap else 1.0
        return max(1, round(size[0] * s)), max(1, round(size[1] * s))

    async def act(self, image: Image.Image, query: Query, *, zoomed: bool = False) -> ModelReply:
        usage = Usage(latency_s=0.01, prompt_tokens=5000, completion_tokens=9)
        if query.view is None:
            self.seen.append(("full", image.size))
            p = self.full
        else:
            self.seen.append((str(query.view.box.to_list()), image.size))
            p = self.zoomed(query.view.box) if callable(self.zoomed) else self.zoomed
            p = query.view.screen_to_view(p) if p is not None else None
        if p is None:
            return ModelReply("I cannot see it.", usage=usage)
        return ModelReply(f"({p.x:.1f},{p.y:.1f})", point=p, usage=usage)


@dataclass
class Attending(Scripted):
    """:class:`Scripted` with MVP's attention pass: the positions it attends to."""

    positions: list[Point] = field(default_factory=list)
    asked: list[int] = field(default_factory=list)

    async def attention(self, image: Image.Image, query: Query, top_k: int) -> tuple[list[Point], Usage]:
        self.asked.append(top_k)
        return self.positions[:top_k], Usage(latency_s=0.02, prompt_tokens=4000, completion_tokens=9)


def run(strategy, model, baseline=None, image=SHOT):
    return asyncio.run(strategy.run(model, image, "the save button", baseline))


# ------------------------------------------------------------------------------------- MVP
def test_grid_views_are_the_codes_fallback_cells():
    quads = [Box(0, 0, 800, 500), Box(800, 0, 1600, 500), Box(0, 500, 800, 1000), Box(800, 500, 1600, 1000)]
    assert [b for b, _ in grid_windows(SIZE, 4)] == quads
    assert [b for b, _ in grid_windows(SIZE, 2)] == [Box(0, 0, 800, 1000), Box(800, 0, 1600, 1000)]
    assert [b for b, _ in grid_windows(SIZE, 1)] == [Box(0, 0, 1600, 1000)]
    # 5 cells: 3 columns of 533 px (the last reaching the edge), 2 rows, row by row
    five = [b for b, _ in grid_windows(SIZE, 5)]
    assert five == [Box(0, 0, 533, 500), Box(533, 0, 1066, 500), Box(1066, 0, 1600, 500),
                    Box(0, 500, 533, 1000), Box(533, 500, 1066, 1000)]  # fmt: skip
    assert grid_windows(SIZE, 0) == [] and all(c == 0 for _, c in grid_windows(SIZE, 4))


def test_attended_windows_rank_by_coverage_shift_inside_and_drop_duplicates():
    # On 1600 x 1000 a 1288 x 728 window can start at x 0..312, y 0..272.
    near = [Point(1500, 100), Point(1510, 110), Point(1490, 120)]  # all -> (312, 0, 1600, 728)
    far = Point(100, 990)  # -> (0, 272, 1288, 1000), holding only itself
    windows = ranked_windows([far, *near], SIZE, (1288, 728), 4)
    assert windows == [(Box(312, 0, 1600, 728), 3), (Box(0, 272, 1288, 1000), 1)]
    assert ranked_windows([far, *near], SIZE, (1288, 728), 1) == [(Box(312, 0, 1600, 728), 3)]
    # a window larger than the screenshot is the screenshot
    assert ranked_windows([Point(100, 500)], (1000, 600), (1288, 728), 4) == [(Box(0, 0, 1000, 600), 1)]


def test_groups_are_cliques_formed_in_order_and_the_answer_is_the_most_covering_member():
    a, b, c = Point(0, 0), Point(14, 0), Point(28, 0)  # c is within 14 px of b, not of a
    assert agreeing_groups([a, b, c], 14) == [[0, 1], [2]]
    assert agreeing_groups([a, b, c], 13.9) == [[0], [1], [2]]
    # the larger group wins whatever its coverage; inside it, the most covering member
    pick, groups = choose([a, Point(200, 200), Point(205, 195), Point(201, 201)], [0, 5, 9, 9], 14)
    assert groups[0] == [1, 2, 3] and pick == 2
    # equal sizes: the higher mean coverage wins; equal scores: the first group
    assert choose([a, Point(200, 200)], [0, 3], 14)[0] == 1
    assert choose([a, Point(200, 200)], [0, 0], 14)[0] == 0
    assert choose([], [], 14) == (None, [])


def test_mvp_grid_grounds_the_grid_views_at_twice_their_size():
    target = Point(1203.0, 301.0)
    model = Scripted(full=Point(400, 700), zoomed=lambda box: target if box.contains(target) else None)
    res = run(MVPGrid(), model, baseline=click(400, 700))
    assert res.strategy == "mvp-grid" and {"stage": "views", "proposal": "grid"} in res.steps
    assert [c.kind for c in res.calls] == ["view[0]", "view[1]", "view[2]", "view[3]"]
    # every quadrant is shown at twice its pixels (the model here does not downsize)
    assert [size for _, size in model.seen] == [(1600, 1000)] * 4
    assert all(c.image_size == [1600, 1000] for c in res.calls)
    # one view found the target, the full image answered elsewhere: two groups of one, coverage
    # 0 everywhere, so the first group (the full image's) stands, as in the code
    assert res.point == Point(400, 700) and len(res.steps[-1]["groups"]) == 2
    assert res.candidates == [Point(400, 700), target]


def test_mvp_with_attention_grounds_the_attended_windows_and_answers_the_agreeing_group():
    target = Point(1203.0, 301.0)
    positions = [Point(1200, 300), Point(1210, 305), Point(1190, 290), Point(100, 990)]
    model = Attending(full=Point(400, 700), zoomed=lambda box: target, positions=positions)
    res = run(MVP(views=2), model, baseline=click(400, 700))
    assert model.asked == [100] and not any("grid" in n for n in res.notes)
    kinds = [c.kind for c in res.calls]
    assert kinds == ["attention", "view[0]", "view[1]"] and res.calls[0].prompt_tokens == 4000
    step = res.steps[-1]
    # the far position's window also holds the three near ones: it ranks first
    assert step["windows"] == [[0, 272, 1288, 1000], [312, 0, 1600, 728]] and step["coverage"] == [4, 3]
    assert res.point == target  # the two views agree; the full image's point is alone
    assert res.totals()["requests"] == 3


def test_mvp_refuses_a_model_without_the_attention_pass_and_names_mvp_grid():
    # The published method's views come from attention: on a model without it, MVP does not
    # quietly become the grid form (which would be reported as "mvp").
    assert MVP.unfit(Attending(full=None)) is None and MVPGrid.unfit(Scripted(None)) is None
    assert "mvp-grid" in MVP.unfit(Scripted(None))
    with pytest.raises(ValueError, match="mvp-grid"):
        run(MVP(), Scripted(full=Point(1, 1)), baseline=click(1, 1))
    # the grid form never asks for attention, even of a model that offers it
    model = Attending(full=Point(5, 5), positions=[Point(1, 1)])
    res = run(MVPGrid(views=1), model, baseline=click(5, 5))
    assert model.asked == [] and [c.kind for c in res.calls] == ["view[0]"]


def test_mvp_whose_attention_pass_finds_no_step_fails_the_sample_naming_the_answer():
    # An answer without the separator gives the pass no decoding step to read: the sample's MVP
    # fails, naming the answer (the code has no states there either), instead of quietly
    # running the grid views under MVP's name; through the harness it is that strategy's error.
    @dataclass
    class NoStep(Attending):
        async def attention(self, image, query, top_k):
            raise ValueError(
                "no attention step: the answer \"click(point='<point>5 5</point>')\" holds no ','"
            )

    model = NoStep(full=Point(400, 700), zoomed=Point(9, 9))
    with pytest.raises(
        RuntimeError, match=r"mvp: the attention pass gave no views \(ValueError: no attention step"
    ):
        run(MVP(views=2), model, baseline=click(400, 700))
    pred = StaticPrediction(baseline=click(400, 700), final=None, verdict=None, trigger=None)
    got = asyncio.run(run_peers(["mvp"], model, SHOT, "the save button", pred))
    assert isinstance(got["mvp"], RuntimeError) and "mvp-grid" in str(got["mvp"])


def test_mvp_whose_attention_call_fails_is_the_samples_error():
    @dataclass
    class Broken(Attending):
        async def attention(self, image, query, top_k):
            raise RuntimeError("attention_layer 20 is past the model's last decoder layer")

    with pytest.raises(RuntimeError, match="attention_layer 20 is past"):
        run(MVP(), Broken(full=Point(400, 700), zoomed=Point(9, 9)), baseline=click(400, 700))


def test_mvp_with_no_point_anywhere_keeps_the_baseline_and_zero_views_cost_nothing():
    res = run(MVPGrid(), Scripted(full=None), baseline=None)
    assert res.action is None and "no point found: the baseline stands" in res.notes
    res = run(MVP(views=0), Attending(full=Point(5, 5), positions=[Point(1, 1)]), baseline=click(5, 5))
    assert res.calls == [] and res.point == Point(5, 5)
    with pytest.raises(ValueError, match="views >= 0"):
        MVP(views=-1)


# ------------------------------------------------------------------------- the router
def test_half_crop_is_the_codes_integer_crop_shifted_inside():
    assert half_crop(Point(800.7, 500.2), SIZE, 0.5) == Box(400, 250, 1200, 750)
    assert half_crop(Point(1590, 10), SIZE, 0.5) == Box(800, 0, 1600, 500)
    # odd sizes: int(1921 * 0.5) = 960 wide, int(1081 * 0.5) = 540 high
    assert half_crop(Point(1000.9, 700), (1921, 1081), 0.5) == Box(520, 430, 1480, 970)


def test_consistency_is_the_distance_from_the_crop_centre_in_its_thousandths():
    crop = Box(400, 250, 1200, 750)
    assert consistency(Point(800, 500), crop) == 0
    assert consistency(Point(880, 550), crop) == pytest.approx(100 * 2**0.5)  # 80 px of 800, 50 of 500
    first, second = Zoomed(Point(1, 1), crop, 30.0), Zoomed(Point(2, 2), crop, 30.0)
    assert route(first, second)[0] == "first"  # a tie goes to the first model
    assert route(first, second._replace(consistency=29.9))[0] == "second"
    assert route(first._replace(consistency=None), second)[0] == "second"
    assert route(first, second._replace(consistency=None))[0] == "first"
    assert route(Zoomed(None), Zoomed(None))[0] == "first"


def test_router_trusts_the_model_whose_zoomed_point_moved_least():
    # the first model's zoomed point is 240 px right of its crop's centre; the second's is on it
    first = Scripted(full=Point(800, 500), zoomed=Point(1040, 500))
    second = Scripted(full=Point(1203, 301), zoomed=Point(1203, 301), cap=800)
    res = run(ZoomConsistencyRouter(second=second), first, baseline=click(800, 500))
    assert res.point == Point(1203, 301) and res.steps[0]["chosen"] == "second"
    assert res.steps[0]["first"]["consistency"] == pytest.approx(300)
    assert (
        res.steps[0]["second"]["crop"] == [800, 51, 1600, 551]  # shifted inside: 3 px off its centre
        and res.steps[0]["second"]["consistency"] == pytest.approx(3.75)
    )
    kinds = [c.kind for c in res.calls]
    assert kinds == ["zoom", "second:baseline", "second:zoom"]
    # each model's calls are costed as its own processor sees them: the crop is shown at the
    # size that model sees the whole screenshot
    zoom, full2, zoom2 = res.calls
    assert zoom.image_size == zoom.seen_size == [1600, 1000]
    assert full2.image_size == [1600, 1000] and full2.seen_size == [800, 500]
    assert zoom2.image_size == zoom2.seen_size == [800, 500]
    assert res.candidates == [Point(1040, 500), Point(1203, 301)]
    # the pixel limit each model ran with, beside the official code's
    assert res.steps[0]["pixels"] == {
        "first": {"max_pixels": None, "seen": [1600, 1000]},
        "second": {"max_pixels": None, "seen": [800, 500]},
        "official_max_pixels": 99_999_999,
    }
    assert (
        "ran with an unstated pixel limit (first model), an unstated pixel limit (second model); "
        "the official code runs at max_pixels 99,999,999" in res.notes
    )


def test_router_states_the_max_pixels_a_model_states():
    @dataclass
    class Capped(Scripted):
        max_pixels: int = 500_000

    res = run(
        ZoomConsistencyRouter(), Capped(full=None, zoomed=Point(810, 505), cap=800), baseline=click(800, 500)
    )
    assert res.steps[0]["pixels"]["first"] == {"max_pixels": 500_000, "seen": [800, 500]}
    assert res.notes[0] == (
        "ran with max_pixels 500,000 (first model); the official code runs at max_pixels 99,999,999"
    )


def test_router_falls_back_as_the_code_does():
    # the second model's step 2 gives nothing: its step-1 point is its answer, with no consistency
    first = Scripted(full=Point(800, 500), zoomed=Point(1000, 500))
    res = run(ZoomConsistencyRouter(second=Scripted(full=Point(10, 10))), first, baseline=click(800, 500))
    assert res.steps[0]["chosen"] == "first" and res.point == Point(1000, 500)
    assert res.steps[0]["second"] == {"point": [10, 10], "crop": [0, 0, 800, 500], "consistency": None}
    # the first model's step 2 gives nothing: the second's consistency wins
    first = Scripted(full=Point(800, 500), zoomed=None)
    res = run(ZoomConsistencyRouter(second=Scripted(Point(99, 99), Point(99, 99))), first, click(800, 500))
    assert res.steps[0]["chosen"] == "second" and res.point == Point(99, 99)
    # one model: its own two steps, unrouted, one request
    res = run(ZoomConsistencyRouter(), Scripted(full=None, zoomed=Point(810, 505)), baseline=click(800, 500))
    assert res.point == Point(810, 505) and [c.kind for c in res.calls] == ["zoom"]
    assert any("no second model" in n for n in res.notes)
    with pytest.raises(ValueError, match="0 < ratio < 1"):
        ZoomConsistencyRouter(ratio=1.5)


def test_both_are_listed_and_take_their_options_by_name(capsys):
    assert {"mvp", "mvp-grid", "zoom-consistency"} <= set(STRATEGIES)
    assert strategies_command([]) == 0
    out = capsys.readouterr().out
    assert "ZJUSCL/MVP" in out and "omxyz/zoom-consistency-routing" in out
    # the listing says which MVP needs an in-process model and which serves the rest, and the
    # router's pixel limit beside the official one
    blocks = {b.split()[0]: b for b in re.split(r"\n(?=\S)", out) if b.strip()}
    assert "in-process" in blocks["mvp"] and "mvp-grid" in blocks["mvp"] and "attention pass" in blocks["mvp"]
    assert "served models" in blocks["mvp-grid"] and "not the paper's method" in blocks["mvp-grid"]
    assert "max_pixels" in blocks["zoom-consistency"] and "99,999,999" in blocks["zoom-consistency"]
    assert set(resolve("mvp,zoom-consistency")) <= set(resolve("all"))  # one model is enough
    second = Scripted(full=None)
    assert get_strategy("zoom-consistency", second=second).second is second
    assert get_strategy("mvp", views=2).views == 2
    assert isinstance(Attending(full=None), AttentionModel) and not isinstance(Scripted(None), AttentionModel)


# ------------------------------------------------------------- end to end, over HTTP
def colour_responder(body: dict) -> Reply:
    """Qwen2.5-VL's answer, in pixels of the image received, at the centre of the colour the
    instruction names (the image's top-left corner when it is not there, or when the
    instruction says "[error]"); no answer when it says "[mute]"."""
    (img,) = request_images(body)
    if "[mute]" in request_text(body):
        return Reply.text("I cannot tell where that is.")
    hexes = re.findall(r"#([0-9a-f]{6})", request_text(body))
    arr = np.asarray(img.convert("RGB"), dtype=np.int16)
    x, y = 0, 0
    if hexes and "[error]" not in request_text(body):
        rgb = np.array([int(hexes[-1][i : i + 2], 16) for i in (0, 2, 4)], dtype=np.int16)
        ys, xs = np.nonzero(np.abs(arr - rgb).max(axis=2) <= 12)
        if len(xs):
            x, y = round((xs.min() + xs.max() + 1) / 2), round((ys.min() + ys.max() + 1) / 2)
    if "Output the coordinate pair exactly:\n(x,y)" in request_text(body):  # MVP's own request
        return Reply.text(f"({x},{y})", prompt_tokens=(img.width // 28) * (img.height // 28) + 40)
    cont = f"{x}, {y}]}}}}\n</tool_call>"
    if not body.get("continue_final_message"):
        cont = (
            '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": ['
            + cont
        )
    return Reply.text(cont, prompt_tokens=(img.width // 28) * (img.height // 28) + 40)


@pytest.fixture(scope="module")
def servers():
    with ChatServer(colour_responder, model="m") as first, ChatServer(colour_responder, model="m") as second:
        yield first, second


def official_verdict(pred: list[float] | None, detail: dict, img_size: list[int]) -> str:
    """The official eval's rule: the bbox divided by img_size, the normalised point inside it."""
    if pred is None:
        return "wrong_format"
    (w, h), (x1, y1, x2, y2) = img_size, detail["bbox"]
    x, y = pred[0] / w, pred[1] / h
    return "correct" if x1 / w <= x <= x2 / w and y1 / h <= y <= y2 / h else "wrong"


def test_harness_runs_both_over_http_and_their_results_rescore_exactly(servers, tmp_path: Path):
    server, _ = servers
    data = fresh_dataset(tmp_path / "data")
    out = tmp_path / "run"
    argv = ["--data", str(data), "--out", str(out), "--agent", "qwen2.5-vl", "--base-url", server.base_url,
            "--model", "m", "--no-progress", "--task", "appb_macos", "--strategy", "mvp-grid,zoom-consistency"]  # fmt: skip
    assert main(argv) == 0
    recs = read_records(out / "records.jsonl")
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    sizes = {r["id"]: r["sample"]["img_size"] for r in recs}
    written = {}
    for name in ("mvp-grid", "zoom-consistency"):
        for r in recs:
            row = r["strategies"][name]
            assert row["error"] is None and row["cost"]["requests"] > 1
            assert all(c["image_tokens"] for c in row["trace"]["calls"])
        doc = json.loads((out / f"results_{name}.json").read_text())
        assert doc["metrics"]["overall"]["num_total"] == len(recs)
        for d in doc["details"]:
            assert d["correctness"] == official_verdict(d["pred"], d, sizes[d["id"]]), (name, d["id"])
        assert doc["metrics"]["overall"]["num_correct_action"] == sum(
            d["correctness"] == "correct" for d in doc["details"]
        )
        verdicts = {d["id"]: d["correctness"] for d in doc["details"]}
        assert verdicts == {
            "appb_0": "correct",
            "appb_1": "correct",
            "appb_2": "wrong",
            "appb_3": "wrong_format",
        }
        written[name] = (out / f"results_{name}.json").read_bytes()
        (out / f"results_{name}.json").unlink()
    # re-scored from the records alone, the files come back byte for byte
    assert main(["report", str(out)]) == 0
    for name, before in written.items():
        assert (out / f"results_{name}.json").read_bytes() == before
    assert not (out / "results_mvp.json").exists()  # the grid form is never filed as MVP
    mvp = next(r for r in recs if r["id"] == "appb_0")["strategies"]["mvp-grid"]["trace"]
    assert [c["kind"] for c in mvp["calls"]] == ["full", "view[0]", "view[1]", "view[2]", "view[3]"]
    # MVP's own request, as its code sends it: its system prompt with the size sent, 32 new tokens
    mvp_bodies = [b for b in server.stats.bodies if "Output the coordinate pair exactly" in request_text(b)]
    assert mvp_bodies and all(
        b["max_tokens"] == 32 and b["messages"][0]["role"] == "system" for b in mvp_bodies
    )
    summary = (out / "summary.md").read_text()
    assert "| zoom-consistency |" in summary and "| mvp-grid |" in summary and "| mvp |" not in summary
    # the router's row says the pixel limit it ran with, beside the official code's
    assert (
        "zoom-consistency ran with max_pixels 12,845,056 (first model); "
        "the official code runs at max_pixels 99,999,999" in summary
    )
    step = next(r for r in recs if r["id"] == "appb_0")["strategies"]["zoom-consistency"]["trace"]["steps"][0]
    assert (
        step["pixels"]["first"]["max_pixels"] == 12845056
        and step["pixels"]["official_max_pixels"] == 99999999
    )


def test_served_model_asked_for_mvp_exits_2_naming_mvp_grid_before_any_call(servers, tmp_path, capsys):
    server, _ = servers
    server.reset_stats()
    data = fresh_dataset(tmp_path / "data")
    argv = ["--data", str(data), "--out", str(tmp_path / "run"), "--agent", "qwen2.5-vl",
            "--base-url", server.base_url, "--model", "m", "--no-progress", "--strategy", "regionfocus,mvp"]  # fmt: skip
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (
        line.startswith("regionfocus screenspot-pro: error: --strategy mvp: ")
        and "--strategy mvp-grid" in line
    )
    assert server.stats.chat_requests == 0 and not (tmp_path / "run").exists()
    # "all" leaves MVP out for a served model, says so, and runs the rest (mvp-grid among them)
    fit = fit_to_model(resolve("all"), Qwen25Adapter(OpenAIBackend([server.base_url], model="m")), every=True)
    assert "mvp" not in fit[0] and "mvp-grid" in fit[0] and list(fit[1]) == ["mvp"]
    assert not isinstance(Qwen25Adapter(OpenAIBackend([server.base_url], model="m")), AttentionModel)


def test_router_over_two_endpoints_costs_each_models_calls(servers):
    first_srv, second_srv = servers
    img = Image.new("RGB", (1920, 1080), (240, 241, 243))
    ImageDraw.Draw(img).rectangle((1500, 200, 1515, 215), fill=(30, 160, 90))

    def adapter(srv):
        return Qwen25Adapter(OpenAIBackend([srv.base_url], model="m", max_retries=0))

    first, second = adapter(first_srv), adapter(second_srv)
    second_srv.reset_stats()
    pred = StaticPrediction(baseline=click(300, 900), final=None, verdict=None, trigger=None)
    options = {"zoom-consistency": {"second": second}}
    peers = asyncio.run(run_peers(["zoom-consistency"], first, img, "the #1ea05a button", pred, options))
    res = peers["zoom-consistency"]
    assert second_srv.stats.chat_requests == 2  # its own step 1 and its crop
    kinds = {c.kind: c for c in res.calls}
    assert set(kinds) == {"zoom", "second:baseline", "second:zoom"}
    assert (
        kinds["second:zoom"].endpoint == second_srv.base_url and kinds["zoom"].endpoint == first_srv.base_url
    )
    # the first model's crop around its wrong baseline misses the target: it answers the crop's
    # corner, far from the centre; the second's crop holds the target, nearer its centre
    step = res.steps[0]
    assert step["first"]["crop"] == [0, 540, 960, 1080] and step["second"]["crop"] == [960, 0, 1920, 540]
    assert step["chosen"] == "second" and step["first"]["consistency"] > step["second"]["consistency"]
    assert Box(1500, 200, 1516, 216).contains(res.point)
    assert all(c.image_tokens and c.prompt_tokens for c in res.calls)
