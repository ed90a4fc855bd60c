"""OpenAIBackend against a real local HTTP server (tests/chat_server.py): load spreading,
concurrency bounds, retries, timeouts, malformed answers, sampling sent, and the API key kept
out of logs and errors."""

from __future__ import annotations

import asyncio
import base64
import io
import itertools
import json
import logging
import time

import pytest
from PIL import Image

from regionfocus.adapters.backends import body_json
from regionfocus.adapters.backends.encoding import ImageEncoder, encode_data_url
from regionfocus.adapters.backends.openai_http import BackendError, OpenAIBackend
from tests.chat_server import ChatServer, Reply, request_images

KEY_ENV = "REGIONFOCUS_TEST_API_KEY"
SECRET = "sk-test-9f3c1e7a-DO-NOT-LEAK-42b8"


def user(text: str, *images: Image.Image) -> list[dict]:
    parts = [{"type": "image", "image": im} for im in images] + [{"type": "text", "text": text}]
    return [{"role": "user", "content": parts}]


def backend(*servers: ChatServer, **kw) -> OpenAIBackend:
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 5.0)
    return OpenAIBackend([s.base_url for s in servers], model="test-model", api_key_env=KEY_ENV, **kw)


@pytest.fixture
def server():
    with ChatServer() as srv:
        yield srv


async def test_reply_text_tokens_latency_and_endpoint(server):
    server.set_responder(Reply.text("Action: click(start_box='(10,20)')", delay=0.15))
    async with backend(server) as b:
        out = await b.complete(user("click the red square please", Image.new("RGB", (56, 28))))
    assert out.text == "Action: click(start_box='(10,20)')"
    # chat_server counts 5 words + 100 per image for the prompt, 2 words for the answer.
    assert out.usage.prompt_tokens == 105
    assert out.usage.completion_tokens == 2
    assert out.usage.latency_s >= 0.15  # the server's delay is in it (no upper bound: a loaded machine)
    assert out.usage.endpoint == server.base_url
    assert out.usage.error is None


async def test_sampling_is_sent_explicitly(server):
    async with backend(server, extra_body={"repetition_penalty": 1.0}) as b:
        await b.complete(user("a"))
        await b.complete(user("b"), max_tokens=77, temperature=0.7, top_p=0.9, seed=3, top_k=5)
    first, second = server.stats.bodies
    assert first["temperature"] == 0.0 and first["max_tokens"] == 512
    assert first["repetition_penalty"] == 1.0
    assert second["temperature"] == 0.7 and second["max_tokens"] == 77
    assert second["top_p"] == 0.9 and second["seed"] == 3 and second["top_k"] == 5


async def test_image_sent_losslessly_at_its_own_size(server):
    img = Image.effect_noise((83, 47), 60).convert("RGB")  # odd size: no resize allowed
    async with backend(server) as b:
        await b.complete(user("look", img))
    (got,) = request_images(server.stats.bodies[0])
    assert got.size == (83, 47)
    assert got.convert("RGB").tobytes() == img.tobytes()


async def test_body_with_spliced_images_is_the_json_the_server_parses(server):
    # Data URLs our encoder made go into the body unscanned; every other string (what a model
    # or a page wrote, a data URL from elsewhere) goes through the JSON encoder.
    tricky = 'quote " backslash \\ newline \n tab \t é 中 \u2028 @rf0@ </script>'
    img = Image.effect_noise((64, 40), 50).convert("RGB")
    other = Image.new("RGB", (9, 7), (200, 10, 10))
    buf = io.BytesIO()
    other.save(buf, "PNG")
    foreign_url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()

    def messages():
        m = user(tricky, img, img)
        m[0]["content"].append({"type": "image_url", "image_url": {"url": foreign_url}})
        return m

    async with backend(server) as b:
        expected = b.request_body(messages(), max_tokens=9)
        await b.complete(messages(), max_tokens=9)
    (body,) = server.stats.bodies
    assert body == expected
    assert body["messages"][0]["content"][2]["text"] == tricky
    got = [im.convert("RGB").tobytes() for im in request_images(body)]
    assert got == [img.tobytes(), img.tobytes(), other.tobytes()]
    spliced = body_json.dumps(expected)
    assert json.loads(spliced) == expected
    assert b"@rf0@" in spliced  # the prompt's own look-alike of a token is left alone


async def test_shared_screenshot_encoded_once_across_concurrent_requests(server):
    shot = Image.effect_noise((400, 300), 60).convert("RGB")
    crops = [shot.crop((i * 10, 0, i * 10 + 100, 100)) for i in range(6)]
    async with backend(server) as b:
        await asyncio.gather(*(b.complete(user("q", shot, c)) for c in crops))
        assert b.encoder.misses == 7  # the screenshot once, each crop once
        assert b.encoder.hits == 5
    urls = {server.stats.bodies[i]["messages"][0]["content"][0]["image_url"]["url"] for i in range(6)}
    assert len(urls) == 1


def test_encoder_never_serves_a_stale_entry_for_a_new_image_with_a_reused_id():
    enc = ImageEncoder(cache_size=4)
    first = Image.new("RGB", (20, 20), "red")
    url_red = enc.data_url(first)
    del first  # its id may be reused by the next image of the same size
    second = Image.new("RGB", (20, 20), "blue")
    url_blue = enc.data_url(second)
    assert url_blue != url_red
    assert Image.open(io.BytesIO(base64.b64decode(url_blue.split(",")[1]))).getpixel((0, 0)) == (0, 0, 255)


@pytest.mark.parametrize("fmt,mime", [("png", "image/png"), ("jpeg", "image/jpeg"), ("webp", "image/webp")])
def test_encode_formats(fmt, mime):
    img = Image.new("RGBA", (30, 10), (10, 200, 30, 255))
    url = encode_data_url(img, fmt, quality=80)
    assert url.startswith(f"data:{mime};base64,")
    assert Image.open(io.BytesIO(base64.b64decode(url.split(",")[1]))).size == (30, 10)


@pytest.mark.parametrize("quality", [95, 80])
def test_jpeg_is_the_bytes_pillow_writes(quality):
    # Encoded off the GIL by OpenCV, but the file must be the one Pillow makes at this quality.
    img = Image.effect_noise((301, 173), 70).convert("RGB")
    img.paste((250, 30, 120), (40, 40, 200, 90))
    url = encode_data_url(img, "jpeg", quality=quality)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality)
    assert base64.b64decode(url.split(",", 1)[1]) == buf.getvalue()


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="image_format"):
        ImageEncoder("gif")
    with pytest.raises(ValueError, match="base_urls"):
        OpenAIBackend(["localhost:8000"], model="m")


async def test_requests_in_flight_bounded():
    with ChatServer(latency=0.2) as srv:
        async with backend(srv, max_in_flight=3) as b:
            t0 = time.perf_counter()
            outs = await asyncio.gather(*(b.complete(user(f"q{i}")) for i in range(10)))
            elapsed = time.perf_counter() - t0
    assert len(outs) == 10 and srv.stats.chat_requests == 10
    assert srv.stats.max_in_flight == 3  # reached, never exceeded
    assert elapsed >= 0.2 * 4 * 0.9  # ceil(10 / 3) waves of 0.2 s


async def test_spread_across_servers_by_load():
    # The slow server keeps its requests in flight longer, so the least-loaded choice sends
    # most of the traffic to the fast one.
    with ChatServer(latency=0.6) as slow, ChatServer(latency=0.02) as fast:
        async with backend(slow, fast, max_in_flight=4) as b:
            outs = await asyncio.gather(*(b.complete(user(f"q{i}")) for i in range(24)))
            served = b.served()
    assert served[slow.base_url] + served[fast.base_url] == 24
    assert served[slow.base_url] >= 1 and served[fast.base_url] >= 3 * served[slow.base_url]
    assert {o.usage.endpoint for o in outs} == {slow.base_url, fast.base_url}


async def test_idle_servers_share_sequential_requests_in_turn():
    with ChatServer() as a, ChatServer() as c:
        async with backend(a, c) as b:
            for i in range(6):
                await b.complete(user(f"q{i}"))
    assert a.stats.chat_requests == 3 and c.stats.chat_requests == 3


async def test_429_retry_after_is_honoured(server):
    server.script(Reply.rate_limited(retry_after=0.4), Reply.text("fine"))
    async with backend(server, backoff=0.0) as b:
        out = await b.complete(user("q"))
    assert out.text == "fine"
    assert server.stats.statuses == [429, 200]
    assert out.usage.latency_s >= 0.4  # waited as told, not the (zero) backoff
    assert (out.usage.attempts, out.usage.waited_s) == (2, 0.4)  # counted in the call record


async def test_a_wait_past_the_cap_fails_at_once(server):
    """A day-long Retry-After is a quota, not a rate limit: one request, nothing slept, and the
    error names the wait and the cap (as OpenAI's own SDK refuses waits past its cap)."""
    server.script(Reply.rate_limited(retry_after=86400), Reply.text("fine"))
    slept: list[float] = []

    async def record(seconds: float) -> None:
        slept.append(seconds)

    async with backend(server) as b:
        b.sleep = record
        with pytest.raises(BackendError) as info:
            await b.complete(user("q"))
    assert server.stats.statuses == [429] and slept == []
    assert "asked to wait 86400 s (retry-after), past the 120-s cap" in str(info.value)


async def test_500_retried_then_success(server):
    server.script(Reply.server_error(500), Reply.server_error(503), Reply.text("recovered"))
    async with backend(server) as b:
        out = await b.complete(user("q"))
    assert out.text == "recovered"
    assert server.stats.statuses == [500, 503, 200]


async def test_persistent_500_fails_after_retries(server):
    server.set_responder(Reply.server_error(502))
    async with backend(server, max_retries=2) as b:
        with pytest.raises(BackendError, match="3 attempt") as info:
            await b.complete(user("q"))
    assert info.value.status == 502 and info.value.retryable
    assert server.stats.chat_requests == 3


async def test_other_4xx_not_retried(server):
    server.set_responder(Reply.client_error(400, "context too long"))
    async with backend(server) as b:
        with pytest.raises(BackendError, match="context too long") as info:
            await b.complete(user("q"))
    assert info.value.status == 400 and not info.value.retryable
    assert server.stats.chat_requests == 1


async def test_hang_cut_by_timeout_then_next_attempt_succeeds(server):
    server.script(Reply.hang(30), Reply.text("second try"))
    async with backend(server, timeout=0.5) as b:
        t0 = time.perf_counter()
        out = await b.complete(user("q"))
    assert out.text == "second try"
    assert time.perf_counter() - t0 >= 0.5  # the first attempt was waited for, then cut
    assert server.stats.chat_requests == 2


async def test_hang_every_time_is_an_error_and_the_run_goes_on(server):
    # A round's concurrent calls: one hangs on every attempt, the others answer. The failure is
    # an exception for that call only (the core records it); the rest complete.
    def responder(body):
        text = body["messages"][0]["content"][0]["text"]
        return Reply.hang(30) if text == "stuck" else Reply.text(f"re:{text}")

    server.set_responder(responder)
    async with backend(server, timeout=0.4, max_retries=1) as b:
        results = await asyncio.gather(
            b.complete(user("stuck")), b.complete(user("a")), b.complete(user("b")), return_exceptions=True
        )
    err, a, c = results
    assert isinstance(err, BackendError) and "timed out after 0.4s" in str(err) and err.attempts == 2
    assert a.text == "re:a" and c.text == "re:b"


@pytest.mark.parametrize(
    "bad", [Reply.invalid_json(), Reply.empty_choices()], ids=["invalid_json", "empty_choices"]
)
async def test_malformed_answers_error_after_retries(server, bad):
    server.set_responder(bad)
    async with backend(server, max_retries=2) as b:
        with pytest.raises(BackendError, match="malformed response") as info:
            await b.complete(user("q"))
    assert info.value.attempts == 3 and server.stats.chat_requests == 3


async def test_malformed_then_good_recovers(server):
    server.script(Reply.invalid_json(), Reply.empty_choices(), Reply.text("ok now"))
    async with backend(server) as b:
        assert (await b.complete(user("q"))).text == "ok now"


async def test_structured_tool_calls_rendered_as_tool_call_text(server):
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "computer_use", "arguments": '{"action": "left_click", "coordinate": [5, 6]}'},
    }
    server.set_responder(Reply(content=None, tool_calls=[call]))
    async with backend(server) as b:
        out = await b.complete(user("q"))
    assert out.text.startswith("<tool_call>") and out.text.endswith("</tool_call>")
    assert '"coordinate": [5, 6]' in out.text


async def test_connection_refused_is_retried_then_reported():
    with ChatServer() as srv:
        url = srv.base_url
    b = OpenAIBackend([url], model="m", api_key_env=KEY_ENV, max_retries=1, backoff=0.01, timeout=2)
    with pytest.raises(BackendError, match="connection error") as info:
        await b.complete(user("q"))
    assert info.value.attempts == 2
    await b.aclose()


async def test_a_dead_replica_is_routed_around_by_the_retry(caplog):
    """Each attempt picks its server anew: a call that first lands on a server that is gone
    is answered by the other one on its retry, and the retry names the dead one."""
    with ChatServer() as gone:
        dead = gone.base_url
    with ChatServer() as live:
        async with OpenAIBackend([dead, live.base_url], model="m", max_retries=1, backoff=0.0) as b:
            outs = [await b.complete(user(f"q{i}")) for i in range(4)]
            served = b.served()
    assert [o.text for o in outs] == ["ok"] * 4 and {o.usage.endpoint for o in outs} == {live.base_url}
    assert served == {dead: 0, live.base_url: 4} and live.stats.chat_requests == 4
    assert f"waiting 0 s: chat completion connection error at {dead}, retrying (retry 1 of 1)" in caplog.text


async def test_api_key_sent_but_never_logged_or_in_errors(monkeypatch, caplog):
    monkeypatch.setenv(KEY_ENV, SECRET)
    caplog.set_level(logging.DEBUG)  # includes openai's and httpx's own debug logs
    with ChatServer() as srv:
        # A hostile server echoing the key in its error must not leak it either.
        srv.script(Reply.server_error(500), Reply.client_error(401, f"Incorrect API key provided: {SECRET}"))
        b = backend(srv, max_retries=3)
        with pytest.raises(BackendError) as info:
            await b.complete(user("q"))
        await b.aclose()
    assert srv.stats.auth_headers == [f"Bearer {SECRET}"] * 2
    assert info.value.status == 401
    for text in (str(info.value), repr(info.value), repr(b), caplog.text):
        assert SECRET not in text
    assert "***" in str(info.value)
    assert caplog.text  # the retry was logged, just without the key
    assert info.value.__cause__ is None and info.value.__suppress_context__


async def test_unset_key_sends_empty_placeholder(monkeypatch, server):
    monkeypatch.delenv(KEY_ENV, raising=False)
    async with backend(server) as b:
        await b.complete(user("q"))
    assert server.stats.auth_headers == ["Bearer EMPTY"]


async def test_server_own_concurrency_limit_queues():
    # The test server's max_concurrency models a fixed batch size for benchmarks.
    with ChatServer(latency=0.1, max_concurrency=2) as srv:
        async with backend(srv, max_in_flight=8) as b:
            await asyncio.gather(*(b.complete(user(f"q{i}")) for i in range(8)))
    assert srv.stats.max_active == 2
    assert srv.stats.max_in_flight > 2


async def test_round_goes_on_when_one_call_hangs_and_records_it(server):
    """A RegionFocus round through the Qwen2.5-VL adapter over HTTP: the second request (one
    of the concurrent candidate requests) hangs past the timeout on every attempt; the round
    still finishes, the failure is in the trace, and the other candidates count."""
    from regionfocus import Query, RegionFocus
    from regionfocus.adapters import get_adapter

    arrivals = itertools.count(1)  # next() is atomic under the GIL: one request is number 2

    def responder(body):
        if next(arrivals) == 2:
            return Reply.hang(30)
        (image,) = request_images(body)
        args = {"action": "left_click", "coordinate": [image.width // 2, image.height // 2]}
        return Reply.text(
            f'<tool_call>{{"name": "computer_use", "arguments": {json.dumps(args)}}}</tool_call>'
        )

    server.set_responder(responder)
    async with backend(server, timeout=0.5, max_retries=0) as b:
        adapter = get_adapter("qwen2.5-vl", backend=b)
        result = await RegionFocus(adapter).refine(Image.new("RGB", (560, 420), "white"), Query("Click OK"))
    failed = [c for c in result.calls if c.error]
    assert len(failed) == 1 and failed[0].kind.startswith("candidate[") and "timed out" in failed[0].error
    assert len(result.candidates) == len(result.boxes) - 1 >= 1
    assert result.action is not None
    ok = [c for c in result.calls if not c.error]
    assert all(c.endpoint == server.base_url and c.prompt_tokens and c.latency_s > 0 for c in ok)


def test_one_backend_serves_successive_event_loops(server):
    # Sync facades (RegionFocusAgent.predict_sync) run one asyncio.run per call; the backend's
    # pooled connections and semaphore must follow the new loop.
    b = backend(server, max_retries=0)
    texts = [asyncio.run(b.complete(user(f"q{i}"))).text for i in range(3)]
    assert texts == ["ok"] * 3 and server.stats.chat_requests == 3
