"""ScreenSpot-Pro in its official layout: loading, filtering, validation, deterministic order.

Layout (Li et al. 2025, "ScreenSpot-Pro"; the official harness eval_screenspot_pro.py):
``DIR/annotations/<app>_<platform>.json`` each hold a JSON list of records, and
``DIR/images/<img_filename>`` the screenshots. ``bbox`` is XYXY and ``img_size`` is (W, H), both
in pixels of the original screenshot.

Validation runs before any model call and raises one :class:`DatasetError` that lists every bad
record, so a broken copy of the data costs one run, not one run per mistake.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

REQUIRED_FIELDS = (
    "id",
    "img_filename",
    "bbox",
    "img_size",
    "instruction",
    "application",
    "platform",
    "group",
    "ui_type",
)
OPTIONAL_FIELDS = ("instruction_cn",)
KNOWN_FIELDS = frozenset(REQUIRED_FIELDS + OPTIONAL_FIELDS)
UI_TYPES = ("text", "icon")
LANGUAGES = ("en", "cn")
# The six groups of the paper's Table 1, in its column order.
GROUPS = ("Dev", "Creative", "CAD", "Scientific", "Office", "OS")


class DatasetError(ValueError):
    """The dataset cannot be run as given; ``problems`` lists every bad record."""

    def __init__(self, root: Path, problems: Sequence[str]):
        self.problems = list(problems)
        shown = self.problems[:200]
        more = len(self.problems) - len(shown)
        lines = [f"ScreenSpot-Pro data at {root}: {len(self.problems)} problem(s)"]
        lines += [f"  - {p}" for p in shown]
        if more:
            lines.append(f"  ... and {more} more")
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Sample:
    """One grounding instruction. ``bbox`` = (x1, y1, x2, y2) and ``img_size`` = (W, H) in
    pixels of the original screenshot; ``instruction`` is the text sent to the model (English or
    Chinese per ``language``); ``task_filename`` is the annotation file's stem."""

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

    def meta(self) -> dict[str, Any]:
        """The fields a run record keeps so reports rebuild without the dataset."""
        return {
            "id": self.id,
            "task_filename": self.task_filename,
            "img_filename": self.img_filename,
            "img_path": str(self.image_path),
            "bbox": [int(v) if v.is_integer() else v for v in self.bbox],  # as annotated
            "img_size": list(self.img_size),
            "instruction": self.instruction,
            "lang": self.language,
            "application": self.application,
            "platform": self.platform,
            "group": self.group,
            "ui_type": self.ui_type,
        }


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


def annotation_files(root: Path) -> list[Path]:
    ann = root / "annotations"
    if not ann.is_dir():
        raise DatasetError(root, [f"no annotations/ folder (expected {ann}/<app>_<platform>.json)"])
    files = sorted(ann.glob("*.json"), key=lambda p: natural_key(p.stem))
    if not files:
        raise DatasetError(root, [f"annotations/ holds no .json files ({ann})"])
    return files


def load_dataset(root: str | Path, selection: Selection | None = None) -> list[Sample]:
    """Validate the selected annotation files and return the selected samples in run order.

    Every record of the selected files is validated (not only the filtered ones), so a filter
    never hides a broken file. Raises :class:`DatasetError` listing every problem found.
    """
    root = Path(root).expanduser().resolve()  # records keep absolute image paths for reports
    sel = selection or Selection()
    if sel.language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {sel.language!r}")
    if sel.ui_type is not None and sel.ui_type not in UI_TYPES:
        raise ValueError(f"ui_type must be one of {', '.join(UI_TYPES)}, got {sel.ui_type!r}")
    if not root.is_dir():
        raise DatasetError(root, ["not a directory"])
    files = annotation_files(root)
    if sel.tasks and sel.tasks != ("all",):
        by_stem = {p.stem: p for p in files}
        missing = [t for t in sel.tasks if t not in by_stem]
        if missing:
            raise DatasetError(
                root,
                [f"unknown task {t!r} (annotation files: {', '.join(sorted(by_stem))})" for t in missing],
            )
        files = [by_stem[t] for t in sel.tasks]
        files.sort(key=lambda p: natural_key(p.stem))

    problems: list[str] = []
    samples: list[Sample] = []
    seen_ids: dict[str, str] = {}
    size_cache: dict[Path, tuple[int, int] | str] = {}
    for path in files:
        try:
            records = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            problems.append(f"{path.name}: cannot read as JSON ({e})")
            continue
        if not isinstance(records, list):
            problems.append(f"{path.name}: expected a JSON list of records, got {type(records).__name__}")
            continue
        for i, rec in enumerate(records):
            where = f"{path.name}[{i}]"
            sample, errs = _parse_record(root, path.stem, rec, where, sel.language, size_cache)
            if sample is not None:
                first = seen_ids.get(sample.id)
                if first is not None:
                    errs.append(f"duplicate id {sample.id!r} (first seen at {first})")
                else:
                    seen_ids[sample.id] = where
            problems.extend(f"{where}{_id_suffix(rec)}: {e}" for e in errs)
            if sample is not None and not errs:
                samples.append(sample)
    if problems:
        raise DatasetError(root, problems)

    samples.sort(key=lambda s: sample_order_key(s.task_filename, s.id))
    samples = list(_filter(samples, sel))
    if sel.limit is not None:
        samples = samples[: max(0, sel.limit)]
    return samples


def _filter(samples: Iterable[Sample], sel: Selection) -> Iterable[Sample]:
    groups = {g.lower() for g in sel.groups}
    apps = {a.lower() for a in sel.applications}
    for s in samples:
        if groups and s.group.lower() not in groups:
            continue
        if apps and s.application.lower() not in apps:
            continue
        if sel.ui_type and s.ui_type != sel.ui_type:
            continue
        yield s


def _id_suffix(rec: Any) -> str:
    return f" (id {rec.get('id')!r})" if isinstance(rec, dict) and "id" in rec else ""


def _parse_record(
    root: Path,
    task: str,
    rec: Any,
    where: str,
    language: str,
    size_cache: dict[Path, tuple[int, int] | str],
) -> tuple[Sample | None, list[str]]:
    if not isinstance(rec, dict):
        return None, [f"expected an object, got {type(rec).__name__}"]
    errs: list[str] = []
    missing = [f for f in REQUIRED_FIELDS if f not in rec]
    if missing:
        errs.append(f"missing field(s): {', '.join(missing)}")
    unknown = sorted(set(rec) - KNOWN_FIELDS)
    if unknown:
        errs.append(f"unknown field(s): {', '.join(unknown)}")
    if missing:
        return None, errs

    for name in ("id", "img_filename", "instruction", "application", "platform", "group"):
        if not isinstance(rec[name], str) or not rec[name].strip():
            errs.append(f"{name} must be a non-empty string, got {rec[name]!r}")
    if rec["ui_type"] not in UI_TYPES:
        errs.append(f"ui_type must be one of {', '.join(UI_TYPES)}, got {rec['ui_type']!r}")
    instruction = rec["instruction"]
    if language == "cn":
        instruction = rec.get("instruction_cn")
        if not isinstance(instruction, str) or not instruction.strip():
            errs.append("--language cn needs a non-empty instruction_cn")

    size = _number_list(rec["img_size"], 2)
    if size is None or not all(v > 0 and float(v).is_integer() for v in size):
        errs.append(f"img_size must be [width, height] in whole pixels, got {rec['img_size']!r}")
        size = None
    bbox = _number_list(rec["bbox"], 4)
    if bbox is None:
        errs.append(f"bbox must be [x1, y1, x2, y2], got {rec['bbox']!r}")
    elif bbox[2] < bbox[0] or bbox[3] < bbox[1]:
        errs.append(f"bbox {list(bbox)} is inverted (x2 < x1 or y2 < y1)")
    elif size is not None and (min(bbox) < 0 or bbox[2] > size[0] or bbox[3] > size[1]):
        errs.append(f"bbox {list(bbox)} lies outside the image {int(size[0])}x{int(size[1])}")

    image_path = root / "images" / str(rec["img_filename"])
    if isinstance(rec["img_filename"], str) and rec["img_filename"].strip():
        actual = _image_size(image_path, size_cache)
        if isinstance(actual, str):
            errs.append(actual)
        elif size is not None and actual != (int(size[0]), int(size[1])):
            errs.append(
                f"img_size {int(size[0])}x{int(size[1])} does not match the file "
                f"images/{rec['img_filename']} ({actual[0]}x{actual[1]})"
            )
    if errs:
        return (Sample(**_partial(rec, task)) if isinstance(rec["id"], str) else None), errs
    return (
        Sample(
            id=rec["id"],
            task_filename=task,
            img_filename=rec["img_filename"],
            image_path=image_path,
            bbox=tuple(float(v) for v in bbox),  # type: ignore[arg-type]
            img_size=(int(size[0]), int(size[1])),  # type: ignore[index]
            instruction=instruction,
            language=language,
            application=rec["application"],
            platform=rec["platform"],
            group=rec["group"],
            ui_type=rec["ui_type"],
        ),
        errs,
    )


def _partial(rec: dict, task: str) -> dict[str, Any]:
    """A placeholder sample for a bad record, so duplicate ids are still detected."""
    return dict(
        id=rec["id"],
        task_filename=task,
        img_filename=str(rec.get("img_filename")),
        image_path=Path(),
        bbox=(0.0, 0.0, 0.0, 0.0),
        img_size=(0, 0),
        instruction="",
        language="",
        application="",
        platform="",
        group="",
        ui_type="",
    )


def _number_list(value: Any, n: int) -> tuple[float, ...] | None:
    if not isinstance(value, list | tuple) or len(value) != n:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    return tuple(float(v) for v in value)


def _image_size(path: Path, cache: dict[Path, tuple[int, int] | str]) -> tuple[int, int] | str:
    """(W, H) from the file header (PIL reads it lazily: no pixel is decoded), or a problem."""
    if path not in cache:
        if not path.is_file():
            cache[path] = f"missing image file {path}"
        else:
            try:
                with Image.open(path) as im:
                    cache[path] = im.size
            except (OSError, SyntaxError) as e:
                cache[path] = f"unreadable image file {path} ({e})"
    return cache[path]
