"""Keep freed image-sized buffers for reuse instead of handing them back to the OS.

A RegionFocus sample at a 4K model size allocates and frees a few hundred MB of short-lived
buffers (views, their packed pixels, encoded files, request bodies). By default glibc returns
every buffer over its mmap threshold to the OS when it is freed and Pillow keeps no freed
image blocks, so the next image of the same size is written into fresh pages: one page fault
per 4 KB. Where page faults are dear (here: ~5 us each in the sandbox, ~28,000 per sample) that
is a tenth of the client's CPU (benchmarks/client_cpu.py). A run calls :func:`keep_freed_buffers`
once: glibc keeps up to ``cap_mb`` of freed memory for reuse and Pillow up to ``cap_mb`` of
image blocks. Peak RSS stays the high-water mark of what was in use (BENCHMARKS.md §5.3).
Settings the user made (``MALLOC_*``, a ``glibc.malloc.*`` entry of ``GLIBC_TUNABLES`` or
``PILLOW_BLOCKS_MAX`` in the environment) are left alone. Only the commands call it: these are
process-wide settings, not a library's to change behind its caller's back.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
from collections.abc import Mapping

from PIL import Image

log = logging.getLogger(__name__)

_M_TRIM_THRESHOLD = -1  # glibc mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 64 << 20  # buffers up to a 4K image's bytes come from the heap and go back to it
_done = False


def keep_freed_buffers(cap_mb: int = 256) -> None:
    """Once per process; later calls do nothing."""
    global _done
    if _done:
        return
    _done = True
    if "PILLOW_BLOCKS_MAX" not in os.environ:
        block = Image.core.get_block_size()
        Image.core.set_blocks_max(max(1, (cap_mb << 20) // block))
    if sys.platform.startswith("linux") and not malloc_tuned_by_user(os.environ):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            mallopt = libc.mallopt
        except (OSError, AttributeError):  # not glibc (musl has no mallopt): nothing to tune
            return
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        if not (mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, cap_mb << 20)):
            log.debug("mallopt refused the thresholds; freed buffers go back to the OS")


def malloc_tuned_by_user(environ: Mapping[str, str]) -> bool:
    """Whether the environment already sets glibc's allocator up: the old ``MALLOC_*``
    variables, or malloc tunables (``GLIBC_TUNABLES=glibc.malloc.trim_threshold=...:...``)."""
    if any(k.startswith("MALLOC_") for k in environ):
        return True
    tunables = environ.get("GLIBC_TUNABLES", "")
    return any(t.strip().startswith("glibc.malloc.") for t in tunables.split(":"))
