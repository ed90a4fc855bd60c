"""ScreenSpot-Pro in its official layout: loading, filtering, validation, deterministic order.

Layout (Li et al. 2025, "ScreenSpot-Pro"; the official harness eval_screenspot_pro.py):
``DIR/annotations/<app>_<platform>.json`` each hold a JSON list of records, and
``DIR/images/<img_filename>`` the screenshots. ``bbox`` is XYXY and ``img_size`` is (W, H), both
in pixels of the original screenshot.

What the official harness does with a record decides what we accept. It was read at
likaixin2000/ScreenSpot-Pro-GUI-Grounding, eval_screenspot_pro.py, commit
bd8bbbb470fbc4fda2a4fa9ec90bd2572507794e (file last changed in 6ca3cf9079836452ef947ccd68a16393116d3405):
it deep-copies each record and reads only the fields it needs, so extra fields are ignored; it
copies ``id`` into its output unchanged (an integer stays an integer); it writes ``group`` as
null when the field is absent and never derives one; it reads ``instruction_cn`` only for
``--language cn``; it compares ``ui_type`` with "text" and "icon" exactly; and it scores
``bbox / img_size`` against the model's normalised point without ever opening the image to
check either.

So a record that is merely untidy loads, normalised, and is reported in one warning line per
kind of problem (listing the sample ids), logged on this module's logger and kept on the
returned :class:`Samples` (``.warnings``):

- fields outside the official format: ignored;
- an integer ``id``: read as its decimal string;
- ``ui_type`` in another case or with spaces ("Icon"): lower-cased and stripped;
- ``group`` absent, null or blank: :data:`UNKNOWN_GROUP` (the official script writes null there,
  i.e. a "group:None" bucket counted only in the overall score; we name that bucket);
- the other language's instruction absent or null: not needed, ignored;
- ``img_size`` absent or null: the image file's own size;
- ``img_size`` a uniform scale of the file's size (one factor maps each side onto the file's
  to within :data:`SCALE_TOLERANCE_PX` pixels of rounding in the smaller of the two frames,
  e.g. a 3840x2160 annotation of a 1920x1080 file): the bbox is
  scaled into the file's pixels and ``img_size`` becomes the file's size. Scoring is unchanged,
  since the official script compares in coordinates normalised by ``img_size``;
- a bbox at most :data:`BBOX_TOLERANCE_PX` pixels past the image edge (in the file's pixels):
  clipped to the image. Annotation tools snap a box to the border pixel or count the far edge
  inclusively; a box further out than that belongs to some other picture.

A sample that cannot be scored stops the load before any model call, with one
:class:`DatasetError` listing every bad sample and its problem, so a broken copy of the data
costs one run, not one run per mistake: no usable id, a duplicate id, no image file (or an
unreadable one), an ``img_filename`` that leaves ``DIR/images`` (absolute, or ``..`` past
it: the image would be sent to the model and embedded in the report), an image above
the pixel limit (:data:`DEFAULT_MAX_IMAGE_PIXELS`, read from the file header: nothing is
decoded), no bbox or a malformed or inverted one, a bbox further outside the image
than the tolerance, an ``img_size`` that no uniform scale maps onto the file, no instruction
in the selected language, no application or platform (the official script stops on those too),
and a ``ui_type`` that is neither text nor icon.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regionfocus.kit.atomic import lone_surrogate

from .images import ImageFiles
from .sample import (  # noqa: F401 - the loader's own types, importable from here as before
    IDS_SHOWN,
    DatasetError,
    DatasetWarning,
    Sample,
    Samples,
    Selection,
    data_pin,
    natural_key,
    sample_order_key,
)

log = logging.getLogger(__name__)

# The official record fields; the loader needs all but ``group`` (defaulted), ``img_size``
# (read from the file when absent) and the instruction of the language not selected.
OFFICIAL_FIELDS = (
    "id",
    "img_filename",
    "bbox",
    "img_size",
    "instruction",
    "instruction_cn",
    "application",
    "platform",
    "group",
    "ui_type",
)
KNOWN_FIELDS = frozenset(OFFICIAL_FIELDS)
UI_TYPES = ("text", "icon")
LANGUAGES = ("en", "cn")
INSTRUCTION_FIELD = {"en": "instruction", "cn": "instruction_cn"}
# The six groups of the paper's Table 1, in its column order.
GROUPS = ("Dev", "Creative", "CAD", "Scientific", "Office", "OS")
# The group of a record that names none (the official output has null there).
UNKNOWN_GROUP = "unknown"
# How far (in pixels of the image file) a bbox may stick out of the image and be clipped.
BBOX_TOLERANCE_PX = 4.0
# How far each side of the file may be from img_size times one common scale, in pixels of
# the smaller of the two frames (each was rounded to whole pixels once).
SCALE_TOLERANCE_PX = 1.0
# The largest screenshot (width x height) a run decodes: ScreenSpot-Pro's largest are about
# 20 MP (6K displays); 64 MP leaves room for 8K and stops a header that claims 30000x30000
# before ~3.6 GB of RGB is allocated. Pillow's own guard only warns below 178 MP.
DEFAULT_MAX_IMAGE_PIXELS = 64_000_000


def annotation_files(root: Path) -> list[Path]:
    ann = root / "annotations"
    if not ann.is_dir():
        raise DatasetError(root, [f"no annotations/ folder (expected {ann}/<app>_<platform>.json)"])
    files = sorted(ann.glob("*.json"), key=lambda p: natural_key(p.stem))
    if not files:
        raise DatasetError(root, [f"annotations/ holds no .json files ({ann})"])
    return files


def load_dataset(
    root: str | Path,
    selection: Selection | None = None,
    *,
    max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
) -> Samples:
    """Validate the selected annotation files and return the selected samples in run order.

    Every record of the selected files is validated (not only the filtered ones), so a filter
    never hides a broken file. Raises :class:`DatasetError` listing every unusable record;
    tolerated problems are normalised, logged (one line per kind) and kept on ``.warnings``.
    An image whose header claims more than ``max_image_pixels`` is such a problem.
    """
    root, sel = open_root(root, selection, max_image_pixels)
    files = pick_files(root, annotation_files(root), sel.tasks)
    images = ImageFiles(root / "images", max_image_pixels)
    return read_samples(root, files, lambda task, i, rec: _RecordParser(task, rec, sel.language, images), sel)


def open_root(root: str | Path, selection: Selection | None, max_image_pixels: int) -> tuple[Path, Selection]:
    """The checks every format's loader starts with: the arguments, then the folder."""
    if max_image_pixels < 1:
        raise ValueError(f"max_image_pixels must be >= 1, got {max_image_pixels}")
    root = Path(root).expanduser().resolve()  # records keep absolute image paths for reports
    sel = selection or Selection()
    if sel.language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {sel.language!r}")
    if sel.ui_type is not None and sel.ui_type not in UI_TYPES:
        raise ValueError(f"ui_type must be one of {', '.join(UI_TYPES)}, got {sel.ui_type!r}")
    if not root.is_dir():
        raise DatasetError(root, ["not a directory"])
    return root, sel


def pick_files(
    root: Path, files: Sequence[Path], tasks: Sequence[str], title: str = "ScreenSpot-Pro"
) -> list[Path]:
    """The annotation files ``tasks`` names by stem (all of them for none or "all")."""
    if not tasks or tuple(tasks) == ("all",):
        return list(files)
    by_stem = {p.stem: p for p in files}
    missing = [t for t in tasks if t not in by_stem]
    if missing:
        raise DatasetError(
            root,
            [f"unknown task {t!r} (annotation files: {', '.join(sorted(by_stem))})" for t in missing],
            title,
        )
    return sorted((by_stem[t] for t in tasks), key=lambda p: natural_key(p.stem))


def read_samples(
    root: Path,
    files: Sequence[Path],
    parser: Callable[[str, int, Any], RecordParser],
    sel: Selection,
    title: str = "ScreenSpot-Pro",
) -> Samples:
    """Read every record of ``files`` (JSON lists) through ``parser(task, index, record)``,
    stop on the first pass with every unusable record listed, then sort, filter and cut."""
    problems: list[str] = []
    samples: list[Sample] = []
    notes = _Notes()
    seen_ids: dict[str, str] = {}
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
            parsed = parser(path.stem, i, rec).parse()
            if parsed.id is not None:
                first = seen_ids.get(parsed.id)
                if first is not None:
                    parsed.errors.append(f"duplicate id {parsed.id!r} (first seen at {first})")
                else:
                    seen_ids[parsed.id] = where
            label = f" (id {parsed.id!r})" if parsed.id is not None else _raw_id_suffix(rec)
            problems.extend(f"{where}{label}: {e}" for e in parsed.errors)
            if parsed.sample is not None and not parsed.errors:
                samples.append(parsed.sample)
                for kind, detail in parsed.notes:
                    notes.add(kind, parsed.sample.id, detail)
    if problems:
        raise DatasetError(root, problems, title)

    warnings = notes.warnings()
    for w in warnings:
        log.warning("%s data at %s, loaded with repairs: %s", title, root, w)
    samples.sort(key=lambda s: sample_order_key(s.task_filename, s.id))
    selected = list(_filter(samples, sel))
    if sel.limit is not None:
        selected = selected[: max(0, sel.limit)]
    return Samples(selected, warnings)


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


def _raw_id_suffix(rec: Any) -> str:
    return f" (id {rec.get('id')!r})" if isinstance(rec, dict) and "id" in rec else ""


# -- tolerated problems ----------------------------------------------------------------------

# Each kind says what was found and what the loader did; one warning line per kind.
EXTRA_FIELDS = "fields outside the official format, ignored"
INT_ID = "integer id, read as a string"
UI_TYPE_CASE = "ui_type not in lower case, lower-cased"
NO_GROUP = f'no group (null in the official output), set to "{UNKNOWN_GROUP}"'
OTHER_LANGUAGE = "the other language's instruction is missing or null, not needed for this run"
NO_IMG_SIZE = "no img_size, the image file's size used"
SCALED = "img_size a uniform scale of the image file, bbox scaled to the file's pixels"
CLIPPED = f"bbox up to {BBOX_TOLERANCE_PX:g} px past the image edge, clipped to the image"


class _Notes:
    """Tolerated problems gathered per kind, in the order first met."""

    def __init__(self) -> None:
        self._ids: dict[str, list[str]] = {}
        self._details: dict[str, set[str]] = {}

    def add(self, kind: str, sample_id: str, detail: Iterable[str] = ()) -> None:
        self._ids.setdefault(kind, []).append(sample_id)
        self._details.setdefault(kind, set()).update(detail)

    def warnings(self) -> list[DatasetWarning]:
        return [
            DatasetWarning(k, tuple(ids), tuple(sorted(self._details[k]))) for k, ids in self._ids.items()
        ]


@dataclass
class Parsed:
    id: str | None = None
    sample: Sample | None = None
    errors: list[str] = field(default_factory=list)
    notes: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)


class RecordParser:
    """One record to a :class:`Sample` (or errors), noting every repair on the way. Each
    format's ``parse`` reads its own fields with these helpers."""

    def __init__(self, task: str, rec: Any, images: ImageFiles):
        self.task, self.rec, self.images = task, rec, images
        self.out = Parsed()
        self.filename: str | None = None
        self.path: Path | None = None
        self.size: tuple[int, int] | None = None

    def fail(self, problem: str) -> None:
        self.out.errors.append(problem)

    def note(self, kind: str, *detail: str) -> None:
        self.out.notes.append((kind, detail))

    def fields(self, required: Sequence[str], known: frozenset[str]) -> bool:
        """False when the record is not an object; missing fields fail, unknown ones are noted."""
        if not isinstance(self.rec, dict):
            self.fail(f"expected an object, got {type(self.rec).__name__}")
            return False
        missing = [f for f in required if f not in self.rec]
        if missing:
            self.fail(f"missing field(s): {', '.join(missing)}")
        unknown = sorted(set(self.rec) - known)
        if unknown:
            self.note(EXTRA_FIELDS, *unknown)
        return True

    def sample(self, bbox: tuple[float, ...] | None, **fields: Any) -> Parsed:
        """The parse's result: a :class:`Sample` of ``fields`` and the screenshot last read
        (:meth:`screenshot`) when nothing failed."""
        screen = {"img_filename": self.filename, "image_path": self.path, "img_size": self.size}
        fields = {**screen, "language": "en", **fields}
        if not (self.out.errors or self.out.id is None or bbox is None or None in fields.values()):
            self.out.sample = Sample(
                id=self.out.id,
                task_filename=self.task,
                bbox=bbox,  # type: ignore[arg-type]
                repairs=tuple(kind for kind, _ in self.out.notes),
                **fields,
            )
        return self.out

    # -- fields ---------------------------------------------------------------------------

    def record_id(self) -> str | None:
        if "id" not in self.rec:
            return None
        value = self.rec["id"]
        if isinstance(value, int) and not isinstance(value, bool):
            self.note(INT_ID)
            return str(value)
        if isinstance(value, str) and value.strip():
            return value
        self.fail(f"id must be a non-empty string or an integer, got {value!r}")
        return None

    def text(self, name: str) -> str | None:
        if name not in self.rec:
            return None  # reported with the missing fields
        value = self.rec[name]
        if isinstance(value, str) and value.strip():
            at = lone_surrogate(value)
            if at is None:
                return value
            # Refused, not repaired: every request carrying it would fail, and a replaced
            # character would change the text the benchmark asks about.
            self.fail(f"{name} holds a lone surrogate ({at}), which no request can carry; fix the text")
            return None
        self.fail(f"{name} must be a non-empty string, got {value!r}")
        return None

    def img_size(self, name: str = "img_size") -> tuple[float, float] | None | bool:
        """The annotated (W, H); None when absent (the file's size is used); False when bad."""
        value = self.rec.get(name)
        if value is None:
            self.note(NO_IMG_SIZE)
            return None
        size = _number_list(value, 2)
        if size is None or not all(v > 0 and float(v).is_integer() for v in size):
            self.fail(f"{name} must be [width, height] in whole pixels, got {value!r}")
            return False
        return size  # type: ignore[return-value]

    def numbers(self, name: str, n: int, form: str) -> tuple[float, ...] | None:
        if name not in self.rec:
            return None  # reported with the missing fields
        got = _number_list(self.rec[name], n)
        if got is None:
            self.fail(f"{name} must be {form}, got {self.rec[name]!r}")
        return got

    def screenshot(self, img_filename: str | None, field: str = "img_filename") -> tuple[int, int] | None:
        """The (W, H) of the screenshot, read from its header; the sample keeps it and the file's
        path inside the images folder. None (with the problem) when either is unusable."""
        self.filename = img_filename
        path = self.images.path(img_filename, field) if img_filename is not None else None
        size = self.images.size(path) if isinstance(path, Path) else None
        for got in (path, size):
            if isinstance(got, str):
                self.fail(got)
        self.path = path if isinstance(path, Path) else None
        self.size = size if isinstance(size, tuple) else None
        return self.size

    def fit(
        self, coords: tuple[float, ...], annotated: tuple[float, float] | None | bool, actual: tuple[int, int]
    ) -> tuple[float, ...] | None:
        """Points (x0, y0, x1, y1, ...) in the file's pixels: scaled if ``annotated`` (W, H) is a
        uniform scale of the file, clipped if they stick out by at most the tolerance; None
        (with an error) otherwise, or when ``annotated`` is False (already failed)."""
        if annotated is False:
            return None
        (w, h), (fw, fh) = annotated or actual, actual
        shown = [int(v) if float(v).is_integer() else v for v in coords]
        if (w, h) != (fw, fh):
            sx, sy = fw / w, fh / h
            slack = SCALE_TOLERANCE_PX * max(1.0, sx, sy)  # one pixel of the smaller frame
            if max(abs(w * sy - fw), abs(h * sx - fh)) > slack:
                self.fail(
                    f"img_size {w:g}x{h:g} does not match the file {self.images.folder.name}/{self.filename} "
                    f"({fw}x{fh}) and is not a uniform scale of it"
                )
                return None
            self.note(SCALED, f"{w:g}x{h:g} -> {fw}x{fh}")
            coords = tuple(v * (sy if i % 2 else sx) for i, v in enumerate(coords))
        xs, ys = coords[0::2], coords[1::2]
        past = max(-min(xs), -min(ys), max(xs) - fw, max(ys) - fh)
        if past > BBOX_TOLERANCE_PX:
            frame = "" if (w, h) == (fw, fh) else f" (scaled to the file: {[round(v, 2) for v in coords]})"
            self.fail(
                f"bbox {shown}{frame} lies outside the image {fw}x{fh} by {past:g} px "
                f"(more than the {BBOX_TOLERANCE_PX:g} px tolerated)"
            )
            return None
        if past > 0:
            self.note(CLIPPED)
            coords = tuple(min(max(v, 0.0), fh if i % 2 else fw) for i, v in enumerate(coords))
        return tuple(float(v) for v in coords)


class _RecordParser(RecordParser):
    """A ScreenSpot-Pro record."""

    def __init__(self, task: str, rec: Any, language: str, images: ImageFiles):
        super().__init__(task, rec, images)
        self.language = language

    def parse(self) -> Parsed:
        own = INSTRUCTION_FIELD[self.language]
        if not self.fields(
            ("id", "img_filename", "bbox", own, "application", "platform", "ui_type"), KNOWN_FIELDS
        ):
            return self.out
        self.out.id = self.record_id()
        texts = {name: self.text(name) for name in ("img_filename", own, "application", "platform")}
        other = next(f for f in INSTRUCTION_FIELD.values() if f != own)
        if not isinstance(self.rec.get(other), str):
            self.note(OTHER_LANGUAGE)
        ui_type = self._ui_type()
        group = self._group()
        annotated = self.img_size()
        bbox = self._bbox()
        actual = self.screenshot(texts["img_filename"])
        if bbox is not None and actual is not None:
            bbox = self.fit(bbox, annotated, actual)
        return self.sample(
            bbox,
            instruction=texts[own],
            language=self.language,
            application=texts["application"],
            platform=texts["platform"],
            group=group,
            ui_type=ui_type,
        )

    def _ui_type(self) -> str | None:
        if "ui_type" not in self.rec:
            return None
        value = self.rec["ui_type"]
        norm = value.strip().lower() if isinstance(value, str) else None
        if norm not in UI_TYPES:
            self.fail(f"ui_type must be one of {', '.join(UI_TYPES)}, got {value!r}")
            return None
        if norm != value:
            self.note(UI_TYPE_CASE, repr(value))
        return norm

    def _group(self) -> str | None:
        value = self.rec.get("group")
        if value is None or (isinstance(value, str) and not value.strip()):
            self.note(NO_GROUP)
            return UNKNOWN_GROUP
        if not isinstance(value, str):
            self.fail(f"group must be a string or null, got {value!r}")
            return None
        return value

    def _bbox(self) -> tuple[float, float, float, float] | None:
        bbox = self.numbers("bbox", 4, "[x1, y1, x2, y2]")
        if bbox is not None and (bbox[2] < bbox[0] or bbox[3] < bbox[1]):
            self.fail(f"bbox {list(self.rec['bbox'])} is inverted (x2 < x1 or y2 < y1)")
            return None
        return bbox  # type: ignore[return-value]


def _number_list(value: Any, n: int) -> tuple[float, ...] | None:
    if not isinstance(value, list | tuple) or len(value) != n:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        return None
    return tuple(float(v) for v in value)
