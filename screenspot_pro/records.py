"""A run folder: append-only per-sample records, the resolved config, atomic result files.

``records.jsonl`` holds one JSON object per finished sample, appended and fsynced as each one
finishes, so a crash or Ctrl-C loses at most the samples in flight. A crash can cut only the last
line short; reading ignores it and the next append truncates it away. Everything else in the
folder (results, summaries, the report) is derived from the records and written atomically.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

RECORDS = "records.jsonl"
CONFIG = "config.json"


class RunFolderError(ValueError):
    """The run folder cannot be used as asked (corrupt records, a different config)."""


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, fsync it, then rename over ``path``:
    readers see the old file or the new one, never half of either."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, _file_mode(path))  # mkstemp makes 0600; results are meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _file_mode(path: Path) -> int:
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_json(path: str | Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _scan(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The complete records and the byte offset where the valid part of the file ends."""
    records: list[dict[str, Any]] = []
    good_end = 0
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    pos = 0
    for i, raw in enumerate(lines):
        is_last = i == len(lines) - 1
        end = pos + len(raw) + (0 if is_last else 1)
        if is_last:
            # Bytes after the final newline: an interrupted append, never a finished record.
            break
        if raw.strip():
            try:
                rec = json.loads(raw)
                if not isinstance(rec, dict) or "id" not in rec:
                    raise ValueError("not a record object")
            except ValueError as e:
                if all(not line.strip() for line in lines[i + 1 :]):
                    break  # a torn final line that happened to end in a newline
                raise RunFolderError(
                    f"{path}: line {i + 1} is not a valid record ({e}); "
                    "the file was edited or corrupted, fix or remove that line"
                ) from None
            records.append(rec)
        good_end = end
        pos = end
    return records, good_end


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every complete record in ``path`` (a missing file has none), one per id. An id appears
    twice only when an error sample was retried (``--retry-errors``): the later record wins."""
    path = Path(path)
    if not path.exists():
        return []
    records, _ = _scan(path)
    return list({r["id"]: r for r in records}.values())


class RecordLog:
    """Appends records to ``records.jsonl`` durably (write, flush, fsync per record)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            _, good_end = _scan(self.path)
            if good_end < self.path.stat().st_size:
                with open(self.path, "r+b") as f:  # drop the torn tail before appending
                    f.truncate(good_end)
        self._f = open(self.path, "a", encoding="utf-8")

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, allow_nan=False)
        self._f.write(line + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()

    def __enter__(self) -> RecordLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_or_write_config(run_dir: str | Path, identity: dict[str, Any], invocation: dict[str, Any]) -> None:
    """Pin ``identity`` (everything that changes results) to the run folder on first use, and
    refuse to resume a folder pinned to a different identity. ``invocation`` (concurrency,
    limit, timeouts: things that do not change a sample's result) is updated every time."""
    run_dir = Path(run_dir)
    path = run_dir / CONFIG
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise RunFolderError(f"{path}: unreadable ({e}); remove it or use another --out") from None
        before = flatten(old.get("identity", {}))
        now = flatten(json.loads(json.dumps(identity)))  # normalise tuples to lists
        diffs = [
            f"{k}: {before.get(k)!r} in the folder, {now.get(k)!r} now"
            for k in sorted(set(before) | set(now))
            if before.get(k) != now.get(k)
        ]
        if diffs and (run_dir / RECORDS).exists():
            raise RunFolderError(
                f"{run_dir} holds a run with a different configuration, so resuming would mix "
                "two experiments:\n  "
                + "\n  ".join(diffs)
                + "\nuse another --out, or rerun with the folder's settings (see its config.json)"
            )
    atomic_write_json(path, {"identity": identity, "invocation": invocation})


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}: a config difference names the exact setting."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def read_config(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / CONFIG
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))
