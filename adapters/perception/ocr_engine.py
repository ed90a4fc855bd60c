"""The OCR engine every reader of the process shares: RapidOCR (rapidocr 3.x, PP-OCRv6 small
models shipped in its wheel, no download) on onnxruntime, pooled so concurrent reads keep every
core busy. Lines come back as :class:`~.ocr_text.TextLine` with XYXY boxes in the array's pixels.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np

from regionfocus.adapters.perception.ocr_text import TextLine
from regionfocus.geometry import Box

# The recogniser reads each detected line resized to 48 px high and pads every batch to at least
# this width. rapidocr inherits 320 from PaddleOCR's training crops; most GUI labels are short
# (a 48 px-high "Submit" is ~130 px wide), so 320 spends most of the recogniser's time on padding.
# Measured on the first 100 built-in ScreenSpot-Pro samples: 160 reads a few lines differently
# (both ways) with the same accuracy (23/100 either way) for ~25 % less CPU per sample.
REC_MIN_WIDTH = 160


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class EnginePool:
    """RapidOCR engines shared by every agent of the process (one pool per thread setting).

    An engine serves one call at a time (its pipeline keeps per-call state); ``size`` engines
    serve that many calls at once, each on one onnxruntime thread whose idle workers sleep
    rather than spin. Concurrent reads (the views of a round, samples in flight) then keep every
    core busy without waiting on each other; rapidocr's default (one engine, all cores,
    spinning) spent 1.2-1.8x the CPU per read on a shared 2-core machine for the same lines.
    ``calls`` and ``cpu_s`` (the reading threads' CPU) count what the pool has read so far.
    """

    _pools: dict[tuple[int, int], EnginePool] = {}
    _pools_lock = threading.Lock()

    def __init__(self, threads: int, size: int):
        self.threads, self.size = threads, size
        self._free: list = []
        self._built = 0
        self._cond = threading.Condition()
        self.calls, self.cpu_s = 0, 0.0

    @classmethod
    def get(cls, threads: int, size: int) -> EnginePool:
        with cls._pools_lock:
            key = (threads, size)
            if key not in cls._pools:
                cls._pools[key] = cls(threads, size)
            return cls._pools[key]

    def read(self, rgb: np.ndarray) -> list[TextLine]:
        """OCR lines of an RGB uint8 array, boxes XYXY in its pixels, sorted top then left."""
        engine = self._checkout()
        t0 = time.thread_time()  # one onnxruntime thread per engine: the calling thread's CPU
        try:
            out = engine(rgb)
        finally:
            with self._cond:
                self._free.append(engine)
                self.calls += 1
                self.cpu_s += time.thread_time() - t0
                self._cond.notify()
        if out is None or getattr(out, "boxes", None) is None or getattr(out, "txts", None) is None:
            return []
        lines = []
        for quad, text, conf in zip(out.boxes, out.txts, out.scores, strict=False):
            q = np.asarray(quad, dtype=float)
            box = Box(q[:, 0].min(), q[:, 1].min(), q[:, 0].max(), q[:, 1].max())
            lines.append(TextLine(str(text), float(conf), box))
        lines.sort(key=lambda ln: (ln.box.top, ln.box.left))
        return lines

    def _checkout(self):
        with self._cond:
            while not self._free and self._built >= self.size:
                self._cond.wait()
            if self._free:
                return self._free.pop()
            self._built += 1
        try:  # built outside the lock: a second engine loads while the first one reads
            return _build_engine(self.threads)
        except BaseException:
            with self._cond:
                self._built -= 1
                self._cond.notify()
            raise


def require_engine() -> None:
    """Fail at once, not on the first screenshot, when the OCR packages (the ``ocr`` extra) are
    missing: a run would otherwise record every sample as an error."""
    import onnxruntime  # noqa: F401
    import rapidocr  # noqa: F401


def _build_engine(threads: int):
    import onnxruntime as ort
    import rapidocr
    from rapidocr import RapidOCR

    models = Path(rapidocr.__file__).resolve().parent / "models"
    det, rec = models / "PP-OCRv6_det_small.onnx", models / "PP-OCRv6_rec_small.onnx"
    missing = [str(p) for p in (det, rec) if not p.is_file()]
    if missing:
        # Explicit paths: rapidocr would otherwise try to download a missing default model.
        raise RuntimeError(f"rapidocr models not found in its wheel: {', '.join(missing)}")
    params = {
        "Global.log_level": "critical",
        "Global.use_cls": False,  # GUI text is upright; the angle classifier only costs time
        "Global.text_score": 0.0,  # keep every line; the agent weighs confidence itself
        "Global.max_side_len": 1_000_000,  # the agent's budget is the only downscale
        # Detection keeps rapidocr's sizing (short side scaled up to 736 px). Detecting at the
        # budget image's own size instead saved ~5 % CPU on the built-in ScreenSpot-Pro set but
        # lost small lines in the wide views (1 of 40 samples). Recognition reads crops of the
        # budget image either way, so the budget still bounds what the agent can read.
        "Det.model_path": str(det),
        "Rec.model_path": str(rec),
        "Rec.rec_img_shape": [3, 48, REC_MIN_WIDTH],
        "EngineConfig.onnxruntime.intra_op_num_threads": int(threads),
    }
    engine = RapidOCR(params=params)
    # rapidocr builds its own sessions with spinning worker threads and no memory arena; it
    # takes ready sessions from the config instead (Det.session / Rec.session).
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = int(threads)
    opts.inter_op_num_threads = 1
    opts.enable_cpu_mem_arena = True  # ~15 % less CPU than allocating every tensor afresh
    # Idle threads that spin burn a core another OCR call could use.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    engine.cfg._set_flag("allow_objects", True)
    for section, path in (("Det", det), ("Rec", rec)):
        session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        engine.cfg[section].session = session
    return engine
