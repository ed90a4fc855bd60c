"""True zoom: re-render a region of the live page at a higher scale through CDP.

``Page.captureScreenshot`` with ``clip = {x, y, width, height, scale}`` rasterises the region
anew at ``scale``, so text in the view is sharp rather than upsampled (docs/ARCHITECTURE.md §8; resizing
the device metrics and calling ``page.screenshot`` does not work because Playwright resets them).
CDP's clip is in *document* CSS px, so the visual viewport's page offset is added to the box,
which is in viewport CSS px = screenshot px (device scale 1).
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
from collections.abc import Callable

from PIL import Image
from playwright.async_api import CDPSession, Page

from regionfocus.geometry import Box, ViewTransform
from regionfocus.views import View, crop_view, zoom_scale

log = logging.getLogger(__name__)


def snap_box(box: Box, viewport: tuple[int, int]) -> Box:
    """``box`` grown outward to whole CSS px and clipped to the viewport (W, H), at least 1 px."""
    w, h = viewport
    left, top = max(0, int(box.left)), max(0, int(box.top))
    right = min(w, max(left + 1, -int(-box.right // 1)))
    bottom = min(h, max(top + 1, -int(-box.bottom // 1)))
    return Box(left, top, right, bottom)


class CdpZoom:
    """A :class:`regionfocus.views.ViewSource` over the current page of a browser environment.

    ``page``: returns the page to render (the environment follows new tabs, so it is looked up
    per call). ``fallback``: returns the last screenshot, cropped and upsampled if CDP fails
    (a crashed page), so a RegionFocus round never dies on a view. ``max_zoom`` caps the scale.
    """

    def __init__(
        self,
        page: Callable[[], Page],
        viewport: tuple[int, int],
        fallback: Callable[[], Image.Image | None] = lambda: None,
        max_zoom: float = 4.0,
    ):
        self._page = page
        self.viewport = viewport
        self._fallback = fallback
        self.max_zoom = max_zoom
        self._sessions: dict[int, tuple[Page, CDPSession]] = {}
        # Captures at different scales must not overlap: Chromium applies each capture's scale
        # to the page while it renders, and two in flight produce a tiled 1x image.
        self._lock = asyncio.Lock()
        self.failures = 0

    async def _session(self, page: Page) -> CDPSession:
        cached = self._sessions.get(id(page))
        if cached is not None and cached[0] is page:
            return cached[1]
        session = await page.context.new_cdp_session(page)
        self._sessions[id(page)] = (page, session)
        return session

    async def view(self, box: Box, target: tuple[int, int]) -> View:
        """``box`` (screenshot px) rendered so one side reaches ``target`` (W, H), scale in
        [1, max_zoom]; the transform is built from the actual image size, so it is exact."""
        region = snap_box(box, self.viewport)
        scale = zoom_scale(region, target, self.max_zoom)
        try:
            async with self._lock:
                image = await self._capture(region, scale)
        except Exception as e:  # noqa: BLE001 - a view must never end a round
            self.failures += 1
            last = self._fallback()
            log.warning("CDP zoom failed (%s: %s); cropping the last screenshot", type(e).__name__, e)
            if last is None:
                raise
            return crop_view(last, box, target, self.max_zoom)
        transform = ViewTransform(region, image.width / region.width, image.height / region.height)
        return View(image, transform)

    async def _capture(self, region: Box, scale: float) -> Image.Image:
        page = self._page()
        session = await self._session(page)
        metrics = await session.send("Page.getLayoutMetrics")
        vv = metrics.get("cssVisualViewport", {})
        clip = {
            "x": region.left + float(vv.get("pageX", 0.0)),
            "y": region.top + float(vv.get("pageY", 0.0)),
            "width": region.width,
            "height": region.height,
            "scale": scale,
        }
        shot = await session.send("Page.captureScreenshot", {"format": "png", "clip": clip})
        return Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")
