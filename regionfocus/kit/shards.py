"""Sharded runs: ``--shard I/N`` and merging the shards' run folders into one.

A sample or task belongs to shard ``sha256(id) mod N``: the partition depends on the id alone,
so adding samples to a data set never moves the others, and N copies of one command (a Slurm
array, a Kubernetes Indexed Job) split the work with no coordination. Each shard is a run folder
of its own with ``shard: "I/N"`` pinned beside the rest of the configuration.

:func:`merge_shards` builds one run folder from all N: it refuses shards whose pinned
configurations differ (naming the key), that overlap, or that leave a shard out (naming it),
and writes the union of their records under the configuration an unsharded run pins, so the
harness's reports come out as for one process (and the merged folder resumes unsharded), with
the union of their data pins (``data.json``: a resume over changed data is refused there too;
shards that pinned one sample with other content are refused, naming it).
"""

from __future__ import annotations

import argparse
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .data_pin import DataPin, merged
from .runlog import (
    CONFIG,
    RECORDS,
    SCHEMA_VERSION,
    FolderLock,
    RecordLog,
    RunFolderError,
    atomic_write_json,
    config_diff,
    read_config,
    read_records,
)

KEY = "shard"  # the one identity key allowed to differ between the shards of a run


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, item_id: str) -> bool:
        digest = hashlib.sha256(str(item_id).encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index


def parse_shard(text: str) -> Shard:
    """``I/N`` with 0 <= I < N (argparse ``type``)."""
    try:
        i, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard must look like I/N (e.g. 0/4), got {text!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard {text}: need 0 <= I < N")
    return Shard(i, n)


def add_shard_argument(group: Any) -> None:
    group.add_argument(
        "--shard",
        type=parse_shard,
        metavar="I/N",
        help="run only shard I of N (0-based; by a hash of each id, so a growing data set keeps "
        "the others in place); each shard is its own run folder, `merge` joins them",
    )


def select(items: list, shard: Shard | None, key=lambda item: item.id) -> list:
    """The items of ``shard`` (all of them without one), in their order."""
    return items if shard is None else [x for x in items if shard.owns(key(x))]


@dataclass
class Merged:
    """What :func:`merge_shards` wrote: the shards' configs (in shard order) and all records."""

    configs: list[dict[str, Any]]
    records: list[dict[str, Any]]


def merge_shards(out: str | Path, shard_dirs: list[str | Path]) -> Merged:
    """Write ``out/config.json`` and ``out/records.jsonl`` from the shards' folders; raises
    :class:`RunFolderError` (the command's exit 2) naming what is wrong."""
    out = Path(out)
    found: dict[int, tuple[Path, dict[str, Any]]] = {}
    count = None
    for d in map(Path, shard_dirs):
        config = read_config(d)
        if "identity" not in config or not (d / RECORDS).exists():
            raise RunFolderError(
                f"{d} is not a run folder (no {CONFIG} with a pinned identity, or no {RECORDS})"
            )
        if KEY not in config["identity"]:
            raise RunFolderError(f"{d} is not a shard (no {KEY} pinned: it was run without --shard)")
        shard = parse_shard(str(config["identity"][KEY]))
        if count not in (None, shard.count):
            raise RunFolderError(
                f"{d} is shard {shard}, the others are of {count}: shards of two different splits"
            )
        count = shard.count
        if shard.index in found:
            raise RunFolderError(f"{d} and {found[shard.index][0]} are both shard {shard}: they overlap")
        found[shard.index] = (d, config)
    missing = [f"{i}/{count}" for i in range(count or 0) if i not in found]
    if missing:
        raise RunFolderError(
            f"shard {', '.join(missing)} missing: run it (or name its folder) and merge again"
        )
    order = [found[i] for i in sorted(found)]
    first_dir, first = order[0]
    base = {k: v for k, v in first["identity"].items() if k != KEY}
    for d, config in order[1:]:
        diffs = config_diff(base, {k: v for k, v in config["identity"].items() if k != KEY})
        if diffs:  # each line: "key: <value in first_dir> in the folder, <value in d> now"
            raise RunFolderError(
                f"{d} ran with other settings than {first_dir}, merging would mix two experiments "
                f"(first value: {first_dir}, second: {d}):\n  " + "\n  ".join(diffs)
            )
    try:  # the shards' data pins, as one: the merged folder resumes with the same content check
        pin = merged((str(d), DataPin.read(d)) for d, _ in order)
    except ValueError as e:
        raise RunFolderError(f"{e}; merging would score samples against both") from None
    owner: dict[str, Path] = {}
    records: list[dict[str, Any]] = []
    for d, _ in order:
        for rec in read_records(d / RECORDS):
            if rec["id"] in owner:
                raise RunFolderError(f"{rec['id']} is in both {owner[rec['id']]} and {d}: the shards overlap")
            owner[rec["id"]] = d
            records.append(rec)
    out.mkdir(parents=True, exist_ok=True)
    lock = FolderLock(out)
    try:
        if read_records(out / RECORDS):
            raise RunFolderError(f"{out} already holds records; merge into a new folder (or delete it)")
        invocation = {
            "merged_from": [str(d) for d, _ in order],
            "shards": [c.get("invocation") for _, c in order],
        }
        atomic_write_json(
            out / CONFIG, {"schema_version": SCHEMA_VERSION, "identity": base, "invocation": invocation}
        )
        if pin is not None:
            pin.write(out)
        with RecordLog(out / RECORDS) as log:
            for rec in records:
                log.append(rec)
    finally:
        lock.release()
    return Merged([c for _, c in order], records)
