"""Stars must be pink, numbered, legible at 4K, modest at 500x400, and never touch the input."""

import numpy as np
import pytest
from PIL import Image

from regionfocus import Box, Point, draw_boxes, draw_landmarks
from regionfocus.landmarks import STAR_FILL, star_radius


def pink_mask(img: Image.Image) -> np.ndarray:
    a = np.asarray(img.convert("RGB")).astype(int)
    return np.abs(a - np.array(STAR_FILL)).sum(-1) < 30


def test_input_untouched_and_copy_returned():
    img = Image.new("RGB", (800, 600), (240, 240, 240))
    before = img.tobytes()
    out = draw_landmarks(img, [Point(100, 100)])
    assert img.tobytes() == before and out is not img
    assert pink_mask(out).sum() > 50


def test_star_centred_on_point_and_labelled():
    img = Image.new("RGB", (3840, 2160), "white")
    out = draw_landmarks(img, [Point(1000, 1000), Point(2000, 1500)], ["1", "2"])
    m = pink_mask(out)
    r = star_radius(img.size)
    ys, xs = np.nonzero(m[1000 - r : 1000 + r, 1000 - r : 1000 + r])
    assert abs(xs.mean() - r) < r * 0.25 and abs(ys.mean() - r) < r * 0.25
    # The label tag holds white text pixels (the number) near the star.
    tag = np.asarray(out)[1000 - 4 * r : 1000, 1000 : 1000 + 4 * r]
    assert (tag.min(-1) > 245).sum() > 30


def test_legible_on_4k_and_sensible_on_small():
    """The reference code's labels were a tiny bitmap font, illegible on 4K screens."""
    big, small = star_radius((3840, 2160)), star_radius((500, 400))
    assert big >= 30  # a star ~70 px across on 4K: still visible after downscaling to ~1 MP
    assert 8 <= small <= 14
    out = draw_landmarks(Image.new("RGB", (3840, 2160), "white"), [Point(500, 500)], ["12"])
    m = pink_mask(out)
    ys, xs = np.nonzero(m)
    assert ys.max() - ys.min() >= 2 * big  # star plus tag: a large, readable mark


def test_labels_default_to_numbers_and_length_checked():
    img = Image.new("RGB", (400, 300), "white")
    a = draw_landmarks(img, [Point(50, 50), Point(300, 200)])
    b = draw_landmarks(img, [Point(50, 50), Point(300, 200)], ["1", "2"])
    assert a.tobytes() == b.tobytes()
    with pytest.raises(ValueError, match="labels"):
        draw_landmarks(img, [Point(1, 1)], ["1", "2"])


def test_tag_flips_inside_at_edges():
    img = Image.new("RGB", (500, 400), "white")
    out = draw_landmarks(img, [Point(499, 0)], ["9"])
    assert pink_mask(out)[:, 400:].sum() > 0  # drawn, and the tag went left/down, inside


def test_draw_boxes_outlines():
    img = Image.new("RGB", (300, 200), "white")
    out = draw_boxes(img, [Box(10, 10, 100, 100)])
    assert np.asarray(out)[10, 50].tolist() != [255, 255, 255]
    assert np.asarray(out)[50, 50].tolist() == [255, 255, 255]
