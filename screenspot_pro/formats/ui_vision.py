"""UI-Vision element grounding (Nayak et al. 2025, "UI-Vision: A Desktop-centric GUI Benchmark
for Visual Perception and Interaction"), as ServiceNow/ui-vision on Hugging Face ships it.

Layout: ``annotations/element_grounding/element_grounding_{basic,functional,spatial}.json`` and
``images/`` (the dataset card; the official script joins ``image_path`` onto the images folder).
A record has ``image_path``, ``prompt_to_evaluate`` (the instruction), ``element_type``,
``platform`` (the application), ``bbox`` [x1, y1, x2, y2] in pixels of ``image_size`` [W, H]
and ``category``. Records have no id: a sample's id is its split and its index ("basic_0").

Scoring, as uivision/UI-Vision eval/grounding/eval_uivision.py scores it (commit
2b79355f962a2db1402ce0ad3d261aa9cb74b855, ``eval_sample_positive_gt``): corners given in the
other order are swapped, box and point are divided by ``image_size``, the point is right when
inside, edges included, and no point is "wrong_format"; each file is scored on its own
(``calc_metric_for_result_list_simple``: num_correct_action, num_total, wrong_format_num,
action_acc). The README's table adds "Final Avg", the unweighted mean of the three splits.
"""

from __future__ import annotations

from typing import Any

from ..dataset import Parsed, RecordParser
from ..images import ImageFiles

PATTERN = "annotations/element_grounding/element_grounding_*.json"
IMAGES = "images"
SPLITS = ("basic", "functional", "spatial")
REQUIRED = ("image_path", "prompt_to_evaluate", "element_type", "platform", "bbox", "image_size")
KNOWN = frozenset({*REQUIRED, "category", "ground_truth", "gt_bbox"})
SWAPPED = "bbox corners in the other order, swapped (as UI-Vision's script swaps them)"


class Parser(RecordParser):
    def __init__(self, task: str, index: int, rec: Any, images: ImageFiles, context: Any = None):
        super().__init__(task, rec, images)
        self.split = task.removeprefix("element_grounding_")
        self.out.id = f"{self.split}_{index}"

    def parse(self) -> Parsed:
        if not self.fields(REQUIRED, KNOWN):
            return self.out
        texts = {
            name: self.text(name) for name in ("image_path", "prompt_to_evaluate", "element_type", "platform")
        }
        annotated = self.img_size("image_size")
        bbox = self.numbers("bbox", 4, "[x1, y1, x2, y2]")
        if bbox is not None and (bbox[2] < bbox[0] or bbox[3] < bbox[1]):
            self.note(SWAPPED)
            x1, y1, x2, y2 = bbox
            bbox = (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))
        size = self.screenshot(texts["image_path"], "image_path")
        if bbox is not None and size is not None:
            bbox = self.fit(bbox, annotated, size)
        element_type = texts["element_type"]
        return self.sample(
            bbox,
            instruction=texts["prompt_to_evaluate"],
            application=texts["platform"],
            platform="",
            group=self.split,
            ui_type=element_type.strip().lower() if element_type else None,
            splits=(self.split,),
        )
