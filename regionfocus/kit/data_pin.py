"""The data a run folder's records were scored against, pinned by content rather than by path.

A run folder pins its configuration, and with it where the data was read from; but the same
path can hold other data on resume (annotations fixed, boxes mirrored, screenshots swapped),
and the same data can sit at another path (a folder moved to another machine, a Hub cache).
So each harness describes its selected samples by what scores or shapes them, one part per
source (an annotation file's record, a screenshot's size and bytes), and the folder keeps a
digest of each part in ``RUN_DIR/data.json``. On resume the samples that already have records
must match part for part: a change exits 2 naming the sources that changed and how many
recorded samples each touches; the same content at another path resumes.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .atomic import atomic_write_text, json_safe

DATA = "data.json"
DIGEST_CHARS = 16  # 64 bits of sha256 per part: a collision by chance is not a concern here
SOURCES_SHOWN = 5


def digest(content: Any) -> str:
    """A stable digest of JSON-able ``content`` (key order and tuples do not matter)."""
    text = json.dumps(json_safe(content), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


@dataclass(frozen=True)
class DataPin:
    """The selected samples by content: sample id -> {source: digest of that part}. A source
    names where a part comes from as the user would look for it (``annotations pycharm_macos``,
    ``images/pycharm_macos_3.png``). ``location_keys``: the pinned identity's settings that say
    where the data was read from, which the content pin makes redundant."""

    samples: Mapping[str, Mapping[str, str]]
    location_keys: tuple[str, ...] = field(default=("data",))

    @classmethod
    def of(cls, parts: Iterable[tuple[str, Mapping[str, Any]]], **kw: Any) -> DataPin:
        """From (sample id, {source: content}) pairs; content is anything JSON can hold."""
        return cls({sid: {src: digest(c) for src, c in by_source.items()} for sid, by_source in parts}, **kw)

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": 1, "digest": f"sha256/{DIGEST_CHARS}", "samples": self.samples}

    @classmethod
    def read(cls, run_dir: str | Path) -> DataPin | None:
        """The folder's pin, or None when it has none (a folder from before pins, or one whose
        ``data.json`` cannot be read: then the path in its configuration is all there is)."""
        try:
            data = json.loads((Path(run_dir) / DATA).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        samples = data.get("samples") if isinstance(data, dict) else None
        if not isinstance(samples, dict) or not all(isinstance(v, dict) for v in samples.values()):
            return None
        return cls(samples)

    def write(self, run_dir: str | Path) -> None:
        # One line: a machine's file, read back whole; config.json stays the one people read.
        atomic_write_text(Path(run_dir) / DATA, json.dumps(self.to_json(), ensure_ascii=False) + "\n")


def changes(pinned: DataPin, now: DataPin, recorded: Collection[str]) -> str | None:
    """What changed among the ``recorded`` samples between the pinned data and today's, in one
    line (the first few samples that differ by id, then the sources, with how many recorded
    samples each touches), or None."""
    touched: Counter[str] = Counter()
    differ: list[str] = []
    for sid in recorded:
        before, after = pinned.samples.get(sid), now.samples.get(sid)
        if before is None or after is None:
            continue  # not pinned then (an older folder's sample) or not selected now: not ours to say
        moved = _moved(before, after)
        touched.update(moved)
        if moved:
            differ.append(sid)
    if not differ:
        return None
    shown = ", ".join(f"{src} ({n})" for src, n in touched.most_common(SOURCES_SHOWN))
    more = len(touched) - SOURCES_SHOWN
    return (
        f"{len(differ)} of the {len(recorded)} recorded sample(s) differ ({_named(differ)}); changed: {shown}"
        + (f" and {more} more source(s)" if more > 0 else "")
        + " (in parentheses: the recorded samples each touches)"
    )


def _moved(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """The sources whose part differs (or is there on one side only)."""
    return [src for src in dict.fromkeys([*before, *after]) if before.get(src) != after.get(src)]


def _named(ids: list[str]) -> str:
    more = len(ids) - SOURCES_SHOWN
    return ", ".join(ids[:SOURCES_SHOWN]) + (f" and {more} more" if more > 0 else "")


def merged(pins: Iterable[tuple[str, DataPin | None]]) -> DataPin | None:
    """One pin for the folders whose (name, pin) pairs are given, as a merge of a run's shards
    writes it: every sample any of them pinned (a folder without a pin adds none; None when no
    folder has one). Raises ValueError naming the first sample two folders pinned with other
    content: they ran on two versions of the data, and one folder may not hold both."""
    samples: dict[str, Mapping[str, str]] = {}
    owner: dict[str, str] = {}
    found = False
    for name, pin in pins:
        if pin is None:
            continue
        found = True
        for sid, parts in pin.samples.items():
            if sid in samples and samples[sid] != parts:
                moved = _moved(samples[sid], parts)
                raise ValueError(
                    f"{sid} was run on other data in {name} than in {owner[sid]} (changed: "
                    f"{', '.join(moved[:SOURCES_SHOWN])}): the folders ran on two versions of the data"
                )
            samples.setdefault(sid, parts)
            owner.setdefault(sid, name)
    return DataPin(samples) if found else None
