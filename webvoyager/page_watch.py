"""What a page cannot do to the run: the browser context's events and network, watched.

:class:`PageWatch` is the part of :class:`~.browser.BrowserEnv` that listens to its pages (new
tabs and popups followed, JavaScript dialogs answered and counted, downloads refused, crashes
noted) and routes every request through the network policy (documents fetched by us under a
size and time limit, redirects checked at each hop). A page that loops (dialogs or navigations
past the step's limits) or sends a refused document halts the task: :meth:`PageWatch._guard`
turns the step's waits into :class:`PageStopped`. It works on the environment's own state
(``page``, ``events``, ``config``, ``policy``, ``fetcher``, the step counters), set up by
``BrowserEnv.__init__``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from urllib.parse import urljoin, urlsplit

from playwright.async_api import Dialog, Download, Page, Request, Route
from playwright.async_api import Error as PlaywrightError

from .net_policy import refusal
from .page_fetch import PageRefused


class PageStopped(RuntimeError):
    """The page made the task impossible to go on with: a page or frame document refused (over
    the size limit, still arriving at the navigation timeout), a dialog loop, a navigation loop.
    The message says which, naming the page."""


class PageWatch:
    """The environment's pages and network, watched (see the module docstring)."""

    def _adopt(self, page: Page) -> None:
        if page in self._pages:
            return
        self._pages.append(page)
        page.on("dialog", self._on_dialog)
        page.on("download", self._on_download)
        page.on("framenavigated", self._on_frame_navigated)
        page.on("crash", lambda p=page: self._on_crash(p))
        page.on("close", lambda p=page: self._on_close(p))
        page.set_default_timeout(self.config.action_timeout_s * 1000)
        page.set_default_navigation_timeout(self.config.nav_timeout_s * 1000)
        if self.page is not None and page is not self.page:
            self.events.append({"type": "new_page", "url": page.url})
        self.page = page  # follow new tabs and popups

    def _on_page(self, page: Page) -> None:
        self._adopt(page)

    def _on_close(self, page: Page) -> None:
        if page in self._pages:
            self._pages.remove(page)
        if page is self.page:
            self.page = self._pages[-1] if self._pages else None
            self.events.append({"type": "page_closed", "url": page.url})

    def _on_crash(self, page: Page) -> None:
        self.events.append({"type": "crash", "url": page.url})
        if page is self.page:
            self.crashed = True

    async def _on_dialog(self, dialog: Dialog) -> None:
        policy = self.config.dialogs
        self._dialogs += 1
        if self._dialogs <= self.config.max_dialogs:  # a loop's thousands are counted, not kept
            self.events.append(
                {"type": "dialog", "kind": dialog.type, "message": dialog.message[:500], "handled": policy}
            )
        elif self._dialogs == self.config.max_dialogs + 1:
            self._halt(
                f"the page {page_url(dialog.page)} showed more than {self.config.max_dialogs} JavaScript "
                f"dialogs in one step, a dialog loop (the last: {dialog.type} {dialog.message[:100]!r})"
            )
        try:
            if policy == "accept" or dialog.type == "beforeunload":
                await dialog.accept()  # leaving a page must never hang the run
            else:
                await dialog.dismiss()
        except PlaywrightError:
            pass

    async def _on_download(self, download: Download) -> None:
        """A download the page started without navigating (``<a download>``): the context
        accepts none, so Chromium stops it; recorded, and cancelled in case it has not."""
        self.events.append({"type": "download", "url": download.url[:500], "handled": "refused"})
        with contextlib.suppress(PlaywrightError):
            await download.cancel()

    def _halt(self, reason: str) -> None:
        """End the task: the step under way stops waiting and reports ``reason``."""
        if self.stopped is None:
            self.stopped = reason
            self.events.append({"type": "stopped", "reason": reason[:1000]})
            self._stop.set()

    def _begin_step(self) -> None:
        self._dialogs = self._navigations = 0
        self._visited.clear()

    def _on_navigation(self, url: str) -> None:
        self._navigations += 1
        self._visited.append(url[:200])
        if self._navigations == self.config.max_navigations + 1:
            self._halt(
                f"the page {page_url(self.page)} navigated more than {self.config.max_navigations} times in "
                f"one step, a refresh or redirect loop (last: {' -> '.join(self._visited)})"
            )

    async def _guard(self, aw: Awaitable):
        """Await ``aw`` unless the page stops the task first (:meth:`_halt`): then it is
        cancelled and :class:`PageStopped` raised, so no step waits out a loop's timeouts."""
        if self.stopped is not None:
            if asyncio.iscoroutine(aw):
                aw.close()
            raise PageStopped(self.stopped)
        task = asyncio.ensure_future(aw)
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            stop.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        raise PageStopped(self.stopped)

    async def _route(self, route: Route, request: Request) -> None:
        document = request.resource_type == "document"  # a page or a frame
        main = document and _main_frame(request)
        if main and request.is_navigation_request():
            self._on_navigation(request.url)
        reason = refusal(request.url, self.policy, document=document)
        if reason is not None:
            await self._block(route, request.url, reason)
            return
        if document and urlsplit(request.url).scheme in ("http", "https"):
            await self._load_document(route, request, main)
            return
        await route.continue_()

    async def _load_document(self, route: Route, request: Request, main: bool) -> None:
        """Fetch a document ourselves, so that a redirect's target is checked before the
        browser follows it (Playwright routes only a redirect chain's first request), and so
        that what comes in is bounded (page_fetch.py; Playwright's ``route.fetch`` buffers a
        whole body, however long). A main frame's document refused ends the task."""
        try:
            doc = await self.fetcher.fetch(
                request.method, request.url, request.headers, request.post_data_buffer
            )
        except PageRefused as e:
            if main:
                self._halt(str(e))
            await self._block(route, request.url, e.reason)
            return
        location = doc.headers.get("location") if 300 <= doc.status < 400 else None
        if location:
            target = urljoin(request.url, location)
            reason = refusal(target, self.policy, document=True)
            if reason is not None:
                await self._block(route, target, f"redirect from {request.url[:200]}: {reason}")
                return
        with contextlib.suppress(PlaywrightError):  # the page or the task went away meanwhile
            await route.fulfill(status=doc.status, headers=doc.headers, body=doc.body)

    async def _block(self, route: Route, url: str, reason: str) -> None:
        self.events.append({"type": "blocked", "url": url[:500], "reason": reason})
        with contextlib.suppress(PlaywrightError):
            await route.abort("blockedbyclient")

    def _on_frame_navigated(self, frame) -> None:
        """A document that arrived where no document may come from (a chain of redirects
        checked only at its first hop): replaced by a blank page."""
        arrived = urlsplit(frame.url).scheme in ("http", "https", "file")  # not about: or an error page
        reason = refusal(frame.url, self.policy, document=True) if arrived else None
        if reason is not None:
            self.events.append({"type": "blocked", "url": frame.url[:500], "reason": reason})
            asyncio.ensure_future(_blank(frame))


async def _blank(frame) -> None:
    try:
        await frame.goto("about:blank")
    except PlaywrightError:
        pass  # the frame went away or navigated on: nothing left to replace


def _main_frame(request: Request) -> bool:
    try:
        return request.frame.parent_frame is None
    except PlaywrightError:  # a service worker's request belongs to no frame
        return False


def page_url(page: Page | None) -> str:
    return page.url[:300] if page is not None else "(no page)"


def short_error(e: BaseException, limit: int = 300) -> str:
    """The first line of a Playwright error (its call logs run to many lines)."""
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:limit]
