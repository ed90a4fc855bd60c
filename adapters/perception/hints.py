"""OCR lines and detected UI elements of an image as GUI-Lens's hints
(:class:`regionfocus.strategies.gui_lens_text.Hint`, boxes in the image's pixels).

GUI-Lens's own code reads them with EasyOCR (Apple Vision on macOS) and the GPA-GUI-Detector
YOLO weights; here they come from the project's perception, which needs no downloads: the
rapidocr pool the OCR agent uses, at the image's own resolution
(:func:`~regionfocus.adapters.perception.screen_text.read_lines`), and the weight-free
:class:`~regionfocus.adapters.perception.ui_detect.OpenCvDetector` over the legible lines, as
the screen-to-text description runs it. Every line with text is a hint (the official OCR keeps
every line too); a detected element's label is the text it holds, "" when none.

One screenshot serves many targets: reads are remembered per image content (the last
``cache_size`` images), and concurrent requests for one image wait for a single read.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from PIL import Image

from regionfocus.adapters.perception.ocr_text import text_lines
from regionfocus.adapters.perception.screen_text import read_lines
from regionfocus.adapters.perception.ui_detect import ElementDetector, OpenCvDetector
from regionfocus.strategies.gui_lens_text import Hint

OCR_SOURCE = "rapidocr"
DETECTOR_SOURCE = "opencv"


class PerceptionHints:
    """``hints(image)``: the OCR lines (kind "text"), then the detected elements (their kind),
    of ``image``. ``min_conf``: the OCR confidence a line needs to guide the detector."""

    def __init__(
        self, detector: ElementDetector | None = None, *, min_conf: float = 0.3, cache_size: int = 16
    ):
        if cache_size < 1:
            raise ValueError(f"hints cache_size must be at least 1, got {cache_size!r}")
        self.detector = detector or OpenCvDetector()
        self.min_conf = float(min_conf)
        self.cache_size = int(cache_size)
        self._cache: OrderedDict[str, list[Hint]] = OrderedDict()
        self._lock = threading.Lock()
        self._reading: dict[str, threading.Lock] = {}
        self.reads = 0  # images actually read (cache misses)

    def __call__(self, image: Image.Image) -> list[Hint]:
        rgb = image.convert("RGB")
        key = hashlib.blake2b(rgb.tobytes(), digest_size=16).hexdigest() + f"/{rgb.size}"
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return list(self._cache[key])
            gate = self._reading.setdefault(key, threading.Lock())
        with gate:  # one read per image; the others wait for it
            with self._lock:
                if key in self._cache:
                    return list(self._cache[key])
            hints = self._read(rgb)
            with self._lock:
                self.reads += 1
                self._cache[key] = hints
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
                self._reading.pop(key, None)
        return list(hints)

    def _read(self, image: Image.Image) -> list[Hint]:
        lines = [ln for ln in read_lines(image) if ln.text.strip()]
        legible = text_lines([ln for ln in lines if ln.conf >= self.min_conf])
        found = self.detector.detect(image, legible)
        return [Hint(ln.text, ln.box, OCR_SOURCE, "text", ln.conf) for ln in lines] + [
            Hint(e.text, e.box, DETECTOR_SOURCE, e.kind, e.score) for e in found
        ]


_shared: PerceptionHints | None = None
_shared_lock = threading.Lock()


def shared_hints() -> PerceptionHints:
    """The process's one provider (its cache serves every sample and strategy of a run)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = PerceptionHints()
        return _shared
