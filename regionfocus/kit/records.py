"""The record log: ``records.jsonl``, one JSON object per finished sample or task, and its contract.

Records are appended and fsynced as each sample or task finishes (:class:`RecordLog`); a crash
can cut only the last line short: reading ignores it and the next append truncates it away.
The later of two records with one id wins only over an error or partial one (a retry).

The log is a contract, since people and scripts read, edit and merge it: every record read
(by a resume, ``report``, ``merge``) is checked for the shared fields (``schema_version`` up
to this one's, a string ``id``, a ``status`` of ok/partial/error, ``error`` text or null),
the harness's own fields (a JSON Schema beside its runner), an id the run selected, and no
later record contradicting a finished one; a record that breaks it stops the command with
exit 2 naming file, line and field (:class:`RecordError`). Records are written with the
current ``schema_version``, in strict JSON and valid UTF-8 (:func:`~regionfocus.kit.atomic.json_safe`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .atomic import json_safe

SCHEMA_VERSION = 2  # 1: records before the shared log (no schema_version field)
RECORDS = "records.jsonl"
SELECTED = "selected"  # config.json invocation: the ids the run selected

# A record with one of these statuses is rerun by ``--retry-errors``.
RETRY_STATUSES = frozenset({"error", "partial"})


class RunFolderError(ValueError):
    """The run folder cannot be used as asked (corrupt records, a different configuration)."""


# ------------------------------------------------------------------------------ records
@dataclass
class RunRecord:
    """One finished sample or task: the fields every harness shares, and its own ``body``.

    On disk the body's fields sit beside the shared ones in one flat JSON object, so tools that
    read ``records.jsonl`` line by line see plain records."""

    id: str
    status: Literal["ok", "partial", "error"] = "ok"
    error: str | None = None
    body: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        shared = {
            "schema_version": self.schema_version,
            "id": self.id,
            "status": self.status,
            "error": self.error,
        }
        return {**shared, **{k: v for k, v in self.body.items() if k not in shared}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        body = {k: v for k, v in data.items() if k not in ("schema_version", "id", "status", "error")}
        error = data.get("error")
        status = data.get("status") or ("error" if error else "ok")
        return cls(str(data["id"]), status, error, body, int(data.get("schema_version", 1)))


# ------------------------------------------------------------------------------ the record contract
# What every line of records.jsonl holds, checked whenever a log is read (a resume, ``report``,
# ``merge``): records are meant to be read and merged by people and scripts, so a hand edit that
# breaks one is named (file, line, field) instead of turning into a traceback or a wrong number.
# A harness adds its own fields as a JSON Schema (plain data, beside its runner); the kit owns
# the shared ones, the statuses, the selected ids and the rule for a second record of one id.
STATUSES = ("ok", "partial", "error")

SHARED_FIELDS: dict[str, Any] = {
    "type": "object",
    "required": ["id"],
    "properties": {
        "schema_version": {"type": "integer", "minimum": 1},
        "id": {"type": "string", "minLength": 1},
        "status": {"enum": list(STATUSES)},
        "error": {"type": ["string", "null"]},
        "lost": {"type": ["string", "null"]},
    },
    # A record that names its schema is of the shared log (2, or 1 as earlier releases stamped
    # it): it says its status. Records from before the log (no schema_version) may not.
    "dependencies": {"schema_version": ["status"]},
}


class RecordError(RunFolderError):
    """A line of a record log breaks the contract (the message names file, line and field)."""


# Compiled checks by harness schema (its identity: the schemas are module constants). Compiled,
# not interpreted: a 1,581-record ScreenSpot-Pro log is read a few times per command; checking
# it costs about a tenth of parsing it, jsonschema's interpreter 20x more (benchmarks/record_contract.py).
_CHECKS: dict[int, tuple[dict[str, Any] | None, Callable[[Any], Any]]] = {}
_JSON_TYPES = {"object": "an object", "array": "a list", "string": "a string", "integer": "an integer",
               "number": "a number", "boolean": "true or false", "null": "null"}  # fmt: skip


def _check_of(schema: dict[str, Any] | None) -> Callable[[Any], Any]:
    if id(schema) not in _CHECKS:
        import fastjsonschema

        whole = {"$schema": "http://json-schema.org/draft-07/schema#", "allOf": [SHARED_FIELDS, schema or {}]}
        _CHECKS[id(schema)] = (schema, fastjsonschema.compile(whole))
    return _CHECKS[id(schema)][1]


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _contract_error(record: dict[str, Any], schema: dict[str, Any] | None) -> tuple[str, str] | None:
    """(field, what is wrong) for the first field of ``record`` that breaks the shared fields
    or ``schema``."""
    from fastjsonschema import JsonSchemaValueException

    try:
        _check_of(schema)(record)
        return None
    except JsonSchemaValueException as e:
        path = ".".join(e.path[1:])  # e.path: ["data", key or index, ...]
        rule, wanted, value = e.rule, e.rule_definition, e.value
    if rule in ("required", "dependencies"):
        names = wanted if rule == "required" else [n for need in wanted.values() for n in need]
        missing = next((k for k in names if not isinstance(value, dict) or k not in value), names[0])
        return (f"{path}.{missing}" if path else missing), "is missing"
    if rule == "type":
        kinds = [wanted] if isinstance(wanted, str) else wanted
        return path, f"is {_shown(value)}, expected {' or '.join(_JSON_TYPES[k] for k in kinds)}"
    if rule == "enum":
        return path, f"is {_shown(value)}, expected one of {', '.join(map(str, wanted))}"
    bound = _BOUNDS.get(rule, f"{rule} {{}}").format(_shown(wanted))
    return path or "(record)", f"is {_shown(value)}, expected {bound}"


_BOUNDS = {"minimum": "at least {}", "maximum": "at most {}", "minLength": "at least {} character(s)",
           "minItems": "at least {} item(s)", "maxItems": "at most {} item(s)"}  # fmt: skip


def check_record(record: dict[str, Any], schema: dict[str, Any] | None = None) -> tuple[str, str] | None:
    """(field, problem) when ``record`` breaks the shared fields or ``schema`` (a harness's
    fields), else None."""
    version = record.get("schema_version", 1)
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        return "schema_version", (
            f"is {version}: written by a newer regionfocus (this one reads up to {SCHEMA_VERSION}); upgrade to read it"
        )
    return _contract_error(record, schema)


def _normalise(record: dict[str, Any]) -> dict[str, Any]:
    """A record from before the shared log (no status) says its status as later ones do."""
    if "status" not in record:
        record["status"] = "error" if record.get("error") else "ok"
    record.setdefault("error", None)
    return record


def selected_ids(config: dict[str, Any]) -> list[str] | None:
    """The ids a run folder's last start selected (a merged folder: every shard's), or None when
    its config does not say (folders from before this was recorded)."""
    inv = config.get("invocation") if isinstance(config, dict) else None
    if not isinstance(inv, dict):
        return None
    if isinstance(inv.get(SELECTED), list):
        return [str(i) for i in inv[SELECTED]]
    shards = inv.get("shards")
    if (
        isinstance(shards, list)
        and shards
        and all(isinstance(s, dict) and isinstance(s.get(SELECTED), list) for s in shards)
    ):
        return [str(i) for s in shards for i in s[SELECTED]]
    return None


def selected_count(config: dict[str, Any]) -> int | None:
    """How many samples or tasks the run selected, when its config says."""
    ids = selected_ids(config)
    if ids is not None:
        return len(ids)
    inv = config.get("invocation") if isinstance(config, dict) else None
    n = inv.get("n_selected") if isinstance(inv, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _scan(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """The complete records with their line numbers (1-based), and the byte offset where the
    valid part of the file ends."""
    records: list[tuple[int, dict[str, Any]]] = []
    good_end = 0
    data = path.read_bytes()
    lines = data.split(b"\n")
    pos = 0
    for i, raw in enumerate(lines):
        if i == len(lines) - 1:
            break  # bytes after the final newline: an interrupted append, never a finished record
        end = pos + len(raw) + 1
        if raw.strip():
            try:
                rec = json.loads(raw)
                if not isinstance(rec, dict) or "id" not in rec:
                    raise ValueError("not a record object")
            except ValueError as e:
                if all(not line.strip() for line in lines[i + 1 :]):
                    break  # a torn final line that happened to end in a newline
                raise RecordError(
                    f"{path}: line {i + 1} is not a valid record ({e}); "
                    "the file was edited or corrupted, fix or remove that line"
                ) from None
            records.append((i + 1, rec))
        good_end = end
        pos = end
    return records, good_end


def read_records(
    path: str | Path,
    schema: dict[str, Any] | None = None,
    selected: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """Every complete record in ``path`` (a missing file has none), one per id, in the order
    first seen, each checked against the contract: the shared fields, ``schema`` (the harness's
    own, a JSON Schema) and, when given, membership of ``selected`` (the ids the run selected: a
    record of another would join the denominator). An id appears twice only when an error or a
    partial record was retried: the later record wins. A later record that contradicts a
    finished one is refused (an exact copy is one record). Raises :class:`RecordError` naming
    file, line and field."""
    path = Path(path)
    if not path.exists():
        return []
    scanned, _ = _scan(path)
    wanted = None if selected is None else set(selected)
    latest: dict[str, tuple[int, dict[str, Any]]] = {}
    for line, rec in scanned:
        problem = check_record(rec, schema)
        if problem is not None:
            field_name, what = problem
            raise RecordError(
                f"{path}: line {line}, field {field_name} {what}; "
                "fix or remove that line (a record is read as written, never guessed)"
            )
        rec = _normalise(rec)
        rid = rec["id"]
        if wanted is not None and rid not in wanted:
            raise RecordError(
                f"{path}: line {line}, field id {rid!r} is not one of the {len(wanted)} ids this run "
                "selected (its data set, filters, --limit, --shard), so it would join the denominator; "
                "give this selection its own folder (--out DIR), or rerun with the selection that wrote "
                "this one (a larger --limit keeps every record)"
            )
        before = latest.get(rid)
        if before is not None and before[1] != rec and before[1]["status"] not in RETRY_STATUSES:
            raise RecordError(
                f"{path}: line {line}, field id {rid!r} was already recorded at line {before[0]} "
                f"(status {before[1]['status']}) and this record differs; a later record replaces only "
                "an error or partial one (what --retry-errors writes): keep the line you trust, remove the other"
            )
        latest[rid] = (line, rec)
    return [rec for _, rec in latest.values()]


class RecordLog:
    """Appends records to a JSONL file durably (write, flush, fsync per record)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            _, good_end = _scan(self.path)
            if good_end < self.path.stat().st_size:
                with open(self.path, "r+b") as f:  # drop the torn tail before appending
                    f.truncate(good_end)
        # Unbuffered: a failed write must not leave bytes in a buffer that a later flush adds.
        self._f = open(self.path, "ab", buffering=0)

    def append(self, record: dict[str, Any] | RunRecord) -> dict[str, Any]:
        """Write one record as one line and return it as stored (non-finite numbers as null,
        invalid code points replaced). Raises only when the record cannot be serialised at all
        (an object JSON has no form for) or the disk refuses the write; the file is then left
        as it was."""
        if not isinstance(record, RunRecord):  # a new record is of today's schema unless it says
            record = RunRecord.from_json({"schema_version": SCHEMA_VERSION, **record})
        data = json_safe(record.to_json())
        line = (json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        fd = self._f.fileno()
        # Where this line starts: the end of the file (appends go there), not the file position,
        # which a write that failed half-way leaves past the end once the undo has cut it back.
        start = os.fstat(fd).st_size
        try:
            view = memoryview(line)
            while view:
                view = view[self._f.write(view) :]
            os.fsync(fd)
        except BaseException:
            try:  # a line cut short would glue itself to the next record
                os.ftruncate(fd, start)
                os.lseek(fd, start, os.SEEK_SET)
            except OSError:
                pass  # the next open drops the torn tail
            raise
        return data

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()

    def __enter__(self) -> RecordLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
