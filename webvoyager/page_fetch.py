"""The documents a task's browser loads, fetched by us with a limit on what comes in.

The browsing context fetches each page and frame itself (browser.py: a redirect's target is
checked before the browser follows it). Playwright's ``route.fetch`` would buffer a whole body
in its driver with no bound but the timeout: a document that never ends, or a download a click
starts, took the client to 4 GB in seconds. Here the body is streamed and counted after
decompression, and the fetch ends at the first of two limits: ``max_bytes`` (a page over it is
refused) and ``timeout_s`` for the whole document (one still arriving then is refused too).
Past the limit it holds at most what one network read inflates to (64 KB at gzip's 1:1032).

What the browser would have sent goes out unchanged: the request's method, headers (with the
context's cookies, which Chromium puts there) and body; redirects are not followed (the caller
checks each hop). The client keeps no cookies of its own: Chromium applies the response's
``Set-Cookie`` when the page is fulfilled, so the browser's jar stays the only one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx2

DEFAULT_MAX_PAGE_BYTES = 32 * 2**20  # a large page's HTML is a few MB; a frame's, less

# Headers that describe one hop or the encoded body: the page is handed to the browser decoded.
_DROPPED = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"})


class PageRefused(Exception):
    """The document was not let in; ``str(e)`` says why in one line, naming the page and the
    limit it broke."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"page {url[:300]} {reason}")
        self.url = url
        self.reason = reason


@dataclass(frozen=True)
class FetchedPage:
    """A whole document, decoded: ``headers`` as ``route.fulfill`` takes them (several
    ``Set-Cookie`` lines joined by newlines, other repeats by commas)."""

    status: int
    headers: dict[str, str]
    body: bytes


class PageFetcher:
    """One task's fetcher (its connections are pooled); :meth:`aclose` when the task ends."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_PAGE_BYTES, timeout_s: float = 30.0):
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        self.max_bytes = int(max_bytes)
        self.timeout_s = float(timeout_s)
        self._client = httpx2.AsyncClient(
            follow_redirects=False,
            trust_env=False,  # as the browser context: no proxy of the environment
            cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),  # keeps nothing
            timeout=httpx2.Timeout(self.timeout_s),
        )

    async def fetch(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> FetchedPage:
        """The document at ``url``, or :class:`PageRefused` (over ``max_bytes`` after
        decompression, still arriving after ``timeout_s``, or a network failure)."""
        try:
            return await asyncio.wait_for(self._fetch(method, url, headers, body), self.timeout_s)
        except asyncio.TimeoutError:
            raise PageRefused(
                url, f"was still arriving after {self.timeout_s:g} s (the navigation timeout)"
            ) from None
        except httpx2.HTTPError as e:
            raise PageRefused(url, f"could not be fetched: {type(e).__name__}: {_first_line(e)}") from None

    async def _fetch(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> FetchedPage:
        sent = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length")}
        request = self._client.build_request(method, url, headers=sent, content=body)
        response = await self._client.send(request, stream=True)
        try:
            declared = response.headers.get("content-length", "")
            if (
                declared.isdigit()
                and int(declared) > self.max_bytes
                and not response.headers.get("content-encoding")
            ):
                raise PageRefused(url, self._over(int(declared)))
            chunks, size = [], 0
            async for chunk in response.aiter_bytes():  # decoded: the size the browser would hold
                size += len(chunk)
                if size > self.max_bytes:
                    raise PageRefused(url, self._over(size, more=True))
                chunks.append(chunk)
        finally:
            await response.aclose()  # mid-body: the connection is dropped, the server stops
        return FetchedPage(response.status_code, _fulfil_headers(response.headers), b"".join(chunks))

    def _over(self, size: int, more: bool = False) -> str:
        size_text = "" if more else f"{size} bytes, "
        return f"is {size_text}over the limit of {self.max_bytes} bytes (--max-page-bytes)"

    async def aclose(self) -> None:
        await self._client.aclose()


def _fulfil_headers(headers: httpx2.Headers) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in headers.multi_items():
        key = name.lower()
        if key in _DROPPED:
            continue
        sep = "\n" if key == "set-cookie" else ", "
        out[key] = f"{out[key]}{sep}{value}" if key in out else value
    return out


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return (lines[0] if lines else "")[:200]
