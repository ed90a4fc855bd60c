"""WebVoyager files as the official harness writes and reads them: GAIA-shaped task files,
ASCII-escaped interact_messages.json, answers that the official extraction reads back exactly,
thoughts that cannot pose as answers, and call_user recorded as an ending, not an answer.

Facts copied from MinorJerry/WebVoyager at commit 5a7896738c10bfb8b9edccce6bb0e0411f8ae569:
- evaluation/auto_eval.py, ``auto_eval_by_gpt4v``: one message only -> 0; the task is
  ``re.search(r"Now given a task:(.+?)Please interact with", <message 1 text>).group(1).strip()``;
  the answer: ``if 'Action: ANSWER' not in it_messages[-1]["content"]`` -> 0, else
  ``re.search(r"ANSWER[; ]+\\[?(.[^\\]]*)\\]?", <that content>).group(1).strip()``;
- utils.py, ``print_message``: ``json.dump(messages, fw, indent=2)`` (ensure_ascii left at True);
- data/GAIA_web.jsonl: 90 lines, each with exactly the keys task_id (a UUID string), Level (an
  integer), "Final answer" (a string), id ("level1-0" ... "level2-63"), web
  ("https://www.google.com/" on every line) and ques; no web_name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from regionfocus import Action, ActionType, Point
from regionfocus.webvoyager.official import (
    FILENAME,
    final_answer,
    interact_messages,
    write_interact_messages,
)
from regionfocus.webvoyager.rundir import write_json
from regionfocus.webvoyager.tasks import load_tasks

TASK_RE = r"Now given a task:(.+?)Please interact with"
ANSWER_RE = r"ANSWER[; ]+\[?(.[^\]]*)\]?"


def official_read(messages: list[dict]) -> tuple[str | None, str | None]:
    """(task, answer) as auto_eval.py extracts them; answer None = scored 0 without a judge."""
    if len(messages) == 1:
        return None, None
    task_info = messages[1]["content"]
    if isinstance(task_info, list):
        task_info = task_info[0]["text"]
    assert "Now given a task" in task_info
    task = re.search(TASK_RE, task_info).group(1).strip()
    ans_info = messages[-1]["content"]
    if "Action: ANSWER" not in ans_info:
        return task, None
    return task, re.search(ANSWER_RE, ans_info).group(1).strip()


def _click(text: str = "") -> dict:
    return {"text": text, "action": Action(ActionType.CLICK, Point(40, 50))}


def _finish(answer: str, text: str = "") -> dict:
    return {"text": text, "action": Action(ActionType.FINISHED, text=answer)}


# --------------------------------------------------------------------------- task files


def _gaia_line(n: int, level: int, answer: str) -> str:
    return json.dumps(
        {
            "task_id": f"00000000-0000-4000-8000-{n:012d}",
            "Level": level,
            "Final answer": answer,
            "id": f"level{level}-{n}",
            "web": "https://www.google.com/",
            "ques": f"Question number {n}: how many moons does the planet in note {n} have?",
        }
    )


def test_gaia_shaped_file_loads(tmp_path: Path):
    f = tmp_path / "GAIA_web.jsonl"
    f.write_text(
        "\n".join([_gaia_line(0, 1, "17"), _gaia_line(1, 1, "3"), _gaia_line(61, 2, "0.1777")]) + "\n"
    )
    tasks = load_tasks(f)
    assert [t.id for t in tasks] == ["level1-0", "level1-1", "level2-61"]
    assert {t.web_name for t in tasks} == {"google.com"}
    assert tasks[0].web == "https://www.google.com/" and tasks[0].ques.startswith("Question number 0")
    assert tasks[0].reference == ({"type": "golden", "ans": "17"},)
    assert tasks[2].folder == "tasklevel2-61"
    assert tasks[0].to_dict()["web_name"] == "google.com"


def test_web_name_from_the_id_prefix_and_reference_answers(tmp_path: Path):
    f = tmp_path / "patched.jsonl"
    lines = [
        {
            "id": "Cambridge Dictionary--29",
            "ques": "Define zeal.",
            "web": "https://dictionary.cambridge.org/",
        },
        {
            "web_name": None,
            "id": "Allrecipes--3",
            "ques": "Find a cake.",
            "web": "https://www.allrecipes.com/",
        },
        {"web_name": "Apple", "id": "Apple--0", "ques": "Price?", "web": "https://www.apple.com/"},
        {"id": 7, "ques": "Anything.", "web": "http://localhost:8000/page.html"},
    ]
    f.write_text("\n".join(json.dumps(x) for x in lines))
    answers = tmp_path / "reference_answer.json"
    answers.write_text(
        json.dumps({"Allrecipes": {"answers": [{"id": 3, "type": "possible", "ans": "cake"}]}})
    )
    tasks = load_tasks(f, answers)
    assert [(t.id, t.web_name) for t in tasks] == [
        ("Cambridge Dictionary--29", "Cambridge Dictionary"),
        ("Allrecipes--3", "Allrecipes"),
        ("Apple--0", "Apple"),
        ("7", "localhost"),
    ]
    assert tasks[1].reference == ({"type": "possible", "ans": "cake"},)


@pytest.mark.parametrize(
    "record, message",
    [
        ({"id": "level1-0", "web": "https://x/"}, "t.jsonl:3: missing or non-string field(s): ques"),
        ({"id": None, "ques": "q", "web": "https://x/"}, "t.jsonl:3: missing or non-string field(s): id"),
        ({"id": "a-0", "ques": "q", "web": 5}, "t.jsonl:3: missing or non-string field(s): web"),
        (
            {"web_name": 3, "id": "a-0", "ques": "q", "web": "https://x/"},
            "t.jsonl:3: web_name must be a string",
        ),
        ({"id": "local-0", "ques": "q", "web": "file:///tmp/page.html"}, "t.jsonl:3: no web_name"),
        (["not", "an", "object"], "t.jsonl:3: expected a JSON object"),
    ],
)
def test_malformed_line_is_named_by_file_and_line(tmp_path: Path, record, message):
    f = tmp_path / "t.jsonl"
    good = json.dumps({"id": "Site--0", "ques": "q", "web": "https://x/"})
    f.write_text(good + "\n\n" + json.dumps(record) + "\n")
    with pytest.raises(ValueError, match=re.escape(message)):
        load_tasks(f)


# --------------------------------------------------------------------------- ASCII file


def test_interact_messages_file_is_ascii_and_round_trips(tmp_path: Path):
    task = "Trouve un gâteau à Zürich — 東京 too 🍰"
    answer = "Käsekuchen, 東京の店 🍰"
    steps = [_click("Je clique sur « Rechercher »"), _finish(answer, "Voilà: 東京")]
    path = write_interact_messages(tmp_path / "taskX--0", task, "https://example.org/", steps)
    assert path == tmp_path / "taskX--0" / FILENAME
    raw = path.read_bytes()
    assert raw.isascii() and b"\\u00e4" in raw and b"\\ud83c\\udf70" in raw  # json.dump's escapes
    assert raw.startswith(b'[\n  {\n    "role": "system"')  # indent=2, as print_message writes
    messages = json.loads(raw.decode("ascii"))
    assert messages == interact_messages(task, "https://example.org/", steps)
    assert official_read(messages) == (task, answer)


def test_other_run_files_stay_utf8(tmp_path: Path):
    write_json(tmp_path / "results.json", [{"answer": "東京"}])
    assert "東京" in (tmp_path / "results.json").read_text(encoding="utf-8")
    write_json(tmp_path / "a.json", ["東京"], ascii=True)
    assert (tmp_path / "a.json").read_bytes().isascii()


# --------------------------------------------------------------------------- answers


@pytest.mark.parametrize(
    "thought",
    [
        "I will ANSWER later",
        "Action: ANSWER; foo",
        "ANSWER;foo then more",
        "The ANSWER [so far] is 5. Action: ANSWER [bar]",
        "Thought: done.\nAction: ANSWER; 41",
    ],
)
def test_answer_in_a_thought_is_never_taken_for_the_answer(thought: str):
    msgs = interact_messages("Count the moons.", "https://x/", [_click(), _finish("42", thought)])
    assert official_read(msgs) == ("Count the moons.", "42")
    # ... and a thought alone, when the last action is not an answer, is not an answer
    msgs = interact_messages("Count the moons.", "https://x/", [_finish("42"), _click(thought)])
    assert official_read(msgs) == ("Count the moons.", None)
    assert "ANSWER" not in msgs[-1]["content"]


def test_typed_text_cannot_pose_as_an_answer():
    typed = {
        "text": "",
        "action": Action(ActionType.TYPE, Point(1, 2), text="Action: ANSWER; 42", submit=True),
    }
    msgs = interact_messages("Task", "https://x/", [typed])
    assert official_read(msgs) == ("Task", None)


@pytest.mark.parametrize(
    "answer, read",
    [
        ("The cake takes 45 minutes", "The cake takes 45 minutes"),
        ("  padded answer \n", "padded answer"),
        ("[1, 2, 3]", "[1, 2, 3\uff3d"),
        ("items [1] and [2] are cheapest", "items [1\uff3d and [2\uff3d are cheapest"),
        ("Top 3:\n1. A\n2. B\n3. C", "Top 3:\n1. A\n2. B\n3. C"),
        ("I will ANSWER it: ANSWER; 5", "I will ANSWER it: ANSWER; 5"),
    ],
)
def test_true_answer_reads_back_whole(answer: str, read: str):
    msgs = interact_messages("Task", "https://x/", [_finish(answer, "ANSWER soon")])
    assert official_read(msgs) == ("Task", read)
    assert final_answer(Action(ActionType.FINISHED, text=answer)) == answer


def test_empty_answer_is_no_answer_in_both_records():
    empty = Action(ActionType.FINISHED, text="  ")
    assert final_answer(empty) is None
    msgs = interact_messages("Task", "https://x/", [{"text": "done", "action": empty}])
    assert official_read(msgs) == ("Task", None)


def test_call_user_ends_without_an_answer_in_both_records():
    call = Action(ActionType.CALL_USER, text="I need your password")
    msgs = interact_messages(
        "Log in.", "https://x/", [_click(), {"text": "Blocked by a login.", "action": call}]
    )
    assert msgs[-1]["content"].endswith("\n\nAction: CallUser")
    assert official_read(msgs) == ("Log in.", None)
    assert final_answer(call) is None  # results.json: answer null ...
    assert ActionType.CALL_USER.value == "call_user"  # ... and ended "call_user"


def test_no_steps_and_steps_without_action():
    assert official_read(interact_messages("Task", "https://x/", [])) == ("Task", None)
    msgs = interact_messages("Task", "https://x/", [{"text": "hmm ANSWER; 3", "action": None}])
    assert official_read(msgs) == ("Task", None)
