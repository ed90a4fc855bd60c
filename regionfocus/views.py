"""Views: a region of the screen shown larger, with the exact map back to screenshot pixels."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from PIL import Image

from .geometry import Box, ViewTransform, shift_box_inside
from .resample import lanczos


@dataclass
class View:
    """``image`` shows ``transform.box`` of the screenshot; view pixels map back through
    ``transform.view_to_screen``."""

    image: Image.Image
    transform: ViewTransform

    def describe(self) -> dict:
        return {"size": list(self.image.size), **self.transform.to_dict()}


class ViewSource(Protocol):
    """Something that can show a region of the current screen magnified. A static screenshot
    crops and upsamples; a live browser re-renders the region at a higher device scale."""

    async def view(self, box: Box, target: tuple[int, int]) -> View: ...


def zoom_scale(box: Box, target: tuple[int, int], max_zoom: float) -> float:
    """Uniform scale so the box fits ``target`` = (W, H) with one side reaching it; never below
    1 (the adapter downsizes anyway) and never above ``max_zoom``."""
    tw, th = target
    scale = min(tw / max(box.width, 1e-6), th / max(box.height, 1e-6))
    return max(1.0, min(scale, max_zoom))


Fit = Callable[[tuple[int, int]], tuple[int, int]]


def crop_view(
    image: Image.Image,
    box: Box,
    target: tuple[int, int],
    max_zoom: float = 4.0,
    fit: Fit | None = None,
) -> View:
    """Crop ``box`` (shifted inside the image if it sticks out, snapped outward to whole pixels)
    and Lanczos-upsample it toward ``target``
    (:func:`regionfocus.resample.lanczos`: within 40 dB PSNR of Pillow's).

    ``fit``: (W, H) -> the (W, H) the model actually sees for an image of that size (a model's
    ``input_size``). The view is then resampled once, straight to that size, instead of being
    upsampled here and resampled again by the adapter (a second full-size resample of every
    view, ~50 ms each at 4K). The transform is built from the integer crop and the actual
    output size (per axis), so mapping a view pixel back is exact rather than approximately right.
    """
    w, h = image.size
    # A box past an edge (a focal point or an element off the screen) is shifted inside first,
    # as the proposers do, then snapped: the crop always holds at least one pixel of the image.
    box = shift_box_inside(box, (w, h))
    left, top = min(math.floor(box.left), w - 1), min(math.floor(box.top), h - 1)
    right, bottom = max(left + 1, min(w, math.ceil(box.right))), max(top + 1, min(h, math.ceil(box.bottom)))
    crop_box = Box(left, top, right, bottom)
    scale = zoom_scale(crop_box, target, max_zoom)
    out_w, out_h = max(1, round(crop_box.width * scale)), max(1, round(crop_box.height * scale))
    if fit is not None:
        out_w, out_h = fit((out_w, out_h))
    crop = image.crop((left, top, right, bottom))
    if (out_w, out_h) != crop.size:
        crop = lanczos(crop, (out_w, out_h))
    transform = ViewTransform(crop_box, out_w / crop_box.width, out_h / crop_box.height)
    return View(crop, transform)


class StaticViews:
    """Views of a fixed screenshot (ScreenSpot-Pro, or any offline image). ``fit``: see
    :func:`crop_view`."""

    def __init__(self, image: Image.Image, max_zoom: float = 4.0, fit: Fit | None = None):
        self.image = image
        self.max_zoom = max_zoom
        self.fit = fit

    async def view(self, box: Box, target: tuple[int, int]) -> View:
        # A 4K Lanczos upsample is 25-80 ms of CPU: off the event loop, so the views of a round
        # use every core (the kernel and Pillow release the GIL while resampling) and other
        # samples in flight keep being served.
        return await asyncio.to_thread(crop_view, self.image, box, target, self.max_zoom, self.fit)
