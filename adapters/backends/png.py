"""A lossless PNG writer for model-size screenshots at a third of the CPU of libpng's fastest
setting.

At a 4K model size a RegionFocus sample sends seven ~8 MP images. libpng through OpenCV ("sub"
filter, zlib level 1, RLE strategy) costs ~70 ms of CPU each, most of it in zlib, and the best
library path found takes ~2.8x this writer's CPU per sample (BENCHMARKS.md, "Library or ours";
benchmarks/image_paths.py). This writes the same kind of file: the "sub" filter on every row
(numpy, one pass) and deflate from ISA-L (``isal``, level 1). Decoders see an ordinary PNG:
8-bit L, RGB or RGBA, one IDAT chunk, no interlace.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
from isal import isal_zlib
from PIL import Image

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPE = {"L": (0, 1), "RGB": (2, 3), "RGBA": (6, 4)}  # mode -> (PNG colour type, bytes per pixel)
_SUB = 1  # PNG filter type "sub": each byte minus the same channel of the pixel to its left


def encode(image: Image.Image) -> bytes | None:
    """``image`` (mode L, RGB or RGBA) as PNG bytes, or None for another mode."""
    if image.mode not in _COLOR_TYPE:
        return None
    color_type, bpp = _COLOR_TYPE[image.mode]
    w, h = image.size
    flat = np.asarray(image).reshape(h, w * bpp)
    filtered = np.empty((h, 1 + w * bpp), np.uint8)
    filtered[:, 0] = _SUB
    filtered[:, 1 : 1 + bpp] = flat[:, :bpp]
    np.subtract(flat[:, bpp:], flat[:, :-bpp], out=filtered[:, 1 + bpp :])  # uint8: wraps mod 256
    idat = isal_zlib.compress(memoryview(filtered).cast("B"), 1)  # releases the GIL
    header = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return b"".join((_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", idat), _chunk(b"IEND", b"")))


def _chunk(tag: bytes, data: bytes) -> bytes:
    return b"".join(
        (struct.pack(">I", len(data)), tag, data, struct.pack(">I", zlib.crc32(data, zlib.crc32(tag))))
    )
