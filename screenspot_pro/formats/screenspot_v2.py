"""ScreenSpot-v2 (OS-Atlas, Wu et al. 2024: ScreenSpot with its annotation errors corrected).

Layout, as OS-Copilot/ScreenSpot-v2 on Hugging Face ships it (linked from OS-Copilot/OS-Atlas
README.md, commit bad08407ab54b5bf6c17a69fe1ced476b9494926): ``screenspot_mobile_v2.json``,
``screenspot_desktop_v2.json``, ``screenspot_web_v2.json`` (JSON lists of ``img_filename``,
``bbox`` = [x, y, width, height] in pixels, ``instruction``, ``data_type`` text/icon,
``data_source``) and the screenshots unzipped into ``screenspotv2_image/``. Records have no
id: a sample's id is its split and its index in the file ("mobile_0").

Scoring, as ScreenSpot's script scores it (OS-Atlas ships no script of its own for v2; the
benchmark inherits njucckevin/SeeClick pretrain/screenspot_test.py, commit
0ef37ac4d7aaf37ba7b990e3e3c3ca77e1fb8f93): the box becomes [x, y, x + w, y + h], box and point
are divided by the image file's size, and the point is right when inside, edges included; an
answer that yields no point is "wrong format", wrong and in the denominator. Its tables are per
split (mobile, desktop, web): action accuracy, and text accuracy over ``data_type == "text"``
with icon accuracy over every other record (so a data_type other than "text" counts as icon).
"""

from __future__ import annotations

from typing import Any

from ..dataset import Parsed, RecordParser
from ..images import ImageFiles

PATTERN = "screenspot_*_v2.json"
IMAGES = "screenspotv2_image"
PLATFORMS = ("mobile", "desktop", "web")
SPLITS = tuple(f"{p} {t}" for p in PLATFORMS for t in ("text", "icon")) + PLATFORMS
KNOWN = frozenset({"img_filename", "bbox", "instruction", "data_type", "data_source"})


class Parser(RecordParser):
    def __init__(self, task: str, index: int, rec: Any, images: ImageFiles, context: Any = None):
        super().__init__(task, rec, images)
        self.split = task.removeprefix("screenspot_").removesuffix("_v2")
        self.out.id = f"{self.split}_{index}"

    def parse(self) -> Parsed:
        if not self.fields(("img_filename", "bbox", "instruction", "data_type"), KNOWN):
            return self.out
        texts = {name: self.text(name) for name in ("img_filename", "instruction", "data_type")}
        ui_type = "text" if texts["data_type"] == "text" else "icon"
        source = self.rec.get("data_source")
        xywh = self.numbers("bbox", 4, "[x, y, width, height]")
        if xywh is not None and min(xywh[2:]) < 0:
            self.fail(f"bbox {list(self.rec['bbox'])} has a negative width or height")
            xywh = None
        size = self.screenshot(texts["img_filename"])
        bbox = None
        if xywh is not None and size is not None:
            x, y, w, h = xywh
            bbox = self.fit((x, y, x + w, y + h), None, size)
        return self.sample(
            bbox,
            instruction=texts["instruction"],
            application=source if isinstance(source, str) else "",
            platform=self.split,
            group=self.split,
            ui_type=ui_type,
            splits=(f"{self.split} {ui_type}", self.split),
        )
