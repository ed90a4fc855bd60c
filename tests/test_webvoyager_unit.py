"""WebVoyager harness pieces that need no browser: verdicts, key names, URL policy, task files,
the official trajectory format, summaries, and the judge over a real local HTTP server."""

from __future__ import annotations

import json
import re

import pytest
from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.geometry import Point
from regionfocus.webvoyager import miniwob
from regionfocus.webvoyager.actions_exec import ActionError, key_combo, scroll_delta
from regionfocus.webvoyager.browser import EnvConfig, policy_for
from regionfocus.webvoyager.effects import pixel_change
from regionfocus.webvoyager.judge import aggregate, judge_run, last_screenshots, parse_verdict
from regionfocus.webvoyager.net_policy import refusal
from regionfocus.webvoyager.official import interact_messages
from regionfocus.webvoyager.report import summarize, write_report
from regionfocus.webvoyager.rundir import RunDir, write_json
from regionfocus.webvoyager.tasks import load_tasks

from .hostile import MARKUP, MARKUP_ESCAPED

# --------------------------------------------------------------------------- verdicts


def _allowed(url: str, config: EnvConfig) -> str | None:
    """What the browser's policy for ``config`` says of loading ``url`` (None: allowed)."""
    return refusal(url, policy_for(config))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The page shows the recipe and the answer matches. SUCCESS", 1),
        ("The answer omits the price, so: NOT SUCCESS", 0),
        ("Verdict: NOT  SUCCESS.", 0),
        ("Verdict:\nNOT\nSUCCESS", 0),
        ("**SUCCESS**", 1),
        ("'NOT SUCCESS'", 0),
        # the last verdict word decides: explanations mention both
        ("It would be NOT SUCCESS without the rating, but the rating is shown. SUCCESS", 1),
        ("At first glance a SUCCESS, yet the date is wrong. NOT SUCCESS", 0),
        # not verdicts: the official substring test reads these as SUCCESS
        ("The agent was UNSUCCESSFUL.", None),
        ("It SUCCESSFULLY opened the page but I cannot tell.", None),
        ("I cannot decide.", None),
        ("", None),
    ],
)
def test_parse_verdict(text, expected):
    assert parse_verdict(text) == expected


def test_aggregate_mean_std_per_site():
    tasks = {
        "A--0": {"verdicts": [1, 1, 0]},
        "A--1": {"verdicts": [0, 1, None]},
        "B--0": {"verdicts": [1, 1, 1]},
        "B--1": {"verdicts": [1]},  # unfinished: left out
    }
    sites = {"A--0": "A", "A--1": "A", "B--0": "B", "B--1": "B"}
    s = aggregate(tasks, sites, repeats=3)
    assert s["sites"]["A"]["rates"] == [0.5, 1.0, 0.0]
    assert s["sites"]["A"]["mean"] == pytest.approx(0.5)
    assert s["sites"]["A"]["std"] == pytest.approx(0.4082, abs=1e-4)  # population std
    assert s["sites"]["A"]["unknown"] == 1
    assert s["sites"]["B"]["mean"] == 1.0 and s["sites"]["B"]["std"] == 0.0
    assert s["overall"]["tasks"] == 3


# --------------------------------------------------------------------------- actions and safety


def test_key_combo_maps_model_names_to_playwright():
    assert key_combo(("ctrl", "c")) == "Control+c"
    assert key_combo(("ctrl shift t",)) == "Control+Shift+t"
    assert key_combo(("Alt+F4",)) == "Alt+F4"
    assert key_combo(("enter",)) == "Enter"
    assert key_combo(("cmd", "pagedown")) == "Meta+PageDown"
    assert key_combo(("+",)) == "+"
    with pytest.raises(ActionError, match="unknown key 'hyperspace'"):
        key_combo(("ctrl", "hyperspace"))
    with pytest.raises(ActionError):
        key_combo(())


def test_scroll_delta_directions_and_amounts():
    vp = (1000, 800)
    assert scroll_delta(Action(ActionType.SCROLL, direction="down"), vp) == (0.0, 400.0)
    assert scroll_delta(Action(ActionType.SCROLL, direction="up"), vp) == (0.0, -400.0)
    assert scroll_delta(Action(ActionType.SCROLL, direction="left"), vp) == (-500.0, 0.0)
    assert scroll_delta(Action(ActionType.SCROLL, direction="down", amount=3), vp) == (0.0, 300.0)
    assert scroll_delta(Action(ActionType.SCROLL, direction="up", amount=250), vp) == (0.0, -250.0)
    with pytest.raises(ActionError, match="diagonal"):
        scroll_delta(Action(ActionType.SCROLL, direction="diagonal"), vp)


def test_url_policy(tmp_path):
    cfg = EnvConfig()
    assert _allowed("https://www.allrecipes.com/recipe/1", cfg) is None
    assert "loopback, private or link-local" in _allowed("http://127.0.0.1:8000/", cfg)
    assert _allowed("http://127.0.0.1:8000/", EnvConfig(allow_domains=("127.0.0.1",))) is None
    assert "scheme 'file'" in _allowed("file:///etc/passwd", cfg)
    assert "scheme 'javascript'" in _allowed("javascript:alert(1)", cfg)
    assert "scheme 'chrome'" in _allowed("chrome://crash", cfg)
    only = EnvConfig(allow_domains=("allrecipes.com",))
    assert _allowed("https://www.allrecipes.com/x", only) is None
    assert _allowed("https://allrecipes.com/x", only) is None
    assert "not in the allow-list" in _allowed("https://evilallrecipes.com/", only)
    assert "not in the allow-list" in _allowed("https://example.org/", only)
    mw = EnvConfig(file_root=miniwob.file_root())
    assert _allowed((miniwob.html_root() / "click-button.html").as_uri(), mw) is None
    assert "outside" in _allowed((tmp_path / "x.html").as_uri(), mw)
    assert "outside" in _allowed((miniwob.html_root() / ".." / ".." / "__init__.py").as_uri(), mw)


def test_pixel_change_counts_changed_pixels():
    a = Image.new("RGB", (100, 50), "white")
    b = a.copy()
    assert pixel_change(a, b) == (0, 0.0)
    b.paste((0, 0, 0), (10, 10, 15, 14))  # 5 x 4 px
    assert pixel_change(a, b) == (20, 20 / 5000)
    c = a.copy()
    c.paste((250, 250, 250), (0, 0, 50, 50))  # below the channel threshold: noise
    assert pixel_change(a, c)[0] == 0


# --------------------------------------------------------------------------- task files


def test_load_tasks_with_reference_answers(tmp_path):
    f = tmp_path / "tasks.jsonl"
    f.write_text(
        "\n".join(
            [
                json.dumps(
                    {
                        "web_name": "Allrecipes",
                        "id": "Allrecipes--3",
                        "ques": "Find a cake.",
                        "web": "https://x/",
                    }
                ),
                "",
                "# a comment",
                json.dumps(
                    {"web_name": "Apple", "id": "Apple--0", "ques": "Price?", "web": "https://y/", "extra": 1}
                ),
            ]
        )
    )
    answers = tmp_path / "ref.json"
    answers.write_text(
        json.dumps({"Allrecipes": {"answers": [{"id": 3, "type": "possible", "ans": "cake"}]}})
    )
    tasks = load_tasks(f, answers)
    assert [t.id for t in tasks] == ["Allrecipes--3", "Apple--0"]
    assert tasks[0].reference == ({"type": "possible", "ans": "cake"},)
    assert tasks[1].reference == ()
    assert tasks[0].folder == "taskAllrecipes--3"


@pytest.mark.parametrize(
    "line, message",
    [
        ("not json", "t.jsonl:1: not JSON"),
        (json.dumps({"web_name": "A", "id": "A--0", "web": "https://x/"}), "ques"),
        (
            json.dumps({"web_name": "A", "id": "../up", "ques": "q", "web": "https://x/"}),
            "cannot name a folder",
        ),
    ],
)
def test_load_tasks_rejects_bad_lines(tmp_path, line, message):
    f = tmp_path / "t.jsonl"
    f.write_text(line + "\n")
    with pytest.raises(ValueError, match=re.escape(message)):
        load_tasks(f)


def test_load_tasks_rejects_duplicates(tmp_path):
    rec = json.dumps({"web_name": "A", "id": "A--0", "ques": "q", "web": "https://x/"})
    f = tmp_path / "t.jsonl"
    f.write_text(rec + "\n" + rec + "\n")
    with pytest.raises(ValueError, match="duplicate task id 'A--0'"):
        load_tasks(f)


def test_miniwob_specs():
    assert miniwob.parse_spec("miniwob") == list(miniwob.DEFAULT_TASKS)
    assert miniwob.parse_spec("miniwob:click-button, click-link") == ["click-button", "click-link"]
    with pytest.raises(ValueError, match="unknown MiniWoB.. task.s.: click-nothing"):
        miniwob.parse_spec("miniwob:click-nothing")
    # A pattern is a whole family, in the package's order, each task once.
    focus = miniwob.parse_spec("miniwob:focus-*,focus-text")
    assert focus == ["focus-text", "focus-text-2"]
    clicks = miniwob.parse_spec("miniwob:click-*")
    assert len(clicks) > 20 and all(n.startswith("click-") for n in clicks) and "click-button" in clicks
    with pytest.raises(ValueError, match="unknown MiniWoB.. task.s.: zzz-.*"):
        miniwob.parse_spec("miniwob:zzz-*")
    tasks = miniwob.miniwob_tasks("miniwob:click-button", episodes=3, seed=10)
    assert [(t.id, t.seed) for t in tasks] == [
        ("click-button--0", 10),
        ("click-button--1", 11),
        ("click-button--2", 12),
    ]
    assert all(set(miniwob.available_tasks()) >= set(miniwob.DEFAULT_TASKS) for _ in [0])


# --------------------------------------------------------------------------- official format


def official_read(messages: list[dict]) -> tuple[str, str | None]:
    """What the official auto_eval.py extracts (its regexes are the format's definition)."""
    task_info = messages[1]["content"]
    if isinstance(task_info, list):
        task_info = task_info[0]["text"]
    assert "Now given a task" in task_info
    task = re.search(r"Now given a task:(.+?)Please interact with", task_info).group(1).strip()
    last = messages[-1]["content"]
    if "Action: ANSWER" not in last:
        return task, None
    return task, re.search(r"ANSWER[; ]+\[?(.[^\]]*)\]?", last).group(1).strip()


def test_interact_messages_readable_by_official_script():
    steps = [
        {"text": "I see a search box. Action: click it", "action": Action(ActionType.CLICK, Point(10, 20))},
        {"text": "", "action": Action(ActionType.TYPE, Point(10, 20), text="cake\n", submit=True)},
        {"text": "Found it.", "action": Action(ActionType.FINISHED, text="The cake takes 45 minutes")},
    ]
    msgs = interact_messages("Find a cake\nrecipe.", "https://www.allrecipes.com/", steps)
    assert [m["role"] for m in msgs] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert json.loads(json.dumps(msgs)) == msgs
    task, answer = official_read(msgs)
    assert task == "Find a cake recipe."
    assert answer == "The cake takes 45 minutes"
    # the model's own "Action:" text cannot pose as the harness's action line
    assert msgs[2]["content"].count("Action:") == 1
    image = msgs[1]["content"][1]
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/png;base64,")


def test_interact_messages_without_answer_scores_zero_officially():
    msgs = interact_messages(
        "Task", "https://x/", [{"text": "", "action": Action(ActionType.CLICK, Point(1, 2))}]
    )
    assert official_read(msgs) == ("Task", None)
    msgs = interact_messages("Task", "https://x/", [])
    assert official_read(msgs) == ("Task", None)


# --------------------------------------------------------------------------- run folder, summary, report


def _fake_run(root, records):
    rd = RunDir(root)
    rd.open({"agent": "ocr", "regionfocus_enabled": True, "viewport": [600, 400]})
    for rec in records:
        folder = root / ("task" + rec["id"])
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(1, rec.get("steps", 0) + 2):
            Image.new("RGB", (600, 400), (n * 20, 0, 0)).save(folder / f"screenshot{n}.png")
        rec = {"folder": "task" + rec["id"], "error": None, "triggers": {}, **rec}
        rd.record(rec)
    return rd


def test_resume_refuses_different_settings_and_keeps_finished(tmp_path):
    rd = _fake_run(
        tmp_path, [{"id": "A--0", "web_name": "A", "steps": 1}, {"id": "A--1", "web_name": "A", "error": "x"}]
    )
    rd.close()  # one writer per folder: each reopening below comes after the last one closed
    again = RunDir(tmp_path)
    again.open({"agent": "ocr", "regionfocus_enabled": True, "viewport": [600, 400]})
    # an error is kept (and counted) on resume, and run again only when asked
    assert again.finished("A--0") and again.finished("A--1") and not again.finished("A--2")
    again.close()
    retry = RunDir(tmp_path, retry_errors=True)
    retry.open({"agent": "ocr", "regionfocus_enabled": True, "viewport": [600, 400]})
    assert retry.finished("A--0") and not retry.finished("A--1")
    retry.close()
    with pytest.raises(ValueError, match="regionfocus_enabled: True in the folder, False now"):
        RunDir(tmp_path).open({"agent": "ocr", "regionfocus_enabled": False, "viewport": [600, 400]})
    rd.write_results()
    assert rd.results_path.exists()


def test_summary_and_report_escape_page_text(tmp_path):
    evil = "<script>alert('x')</script>"
    rd = _fake_run(
        tmp_path,
        [
            {
                "id": "click-button--0",
                "web_name": "click-button",
                "kind": "miniwob",
                "success": True,
                "reward": 0.9,
                "steps": 1,
                "regionfocus_rounds": 1,
                "triggers": {"no-effect": 1},
            },
            {
                "id": "click-button--1",
                "web_name": "click-button",
                "kind": "miniwob",
                "success": False,
                "reward": -1.0,
                "steps": 2,
                "ques": evil,
                "answer": MARKUP,
            },
            {
                "id": "click-link--0",
                "web_name": "click-link",
                "kind": "miniwob",
                "success": False,
                "steps": 1,
                "error": "page crashed at step 1",
            },
        ],
    )
    s = summarize(tmp_path)
    assert s["overall"]["tasks"] == 3 and s["overall"]["success"] == 1
    assert s["sites"]["click-button"]["success_rate"] == 0.5
    assert s["sites"]["click-link"]["errors"] == 1
    assert s["overall"]["triggers_per_task"] == {"no-effect": round(1 / 3, 3)}
    # What the page and the model wrote at a step: its URL, the thought, the action, the
    # page's events and error, a RegionFocus round's call; and a site named by the task file.
    rnd = {"trigger": MARKUP, "merged": [{"number": 1, "action": {"point": [5, 5]}}], "choice": 1,
           "calls": [{"kind": "view", "text": MARKUP}]}  # fmt: skip
    step = {"step": 1, "screenshot": "screenshot1.png", "url": "https://x/?q=" + MARKUP, "text": MARKUP,
            "action_text": MARKUP, "events": [MARKUP], "error": MARKUP, "decision": {"round": rnd},
            "views": [MARKUP + ".png"], "action": {"point": [5, 5]}}  # fmt: skip
    write_json(tmp_path / "taskclick-button--1" / "trajectory.json", {"steps": [step]})
    rd.record(
        {"id": "hostile--0", "web_name": MARKUP, "folder": "taskhostile--0", "error": None, "triggers": {}}
    )
    html = write_report(tmp_path).read_text()
    assert evil not in html and "&lt;script&gt;" in html
    assert (tmp_path / "summary.md").read_text().count("|") > 10
    assert html.count("<script") == 1 and "<img src=x" not in html
    assert f"<b>Answer:</b> {MARKUP_ESCAPED}</div>" in html and f"<pre>{MARKUP_ESCAPED}</pre>" in html
    assert f"url: https://x/?q={MARKUP_ESCAPED}<pre>" in html and f"<code>{MARKUP_ESCAPED}</code>" in html
    assert (
        f"<pre>[view] {MARKUP_ESCAPED}</pre>" in html
        and f'<img src="taskclick-button--1/{MARKUP_ESCAPED}.png"' in html
    )
    assert f'data-site="{MARKUP_ESCAPED}"' in html and f"<td>{MARKUP_ESCAPED}</td>" in html
    assert html.count(MARKUP_ESCAPED) == html.count("{{ 7*7 }}") >= 12  # written, never evaluated


# --------------------------------------------------------------------------- judge over HTTP


def test_judge_over_http(tmp_path):
    from regionfocus.adapters.backends.openai_http import OpenAIBackend
    from tests.chat_server import ChatServer, request_images, request_text

    _fake_run(
        tmp_path,
        [
            {
                "id": "Apple--0",
                "web_name": "Apple",
                "ques": "Find the price of the iPhone.",
                "answer": "$799",
                "steps": 20,
            },
            {"id": "Apple--1", "web_name": "Apple", "ques": "Find a Mac.", "answer": None, "steps": 1},
            {"id": "ArXiv--0", "web_name": "ArXiv", "ques": "Find a paper.", "answer": "2401.1", "steps": 2},
            {
                "id": "click-button--0",
                "web_name": "click-button",
                "kind": "miniwob",
                "success": True,
                "steps": 1,
            },
        ],
    )
    assert [p.name for p in last_screenshots(tmp_path / "taskApple--0", 3)] == [
        "screenshot19.png",
        "screenshot20.png",
        "screenshot21.png",
    ]

    answers = iter(["Price shown. SUCCESS", "Wrong model. NOT SUCCESS", "Unsure."])

    def responder(body):
        text = request_text(body)
        return "Paper found. SUCCESS" if "Find a paper" in text else next(answers)

    async def go():
        with ChatServer(responder=responder) as srv:
            backend = OpenAIBackend([srv.base_url], model="judge")
            try:
                summary = await judge_run(
                    tmp_path, backend, model_name="judge", repeats=3, last_k=3, concurrency=1
                )
            finally:
                await backend.aclose()
            return summary, list(srv.stats.bodies)

    import asyncio

    summary, bodies = asyncio.run(go())
    # Apple--1 has no answer: scored 0 without a call; the MiniWoB episode is not judged
    assert len(bodies) == 6
    apple = [b for b in bodies if "iPhone" in request_text(b)]
    assert len(apple) == 3
    text = request_text(apple[0])
    # the official user text, filled as upstream fills it (the announced count is last_k)
    assert "TASK: Find the price of the iPhone.\nResult Response: $799\n3 screenshots at the end: " in text
    assert "Your verdict:" in text
    assert apple[0]["seed"] == 42 and apple[0]["temperature"] == 0
    assert bodies[0]["messages"][0]["content"].startswith("As an evaluator, you will be presented with three")
    assert len(request_images(apple[0])) == 3
    assert (
        bodies[0]["messages"][0]["role"] == "system" and "NOT SUCCESS" in bodies[0]["messages"][0]["content"]
    )
    judged = json.loads((tmp_path / "judge.json").read_text())
    assert judged["tasks"]["Apple--0"]["verdicts"] == [1, 0, None]
    assert judged["tasks"]["Apple--1"]["verdicts"] == [0, 0, 0]
    assert summary["sites"]["Apple"]["rates"] == [0.5, 0.0, 0.0]
    assert summary["sites"]["ArXiv"]["mean"] == 1.0
    assert summary["overall"]["unknown"] == 1

    # resume: nothing left to ask
    summary2, bodies2 = asyncio.run(go())
    assert bodies2 == [] and summary2["overall"] == summary["overall"]


def test_write_json_is_atomic(tmp_path):
    p = tmp_path / "x.json"
    write_json(p, {"a": 1})
    with pytest.raises(TypeError):
        write_json(p, {"a": object()})
    assert json.loads(p.read_text()) == {"a": 1}
    assert [f.name for f in tmp_path.iterdir()] == ["x.json"]


def test_resume_with_another_regionfocus_setting_stops_with_the_diff(tmp_path):
    """The whole resolved configuration is pinned: a changed proposer is named key by key,
    with the flag that starts a fresh folder; concurrency is not part of it."""
    first = {"agent": "ocr", "regionfocus": {"proposer": "fixed", "rounds_per_sample": 1}, "concurrency": 1}
    rd = RunDir(tmp_path)
    rd.open(first)
    rd.record({"id": "A--0", "web_name": "A", "error": None})
    rd.close()
    more = RunDir(tmp_path)
    more.open({**first, "concurrency": 4})  # same experiment, more in flight: fine
    more.close()
    with pytest.raises(ValueError) as e:
        RunDir(tmp_path).open({**first, "regionfocus": {"proposer": "sam", "rounds_per_sample": 1}})
    assert "regionfocus.proposer: 'fixed' in the folder, 'sam' now" in str(e.value)
    assert "--out" in str(e.value) and "rounds_per_sample" not in str(e.value)


def test_a_folder_of_the_earlier_layout_is_converted(tmp_path):
    write_json(tmp_path / "config.json", {"agent": "ocr", "viewport": [600, 400], "concurrency": 2})
    write_json(tmp_path / "results.json", [{"id": "A--0", "error": None}, {"id": "A--1", "error": "boom"}])
    rd = RunDir(tmp_path)
    rd.open({"agent": "ocr", "viewport": [600, 400], "concurrency": 1})
    assert rd.finished("A--0") and rd.finished("A--1")
    assert (
        rd.results["A--1"]["status"] == "error" and rd.results["A--0"]["schema_version"] == 1
    )  # as written then
    rd.close()
    with pytest.raises(ValueError, match="viewport"):
        RunDir(tmp_path).open({"agent": "ocr", "viewport": [800, 400]})


def test_load_tasks_keeps_unicode_line_separators_inside_a_record(tmp_path):
    """U+2028, U+0085 and a form feed may stand raw in a JSON string: one record, one line."""
    ques = "Find the price\u2028of the cheapest\x85option\x0cshown"
    path = tmp_path / "tasks.jsonl"
    rows = [{"id": "Shop--0", "web_name": "Shop", "ques": ques, "web": "https://example.com"}]
    rows.append({"id": "Shop--1", "web_name": "Shop", "ques": "next", "web": "https://example.com"})
    path.write_text("\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    assert [(t.id, t.ques) for t in load_tasks(path)] == [("Shop--0", ques), ("Shop--1", "next")]


def test_judge_text_fills_each_placeholder_once():
    from regionfocus.webvoyager.judge import USER_PROMPT, judge_messages

    assert USER_PROMPT == "TASK: <task>\nResult Response: <answer>\n<num> screenshots at the end: "
    msgs = judge_messages("Say <answer> twice", "<num> things", [], num=15)
    assert msgs[1]["content"][0]["text"] == (
        "TASK: Say <answer> twice\nResult Response: <num> things\n15 screenshots at the end: "
    )
    assert msgs[1]["content"][-1]["text"] == "Your verdict:\n"
