"""LoopThread: a synchronous face that works where a loop already runs (issue 36 item 2).

BrowserGym's sync Playwright keeps an event loop running in the thread that calls the agent, so
``asyncio.run`` fails there. These tests call the sync face from inside ``asyncio.run``, prove
concurrency with events (no sleeps), and check that a real HTTP client (the OpenAI SDK's, over
the local chat server) is made, used and closed on the loop thread, leaving no thread and no
"Event loop is closed" behind.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings

import pytest

from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.sync import LoopThread

from .chat_server import ChatServer


def _ours(name: str = "regionfocus-loop") -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def test_the_sync_face_works_inside_a_running_loop():
    async def where():
        return threading.current_thread(), asyncio.get_running_loop()

    with LoopThread() as lt:

        async def host():  # a framework's loop, calling the agent synchronously
            blocked = where()
            with pytest.raises(RuntimeError, match="running event loop"):
                asyncio.run(blocked)  # what a plain sync facade would do
            blocked.close()
            return lt.run(where())

        thread, loop = asyncio.run(host())
        assert thread is lt.thread and loop is lt.loop and thread is not threading.current_thread()


def test_callers_on_several_threads_run_concurrently_on_the_one_loop():
    with LoopThread() as lt:
        gate = lt.call(asyncio.Event)  # made on the loop it belongs to
        waiting = threading.Event()
        results: list[str] = []

        async def waiter():
            waiting.set()
            await gate.wait()
            return "released"

        async def opener():
            gate.set()
            return "opened"

        t = threading.Thread(target=lambda: results.append(lt.run(waiter())))
        t.start()
        waiting.wait()  # the waiter is in flight, its thread blocked in run()
        assert lt.run(opener()) == "opened"  # a second caller is served meanwhile
        t.join()
        assert results == ["released"]


def test_call_errors_timeout_and_misuse():
    with LoopThread() as lt:
        assert lt.call(threading.current_thread) is lt.thread
        with pytest.raises(ZeroDivisionError):
            lt.call(lambda: 1 / 0)

        cancelled = threading.Event()

        async def forever():
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

        with pytest.raises(TimeoutError):
            lt.run(forever(), timeout=0.05)
        cancelled.wait()  # the work stopped with the wait

        async def nested():
            inner = forever()
            try:
                lt.run(inner)
            except RuntimeError as e:
                return str(e)

        assert "its own loop" in lt.run(nested())
    assert lt.closed and not lt.thread.is_alive() and lt.loop.is_closed()
    lt.close()  # idempotent
    coro = forever()
    with pytest.raises(RuntimeError, match="closed"):
        lt.run(coro)


def test_close_cancels_what_still_runs_and_leaves_no_thread():
    before = len(_ours("rf-close-test"))
    lt = LoopThread("rf-close-test")
    started, cancelled = threading.Event(), threading.Event()

    async def stuck():
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    future = lt.submit(stuck())
    started.wait()
    lt.close()
    assert cancelled.is_set() and future.cancelled()
    assert len(_ours("rf-close-test")) == before == 0


async def test_arun_from_another_loop():
    with LoopThread() as lt:

        async def where():
            return threading.current_thread()

        assert await lt.arun(where()) is lt.thread


def test_an_http_client_is_made_used_and_closed_on_the_loop_thread(capfd):
    with ChatServer("Action: click(start_box='(5,5)')") as srv:
        lt = LoopThread("rf-http-test")
        backend = lt.call(OpenAIBackend, [srv.base_url], model="m")

        async def host():  # a framework's running loop, as BrowserGym's
            reply = lt.run(backend.complete([{"role": "user", "content": "hi"}]))
            return reply, backend._loop, [e.client for e in backend._endpoints]

        gc.collect()  # what earlier tests of this process left is theirs, not this client's
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reply, bound, clients = asyncio.run(host())
            assert "click" in reply.text and srv.stats.chat_requests == 1
            assert bound is lt.loop and all(c is not None for c in clients)
            lt.close(before=backend.aclose)
            assert all(e.client is None for e in backend._endpoints)
            del clients
            gc.collect()
        assert not _ours("rf-http-test") and lt.loop.is_closed()
    err = capfd.readouterr().err
    assert "Event loop is closed" not in err and "Exception ignored" not in err, err
    assert not [w for w in caught if issubclass(w.category, (ResourceWarning, RuntimeWarning))], caught
