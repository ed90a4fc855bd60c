"""The grounding samples every benchmark reader fills (:class:`Sample`), which of them to run
(:class:`Selection`), their run order, what a load reports (:class:`DatasetError`,
:class:`DatasetWarning`), and the samples by content (:func:`data_pin`): what a run folder pins
so that a resume over changed data is refused and the same data at another path resumes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regionfocus.kit.data_pin import DataPin

# Ids shown in one warning line; the rest are counted (DatasetWarning.ids keeps them all).
IDS_SHOWN = 30


class DatasetError(ValueError):
    """The dataset cannot be run as given; ``problems`` lists every bad record."""

    def __init__(self, root: Path, problems: Sequence[str], title: str = "ScreenSpot-Pro"):
        self.problems = list(problems)
        if len(self.problems) == 1:  # the common case reads as one line
            super().__init__(f"{title} data at {root}: {self.problems[0]}")
            return
        shown = self.problems[:200]
        more = len(self.problems) - len(shown)
        lines = [f"{title} data at {root}: {len(self.problems)} problem(s)"]
        lines += [f"  - {p}" for p in shown]
        if more:
            lines.append(f"  ... and {more} more")
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class DatasetWarning:
    """One kind of tolerated problem: what was found and done (``kind``), the ids it touched
    (all of them, in load order) and, for some kinds, the values seen (``details``)."""

    kind: str
    ids: tuple[str, ...]
    details: tuple[str, ...] = ()

    def __str__(self) -> str:
        shown = ", ".join(self.ids[:IDS_SHOWN])
        more = len(self.ids) - IDS_SHOWN
        what = self.kind + (f" ({', '.join(self.details)})" if self.details else "")
        return f"{len(self.ids)} sample(s): {what}: {shown}" + (f" ... and {more} more" if more > 0 else "")


class Samples(list):
    """The selected samples in run order (a plain ``list`` of :class:`Sample`), plus the
    ``warnings`` the load produced (one :class:`DatasetWarning` per kind of problem)."""

    def __init__(self, samples: Iterable[Sample] = (), warnings: Sequence[DatasetWarning] = ()):
        super().__init__(samples)
        self.warnings: list[DatasetWarning] = list(warnings)


@dataclass(frozen=True)
class Sample:
    """One grounding instruction. ``bbox`` = (x1, y1, x2, y2) and ``img_size`` = (W, H) in
    pixels of the screenshot file; ``instruction`` is the text sent to the model (English or
    Chinese per ``language``); ``task_filename`` is the annotation file's stem. ``repairs``
    names what the loader normalised in this record (empty for a clean record).

    Other benchmarks (:mod:`regionfocus.screenspot_pro.formats`) fill the same record:
    ``polygon`` = (x0, y0, x1, y1, ...) in file pixels when the target is a polygon (``bbox`` is
    then its bounding box), ``refusal`` when the target is absent from the screen (``bbox`` is
    the whole screen), ``splits`` the keys of the official per-split tables the sample counts in.
    """

    id: str
    task_filename: str
    img_filename: str
    image_path: Path
    bbox: tuple[float, float, float, float]
    img_size: tuple[int, int]
    instruction: str
    language: str
    application: str
    platform: str
    group: str
    ui_type: str
    repairs: tuple[str, ...] = field(default=())
    polygon: tuple[float, ...] = ()
    refusal: bool = False
    splits: tuple[str, ...] = ()

    def meta(self) -> dict[str, Any]:
        """The fields a run record keeps so reports rebuild without the dataset."""
        meta = {
            "id": self.id,
            "task_filename": self.task_filename,
            "img_filename": self.img_filename,
            "img_path": str(self.image_path),
            # as annotated, or as normalised to the file's pixels (then ``repairs`` says how)
            "bbox": [int(v) if v.is_integer() else v for v in self.bbox],
            "img_size": list(self.img_size),
            "instruction": self.instruction,
            "lang": self.language,
            "application": self.application,
            "platform": self.platform,
            "group": self.group,
            "ui_type": self.ui_type,
        }
        if self.repairs:
            meta["repairs"] = list(self.repairs)
        # Only what a format uses, so a ScreenSpot-Pro record stays as it was.
        for key, value in (
            ("polygon", list(self.polygon)),
            ("refusal", self.refusal),
            ("splits", list(self.splits)),
        ):
            if value:
                meta[key] = value
        return meta


def natural_key(text: str) -> tuple:
    """ "app_10" sorts after "app_9": ids are usually a stem and a counter."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def sample_order_key(task_filename: str, sample_id: str) -> tuple:
    """The deterministic run order: annotation file, then id."""
    return (natural_key(task_filename), natural_key(sample_id))


@dataclass(frozen=True)
class Selection:
    """Which samples to run. Empty tuples mean "all"; ``tasks`` are annotation file stems."""

    tasks: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    applications: tuple[str, ...] = ()
    ui_type: str | None = None
    language: str = "en"
    limit: int | None = None


def data_pin(samples: Iterable[Sample]) -> DataPin:
    """``samples`` by content, not by path: each one's record as loaded (everything that
    scores it or is sent: box, polygon, instruction, sizes, ...), under its annotation file, and
    its screenshot's size and bytes, under its image file (decoding every screenshot to hash its
    pixels would cost a run's worth of CPU; a swapped image of the same size almost never keeps
    its byte count)."""
    return DataPin.of(
        (
            s.id,
            {
                f"annotations {s.task_filename}": {k: v for k, v in s.meta().items() if k != "img_path"},
                f"images/{s.img_filename}": [*s.img_size, s.image_path.stat().st_size],
            },
        )
        for s in samples
    )
