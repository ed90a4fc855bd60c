"""Chat backend over the OpenAI-compatible HTTP API (vLLM, SGLang, hosted APIs).

Transport only: the adapter has built the messages and resized the images; this module encodes
images as data URLs, spreads requests over one or more servers by load, bounds the requests in
flight, and retries what is worth retrying. The API key is read from an environment variable and
never appears in logs, exception text or repr.

Serving notes (docs/ARCHITECTURE.md §5): start vLLM with ``--generation-config vllm`` so the model's own
generation_config does not silently change sampling; this backend always sends ``temperature``
and ``max_tokens`` explicitly.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
import time
import weakref
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import KW_ONLY, dataclass
from typing import Any

from regionfocus.adapters.backends.base import (
    MAX_REPLY_BYTES,
    ChatResponse,
    Message,
    PreflightFailed,
    reply_cap,
    token_count,
)
from regionfocus.adapters.backends.encoding import ImageEncoder, LocalFiles
from regionfocus.adapters.backends.openai_replies import (
    classify_failure,
    completion_choices,
    completion_text,
    describe_failure,
)
from regionfocus.adapters.backends.openai_wire import ChatWire
from regionfocus.adapters.backends.retry import MAX_WAIT_S, Failure, Ledger, RetryPolicy
from regionfocus.adapters.backends.transport import client_options, key_problem, proxy_problem
from regionfocus.adapters.redact import (
    protect_http_logs,
    redact_text,
    redact_url,
    split_userinfo,
    url_secrets,
)
from regionfocus.model import Usage

log = logging.getLogger(__name__)

# The sample or task the running requests belong to (set per sample by the harnesses): sent as
# the routing key of vllm-router's sticky_least_loaded and consistent_hash (X-Session-ID) and
# sglang-router's manual policy (X-SMG-Routing-Key), so one sample's requests meet their
# screenshot again in one replica's prefix and encoder caches. Servers ignore both headers.
SESSION: ContextVar[str | None] = ContextVar("regionfocus_session", default=None)


@dataclass(eq=False)  # eq=False: an exception compares and hashes by identity
class BackendError(RuntimeError):
    """A chat call that failed for good. ``retryable``: whether the last failure was of a kind
    that was retried (timeouts, connection errors, 429, 5xx, malformed responses) until
    ``attempts`` ran out; ``status``: the last HTTP status, if any; ``reason``: what went wrong
    (credentials masked); ``retry_after``: the seconds a 429 asked for, if it did."""

    message: str
    _: KW_ONLY
    endpoint: str
    attempts: int
    status: int | None = None
    retryable: bool = False
    reason: str = ""
    retry_after: float | None = None
    hint_from: str = ""  # the header that asked for retry_after

    def __str__(self) -> str:
        return self.message


@dataclass
class _Endpoint:
    base_url: str  # as shown (records, logs, errors): credentials masked (regionfocus.adapters.redact)
    target: str = ""  # as requested: the user's URL without its userinfo
    auth: str | None = None  # the basic-auth header the userinfo stood for
    client: Any = None  # openai.AsyncOpenAI, bound to the event loop it was created in
    in_flight: int = 0
    served: int = 0


class OpenAIBackend(ChatWire):
    """:class:`regionfocus.adapters.backends.base.ChatBackend` over one or more OpenAI-compatible servers.

    ``base_urls``: e.g. ``["http://127.0.0.1:8000/v1"]``; each request goes to the server with
    the fewest requests in flight from this backend (ties in turn). ``max_in_flight`` bounds
    requests in flight across all servers. ``timeout`` (s) bounds each attempt end to end.
    ``max_retries``: further attempts after the first, with exponential backoff from ``backoff``
    seconds plus jitter, or the server's Retry-After on 429. ``image_format``: png (lossless,
    default), jpeg or webp at ``image_quality``. ``extra_body``: sent with every request (e.g.
    vLLM's ``{"top_k": 1}``). ``max_reply_bytes``: the most a reply's body (an answer or an error
    page) may hold after decompression; past it the attempt fails
    (:class:`~regionfocus.adapters.backends.base.ReplyTooLarge`, retried like a malformed body),
    counted as it is read, never buffered first.

    A reply is an answer only when the model finished it (``finish_reason`` ``stop`` or
    ``tool_calls``) and it holds text or a tool call: a cut reply, or ``content: null``, is a
    failed attempt (:class:`~regionfocus.adapters.backends.base.UnfinishedReply`), retried like a
    malformed one, then a :class:`BackendError`.

    ``local_media_dir`` (or :meth:`use_local_media`): the local transport, for a client on the
    server's machine. Each image is written once under that folder (``local_format`` bmp:
    uncompressed, or png) and sent as a ``file://`` URL, which vLLM reads when started with
    ``--allowed-local-media-path`` naming a folder that holds it. A server that refuses the
    URL (HTTP 400) gets the request again with data URLs; when that goes through, the backend
    sends data URLs from then on (logged once). An image that cannot be written (a full or
    read-only folder: any OSError) travels as a data URL in its request (logged once).

    Credentials in a base URL (``https://user:pass@host/v1``, ``?api_key=...``) are used for the
    requests and masked everywhere a URL is shown: ``usage.endpoint``, :class:`BackendError`,
    log lines, ``repr`` (:mod:`regionfocus.adapters.redact`).

    Each request's usage carries ``encode_s`` (CPU seconds this request spent encoding or
    writing its images; 0 when every image was already encoded for an earlier request) and
    ``image_bytes`` (bytes of its images as sent: data URL characters or file sizes). Once an
    image part is encoded it is replaced, in the caller's message, by its ``image_url`` part,
    so the PIL image can be freed while the request waits for its answer.
    """

    def __init__(
        self,
        base_urls: list[str] | str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        max_in_flight: int = 32,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        image_format: str = "png",
        image_quality: int = 90,
        extra_body: dict[str, Any] | None = None,
        local_media_dir: str | None = None,
        local_format: str = "bmp",
        max_reply_bytes: int = MAX_REPLY_BYTES,
        max_wait: float = MAX_WAIT_S,
    ) -> None:
        urls = [base_urls] if isinstance(base_urls, str) else list(base_urls)
        if not urls or not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in urls):
            shown = [redact_url(u) if isinstance(u, str) else u for u in urls]
            raise ValueError(f"base_urls must be one or more http(s) URLs; got {shown!r}")
        if not model:
            raise ValueError("model must be a non-empty model id (as the server lists it in /v1/models)")
        if timeout <= 0 or max_in_flight < 1 or max_retries < 0 or backoff < 0 or max_reply_bytes < 1:
            raise ValueError(
                f"need timeout > 0, max_in_flight >= 1, max_retries >= 0, backoff >= 0, max_reply_bytes >= 1; "
                f"got timeout={timeout}, max_in_flight={max_in_flight}, max_retries={max_retries}, "
                f"backoff={backoff}, max_reply_bytes={max_reply_bytes}"
            )
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_in_flight = int(max_in_flight)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_wait = float(max_wait)  # the longest wait a server may ask for (--max-retry-wait)
        self.sleep = asyncio.sleep  # how waits are spent (tests pass a recorder)
        self.extra_body = dict(extra_body or {})
        self.max_reply_bytes = int(max_reply_bytes)
        self.encoder = ImageEncoder(image_format, image_quality)
        self.local: LocalFiles | None = None
        self._local_ok = True
        self._write_warned = False
        self._local_urls: OrderedDict[int, tuple[weakref.ref, str]] = OrderedDict()
        self._local_lock = threading.Lock()
        self._local_size: dict[str, int] = {}
        # Running totals over every request answered (benchmarks read them).
        self.sent = {"requests": 0, "image_bytes": 0, "encode_s": 0.0}
        if local_media_dir is not None:
            self.use_local_media(local_media_dir, local_format)
        # vLLM and SGLang accept any key when started without --api-key; "EMPTY" is their convention.
        self._api_key = os.environ.get(api_key_env) or "EMPTY"
        problem = key_problem(api_key_env, self._api_key) or next(
            filter(None, map(proxy_problem, urls)), None
        )
        if problem:
            raise ValueError(problem)
        self._secret = self._api_key if self._api_key != "EMPTY" else None
        self._endpoints = [_endpoint(url) for url in urls]
        # Passwords and query-string keys of the URLs, masked like the API key wherever they
        # turn up alone; the HTTP stack's own loggers get the same filter.
        self._secrets = [s for url in urls for s in url_secrets(url)]
        if self._secret:
            self._secrets.append(self._secret)
        protect_http_logs(self._secrets)
        self._turn = itertools.count()
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        urls = [e.base_url for e in self._endpoints]
        return f"OpenAIBackend(base_urls={urls!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    @property
    def endpoints(self) -> list[str]:
        return [e.base_url for e in self._endpoints]

    def served(self) -> dict[str, int]:
        """Requests answered successfully per base URL."""
        return {e.base_url: e.served for e in self._endpoints}

    # -- public API ------------------------------------------------------------------------------
    async def complete(
        self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0, **sampling: Any
    ) -> ChatResponse:
        """One chat completion. ``usage.latency_s`` is the wall time of the whole call (queueing
        and retries included); ``usage.endpoint`` the base URL that answered. Raises
        :class:`BackendError` once retries are spent or on a non-retryable 4xx."""
        options = {"max_tokens": max_tokens, "temperature": temperature, **sampling}
        text, usage = await self._send(messages, options, completion_text)
        return ChatResponse(text=text, usage=usage)

    async def complete_n(
        self,
        messages: list[Message],
        *,
        n: int,
        max_tokens: int = 512,
        temperature: float = 1.0,
        logprobs: bool = True,
        **sampling: Any,
    ) -> tuple[list[tuple[str, list[float] | None]], Usage]:
        """``n`` completions of one request (the API's ``n``), each with its tokens'
        log-probabilities when ``logprobs`` and the server gives them (else None). One usage
        for the request. Retries and errors as :meth:`complete`."""
        if n < 1:
            raise ValueError(f"complete_n: n must be >= 1, got {n}")
        extra = {"n": int(n), **({"logprobs": True} if logprobs else {}), **sampling}
        options = {"max_tokens": max_tokens, "temperature": temperature, **extra}
        return await self._send(messages, options, completion_choices)

    async def _send(self, messages: list[Message], options: dict[str, Any], parse: Any) -> tuple[Any, Usage]:
        """Build the body (images encoded in a worker thread), send it with retries, and fall
        back from file:// to data URLs once when the server refuses local files."""
        started = time.perf_counter()
        local = self.local is not None and self._local_ok
        content, stats = await asyncio.to_thread(self._content, messages, options, local)
        try:
            try:
                parsed, usage = await self._create(content, parse, started)
            except BackendError as e:
                if not (stats.files and e.status == 400):
                    raise
                # Only a request that goes through with data URLs shows that file:// was what
                # the server refused (vLLM without --allowed-local-media-path answers 400).
                content, again = await asyncio.to_thread(self._content, messages, options, False)
                stats.encode_s += again.encode_s
                stats.image_bytes = again.image_bytes
                parsed, usage = await self._create(content, parse, started)
                if self._local_ok:
                    self._local_ok = False
                    log.warning(
                        "the server refused images as file:// URLs (HTTP 400: %s) and accepted data URLs; "
                        "sending data URLs from now on. Start vLLM with --allowed-local-media-path %s "
                        "to use the local transport.",
                        e,
                        self.local.folder.parent if self.local else "",
                    )
        finally:
            if self.local is not None:
                for url in stats.files:
                    self.local.release(url)
        usage.encode_s = round(stats.encode_s, 6)
        usage.image_bytes = stats.image_bytes
        self.sent["requests"] += 1
        self.sent["image_bytes"] += stats.image_bytes
        self.sent["encode_s"] += stats.encode_s
        return parsed, usage

    async def _create(self, content: bytes, parse: Any, started: float) -> tuple[Any, Usage]:
        """One request with retries; ``parse(completion)`` runs inside the retry (a malformed
        body is retried). Returns (parsed, usage).

        tenacity owns the loop (stop after ``max_retries`` more attempts, the wait, the sleep);
        each attempt picks its server anew, so a dead replica is routed around. The SDK's own
        retries cannot do that (each client repeats against its one base URL): they stay off.
        The body is posted through the client's documented ``post``, serialised once: ``create``
        walks every message part with typing introspection, ~20 ms of CPU per request with
        images, then escapes every base64 character (benchmarks/client_cpu.py)."""
        from openai.types.chat import ChatCompletion

        semaphore = self._bind_loop()
        headers = {"Content-Type": "application/json"}
        if (session := SESSION.get()) is not None:
            headers |= {"X-Session-ID": session, "X-SMG-Routing-Key": session}
        options = {"timeout": self.timeout, "headers": headers}
        ledger = Ledger()
        policy = RetryPolicy(self.max_retries, self.max_wait, sleep=self.sleep)  # read per call
        loop = policy.loop("chat completion", _as_failure, ledger, delay=self._delay)
        try:
            async for attempt in loop:  # ends in a return, or tenacity re-raises the last failure
                with attempt:
                    ledger.attempts += 1
                    endpoint = None
                    try:
                        async with semaphore:
                            endpoint = self._pick()
                            endpoint.in_flight += 1
                            try:
                                post = endpoint.client.post(
                                    "/chat/completions",
                                    cast_to=ChatCompletion,
                                    content=content,
                                    options=options,
                                )
                                completion = await asyncio.wait_for(post, timeout=self.timeout)
                            finally:
                                endpoint.in_flight -= 1
                        parsed = parse(completion)
                    except Exception as exc:  # classified; cancellation (a BaseException) goes through
                        where = endpoint.base_url if endpoint else self._endpoints[0].base_url
                        raise self._failure(exc, where, ledger.attempts) from None
                    endpoint.served += 1
                    usage = getattr(completion, "usage", None)
                    return parsed, Usage(
                        latency_s=time.perf_counter() - started,
                        prompt_tokens=token_count(getattr(usage, "prompt_tokens", None)),
                        completion_tokens=token_count(getattr(usage, "completion_tokens", None)),
                        endpoint=endpoint.base_url,
                        **ledger.usage_fields(),
                    )
        except BackendError as e:
            if ledger.too_long is not None:
                e.message += policy.refused_wait(ledger)
            raise
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _failure(self, exc: Exception, where: str, attempts: int) -> BackendError:
        """``exc`` classified, credentials masked; raised ``from None``: the chained openai error
        carries the request, headers included."""
        failure = classify_failure(exc)
        reason = self._redact(describe_failure(exc, self.timeout, where))
        message = f"chat completion failed after {attempts} attempt(s) at {where}: {reason}"
        return BackendError(
            message,
            endpoint=where,
            attempts=attempts,
            status=failure.status,
            retryable=failure.retry,
            reason=reason,
            retry_after=failure.hint,
            hint_from=failure.hint_from,
        )

    async def preflight(self) -> None:
        """Before the first sample: every server answers ``GET /models`` (one retry after a
        transport failure or a 5xx, each within seconds) and lists the model. Raises
        :class:`~regionfocus.adapters.backends.base.PreflightFailed` naming the server and
        the cause."""
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient

        for endpoint in self._endpoints:
            client = AsyncOpenAI(
                base_url=endpoint.target,
                api_key=self._api_key,
                max_retries=0,
                timeout=min(self.timeout, 15.0),
                default_headers={"Authorization": endpoint.auth} if endpoint.auth else None,
                http_client=DefaultAsyncHttpxClient(**client_options(endpoint.target)),
            )
            try:
                served = await self._listed(client, endpoint.base_url)
            finally:
                await client.close()
            if self.model not in served:
                shown = ", ".join(sorted(served)[:8]) or "none"
                raise PreflightFailed(
                    f"the server at {endpoint.base_url} does not serve model {self.model!r} (it lists: "
                    f"{self._redact(shown)}); check --model"
                )

    async def _listed(self, client: Any, where: str) -> set[str]:
        for attempt in (1, 2):
            try:
                page = await client.models.list()
                return {str(m.id) for m in page.data}
            except Exception as exc:  # noqa: BLE001 - named in one line
                failure = classify_failure(exc)
                status = failure.status
                if attempt == 1 and failure.retry and (status is None or status >= 500):
                    continue
                reason = self._redact(describe_failure(exc, min(self.timeout, 15.0), where))
                if status in (401, 403):
                    raise PreflightFailed(
                        f"the server at {where} refused the API key in {self.api_key_env} ({reason})"
                    ) from None
                if status is None:
                    raise PreflightFailed(f"the server at {where} cannot be reached: {reason}") from None
                raise PreflightFailed(f"the server at {where} refused GET /models: {reason}") from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        if self.local is not None:
            self.local.close()
            self._local_urls.clear()
        for endpoint in self._endpoints:
            if endpoint.client is not None:
                await endpoint.client.close()
                endpoint.client = None
        self._semaphore = self._loop = None

    async def __aenter__(self) -> OpenAIBackend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- internals -------------------------------------------------------------------------------
    def _bind_loop(self) -> asyncio.Semaphore:
        """The semaphore and HTTP clients of the running event loop. Both are loop-bound (the
        clients pool connections on it), and sync facades run one ``asyncio.run`` per call, so a
        new loop gets fresh ones; the old loop's connections went away with it."""
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient

        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore = asyncio.Semaphore(self.max_in_flight)
            self._loop = loop
            for endpoint in self._endpoints:
                # max_retries=0: the retries are _create's, which re-pick the server per attempt.
                endpoint.client = AsyncOpenAI(
                    base_url=endpoint.target,
                    api_key=self._api_key,
                    max_retries=0,
                    timeout=self.timeout,
                    default_headers={"Authorization": endpoint.auth} if endpoint.auth else None,
                    # The SDK's own client (its limits, redirects, proxies from the environment)
                    # with the reply cap hooked in: a body is counted as httpx decodes it.
                    http_client=DefaultAsyncHttpxClient(
                        event_hooks={"response": [reply_cap(self.max_reply_bytes)]},
                        **client_options(endpoint.target),  # no proxy for this machine
                    ),
                )
        return self._semaphore

    def _pick(self) -> _Endpoint:
        """The endpoint with the fewest requests in flight; ties go round-robin."""
        n = len(self._endpoints)
        start = next(self._turn) % n
        order = [self._endpoints[(start + i) % n] for i in range(n)]
        return min(order, key=lambda e: e.in_flight)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """The wait before attempt ``attempt + 1``: what the server asked (a wait past
        ``max_wait`` never gets here: the call fails at once), else exponential backoff."""
        if retry_after is not None:
            return max(retry_after, 0.0)
        return RetryPolicy(backoff=self.backoff, max_backoff=self.max_backoff).backoff_for(attempt)

    def _redact(self, text: str) -> str:
        """``text`` without the API key, URL credentials or secret query values."""
        return redact_text(text, self._secrets)


def _endpoint(url: str) -> _Endpoint:
    """One server: its URL as shown, the URL requested (no userinfo: clients log and raise with
    the URL they hold) and the basic-auth header the userinfo stood for."""
    url = url.rstrip("/")
    target, auth = split_userinfo(url)
    return _Endpoint(base_url=redact_url(url), target=target, auth=auth)


def _as_failure(exc: BaseException) -> Failure:
    """A failed attempt (a :class:`BackendError`) as the retry loop reads it; the wait line
    names the server that failed."""
    if not isinstance(exc, BackendError):
        return Failure(False)
    what = exc.reason.split(":", 1)[0] if exc.status is None else str(exc.status)
    return Failure(exc.retryable, exc.status, exc.retry_after, exc.hint_from, f"{what} at {exc.endpoint}")
