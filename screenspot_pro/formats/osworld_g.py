"""OSWorld-G (Xie et al. 2025, "Scaling Computer-Use Grounding via User Interface
Decomposition and Synthesis"), the ``benchmark/`` folder of xlang-ai/OSWorld-G.

Layout: ``OSWorld-G.json`` (and ``OSWorld-G_refined.json``, the same samples with longer
instructions; ``--task OSWorld-G_refined`` runs it, the default is ``OSWorld-G``),
``classification_result.json`` and ``images/``. A record has ``id``, ``image_path``,
``instruction``, ``image_size`` [W, H], ``box_type`` and ``box_coordinates``: for "bbox"
[x, y, width, height], for "polygon" the flat vertex list [x0, y0, x1, y1, ...], for
"refusal" none that counts (the element is not on the screen).

The upstream repository is not in our reference store, so its rules were read where they are
reproduced: Onifin/Holo3.1-OSWorld-G (a fork of it), evaluation/holo_osworld_g.py, commit
0fbdd89045f229ce92761de63e9f7b0495ec7b96, which calls upstream's
``GroundingEval._eval(coords, box_type, box_size, box_coordinate, image_size)`` with a bbox split
into its corner and its size, says that evaluator credits a refusal item only for a "no point"
answer ([-1, -1, -1, -1]) and nothing else for it, and keeps the script's per-category
accounting; EvolvingLMMs-Lab/lmms-eval lmms_eval/tasks/osworld_g/utils.py, commit
18b594d03fbcf11a328f1b6f9e354add2bf262f8 (a box inclusive of its edges, the polygon test,
a refusal right when both coordinates are negative). In this harness an answer declines when
the agent's action names no point (``finished``, ``call_user``, a Qwen ``terminate``): it is
right on a refusal item and "wrong format" elsewhere; an answer that does not parse is never
taken for a refusal (as the fork has it).

Tables: accuracy over all samples, and per category of ``classification_result.json``
(``{"classified": {category: [{"id": ...}, ...]}}``): a sample counts in every category that
lists its id, and in "unclassified" when none does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..dataset import DatasetError, Parsed, RecordParser
from ..images import ImageFiles

PATTERN = "OSWorld-G*.json"
IMAGES = "images"
DEFAULT_TASKS = ("OSWorld-G",)
CLASSIFICATION = "classification_result.json"
SPLITS = (
    "text_matching",
    "element_recognition",
    "layout_understanding",
    "fine_grained_manipulation",
    "refusal",
    "unclassified",
)
KNOWN = frozenset(
    {"id", "image_path", "instruction", "image_size", "box_type", "box_coordinates", "GUI_types"}
)
NO_CLASSIFICATION = f"no {CLASSIFICATION} in the folder, every sample counted as unclassified"


def classification(root: Path) -> dict[str, tuple[str, ...]] | None:
    """Sample id -> its categories, from the folder's classification file (None if absent)."""
    path = root / CLASSIFICATION
    if not path.is_file():
        return None
    try:
        classified = json.loads(path.read_text(encoding="utf-8"))["classified"]
        out: dict[str, tuple[str, ...]] = {}
        for category, entries in classified.items():
            for entry in entries:
                key = str(entry["id"] if isinstance(entry, dict) else entry)
                out[key] = (*out.get(key, ()), category)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise DatasetError(
            root,
            [f"{CLASSIFICATION}: not a {{'classified': {{category: [ids]}}}} document ({e})"],
            "OSWorld-G",
        ) from None
    return out


class Parser(RecordParser):
    def __init__(self, task: str, index: int, rec: Any, images: ImageFiles, context: Any = None):
        super().__init__(task, rec, images)
        self.categories: dict[str, tuple[str, ...]] | None = context

    def parse(self) -> Parsed:
        if not self.fields(("id", "image_path", "instruction", "image_size", "box_type"), KNOWN):
            return self.out
        self.out.id = self.record_id()
        texts = {name: self.text(name) for name in ("image_path", "instruction", "box_type")}
        box_type = texts["box_type"]
        if box_type not in (None, "bbox", "polygon", "refusal"):
            self.fail(f"box_type must be bbox, polygon or refusal, got {box_type!r}")
        annotated = self.img_size("image_size")
        coords = self._coordinates(box_type)
        size = self.screenshot(texts["image_path"], "image_path")
        polygon, bbox = (), None
        if size is not None and box_type == "refusal":
            bbox = (0.0, 0.0, float(size[0]), float(size[1]))
        elif size is not None and coords is not None:
            fitted = self.fit(coords, annotated, size)
            if fitted is not None and box_type == "polygon":
                polygon, xs, ys = fitted, fitted[0::2], fitted[1::2]
                bbox = (min(xs), min(ys), max(xs), max(ys))
            else:
                bbox = fitted
        if self.categories is None:
            self.note(NO_CLASSIFICATION)
        return self.sample(
            bbox,
            instruction=texts["instruction"],
            application="",
            platform="",
            group=box_type,
            ui_type="",
            polygon=polygon,
            refusal=box_type == "refusal",
            splits=(self.categories or {}).get(str(self.out.id), ("unclassified",)),
        )

    def _coordinates(self, box_type: str | None) -> tuple[float, ...] | None:
        """The target as points (x0, y0, x1, y1, ...) in the annotation's pixels."""
        if box_type in ("bbox", "polygon") and "box_coordinates" not in self.rec:
            self.fail("missing field(s): box_coordinates")
            return None
        if box_type == "bbox":
            xywh = self.numbers("box_coordinates", 4, "[x, y, width, height]")
            if xywh is None:
                return None
            x, y, w, h = xywh
            if w < 0 or h < 0:
                self.fail(f"box_coordinates {list(xywh)} has a negative width or height")
                return None
            return (x, y, x + w, y + h)
        if box_type == "polygon":
            value = self.rec.get("box_coordinates")
            n = len(value) if isinstance(value, list) else 0
            points = self.numbers("box_coordinates", n, "[x0, y0, x1, y1, ...] with 3 or more vertices")
            if points is not None and (n < 6 or n % 2):
                self.fail(f"box_coordinates of a polygon need 3 or more (x, y) vertices, got {n} numbers")
                return None
            return points
        return None
