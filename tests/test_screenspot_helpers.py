"""Test support for the ScreenSpot-Pro harness (no tests here): a tiny dataset drawn with PIL
and a colour-seeing test double of the *model*.

The double perceives rather than looking answers up: it sees every image downscaled to a
small budget (as a VLM does) and finds the target by the colour the instruction names. A large
target survives the downscale; a 7 px one does not, so the full-screen answer is a guess and
only a zoomed view finds it, which is exactly the effect RegionFocus exploits. Markers in the
instruction script the failure modes a real model has: "[error]" (every call raises), "[mute]"
(never a parseable answer), "[doubt]" (the judge always says no and zoomed answers are off
target), "[script]" (the answer carries HTML).
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from regionfocus import Action, ActionType, ModelReply, Point, Query, Usage, Verdict

BACKGROUND = (228, 228, 228)
SCREEN = (1600, 1000)
SIGHT = 200  # long side, in pixels, of what the double sees of any image


def _hex(colour: tuple[int, int, int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in colour)


@dataclass
class ColourModel:
    """A GroundingModel test double (see the module docstring). ``latency`` per call, in s."""

    latency: float = 0.0
    broken: bool = True  # False: "[error]" samples are answered like any other (server is back)
    calls: list[str] = field(default_factory=list)

    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        s = min(1.0, SIGHT / max(size))
        return max(1, round(size[0] * s)), max(1, round(size[1] * s))

    # -- perception ---------------------------------------------------------------------
    def _diff(self, image: Image.Image, colour) -> tuple[np.ndarray, float, float]:
        seen = image.convert("RGB").resize(self.input_size(image.size), Image.Resampling.BOX)
        arr = np.asarray(seen, dtype=np.int16)
        diff = np.abs(arr - np.array(colour, dtype=np.int16)).max(axis=2)
        return diff, image.width / seen.width, image.height / seen.height

    def find(self, image: Image.Image, colour) -> tuple[float, float, float, float] | None:
        """XYXY box of the target in ``image`` pixels, if visible at the model's resolution."""
        diff, sx, sy = self._diff(image, colour)
        ys, xs = np.nonzero(diff <= 12)
        if len(xs) == 0:
            return None
        return (xs.min() * sx, ys.min() * sy, (xs.max() + 1) * sx, (ys.max() + 1) * sy)

    def rough(self, image: Image.Image, colour) -> Point:
        """Where the colour is most nearly present (a blurred small target still tints it)."""
        diff, sx, sy = self._diff(image, colour)
        y, x = np.unravel_index(int(np.argmin(diff)), diff.shape)
        return Point((x + 0.5) * sx, (y + 0.5) * sy)

    # -- the protocol ---------------------------------------------------------------------
    async def _begin(self, kind: str, query: Query) -> None:
        self.calls.append(kind)
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.broken and "[error]" in query.instruction:
            raise RuntimeError("connection refused (scripted)")

    @staticmethod
    def _colour(query: Query) -> tuple[int, int, int]:
        m = re.search(r"#([0-9a-f]{6})", query.instruction)
        assert m, query.instruction
        h = m.group(1)
        return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)

    @staticmethod
    def _reply(text: str, **kw) -> ModelReply:
        return ModelReply(text, usage=Usage(latency_s=0.01, prompt_tokens=100, completion_tokens=12), **kw)

    async def act(self, image: Image.Image, query: Query, *, zoomed: bool = False) -> ModelReply:
        await self._begin("act", query)
        if "[mute]" in query.instruction:
            return self._reply("I cannot tell where that is.")
        if zoomed and "[doubt]" in query.instruction:
            p = Point(2, 2)
        else:
            box = self.find(image, self._colour(query))
            if box is None:
                if zoomed:
                    return self._reply("Not in this view.")
                p = Point(image.width / 2, image.height / 2)  # a guess
            else:
                p = Point((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        extra = " <script>alert('x')</script>" if "[script]" in query.instruction else ""
        text = f"Thought: there it is.{extra}\nAction: click(start_box='({p.x:.0f},{p.y:.0f})')"
        return self._reply(text, action=Action(ActionType.CLICK, p), point=p)

    async def propose_point(self, image, query, avoid, *, temperature=None) -> ModelReply:
        await self._begin("focal", query)
        if "[mute]" in query.instruction:
            return self._reply("no idea")
        p = self.rough(image, self._colour(query))
        return self._reply(f"({p.x:.0f},{p.y:.0f})", point=p)

    async def judge(self, image, query, point) -> ModelReply:
        await self._begin("judge", query)
        box = self.find(image, self._colour(query))
        ok = (
            "[doubt]" not in query.instruction
            and box is not None
            and box[0] <= point.x <= box[2]
            and box[1] <= point.y <= box[3]
        )
        return self._reply("Yes." if ok else "No, that is not it.", verdict=Verdict.YES if ok else Verdict.NO)

    async def choose(self, image, query, options, *, retry=0) -> ModelReply:
        await self._begin("choose", query)
        target = self.rough(image, self._colour(query))
        pts = [o for o in options if o.action.point is not None]
        if not pts:
            return self._reply("none")
        best = min(pts, key=lambda o: o.action.point.distance(target))
        return self._reply(f"Star {best.number}", choice=best.number)

    async def propose_box(self, image, query, focal) -> ModelReply:
        await self._begin("box", query)
        return self._reply("no box")


# --------------------------------------------------------------------------- data
@dataclass
class Target:
    id: str
    colour: tuple[int, int, int]
    bbox: tuple[int, int, int, int]
    ui_type: str = "text"
    group: str = "Dev"
    application: str = "appa"
    marker: str = ""

    @property
    def instruction(self) -> str:
        return f"click the swatch {_hex(self.colour)}" + (f" {self.marker}" if self.marker else "")


def default_screens() -> dict[str, list[Target]]:
    """Two screens (two annotation files) with every outcome the harness must score:
    (colours are far apart, and small targets sit on the 8 px grid the double sees through,
    so the blurred tint of a small target is its nearest colour on the screen)
    big targets right at once, small ones only after zooming, a doubted right answer turned
    wrong, an error, an unparseable answer and an answer with HTML in it."""
    return {
        "appa_windows": [
            Target("appa_0", (220, 30, 30), (100, 100, 180, 160), "text", "Dev", "appa"),
            Target("appa_1", (0, 150, 0), (1304, 120, 1311, 127), "icon", "Dev", "appa"),
            Target("appa_2", (40, 60, 220), (300, 700, 380, 760), "text", "Dev", "appa", "[script]"),
            Target("appa_3", (20, 20, 20), (1200, 800, 1207, 807), "icon", "Dev", "appa"),
            Target("appa_4", (240, 150, 20), (500, 300, 580, 360), "text", "Dev", "appa", "[doubt]"),
        ],
        "appb_macos": [
            Target("appb_0", (20, 200, 200), (200, 200, 280, 260), "text", "CAD", "appb"),
            Target("appb_1", (150, 0, 255), (1400, 848, 1407, 855), "icon", "CAD", "appb"),
            Target("appb_2", (160, 160, 20), (600, 150, 680, 210), "icon", "Office", "appc", "[error]"),
            Target("appb_3", (20, 120, 160), (900, 600, 980, 660), "text", "Office", "appc", "[mute]"),
        ],
    }


def expected_outcomes() -> dict[str, tuple[str, str]]:
    """(baseline, final) correctness of each default sample, by construction."""
    return {
        "appa_0": ("correct", "correct"),
        "appa_1": ("wrong", "correct"),
        "appa_2": ("correct", "correct"),
        "appa_3": ("wrong", "correct"),
        "appa_4": ("correct", "wrong"),
        "appb_0": ("correct", "correct"),
        "appb_1": ("wrong", "correct"),
        "appb_2": ("wrong", "wrong"),
        "appb_3": ("wrong_format", "wrong_format"),
    }


def make_dataset(root: Path, screens: dict[str, list[Target]] | None = None, copies: int = 1) -> Path:
    """Write the official layout under ``root``: one PNG per screen, one annotation file each.
    ``copies`` > 1 repeats every screen under new ids (for longer runs)."""
    screens = screens or default_screens()
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    for task, targets in screens.items():
        folder = root / "images" / task
        folder.mkdir(parents=True, exist_ok=True)
        img = Image.new("RGB", SCREEN, BACKGROUND)
        draw = ImageDraw.Draw(img)
        draw.rectangle((0, 0, SCREEN[0], 40), fill=(200, 200, 205))  # a title bar, for realism
        for t in targets:
            draw.rectangle((t.bbox[0], t.bbox[1], t.bbox[2] - 1, t.bbox[3] - 1), fill=t.colour)
        img.save(folder / "screen.png", compress_level=1)
        records = []
        for c in range(copies):
            for t in targets:
                records.append(
                    {
                        "img_filename": f"{task}/screen.png",
                        "bbox": list(t.bbox),
                        "instruction": t.instruction,
                        "application": t.application,
                        "id": t.id if c == 0 else f"{t.id}_c{c}",
                        "platform": task.split("_")[1],
                        "img_size": list(SCREEN),
                        "ui_type": t.ui_type,
                        "group": t.group,
                        "instruction_cn": f"点击 {_hex(t.colour)} {t.marker}".strip(),
                    }
                )
        (root / "annotations" / f"{task}.json").write_text(json.dumps(records, ensure_ascii=False, indent=1))
    return root


_TEMPLATE: Path | None = None


def fresh_dataset(dest: Path) -> Path:
    """A copy of the default dataset at ``dest`` (drawn once per process, then copied)."""
    global _TEMPLATE
    if _TEMPLATE is None:
        _TEMPLATE = Path(tempfile.mkdtemp(prefix="ssp-template-")) / "data"
        atexit.register(shutil.rmtree, _TEMPLATE.parent, True)
        make_dataset(_TEMPLATE)
    shutil.copytree(_TEMPLATE, dest)
    return dest


def cli_main() -> int:
    """`python -c` entry for subprocess tests: the real CLI with the colour model."""
    from regionfocus.screenspot_pro.cli import main

    return main(sys.argv[1:], model=ColourModel(latency=float(os.environ.get("COLOUR_MODEL_LATENCY", "0"))))


DROP = object()  # edit_record(..., field=DROP) removes the field


def edit_record(root: Path, task: str, index: int, **changes) -> None:
    """Change (or with DROP, remove) fields of record ``index`` of annotation file ``task``."""
    path = root / "annotations" / f"{task}.json"
    recs = json.loads(path.read_text())
    for k, v in changes.items():
        if v is DROP:
            recs[index].pop(k)
        else:
            recs[index][k] = v
    path.write_text(json.dumps(recs))
