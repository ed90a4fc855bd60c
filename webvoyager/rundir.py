"""The browsing harness's run folder, on the shared run log (:mod:`regionfocus.kit.runlog`).

Layout (``RUN_DIR``)::

    config.json            the whole resolved configuration, pinned at the first start
    data.json              the selected tasks by content (tasks.tasks_pin): a resume over
                           changed tasks is refused naming them
    records.jsonl          one record per task or episode, appended as each ends (the truth)
    results.json           every record as one JSON list: derived from the log, atomically
    summary.json / .md     success per site and overall, steps, triggers (report.py)
    report.html            the trajectory browser (report.py)
    task<ID>/              the official WebVoyager layout, plus ours:
        screenshot{n}.png       the screen the agent saw at step n (1-based), and the final one
        interact_messages.json  readable by the official auto-evaluation script
        trajectory.json         every step: action, raw text, effect, RegionFocus trace (saved
                                after every step)
        views/step{n}_{k}.png   the zoomed views RegionFocus looked at

Resuming skips every task with a record; a task recorded with an error runs again only with
``--retry-errors`` (the same policy as ScreenSpot-Pro). A folder from before the shared log
(``results.json`` and a flat ``config.json``, no ``records.jsonl``) is converted on first open.
Every record read is checked against the log's contract and :data:`RECORD_FIELDS` (a hand edit
that breaks it is named by file, line and field).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from regionfocus.kit.data_pin import DataPin
from regionfocus.kit.runlog import (
    CONFIG,
    RECORDS,
    RecordLog,
    RunFolder,
    atomic_save_png,
    atomic_write_json,
    atomic_write_text,
    read_config,
    read_json,
    read_records,
    selected_ids,
)

log = logging.getLogger(__name__)

# Settings that do not change a task's result: rewritten on every start, never compared.
INVOCATION_KEYS = ("concurrency",)

_COUNT = {"type": "integer", "minimum": 0}
_NUMBER_OR_NULL = {"type": ["number", "null"]}
_TEXT_OR_NULL = {"type": ["string", "null"]}

# A task's record beyond the shared fields (runner.run_task, its failed form): what summary,
# report, judge, compare and the screen-to-text tables read, with its type (a JSON Schema).
RECORD_FIELDS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "web_name": {"type": "string"},
        "kind": {"type": "string"},
        "ques": _TEXT_OR_NULL,
        "web": _TEXT_OR_NULL,
        "seed": {"type": ["integer", "null"]},
        "success": {"type": ["boolean", "null"]},
        "reward": _NUMBER_OR_NULL,
        "raw_reward": _NUMBER_OR_NULL,
        "done": {"type": ["boolean", "null"]},
        "answer": _TEXT_OR_NULL,
        "ended": _TEXT_OR_NULL,
        "steps": _COUNT,
        "model_steps": _COUNT,
        "regionfocus_rounds": _COUNT,
        "model_calls": _COUNT,
        "model_errors": _COUNT,
        "no_effect_steps": _COUNT,
        "triggers": {"type": "object", "additionalProperties": _COUNT},
        "wall_s": _NUMBER_OR_NULL,
        "folder": {"type": "string", "minLength": 1},
    },
}

# The atomic writers under the names the harness's modules use.
write_json = atomic_write_json
write_text = atomic_write_text
save_png = atomic_save_png


class RunDir:
    """A run folder. ``results`` maps task id -> record (the latest per id)."""

    def __init__(self, root: str | Path, *, retry_errors: bool = False):
        self.root = Path(root)
        self.retry_errors = retry_errors
        self.folder: RunFolder | None = None

    @property
    def results(self) -> dict[str, dict]:
        return self.folder.records if self.folder is not None else {}

    @property
    def results_path(self) -> Path:
        return self.root / "results.json"

    def task_dir(self, folder: str) -> Path:
        return self.root / folder

    def open(
        self, config: dict[str, Any], selected: list[str] | None = None, data: DataPin | None = None
    ) -> None:
        """Create the folder or resume it. Raises ValueError (RunFolderError) listing every
        setting that differs from the one the folder was started with, naming a record that
        breaks the log's contract, or naming the recorded tasks whose content changed.
        ``selected``: the task ids this run selected (a record of another is refused; ``report``
        reads them from config.json). ``data``: the selected tasks by content
        (:func:`~regionfocus.webvoyager.tasks.tasks_pin`, kept in ``data.json``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        _convert_legacy(self.root)
        identity = {k: v for k, v in config.items() if k not in INVOCATION_KEYS}
        invocation = {k: v for k, v in config.items() if k in INVOCATION_KEYS}
        if self.folder is not None:
            self.folder.close()
        self.folder = RunFolder(
            self.root,
            identity,
            invocation,
            retry_errors=self.retry_errors,
            schema=RECORD_FIELDS,
            selected=selected,
            data=data,
        )

    def finished(self, task_id: str) -> bool:
        """Recorded and kept: skipped on resume."""
        return self.folder is not None and task_id in self.folder.done

    def reset_task(self, folder: str) -> Path:
        """An empty folder for a task about to (re)run: a partial earlier attempt is removed."""
        d = self.task_dir(folder)
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d

    def record(self, rec: dict, fallback=None) -> dict:
        """Append a task's record to the log (durably); returns it as stored. ``fallback(message)``:
        the error record to write instead if this one cannot be written."""
        assert self.folder is not None, "open() the run folder first"
        return self.folder.add(rec, fallback=fallback)

    def write_results(self) -> Path:
        """``results.json`` from the log, atomically."""
        write_json(self.results_path, list(self.results.values()))
        return self.results_path

    def close(self) -> None:
        if self.folder is not None:
            self.folder.close()


def read_results(root: str | Path) -> list[dict]:
    """Every task record of a run folder: from the log (checked against its contract and the
    ids the run selected, when its config says), or from ``results.json`` in a folder written
    before the log existed."""
    root = Path(root)
    if (root / RECORDS).exists():
        return read_records(root / RECORDS, RECORD_FIELDS, selected_ids(read_config(root)))
    records = read_json(root / "results.json", default=[])
    return [r for r in records if isinstance(r, dict) and "id" in r] if isinstance(records, list) else []


def run_config(root: str | Path) -> dict[str, Any]:
    """The resolved configuration a run folder was started with (its pinned identity; the flat
    file of the earlier layout as it is)."""
    config = read_json(Path(root) / CONFIG, default={}) or {}
    return config.get("identity", config) if isinstance(config, dict) else {}


def _convert_legacy(root: Path) -> None:
    """A folder of the earlier layout: its results.json becomes the log, its flat config the
    pinned identity. Nothing is lost; the old files stay as they are until rewritten."""
    config = read_json(root / CONFIG)
    if config is None or "identity" in config or (root / RECORDS).exists():
        return
    records = read_json(root / "results.json", default=[])
    if not isinstance(records, list):
        raise ValueError(f"{root / 'results.json'}: expected a JSON list of task records")
    with RecordLog(root / RECORDS) as out:
        for rec in records:
            if isinstance(rec, dict) and "id" in rec:
                out.append({"schema_version": 1, **rec})  # as written then: before the shared log
    identity = {k: v for k, v in config.items() if k not in INVOCATION_KEYS}
    invocation = {k: v for k, v in config.items() if k in INVOCATION_KEYS}
    write_json(root / CONFIG, {"identity": identity, "invocation": invocation})
    log.warning(
        "%s: converted a run folder of the earlier layout (%d records) to records.jsonl", root, len(records)
    )
