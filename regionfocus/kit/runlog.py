"""The run folder every harness writes: a pinned configuration and an append-only record log.

Layout (``RUN_DIR``)::

    config.json     {"schema_version", "identity": what changes results, "invocation": what does
                    not, with ``selected``: the ids the last start selected}
    records.jsonl   one JSON object per finished sample or task, appended and fsynced as each
                    finishes; the later of two records with one id wins only over an error or
                    partial one (a retry)

Everything else a harness writes (official-format results, summaries, reports) is derived
from these two files, atomically, and can be rebuilt from them at any time. A crash can cut
only the last line short: reading ignores it and the next append truncates it away.

The log is a contract, since people and scripts read, edit and merge it: every record read
(by a resume, ``report``, ``merge``) is checked for the shared fields (``schema_version`` up
to this one's, a string ``id``, a ``status`` of ok/partial/error, ``error`` text or null),
the harness's own fields (a JSON Schema beside its runner), an id the run selected, and no
later record contradicting a finished one; a record that breaks it stops the command with
exit 2 naming file, line and field (:class:`RecordError`). Records are written with the
current ``schema_version``.

A disk with no room for the next record (full, over quota, a file-size limit) stops the run:
the half-written line is cut away and :class:`RunFolderFull` names the folder; rerunning the
command resumes.

The same error policy holds for every harness: a sample or task that failed is recorded with
``status: "error"`` and stays in the denominator; one that finished but lost some of the model
calls it needed (a failed judge, a zoomed view, a choice) is ``status: "partial"``, kept with
its best answer and counted apart. Resuming keeps both unless the caller asks to retry them
(``--retry-errors``).

The log never refuses a record: numbers JSON cannot hold (NaN, infinities) are written as null
and text with invalid code points (lone surrogates) has them replaced; a record that still
cannot be written becomes an error record for its id and the run goes on.

One process writes a run folder at a time: :class:`RunFolder` holds an advisory lock on
``RUN_DIR/.lock`` (``flock``) for its lifetime, and a second one is refused at once with the
holder's pid (:class:`RunFolderBusy`).
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

SCHEMA_VERSION = 2  # 1: records before the shared log (no schema_version field)
RECORDS = "records.jsonl"
CONFIG = "config.json"
LOCK = ".lock"
SELECTED = "selected"  # config.json invocation: the ids the run selected

# A record with one of these statuses is rerun by ``--retry-errors``.
RETRY_STATUSES = frozenset({"error", "partial"})

log = logging.getLogger(__name__)

# Settings that existed in older run folders and no longer change anything: ignored when an old
# folder's pinned configuration is compared with today's.
RETIRED_KEYS = frozenset({"regionfocus.seed"})


# Settings pinned since a later release, with the value every earlier folder ran with; a folder
# pinned before them compares as if it had pinned that value. ``UNKNOWN``: what earlier folders
# used cannot be told (it depended on the model), so an absent key is not compared.
UNKNOWN = object()
ADDED_KEYS: dict[str, Any] = {
    "request.image_format": "png",
    "request.image_quality": None,
    "request.transport": "data-url",
    "request.family": UNKNOWN,
    "request.resize": UNKNOWN,
    "request.max_tokens": UNKNOWN,
}


class RunFolderError(ValueError):
    """The run folder cannot be used as asked (corrupt records, a different configuration)."""


class RunFolderBusy(RunFolderError):
    """Another process holds the run folder's lock."""


class RunFolderFull(RunFolderError):
    """The run folder's disk has no room for the next record; the log is whole and resumable."""


# What a write fails with when the disk has no room: full, over quota, past a file-size limit.
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


# ------------------------------------------------------------------------------ atomic writes
def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, then rename over ``path``:
    readers see the old file or the new one, never half of either."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    # Created 0666 so the kernel applies the process's umask itself (results are meant to be
    # shared; mkstemp's 0600 would need the umask, and reading it means setting it, a race
    # with other threads). A file being replaced keeps its own mode.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            if path.exists():
                os.chmod(tmp, path.stat().st_mode & 0o777)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError) and e.errno in NO_ROOM and e.filename is None:
            raise OSError(e.errno, e.strerror, str(path)) from None  # a failed write names no file
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, data: Any, *, ascii: bool = False) -> None:
    """Indented JSON. ``ascii=True`` escapes every non-ASCII character as ``\\uXXXX``
    (json.dump's default, which the official WebVoyager runner keeps in its message files).
    Strict JSON in valid UTF-8 whatever the data holds (:func:`json_safe`)."""
    atomic_write_text(path, json.dumps(json_safe(data), indent=2, ensure_ascii=ascii, allow_nan=False) + "\n")


def atomic_save_png(path: str | Path, image: Any) -> None:
    """A PIL image as PNG, atomically (screenshots and views)."""
    import io

    buf = io.BytesIO()
    image.save(buf, format="PNG")
    atomic_write_bytes(path, buf.getvalue())


def read_json(path: str | Path, default: Any = None) -> Any:
    """A JSON file, ``default`` when it does not exist, a clear error when it is not JSON."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except json.JSONDecodeError as e:
        raise RunFolderError(f"{path}: not valid JSON ({e.msg}); delete it or choose another --out") from None


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
                "remove that line, or rerun with the selection that wrote it"
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


def json_safe(value: Any) -> Any:
    """``value`` with what strict JSON and UTF-8 cannot hold made harmless: non-finite floats
    become None, lone surrogates in strings (and keys) become U+FFFD. A model or a page wrote
    most of a record, so either can turn up anywhere in it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {(valid_text(k) if isinstance(k, str) else k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate (what a ``\\ud800`` escape in JSON decodes to) replaced
    by U+FFFD, so it encodes as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:  # surrogates: the only code points UTF-8 refuses; one U+FFFD each
        return _SURROGATE.sub("\ufffd", text)


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


# ------------------------------------------------------------------------------ configuration
def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}: a configuration difference names the exact setting."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def config_diff(pinned: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """One line per setting that differs, key by key (retired settings ignored; a setting
    pinned only since a later release compares as the value earlier folders ran with)."""
    before = {k: v for k, v in flatten(pinned).items() if k not in RETIRED_KEYS}
    after = flatten(json.loads(json.dumps(now)))  # tuples -> lists, as they were stored
    for k, default in ADDED_KEYS.items():
        if k not in before and k in after:
            if default is UNKNOWN:
                after.pop(k)
            else:
                before[k] = default
    return [
        f"{k}: {before.get(k)!r} in the folder, {after.get(k)!r} now"
        for k in sorted(set(before) | set(after))
        if before.get(k) != after.get(k)
    ]


def pin_config(
    run_dir: str | Path,
    identity: dict[str, Any],
    invocation: dict[str, Any],
    *,
    fresh_hint: str = "--out",
    has_records: bool | None = None,
) -> None:
    """Pin ``identity`` (the whole resolved configuration: everything that changes results) to
    the run folder at the first start, and refuse to resume a folder pinned to another one,
    listing every difference. ``invocation`` (concurrency, progress, timeouts: nothing that
    changes a result) is rewritten every time. ``fresh_hint`` names the flag that starts a fresh
    folder, for the error message; ``has_records``: whether the folder's log holds any (read
    here when the caller has not read it already)."""
    run_dir = Path(run_dir)
    path = run_dir / CONFIG
    old = read_json(path)
    if has_records is None:
        has_records = bool(read_records(run_dir / RECORDS)) if old is None else None
    if old is None and has_records:
        raise RunFolderError(
            f"{run_dir} holds records but no {CONFIG}, so nothing says which settings produced "
            f"them and resuming could mix two experiments; start a fresh folder with {fresh_hint} DIR "
            f"(or put back the folder's {CONFIG})"
        )
    if old is not None and (run_dir / RECORDS).exists():
        if not isinstance(old, dict) or "identity" not in old:
            raise RunFolderError(
                f"{path} is not a configuration this regionfocus wrote (no pinned identity), so the "
                f"records beside it cannot be trusted to match this run; start a fresh folder with {fresh_hint}"
            )
        diffs = config_diff(old["identity"], identity)
        if diffs:
            raise RunFolderError(
                f"{run_dir} holds a run with a different configuration, so resuming would mix two "
                "experiments:\n  " + "\n  ".join(diffs) + f"\nstart a fresh folder with {fresh_hint} DIR, "
                "or rerun with the folder's settings (see its config.json)"
            )
    atomic_write_json(
        path, {"schema_version": SCHEMA_VERSION, "identity": identity, "invocation": invocation}
    )


def read_config(run_dir: str | Path) -> dict[str, Any]:
    data = read_json(Path(run_dir) / CONFIG, default={})
    return data if isinstance(data, dict) else {}


class FolderLock:
    """An exclusive advisory lock on ``root/.lock`` (``flock``), held until :meth:`release` or
    the process ends (the kernel drops it even on SIGKILL, so a stale lock cannot block a
    resume). The file names the holder (pid, host, start time) for the message a second
    process gets; not its command line, which may carry a credential. Where ``fcntl`` does not
    exist (Windows) nothing is locked."""

    def __init__(self, root: Path, fresh_hint: str = "--out"):
        self.path = root / LOCK
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise RunFolderBusy(
                f"{root} is in use by another run ({holder}); two writers would corrupt its "
                f"records. Wait for that run to finish or stop it, then rerun to resume, or choose "
                f"another folder with {fresh_hint} DIR"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        os.write(fd, (json.dumps(json_safe(info)) + "\n").encode("utf-8"))
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            # Closing drops the flock; the file stays (unlinking it would race a process that
            # has opened it and is about to lock it).
            os.close(self._fd)
            self._fd = None


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode("utf-8", "replace") or "{}")
    except ValueError:
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "holder unknown"
    if info["pid"] == os.getpid() and info.get("host") == socket.gethostname():
        return f"pid {info['pid']}, this process: close the folder it opened first"
    where = f" on {info['host']}" if info.get("host") and info["host"] != socket.gethostname() else ""
    since = f", since {info['started']}" if info.get("started") else ""
    return f"pid {info['pid']}{where}{since}"


class RunFolder:
    """A run folder opened for a run: pinned configuration, finished records, an open log.

    ``done``: id -> record of everything already finished and kept (errors are kept unless
    ``retry_errors``). ``schema``: the harness's record fields (a JSON Schema); ``selected``:
    the ids this run selected, kept in config.json (``invocation.selected``) for ``report``.
    Every record already in the log is checked against both before anything is written
    (:func:`read_records`). Use as a context manager so the log is closed."""

    def __init__(
        self,
        root: str | Path,
        identity: dict[str, Any],
        invocation: dict[str, Any],
        *,
        retry_errors: bool = False,
        fresh_hint: str = "--out",
        schema: dict[str, Any] | None = None,
        selected: Sequence[str] | None = None,
    ):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        # The lock comes first: opening the log cuts a torn last line, which is only torn when
        # nobody is still writing it.
        self._lock = FolderLock(self.root, fresh_hint)
        try:
            # The log is checked before the configuration is rewritten: a refused resume leaves
            # config.json (and the selection ``report`` reads from it) as it was.
            found = read_records(self.root / RECORDS, schema, selected)
            if selected is not None:
                invocation = {**invocation, SELECTED: list(selected), "n_selected": len(selected)}
            pin_config(self.root, identity, invocation, fresh_hint=fresh_hint, has_records=bool(found))
            self.records: dict[str, dict[str, Any]] = {r["id"]: r for r in found}
            self.done = {
                i: r
                for i, r in self.records.items()
                if not (retry_errors and r.get("status") in RETRY_STATUSES)
            }
            self.log = RecordLog(self.root / RECORDS)
        except BaseException:
            self._lock.release()
            raise

    def add(
        self,
        record: dict[str, Any] | RunRecord,
        *,
        fallback: Callable[[str], dict[str, Any] | RunRecord] | None = None,
    ) -> dict[str, Any]:
        """Append ``record`` durably and return it as stored. A record that cannot be written
        (an object JSON has no form for, a disk that refuses it) is replaced by an error record
        for the same id, so the sample stays in the denominator and ``--retry-errors`` reruns it:
        ``fallback(message)`` builds it in the harness's own shape (default: the shared fields
        only). Only when that fails too does this raise.

        A disk with no room left (full, over quota, or a file-size limit) is not the record's
        fault and would refuse the error record too: nothing is written for this id and
        :class:`RunFolderFull` says so, naming the folder; rerunning the command resumes."""
        rid = record.id if isinstance(record, RunRecord) else str(record.get("id"))
        try:
            try:
                data = self.log.append(record)
            except (ValueError, TypeError, RecursionError, OSError) as e:
                if isinstance(e, OSError) and e.errno in NO_ROOM:
                    raise
                message = f"the record could not be written: {type(e).__name__}: {e}"
                log.error(
                    "%s: could not write the record of %s (%s); recorded as an error", self.root, rid, e
                )
                data = self.log.append(fallback(message) if fallback else RunRecord(rid, "error", message))
        except OSError as e:
            if e.errno not in NO_ROOM:
                raise
            raise RunFolderFull(
                f"{self.root}: no room left on its disk to record {rid} ({e.strerror}); the "
                f"{len(self.records)} record(s) before it in {RECORDS} are whole. Free some space, then "
                "rerun the same command: it resumes from them"
            ) from None
        self.records.pop(data["id"], None)
        self.records[data["id"]] = data
        self.done[data["id"]] = data
        return data

    def close(self) -> None:
        self.log.close()
        self._lock.release()

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
