"""Scripted hosted models for :mod:`tests.provider_servers`: they see the image they were sent and
answer the way each provider's model answers, in its own frame.

- Claude: prose, then ``[[x,y]]`` in pixels of the image received; with the computer tool a
  ``tool_use`` ``left_click`` at a ``coordinate`` in the declared display (or, for the toolset,
  a ``left_click`` member call), with a sentence before it.
- OpenAI: ``[[x0,y0,x1,y1]]`` with x and y from 0 to 1, sometimes after a sentence; with the
  computer tool a ``computer_call`` ``click`` in pixels of the image received.
- Gemini: a fenced JSON list ``[{"point": [y, x], "label": ...}]`` normalised to 0-1000; with
  Computer Use a ``click_at`` (legacy) or ``click`` call, x and y on the 1000 grid.

Perception is :class:`tests.test_screenspot_helpers.ColourModel`'s (the target by the colour the
instruction names, seen at a small budget), so small targets are missed on a full screenshot and
found on a zoomed view. The markers of that module script failures: "[error]" (HTTP 400),
"[mute]" (no coordinates), "[doubt]" (the judge says no, views miss). Our own RegionFocus
requests are told apart as :func:`tests.model_like.request_kind` does and answered in prose.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .model_like import find_stars, request_kind
from .provider_servers import Request, Said
from .test_screenspot_helpers import ColourModel

_SEE = ColourModel()


@dataclass
class HostedLike:
    """The responder for ``provider`` ("anthropic", "gemini", "openai"). ``computer_use``: answer
    grounding requests with the provider's computer-use call. ``legacy``: Gemini's older function
    names (``click_at``). ``kinds`` counts the requests by kind."""

    provider: str
    computer_use: bool = False
    legacy: bool = True
    kinds: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    # ---- frames: received-image pixels <-> what the model writes
    def _point(self, x: float, y: float, size: tuple[int, int]) -> str:
        w, h = size
        if self.provider == "anthropic":
            return f"({round(x)}, {round(y)})"
        if self.provider == "openai":
            return f"({x / w:.3f}, {y / h:.3f})"
        return f"[{round(y / h * 1000)}, {round(x / w * 1000)}]"

    def _ground(self, x: float, y: float, size: tuple[int, int], prose: str) -> Said:
        w, h = size
        if self.computer_use:
            if self.provider == "anthropic":
                return Said(
                    prose, calls=[("computer", {"action": "left_click", "coordinate": [round(x), round(y)]})]
                )
            if self.provider == "openai":
                return Said(
                    prose,
                    calls=[
                        ("computer_call", {"type": "click", "button": "left", "x": round(x), "y": round(y)})
                    ],
                )
            name = "click_at" if self.legacy else "click"
            return Said(None, calls=[(name, {"x": round(x / w * 1000), "y": round(y / h * 1000)})])
        if self.provider == "anthropic":
            return Said(f"{prose} [[{round(x)},{round(y)}]]")
        if self.provider == "openai":
            bx0, by0, bx1, by1 = (x - 6) / w, (y - 4) / h, (x + 6) / w, (y + 4) / h
            return Said(f"{prose}\n[[{bx0:.4f},{by0:.4f},{bx1:.4f},{by1:.4f}]]")
        point = [round(y / h * 1000), round(x / w * 1000)]
        return Said(f"{prose}\n```json\n{json.dumps([{'point': point, 'label': 'the swatch'}])}\n```")

    def __call__(self, req: Request) -> Said:
        text = req.text
        m = re.search(r"#([0-9a-f]{6})", text)
        colour = tuple(int(m.group(1)[i : i + 2], 16) for i in (0, 2, 4)) if m else (0, 0, 0)
        image = req.images[-1]
        kind = request_kind(text)
        with self.lock:
            self.kinds[kind] += 1
        if "[error]" in text:
            error = {
                "error": {"message": "this model cannot serve the request", "type": "invalid_request_error"}
            }
            return Said(status=400, error=error)
        if "[mute]" in text:
            return Said("I cannot find it on the screen.")
        box = _SEE.find(image, colour)
        if kind == "judge":
            stars = find_stars(np.asarray(image.convert("RGB")).astype(np.int16))
            x, y = stars[0] if stars else (-1.0, -1.0)
            ok = "[doubt]" not in text and box is not None and box[0] <= x <= box[2] and box[1] <= y <= box[3]
            return Said(
                f"{'YES' if ok else 'NO'} - the star is {'on' if ok else 'beside'} the swatch.\nVerdict: {'YES' if ok else 'NO'}"
            )
        if kind == "choose":
            return Said("The first star sits on the swatch.\nSelected point: 1")
        if kind == "focal":
            p = _SEE.rough(image, colour)
            return Said(f"The swatch is most likely around {self._point(p.x, p.y, image.size)}.")
        if kind == "region":
            return Said("I cannot tell the region.")
        with self.lock:
            key = re.sub(r"\s+", " ", text)
            zoomed = self.kinds[f"seen:{key}"] > 0
            self.kinds[f"seen:{key}"] += 1
        if zoomed and "[doubt]" in text:
            return self._ground(3, 3, image.size, "The swatch is at the corner.")
        if box is None:
            if zoomed:
                return Said("The swatch is not visible in this view.")
            return self._ground(
                image.width / 2, image.height / 2, image.size, "I can't see it clearly; trying the middle."
            )
        return self._ground(
            (box[0] + box[2]) / 2, (box[1] + box[3]) / 2, image.size, "The swatch is right there."
        )
