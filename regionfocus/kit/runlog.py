"""The run folder every harness writes: a pinned configuration and an append-only record log.

Layout (``RUN_DIR``)::

    config.json     {"schema_version", "identity": what changes results, "invocation": what does
                    not, with ``selected``: the ids the last start selected}
    records.jsonl   one JSON object per finished sample or task, appended and fsynced as each
                    finishes (:mod:`regionfocus.kit.records`: the log and its contract)
    data.json       the selected samples by content (:mod:`regionfocus.kit.data_pin`), when the
                    harness describes them: a resume over changed data is refused, the same data
                    at another path resumes
    .lock           one process writes a folder at a time (:mod:`regionfocus.kit.folder_lock`)

Everything else a harness writes (official-format results, summaries, reports) is derived
from these files, atomically (:mod:`regionfocus.kit.atomic`), and can be rebuilt from them at
any time.

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

Records without a configuration that says which settings produced them (``config.json``
missing, unreadable, or not one this package wrote) are never resumed: whatever happened to
it, the one way out is a fresh folder (``--out DIR``), and the damaged folder is left as it is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

# The run folder's parts, each in its own module; importable from here, as before the split.
from .atomic import (  # noqa: F401
    NO_ROOM,
    atomic_save_png,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    json_safe,
    valid_text,
)
from .data_pin import DataPin, changes
from .folder_lock import LOCK, FolderLock, RunFolderBusy  # noqa: F401
from .records import (  # noqa: F401
    RECORDS,
    RETRY_STATUSES,
    SCHEMA_VERSION,
    SELECTED,
    SHARED_FIELDS,
    STATUSES,
    RecordError,
    RecordLog,
    RunFolderError,
    RunRecord,
    _check_of,
    _scan,
    check_record,
    read_records,
    selected_count,
    selected_ids,
)

CONFIG = "config.json"

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


class RunFolderFull(RunFolderError):
    """The run folder's disk has no room for the next record; the log is whole and resumable."""


def read_json(path: str | Path, default: Any = None) -> Any:
    """A JSON file, ``default`` when it does not exist, a clear error when it is not JSON."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except json.JSONDecodeError as e:
        if path.name == CONFIG:  # the pin of the records beside it: one way out whatever the reader
            raise RunFolderError(unpinned(path.parent, f"its {CONFIG} cannot be read ({e.msg})")) from None
        raise RunFolderError(f"{path}: not valid JSON ({e.msg}); delete it or choose another --out") from None


def unpinned(run_dir: Path, what: str, records: int | None = None, fresh_hint: str = "--out") -> str:
    """The one message for records whose configuration is gone: missing, unreadable or not
    ours (``what``), with the one way out (a fresh folder; this one stays as it is, so its
    records can still be read or copied)."""
    n = "the records" if records is None else f"the {records} record(s)"
    return (
        f"{run_dir}: {what}, so nothing says which settings produced {n} in its {RECORDS}, and "
        f"resuming could mix two experiments; start a fresh folder with {fresh_hint} DIR "
        "(this folder is left as it is)"
    )


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
    recorded: Collection[str] | None = None,
    data: DataPin | None = None,
) -> None:
    """Pin ``identity`` (the whole resolved configuration: everything that changes results) to
    the run folder at the first start, and refuse to resume a folder pinned to another one,
    listing every difference. ``invocation`` (concurrency, progress, timeouts: nothing that
    changes a result) is rewritten every time. ``fresh_hint`` names the flag that starts a fresh
    folder, for the error message; ``recorded``: the ids the folder's log holds (read here when
    the caller has not read them; ``has_records``, the older form, says only whether any).

    ``data``: the selected samples by content. When the folder pinned its data the same way, the
    recorded samples must match it (:func:`~regionfocus.kit.data_pin.changes`) and where the
    data sits (its ``location_keys``) is not compared; a folder without a content pin compares
    the location, as before pins existed, and gets one now."""
    run_dir = Path(run_dir)
    path = run_dir / CONFIG
    if recorded is None:
        recorded = [r["id"] for r in read_records(run_dir / RECORDS)] if has_records is not False else []
    try:
        old = read_json(path)
    except RunFolderError:
        if recorded:
            raise RunFolderError(
                unpinned(run_dir, f"its {CONFIG} cannot be read", len(recorded), fresh_hint)
            ) from None
        old = None  # a damaged pin with no records beside it protects nothing: pinned afresh
    if recorded:
        if old is None:
            raise RunFolderError(unpinned(run_dir, f"it holds no {CONFIG}", len(recorded), fresh_hint))
        if not isinstance(old, dict) or "identity" not in old:
            what = f"its {CONFIG} is not one regionfocus wrote (no pinned identity)"
            raise RunFolderError(unpinned(run_dir, what, len(recorded), fresh_hint))
        _same_settings(run_dir, old["identity"], identity, recorded, data, fresh_hint)
    atomic_write_json(
        path, {"schema_version": SCHEMA_VERSION, "identity": identity, "invocation": invocation}
    )
    if data is not None:
        data.write(run_dir)


def _same_settings(
    run_dir: Path,
    pinned: dict[str, Any],
    identity: dict[str, Any],
    recorded: Collection[str],
    data: DataPin | None,
    fresh_hint: str,
) -> None:
    """Refuse a resume whose settings or data differ from the ones its records were made with."""
    before = DataPin.read(run_dir) if data is not None else None
    if before is not None:  # the content decides, wherever it sits now
        pinned = {k: v for k, v in pinned.items() if k not in data.location_keys}
        identity = {k: v for k, v in identity.items() if k not in data.location_keys}
    diffs = config_diff(pinned, identity)
    if diffs:
        raise RunFolderError(
            f"{run_dir} holds a run with a different configuration, so resuming would mix two "
            "experiments:\n  " + "\n  ".join(diffs) + f"\nstart a fresh folder with {fresh_hint} DIR, "
            "or rerun with the folder's settings (see its config.json)"
        )
    changed = changes(before, data, recorded) if before is not None and data is not None else None
    if changed:
        raise RunFolderError(
            f"{run_dir}: the data changed since its records were made ({changed}), so resuming "
            f"would score samples against two versions of it; start a fresh folder with {fresh_hint} DIR, "
            "or put back the data the folder was run on"
        )


def read_config(run_dir: str | Path) -> dict[str, Any]:
    data = read_json(Path(run_dir) / CONFIG, default={})
    return data if isinstance(data, dict) else {}


class RunFolder:
    """A run folder opened for a run: pinned configuration, finished records, an open log.

    ``done``: id -> record of everything already finished and kept (errors are kept unless
    ``retry_errors``). ``schema``: the harness's record fields (a JSON Schema); ``selected``:
    the ids this run selected, kept in config.json (``invocation.selected``) for ``report``.
    Every record already in the log is checked against both before anything is written
    (:func:`read_records`). ``data``: the selected samples by content (:class:`DataPin`): a
    resume whose recorded samples changed is refused. Use as a context manager so the log is
    closed."""

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
        data: DataPin | None = None,
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
            recorded = [r["id"] for r in found]
            pin_config(self.root, identity, invocation, fresh_hint=fresh_hint, recorded=recorded, data=data)
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
