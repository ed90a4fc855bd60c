"""Lanczos resizing that gives Pillow's exact pixels, from a compiled kernel when there is one.

A view at a 4K model size is a ~3836x2156 Lanczos upsample: ~0.13 s of CPU in Pillow, four per
RegionFocus round. ``regionfocus._lanczos`` (built from ``_lanczos.c`` at install; optional)
does Pillow's arithmetic in vectorised loops, 2-3x less CPU for the same bytes
(benchmarks/client_cpu.py). Without it, or for anything it does not cover, this is
``Image.resize(size, LANCZOS)``.

Covered: RGB images whose height does not shrink by more than twice what the width does
(Pillow 13 runs the vertical pass first then; earlier versions never do, and the kernel always
runs the horizontal pass first). On first use the kernel is checked against the installed
Pillow on a few geometries; a mismatch (a Pillow that changed its arithmetic) turns it off for
the process with a warning, so the model never sees different pixels.
"""

from __future__ import annotations

import logging
import random
import threading

from PIL import Image

log = logging.getLogger(__name__)

try:
    from . import _lanczos
except ImportError:  # not built (no compiler at install): Pillow does the work
    _lanczos = None

_checked: bool | None = None  # None: not yet checked; then whether the kernel matched Pillow
_check_lock = threading.Lock()

# (W, H) -> (W, H) pairs the self-check compares: both axes up, a non-integer zoom, one axis
# unchanged, a slight shrink of both (a smart_resize rounding), the width shrinking alone.
_CHECK_GEOMETRIES = (
    ((61, 37), (183, 111)),
    ((50, 29), (131, 97)),
    ((64, 40), (64, 101)),
    ((97, 53), (211, 53)),
    ((120, 80), (112, 76)),
    ((90, 60), (45, 60)),
)


def kernel_available() -> bool:
    """Whether resizes go through the compiled kernel (built, and it matched Pillow here)."""
    return _lanczos is not None and _self_check()


def covered(src: tuple[int, int], dst: tuple[int, int]) -> bool:
    """Whether every Pillow version resamples ``src`` -> ``dst`` (W, H) horizontal pass first."""
    shrink_h, shrink_w = src[1] - dst[1], src[0] - dst[0]
    return not (shrink_h > 0 and shrink_h > 2 * shrink_w)


def lanczos(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """``image.resize(size, Image.Resampling.LANCZOS)``, the same bytes, usually faster."""
    size = (int(size[0]), int(size[1]))
    if size[0] < 1 or size[1] < 1:
        raise ValueError(f"lanczos: target size must be positive, got {size[0]}x{size[1]}")
    if image.size == size:
        return image.copy()
    if image.mode != "RGB" or not covered(image.size, size) or not kernel_available():
        return image.resize(size, Image.Resampling.LANCZOS)
    return _kernel_resize(image, size)


def _kernel_resize(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    data = _lanczos.resample_rgb(image.tobytes(), image.width, image.height, size[0], size[1])
    return Image.frombuffer("RGB", size, data, "raw", "RGB", 0, 1)


def _self_check() -> bool:
    global _checked
    if _checked is not None:
        return _checked
    with _check_lock:
        if _checked is None:
            try:
                _checked = _matches_pillow()
                why = "does not match this Pillow"
            except Exception as e:  # noqa: BLE001 - a kernel that cannot run is one not to use
                _checked, why = False, f"failed its check against this Pillow ({type(e).__name__}: {e})"
            if not _checked:
                log.warning(
                    "the compiled Lanczos kernel %s (%s); views are resized by Pillow instead "
                    "(same pixels, more CPU)",
                    why,
                    Image.__version__,
                )
    return _checked


def _matches_pillow() -> bool:
    rng = random.Random(20261123)
    for src, dst in _CHECK_GEOMETRIES:
        image = Image.frombytes("RGB", src, rng.randbytes(src[0] * src[1] * 3))
        want = image.resize(dst, Image.Resampling.LANCZOS).tobytes()
        if covered(src, dst) and _kernel_resize(image, dst).tobytes() != want:
            return False
    return True
