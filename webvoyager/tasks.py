"""WebVoyager tasks: the official JSONL and its reference-answer file (He et al., 2024,
"WebVoyager: Building an End-to-End Web Agent with Large Multimodal Models").

A task line is ``{"web_name": ..., "id": "Allrecipes--0", "ques": ..., "web": start URL}``; the
reference-answer JSON is keyed by site, ``{"Allrecipes": {"answers": [{"id": 0, "type":
"golden"|"possible", "ans": ...}]}}``, where ``id`` is the number after "--" in the task id.
Patched task sets of the same shape (dates moved, impossible tasks dropped) load the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


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
    naming the line for a malformed record or a duplicate id."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"task file not found: {path}")
    refs = load_reference_answers(answers) if answers else {}
    tasks: list[WebTask] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
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
        missing = [k for k in ("web_name", "id", "ques", "web") if not isinstance(rec.get(k), str)]
        if missing:
            raise ValueError(f"{where}: missing or non-string field(s): {', '.join(missing)}")
        _check_id(rec["id"], where)
        if rec["id"] in seen:
            raise ValueError(f"{where}: duplicate task id {rec['id']!r}")
        seen.add(rec["id"])
        tasks.append(
            WebTask(
                id=rec["id"],
                web_name=rec["web_name"],
                ques=rec["ques"],
                web=rec["web"],
                reference=tuple(refs.get((rec["web_name"], _index(rec["id"])), ())),
            )
        )
    if not tasks:
        raise ValueError(f"{path}: no tasks")
    return tasks


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
