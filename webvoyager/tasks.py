"""WebVoyager tasks: the official JSONL and its reference-answer file (He et al., 2024,
"WebVoyager: Building an End-to-End Web Agent with Large Multimodal Models").

A task line is ``{"web_name": ..., "id": "Allrecipes--0", "ques": ..., "web": start URL}``; the
reference-answer JSON is keyed by site, ``{"Allrecipes": {"answers": [{"id": 0, "type":
"golden"|"possible", "ans": ...}]}}``, where ``id`` is the number after "--" in the task id.
Patched task sets of the same shape (dates moved, impossible tasks dropped) load the same way.

The official runner (MinorJerry/WebVoyager, run.py, commit
5a7896738c10bfb8b9edccce6bb0e0411f8ae569) reads only ``id``, ``ques`` and ``web`` of a line, so
files without ``web_name`` run there, e.g. its own data/GAIA_web.jsonl, whose 90 lines are
``{"task_id": <uuid>, "Level": 1|2|3, "Final answer": ..., "id": "level1-0",
"web": "https://www.google.com/", "ques": ...}``. Such lines load here too: ``web_name`` is the
id's prefix before the last "--" when it has one ("Allrecipes--0" -> "Allrecipes"), else the
start URL's host without "www." ("google.com"). A GAIA line's "Final answer" is kept as the
task's golden reference (unless a reference-answer file gives one). Other extra fields are
ignored, an integer id is read as its decimal string.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from regionfocus.kit.data_pin import DataPin

# The GAIA task file's own reference answer (data/GAIA_web.jsonl of the official repository).
GAIA_ANSWER_FIELD = "Final answer"


@dataclass(frozen=True)
class WebTask:
    """One task. ``kind``: "web" (a start URL and a question) or "miniwob" (a MiniWoB++ page;
    ``web`` is its file URL, ``ques`` is read from the page at run time, ``seed`` set)."""

    id: str
    web_name: str
    ques: str
    web: str
    kind: str = "web"
    seed: int | None = None
    reference: tuple[dict, ...] = field(default_factory=tuple)

    @property
    def folder(self) -> str:
        """The official per-task folder name: "task" + id (e.g. "taskAllrecipes--0")."""
        return "task" + self.id

    def to_dict(self) -> dict:
        d = {"id": self.id, "web_name": self.web_name, "ques": self.ques, "web": self.web, "kind": self.kind}
        if self.seed is not None:
            d["seed"] = self.seed
        if self.reference:
            d["reference"] = list(self.reference)
        return d


def _check_id(task_id: str, where: str) -> None:
    if not task_id or "/" in task_id or "\\" in task_id or task_id in (".", ".."):
        raise ValueError(f"{where}: task id {task_id!r} cannot name a folder")


def load_tasks(path: str | Path, answers: str | Path | None = None) -> list[WebTask]:
    """Read a WebVoyager JSONL file (blank lines and ``#`` comments skipped). Raises ValueError
    naming the file and line for a malformed record or a duplicate id."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"task file not found: {path}")
    refs = load_reference_answers(answers) if answers else {}
    tasks: list[WebTask] = []
    seen: set[str] = set()
    # JSON Lines ends a record at "\n" only: a JSON string may hold U+2028, U+0085 or a form feed
    # raw, which str.splitlines() would take for line ends (jsonlines.org).
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{n}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: not JSON ({e.msg})") from None
        if not isinstance(rec, dict):
            raise ValueError(f"{where}: expected a JSON object")
        task_id = rec.get("id")
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            task_id = str(task_id)
        rec["id"] = task_id
        missing = [k for k in ("id", "ques", "web") if not isinstance(rec.get(k), str)]
        if missing:
            raise ValueError(f"{where}: missing or non-string field(s): {', '.join(missing)}")
        _check_id(task_id, where)
        if task_id in seen:
            raise ValueError(f"{where}: duplicate task id {task_id!r}")
        seen.add(task_id)
        web_name = _web_name(rec, where)
        reference = refs.get((web_name, _index(task_id)), ())
        if not reference and isinstance(rec.get(GAIA_ANSWER_FIELD), str | int | float):
            reference = [{"type": "golden", "ans": str(rec[GAIA_ANSWER_FIELD])}]
        tasks.append(
            WebTask(
                id=task_id, web_name=web_name, ques=rec["ques"], web=rec["web"], reference=tuple(reference)
            )
        )
    if not tasks:
        raise ValueError(f"{path}: no tasks")
    return tasks


def _web_name(rec: dict, where: str) -> str:
    """The line's ``web_name``, or one derived from the id ("Site--3") or the start URL's host."""
    name = rec.get("web_name")
    if isinstance(name, str) and name.strip():
        return name
    if name is not None and not isinstance(name, str):
        raise ValueError(f"{where}: web_name must be a string, got {name!r}")
    prefix, sep, _ = rec["id"].rpartition("--")
    if sep and prefix.strip():
        return prefix
    host = (urlsplit(rec["web"]).hostname or "").removeprefix("www.")
    if host:
        return host
    raise ValueError(
        f"{where}: no web_name, and none can be derived: the id {rec['id']!r} has no 'Site--' prefix "
        f"and the start URL {rec['web']!r} has no host"
    )


def _index(task_id: str) -> int | None:
    tail = task_id.rsplit("--", 1)[-1]
    return int(tail) if tail.isdigit() else None


def load_reference_answers(path: str | Path) -> dict[tuple[str, int], list[dict]]:
    """{(web_name, index): [answer records]} from the official reference-answer JSON."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"reference-answer file not found: {path}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object keyed by site name")
    out: dict[tuple[str, int], list[dict]] = {}
    for site, block in data.items():
        answers = block.get("answers", []) if isinstance(block, dict) else []
        for a in answers:
            if isinstance(a, dict) and isinstance(a.get("id"), int):
                out.setdefault((site, a["id"]), []).append(
                    {"type": str(a.get("type", "")), "ans": str(a.get("ans", ""))}
                )
    return out


# The pinned settings that say where a task file sits: the content pin stands in for them.
LOCATION_KEYS = ("tasks", "answers")


def tasks_pin(tasks: Sequence[WebTask], tasks_arg: str, answers: str | Path | None = None) -> DataPin:
    """The selected tasks by content (``RUN_DIR/data.json``, :mod:`regionfocus.kit.data_pin`):
    a resume after a recorded task changed is refused naming it, and the same tasks read from
    another path resume. A task file's task is pinned by its record as loaded (site, question,
    start URL) under the file's name, its reference answers under the ``--answers`` file's when
    that gives them; a MiniWoB++ episode by its seed and its page's bytes, under the page's
    name (another ``miniwob`` release's page is named, the wheel's path never compared).
    ``tasks_arg``: the ``--tasks`` value, a file or a MiniWoB++ spec."""
    if tasks and all(t.kind == "web" for t in tasks):
        return DataPin.of(
            ((t.id, _web_parts(t, Path(tasks_arg).name, answers)) for t in tasks), location_keys=LOCATION_KEYS
        )
    pages: dict[str, str] = {}
    return DataPin.of(((t.id, _page_parts(t, pages)) for t in tasks), location_keys=())


def _web_parts(task: WebTask, source: str, answers: str | Path | None) -> dict:
    record = {"web_name": task.web_name, "ques": task.ques, "web": task.web}
    if not task.reference:
        return {source: record}
    if answers is None:  # a GAIA line's own answer: part of the line
        return {source: {**record, "reference": list(task.reference)}}
    return {source: record, Path(answers).name: list(task.reference)}


def _page_parts(task: WebTask, pages: dict[str, str]) -> dict:
    path = Path(url2pathname(urlsplit(task.web).path))
    if task.web not in pages:  # one read per page, however many episodes
        pages[task.web] = hashlib.sha256(path.read_bytes()).hexdigest()
    return {f"miniwob/{path.name}": {"seed": task.seed, "page": pages[task.web]}}
