"""A lossless PNG writer for model-size screenshots, a third of the CPU of libpng's fastest setting.

At a 4K model size a RegionFocus sample sends seven ~8 MP images; PNG through OpenCV's libpng
("sub" filter, zlib level 1, RLE strategy) costs ~155 ms of CPU each, most of it in zlib. This
writes the same kind of file, "sub" filter on every row (numpy, one pass) and the deflate stream
from ISA-L (``isal``, level 1), ~50 ms for a file of about the same size
(benchmarks/client_cpu.py). Decoders see an ordinary PNG: 8-bit RGB, RGBA or greyscale, one
IDAT chunk, no interlace. Returns None when ``isal`` is missing (the caller falls back).
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
from PIL import Image

try:
    from isal import isal_zlib
except ImportError:  # pragma: no cover - isal is a dependency; other platforms may lack a wheel
    isal_zlib = None

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPE = {"L": (0, 1), "RGB": (2, 3), "RGBA": (6, 4)}  # mode -> (PNG colour type, bytes per pixel)
_SUB = 1  # PNG filter type "sub": each byte minus the same channel of the pixel to its left


def available() -> bool:
    return isal_zlib is not None


def encode(image: Image.Image, level: int = 1) -> bytes | None:
    """``image`` (mode L, RGB or RGBA) as PNG bytes, or None when this writer cannot."""
    if isal_zlib is None or image.mode not in _COLOR_TYPE:
        return None
    color_type, bpp = _COLOR_TYPE[image.mode]
    w, h = image.size
    rows = np.asarray(image).reshape(h, w * bpp)
    filtered = np.empty((h, 1 + w * bpp), np.uint8)
    filtered[:, 0] = _SUB
    filtered[:, 1 : 1 + bpp] = rows[:, :bpp]
    np.subtract(rows[:, bpp:], rows[:, :-bpp], out=filtered[:, 1 + bpp :])  # uint8: wraps mod 256
    header = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return b"".join(
        (
            _SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", isal_zlib.compress(filtered, level)),
            _chunk(b"IEND", b""),
        )
    )


def _chunk(tag: bytes, data: bytes) -> bytes:
    return b"".join(
        (struct.pack(">I", len(data)), tag, data, struct.pack(">I", zlib.crc32(data, zlib.crc32(tag))))
    )
