"""Qwen-style ``smart_resize``: the exact size a Qwen2-VL / Qwen2.5-VL / Qwen3-VL model sees.

Sizes are (height, width) in ``smart_resize`` (the reference's argument order) and (W, H)
everywhere else (PIL's order). The adapter resizes the screenshot on the client to exactly
this size, so the server's own smart_resize is the identity on it and the answer's frame is
known.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image

from regionfocus.resample import bicubic


def smart_resize(
    height: int,
    width: int,
    factor: int = 28,
    min_pixels: int = 4 * 28 * 28,
    max_pixels: int = 16384 * 28 * 28,
) -> tuple[int, int]:
    """(height, width) in pixels, both multiples of ``factor``, area within
    [``min_pixels``, ``max_pixels``], aspect ratio kept as closely as possible; raises
    ValueError past 200:1.

    The ``ui-tars`` package's copy of qwen-vl-utils' ``smart_resize`` (Python's round(), half
    to even), with two additions: the arguments are checked (the package divides by zero on a
    0 side), and a side that a tiny ``max_pixels`` floors to 0 (a strip near 200:1) is kept at
    one ``factor``, as a 0 side is no image size. The sweep that showed the package equal to
    the rule this module used to spell out: BENCHMARKS.md, "Library or ours"."""
    from ui_tars.action_parser import smart_resize as reference

    if height <= 0 or width <= 0:
        raise ValueError(f"smart_resize: image size must be positive, got height={height} width={width}")
    if factor <= 0:
        raise ValueError(f"smart_resize: factor must be positive, got {factor}")
    if min_pixels > max_pixels:
        raise ValueError(f"smart_resize: min_pixels={min_pixels} exceeds max_pixels={max_pixels}")
    h_bar, w_bar = reference(height, width, factor, min_pixels, max_pixels)
    return max(factor, h_bar), max(factor, w_bar)


@dataclass(frozen=True)
class ResizeSpec:
    """A family's resize rule: ``factor`` and the pixel limits (all configurable), and ``then``,
    a second rule applied to the first one's result, for an evaluation that resizes twice
    (UI-Venus 1.5: qwen-vl-utils at factor 28, then the Qwen3-VL processor at factor 32)."""

    factor: int
    min_pixels: int
    max_pixels: int
    then: ResizeSpec | None = None

    def __post_init__(self) -> None:
        if self.factor <= 0 or self.min_pixels <= 0 or self.max_pixels <= 0:
            raise ValueError(f"resize: factor and pixel limits must be positive, got {self}")
        if self.min_pixels > self.max_pixels:
            raise ValueError(f"resize: min_pixels={self.min_pixels} exceeds max_pixels={self.max_pixels}")

    def model_size(self, size: tuple[int, int]) -> tuple[int, int]:
        """(W, H) the model sees for an image of ``size`` = (W, H)."""
        h, w = smart_resize(size[1], size[0], self.factor, self.min_pixels, self.max_pixels)
        return self.then.model_size((w, h)) if self.then is not None else (w, h)

    @property
    def last(self) -> ResizeSpec:
        """The rule that sets the final size (its factor is the model's token cell)."""
        return self.then.last if self.then is not None else self

    def identity(self) -> list[int]:
        """factor, min_pixels, max_pixels of each pass in turn (a run folder pins it)."""
        return [self.factor, self.min_pixels, self.max_pixels, *(self.then.identity() if self.then else [])]


@dataclass(frozen=True)
class Resized:
    """``image`` at the model's size; ``scale_x``/``scale_y`` are resized pixels per original
    pixel on each axis (they differ slightly: each side is rounded on its own)."""

    image: Image.Image
    scale_x: float
    scale_y: float

    def to_original(self, x: float, y: float) -> tuple[float, float]:
        """A point in resized-image pixels -> pixels of the image before resizing."""
        return x / self.scale_x, y / self.scale_y

    def to_resized(self, x: float, y: float) -> tuple[float, float]:
        return x * self.scale_x, y * self.scale_y


def resize_for_model(
    image: Image.Image,
    factor: int = 28,
    min_pixels: int = 4 * 28 * 28,
    max_pixels: int = 16384 * 28 * 28,
    *,
    spec: ResizeSpec | None = None,
) -> Resized:
    """``image`` resized (bicubic, as the Qwen processors do: :func:`regionfocus.resample.bicubic`)
    to its smart_resize size (``spec``'s, every pass of it, when given), RGB, with the exact
    per-axis scale. One resampling to the final size, also for a rule of two passes: the size,
    and so the answer's frame, is the evaluation's. An image already at that size is returned
    as is (RGB)."""
    w, h = image.size
    target = (spec or ResizeSpec(factor, min_pixels, max_pixels)).model_size((w, h))
    out = image if image.mode == "RGB" else image.convert("RGB")
    if target != (w, h):
        out = bicubic(out, target)
    return Resized(out, target[0] / w, target[1] / h)
