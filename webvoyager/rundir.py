"""The run folder: resolved config, one record per task, per-task trajectories; resumable.

Layout (``RUN_DIR``)::

    config.json            the resolved settings (agent, RegionFocus config, viewport, ...)
    results.json           one record per task or episode, rewritten atomically after each
    summary.json / .md     success per site and overall, steps, triggers (report.py)
    report.html            the trajectory browser (report.py)
    task<ID>/              the official WebVoyager layout, plus ours:
        screenshot{n}.png       the screen the agent saw at step n (1-based), and the final one
        interact_messages.json  readable by the official auto-evaluation script
        trajectory.json         every step: action, raw text, effect, RegionFocus trace
        views/step{n}_{k}.png   the zoomed views RegionFocus looked at

Every file is written to a temporary name and moved into place, so a killed run never leaves
a half-written JSON. A record with an ``error`` is retried on resume; others are kept.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

# Settings that must match to resume into an existing folder: mixing them would make the
# numbers mean nothing.
RESUME_KEYS = ("agent", "model", "regionfocus_enabled", "viewport", "max_steps", "seed", "task_zoom")


def write_json(path: Path, data: Any, *, ascii: bool = False) -> None:
    """Atomic JSON write (temporary file in the same folder, then os.replace), indented by 2.
    ``ascii=True`` escapes every non-ASCII character as ``\\uXXXX`` (json.dump's default, which
    the official WebVoyager runner keeps for interact_messages.json); otherwise UTF-8 text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=ascii)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_png(path: Path, image) -> None:
    """Atomic PNG write for screenshots and views."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    image.save(tmp, format="PNG")
    os.replace(tmp, path)


def read_json(path: Path, default: Any = None) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e.msg}); delete it or choose another --out") from None


class RunDir:
    """A run folder. ``results`` maps task id -> record, in completion order."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.results: dict[str, dict] = {}

    @property
    def results_path(self) -> Path:
        return self.root / "results.json"

    def task_dir(self, folder: str) -> Path:
        return self.root / folder

    def open(self, config: dict) -> None:
        """Create the folder or resume it. Raises ValueError when ``config`` disagrees with the
        one the folder was started with on a setting in RESUME_KEYS."""
        self.root.mkdir(parents=True, exist_ok=True)
        old = read_json(self.root / "config.json")
        if old is not None:
            diff = [k for k in RESUME_KEYS if old.get(k) != config.get(k)]
            if diff:
                detail = ", ".join(f"{k}: {old.get(k)!r} -> {config.get(k)!r}" for k in diff)
                raise ValueError(
                    f"{self.root} holds a run with different settings ({detail}); "
                    "use another --out or the same settings to resume"
                )
        write_json(self.root / "config.json", config)
        records = read_json(self.results_path, default=[])
        if not isinstance(records, list):
            raise ValueError(f"{self.results_path}: expected a JSON list of task records")
        self.results = {r["id"]: r for r in records if isinstance(r, dict) and "id" in r}

    def finished(self, task_id: str) -> bool:
        """Done without error: skipped on resume."""
        rec = self.results.get(task_id)
        return rec is not None and not rec.get("error")

    def reset_task(self, folder: str) -> Path:
        """An empty folder for a task about to (re)run: a partial earlier attempt is removed."""
        d = self.task_dir(folder)
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d

    def record(self, rec: dict) -> None:
        self.results.pop(rec["id"], None)
        self.results[rec["id"]] = rec
        write_json(self.results_path, list(self.results.values()))
