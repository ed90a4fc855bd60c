"""LoopThread: one asyncio event loop on a daemon thread of its own, for synchronous callers.

``asyncio.run`` refuses to start inside a thread whose loop is running, which is where
synchronous frameworks call an agent from (BrowserGym's sync Playwright keeps a loop running in
the main thread). A LoopThread runs coroutines on its own loop and blocks only the calling
thread, from any thread. Loop-bound resources (an HTTP client's connection pool, a semaphore)
stay on that one loop for its whole life: create them there with :meth:`LoopThread.call` and
close them there before :meth:`LoopThread.close`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop running on a daemon thread (``name``), started at construction.

    :meth:`run` blocks for a coroutine's result from any other thread; :meth:`arun` awaits it
    from another loop; :meth:`call` runs a plain function on the loop thread. :meth:`close`
    (idempotent; also the context manager's exit, and at interpreter exit for one never
    closed) cancels what is still running, shuts the loop down and joins the thread.
    """

    def __init__(self, name: str = "regionfocus-loop"):
        self._loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._closed = False
        started = threading.Event()
        # The thread holds the loop, not this object: an unclosed LoopThread can be collected.
        self._thread = threading.Thread(target=_serve, args=(self._loop, started), name=name, daemon=True)
        self._thread.start()
        started.wait()
        # At interpreter exit, or when the object is collected unclosed: the same shutdown.
        self._finalizer = weakref.finalize(self, _shutdown, self._loop, self._thread)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; its future, to wait on from any thread."""
        if self._closed:
            coro.close()  # never awaited: say nothing about it but the error below
            raise RuntimeError("LoopThread is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """``coro``'s result, blocking this thread until it is done (``timeout``: seconds, then
        the coroutine is cancelled and TimeoutError raised). From the loop's own thread it would
        wait for itself: refused."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LoopThread.run called from its own loop: await the coroutine instead")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except BaseException:  # a timeout, Ctrl-C in the waiting thread: stop the work too
            future.cancel()
            raise

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro`` run on this loop, awaited from another running loop."""
        future = self.submit(coro)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise

    def call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` run on the loop thread (a factory whose objects bind to the
        running loop, such as an HTTP client); its result or exception."""

        async def invoke() -> T:
            return fn(*args, **kwargs)

        return self.run(invoke())

    def close(self, before: Callable[[], Awaitable[Any]] | None = None) -> None:
        """Shut down: ``before()`` awaited on the loop first (close clients there), then every
        task still running cancelled, async generators and the default executor shut down, the
        loop stopped and closed, the thread joined. A second call does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.close called from its own loop")
        try:
            if before is not None:
                asyncio.run_coroutine_threadsafe(_awaited(before), self._loop).result()
        finally:
            self._finalizer()

    def __enter__(self) -> LoopThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(started.set)
    loop.run_forever()


async def _awaited(fn: Callable[[], Awaitable[Any]]) -> Any:
    return await fn()


async def _drain() -> None:
    loop = asyncio.get_running_loop()
    tasks = [t for t in asyncio.all_tasks(loop) if t is not asyncio.current_task()]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await loop.shutdown_asyncgens()
    await loop.shutdown_default_executor()


def _shutdown(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    if loop.is_closed():
        return
    if thread.is_alive() and loop.is_running():
        try:
            asyncio.run_coroutine_threadsafe(_drain(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
    loop.close()
