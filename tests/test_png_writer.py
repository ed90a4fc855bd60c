"""Our PNG writer: lossless for every mode it takes, a valid file for Pillow and OpenCV."""

from __future__ import annotations

import io
import random
import struct
import zlib

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from regionfocus.adapters.backends import png
from regionfocus.adapters.backends.encoding import encode_data_url


@settings(max_examples=40, deadline=None)
@given(
    w=st.integers(1, 70),
    h=st.integers(1, 50),
    mode=st.sampled_from(["L", "RGB", "RGBA"]),
    seed=st.integers(0, 999),
)
def test_round_trip_is_lossless(w, h, mode, seed):
    rng = random.Random(seed)
    bands = len(mode)
    image = Image.frombytes(mode, (w, h), rng.randbytes(w * h * bands))
    data = png.encode(image)
    back = Image.open(io.BytesIO(data))
    back.load()
    assert (back.mode, back.size) == (mode, (w, h))
    assert back.tobytes() == image.tobytes()


def test_chunks_and_checksums_are_valid_and_opencv_reads_it():
    image = Image.effect_noise((300, 200), 40).convert("RGB")
    data = png.encode(image)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    pos, tags = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        tag, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])
        assert crc == zlib.crc32(tag + body), tag
        tags.append(tag)
        pos += 12 + n
    assert tags == [b"IHDR", b"IDAT", b"IEND"]
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert np.array_equal(bgr[:, :, ::-1], np.asarray(image))


def test_modes_it_does_not_take_are_left_to_the_caller():
    assert png.encode(Image.new("P", (4, 4))) is None
    assert png.encode(Image.new("I;16", (4, 4))) is None
    url = encode_data_url(Image.new("I;16", (4, 4)), "png")  # falls back, still lossless PNG
    assert url.startswith("data:image/png;base64,")
