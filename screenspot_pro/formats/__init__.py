"""Grounding benchmarks the harness reads besides ScreenSpot-Pro, each in its official layout
and scored by its official script's rule: which one a ``--data`` folder holds (by its
annotation files), how to read it (one reader per benchmark, all on the shared pieces of
:mod:`regionfocus.screenspot_pro.dataset`) and how its script counts (per-split tables).

The run folder pins the benchmark's ``name`` (config.json, ``identity.format``; absent means
ScreenSpot-Pro), so a resumed run and a rebuilt report score it the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import metrics
from ..dataset import (
    DEFAULT_MAX_IMAGE_PIXELS,
    DatasetError,
    RecordParser,
    Samples,
    Selection,
    load_dataset,
    natural_key,
    open_root,
    pick_files,
    read_samples,
)
from ..images import ImageFiles
from . import osworld_g, screenspot_v2, ui_vision

SCREENSPOT_PRO = "screenspot-pro"

Parser = Callable[[str, int, Any, ImageFiles, Any], RecordParser]


@dataclass(frozen=True)
class Format:
    """One benchmark: its annotation files (``pattern``, a glob under the folder), its
    screenshots folder, how a record is read (``parser(task, index, record, images, context)``,
    ``context`` = ``prepare(root)``, what the reader needs from the folder besides the record),
    and its per-split table (``splits`` in the official order; ``mean_of``: splits whose
    unweighted mean the official table adds). No parser: ScreenSpot-Pro's own loader."""

    name: str
    title: str
    pattern: str
    images: str
    parser: Parser | None = None
    prepare: Callable[[Path], Any] = lambda root: None
    splits: tuple[str, ...] = ()
    mean_of: tuple[str, ...] = ()
    default_tasks: tuple[str, ...] = ()

    def files(self, root: Path) -> list[Path]:
        return sorted((p for p in root.glob(self.pattern) if p.is_file()), key=lambda p: natural_key(p.stem))

    def load(
        self,
        root: str | Path,
        selection: Selection | None = None,
        *,
        max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
    ) -> Samples:
        if self.parser is None:
            return load_dataset(root, selection, max_image_pixels=max_image_pixels)
        root, sel = open_root(root, selection, max_image_pixels)
        if sel.language != "en":
            raise ValueError(
                f"{self.title} instructions are English only (--language cn is ScreenSpot-Pro's)"
            )
        files = self.files(root)
        tasks = sel.tasks or tuple(t for t in self.default_tasks if t in {p.stem for p in files})
        images = ImageFiles(root / self.images, max_image_pixels)
        context = self.prepare(root)
        parser = self.parser
        return read_samples(
            root,
            pick_files(root, files, tasks, self.title),
            lambda t, i, r: parser(t, i, r, images, context),
            sel,
            self.title,
        )

    def evaluate(self, details: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The official results document of ``details``."""
        if self.parser is None:
            return metrics.evaluate(details)
        return metrics.evaluate_splits(details, self.splits, self.mean_of)


FORMATS = (
    Format(SCREENSPOT_PRO, "ScreenSpot-Pro", "annotations/*.json", "images"),
    Format(
        "screenspot-v2",
        "ScreenSpot-v2",
        screenspot_v2.PATTERN,
        screenspot_v2.IMAGES,
        screenspot_v2.Parser,
        splits=screenspot_v2.SPLITS,
    ),
    Format(
        "osworld-g",
        "OSWorld-G",
        osworld_g.PATTERN,
        osworld_g.IMAGES,
        osworld_g.Parser,
        osworld_g.classification,
        splits=osworld_g.SPLITS,
        default_tasks=osworld_g.DEFAULT_TASKS,
    ),
    Format(
        "ui-vision",
        "UI-Vision",
        ui_vision.PATTERN,
        ui_vision.IMAGES,
        ui_vision.Parser,
        splits=ui_vision.SPLITS,
        mean_of=ui_vision.SPLITS,
    ),
)


def by_name(name: str | None) -> Format:
    """The benchmark a run folder pinned (None: ScreenSpot-Pro, folders made before others)."""
    for f in FORMATS:
        if f.name == (name or SCREENSPOT_PRO):
            return f
    raise ValueError(f"unknown benchmark {name!r} (known: {', '.join(f.name for f in FORMATS)})")


def detect(root: str | Path) -> Format:
    """The benchmark whose annotation files ``root`` holds. A folder that is not one is left to
    ScreenSpot-Pro's loader, whose message says so."""
    path = Path(root).expanduser()
    if not path.is_dir():
        return FORMATS[0]
    found = [f for f in FORMATS if f.files(path)]
    if len(found) == 1:
        return found[0]
    if not found:
        known = "; ".join(f"{f.title}: {f.pattern} and {f.images}/" for f in FORMATS)
        raise DatasetError(
            path.resolve(), [f"no benchmark recognised in the folder (known: {known})"], "Benchmark"
        )
    names = ", ".join(f"{f.title} ({f.pattern})" for f in found)
    raise DatasetError(path.resolve(), [f"holds the files of more than one benchmark: {names}"], "Benchmark")
