"""Chat backend over the OpenAI-compatible HTTP API (vLLM, SGLang, hosted APIs).

Transport only: the adapter has built the messages and resized the images; this module encodes
images as data URLs, spreads requests over one or more servers by load, bounds the requests in
flight, and retries what is worth retrying. The API key is read from an environment variable and
never appears in logs, exception text or repr.

Serving notes (DESIGN.md §4): start vLLM with ``--generation-config vllm`` so the model's own
generation_config does not silently change sampling; this backend always sends ``temperature``
and ``max_tokens`` explicitly.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import json
import logging
import os
import random
import time
from dataclasses import dataclass
from typing import Any

from regionfocus.model import Usage

from ..backend import ChatResponse, Message
from .encoding import ImageEncoder

log = logging.getLogger(__name__)

# Parameters the chat-completions endpoint takes by name; any other sampling option (top_k,
# repetition_penalty, min_p, ... which vLLM and SGLang accept) travels in the request body.
_NAMED_PARAMS = frozenset(
    {
        "top_p",
        "seed",
        "stop",
        "n",
        "presence_penalty",
        "frequency_penalty",
        "logprobs",
        "top_logprobs",
        "logit_bias",
    }
)
_RETRY_STATUS = frozenset({408, 409, 429})
_MAX_RETRY_AFTER_S = 120.0


class BackendError(RuntimeError):
    """A chat call that failed for good. ``retryable``: whether the last failure was of a kind
    that was retried (timeouts, connection errors, 429, 5xx, malformed responses) until
    ``attempts`` ran out; ``status``: the last HTTP status, if any."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        attempts: int,
        status: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.attempts = attempts
        self.status = status
        self.retryable = retryable


class MalformedResponseError(Exception):
    """The server answered 2xx with something that is not a usable chat completion."""


@dataclass
class _Endpoint:
    base_url: str
    client: Any = None  # openai.AsyncOpenAI, bound to the event loop it was created in
    in_flight: int = 0
    served: int = 0


class OpenAIBackend:
    """:class:`adapters.backend.ChatBackend` over one or more OpenAI-compatible servers.

    ``base_urls``: e.g. ``["http://127.0.0.1:8000/v1"]``; each request goes to the server with
    the fewest requests in flight from this backend (ties in turn). ``max_in_flight`` bounds
    requests in flight across all servers. ``timeout`` (s) bounds each attempt end to end.
    ``max_retries``: further attempts after the first, with exponential backoff from ``backoff``
    seconds plus jitter, or the server's Retry-After on 429. ``image_format``: png (lossless,
    default), jpeg or webp at ``image_quality``. ``extra_body``: sent with every request (e.g.
    vLLM's ``{"top_k": 1}``).
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
    ) -> None:
        urls = [base_urls] if isinstance(base_urls, str) else list(base_urls)
        if not urls or not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in urls):
            raise ValueError(f"base_urls must be one or more http(s) URLs; got {base_urls!r}")
        if not model:
            raise ValueError("model must be a non-empty model id (as the server lists it in /v1/models)")
        if timeout <= 0 or max_in_flight < 1 or max_retries < 0 or backoff < 0:
            raise ValueError(
                f"need timeout > 0, max_in_flight >= 1, max_retries >= 0, backoff >= 0; got "
                f"timeout={timeout}, max_in_flight={max_in_flight}, max_retries={max_retries}, backoff={backoff}"
            )
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_in_flight = int(max_in_flight)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.extra_body = dict(extra_body or {})
        self.encoder = ImageEncoder(image_format, image_quality)
        # vLLM and SGLang accept any key when started without --api-key; "EMPTY" is their convention.
        self._api_key = os.environ.get(api_key_env) or "EMPTY"
        self._secret = self._api_key if self._api_key != "EMPTY" else None
        self._endpoints = [_Endpoint(base_url=url.rstrip("/")) for url in urls]
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
        self,
        messages: list[Message],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        **sampling: Any,
    ) -> ChatResponse:
        """One chat completion. ``usage.latency_s`` is the wall time of the whole call (queueing
        and retries included); ``usage.endpoint`` the base URL that answered. Raises
        :class:`BackendError` once retries are spent or on a non-retryable 4xx."""
        started = time.perf_counter()
        kwargs = await asyncio.to_thread(
            self.request_kwargs, messages, max_tokens=max_tokens, temperature=temperature, **sampling
        )
        text, usage = await self._create(kwargs, _completion_text, started)
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
        started = time.perf_counter()
        extra = {"n": int(n), **({"logprobs": True} if logprobs else {}), **sampling}
        kwargs = await asyncio.to_thread(
            self.request_kwargs, messages, max_tokens=max_tokens, temperature=temperature, **extra
        )
        return await self._create(kwargs, _completion_choices, started)

    async def _create(self, kwargs: dict[str, Any], parse: Any, started: float) -> tuple[Any, Usage]:
        """One request with retries; ``parse(completion)`` runs inside the retry (a malformed
        body is retried). Returns (parsed, usage)."""
        semaphore = self._bind_loop()
        attempts = 0
        while True:
            attempts += 1
            endpoint = None
            try:
                async with semaphore:
                    endpoint = self._pick()
                    endpoint.in_flight += 1
                    try:
                        completion = await asyncio.wait_for(
                            endpoint.client.chat.completions.create(**kwargs, timeout=self.timeout),
                            timeout=self.timeout,
                        )
                    finally:
                        endpoint.in_flight -= 1
                parsed = parse(completion)
            except BaseException as exc:  # noqa: BLE001 - classified below; cancellation re-raised
                if isinstance(exc, asyncio.CancelledError) or not isinstance(exc, Exception):
                    raise
                where = endpoint.base_url if endpoint else self._endpoints[0].base_url
                retryable, status, retry_after = _classify(exc)
                reason = self._redact(_describe(exc, self.timeout))
                if not retryable or attempts > self.max_retries:
                    raise BackendError(
                        f"chat completion failed after {attempts} attempt(s) at {where}: {reason}",
                        endpoint=where,
                        attempts=attempts,
                        status=status,
                        retryable=retryable,
                    ) from None  # the chained openai error carries the request, headers included
                delay = self._delay(attempts, retry_after)
                log.warning(
                    "chat completion attempt %d at %s failed (%s); retrying in %.2fs",
                    attempts,
                    where,
                    reason,
                    delay,
                )
                await asyncio.sleep(delay)
                continue
            endpoint.served += 1
            usage = getattr(completion, "usage", None)
            return parsed, Usage(
                latency_s=time.perf_counter() - started,
                prompt_tokens=getattr(usage, "prompt_tokens", None),
                completion_tokens=getattr(usage, "completion_tokens", None),
                endpoint=endpoint.base_url,
            )

    def request_kwargs(
        self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0, **sampling: Any
    ) -> dict[str, Any]:
        """The arguments of ``chat.completions.create`` for this request: named parameters, and
        everything else (vLLM's ``continue_final_message``, ``top_k``, ...) in ``extra_body``,
        which the client merges into the JSON body. Images are encoded here."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": self._to_wire(messages),
            "max_tokens": int(max_tokens),
            "temperature": float(temperature),
        }
        extra = dict(self.extra_body)
        for name, value in sampling.items():
            if name in _NAMED_PARAMS:
                kwargs[name] = value
            else:
                extra[name] = value
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    def request_body(self, messages: list[Message], **options: Any) -> dict[str, Any]:
        """The JSON body the server receives (``extra_body`` merged in, as the client sends it)."""
        kwargs = self.request_kwargs(messages, **options)
        return {**{k: v for k, v in kwargs.items() if k != "extra_body"}, **kwargs.get("extra_body", {})}

    async def aclose(self) -> None:
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
        from openai import AsyncOpenAI

        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore = asyncio.Semaphore(self.max_in_flight)
            self._loop = loop
            for endpoint in self._endpoints:
                # max_retries=0: ours are the only retries, so attempts and backoff are predictable.
                endpoint.client = AsyncOpenAI(
                    base_url=endpoint.base_url, api_key=self._api_key, max_retries=0, timeout=self.timeout
                )
        return self._semaphore

    def _pick(self) -> _Endpoint:
        """The endpoint with the fewest requests in flight; ties go round-robin."""
        n = len(self._endpoints)
        start = next(self._turn) % n
        order = [self._endpoints[(start + i) % n] for i in range(n)]
        return min(order, key=lambda e: e.in_flight)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), _MAX_RETRY_AFTER_S)
        # Exponential backoff with "equal jitter": half fixed, half random, so synchronized
        # failures of a concurrent round do not retry in lockstep.
        base = min(self.backoff * (2 ** (attempt - 1)), self.max_backoff)
        return base / 2 + random.uniform(0, base / 2)

    def _redact(self, text: str) -> str:
        if self._secret and self._secret in text:
            text = text.replace(self._secret, "***")
        return text

    def _to_wire(self, messages: list[Message]) -> list[dict[str, Any]]:
        """Our messages with every ``{"type": "image", "image": PIL}`` part as an image_url part."""
        wire = []
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or "role" not in message:
                raise ValueError(f"message {i} must be a dict with a 'role'; got {type(message).__name__}")
            content = message.get("content")
            if isinstance(content, list):
                parts = []
                for j, part in enumerate(content):
                    kind = part.get("type") if isinstance(part, dict) else None
                    if kind == "image":
                        url = self.encoder.data_url(part["image"])
                        parts.append({"type": "image_url", "image_url": {"url": url}})
                    elif kind in ("text", "image_url"):
                        parts.append(part)
                    else:
                        raise ValueError(f"message {i} part {j}: unsupported content part type {kind!r}")
                message = {**message, "content": parts}
            wire.append(message)
        return wire


def _completion_text(completion: Any) -> str:
    """The first choice's text; tool calls returned as structured data (a server started with a
    tool parser) are rendered back as the ``<tool_call>`` text the adapters parse."""
    if isinstance(completion, (str, bytes)) or not hasattr(completion, "choices"):
        raise MalformedResponseError(f"response is not a chat completion object: {str(completion)[:200]!r}")
    if not completion.choices:
        raise MalformedResponseError("response has no choices")
    message = getattr(completion.choices[0], "message", None)
    if message is None:
        raise MalformedResponseError("first choice has no message")
    text = message.content or ""
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if function is None:
            continue
        try:
            arguments = json.loads(function.arguments or "{}")
        except ValueError:
            arguments = function.arguments
        text += "<tool_call>" + json.dumps({"name": function.name, "arguments": arguments}) + "</tool_call>"
    return text


def _completion_choices(completion: Any) -> list[tuple[str, list[float] | None]]:
    """Every choice's text (as :func:`_completion_text` renders it) with its tokens'
    log-probabilities (None when the server sent none)."""
    first = _completion_text(completion)  # validates the shape
    out = []
    for i, choice in enumerate(completion.choices):
        if i == 0:
            text = first
        else:
            message = getattr(choice, "message", None)
            text = (getattr(message, "content", None) or "") if message is not None else ""
        content = getattr(getattr(choice, "logprobs", None), "content", None)
        lps = (
            [float(t.logprob) for t in content if getattr(t, "logprob", None) is not None]
            if content
            else None
        )
        out.append((text, lps or None))
    return out


def _classify(exc: Exception) -> tuple[bool, int | None, float | None]:
    """(retryable, HTTP status, Retry-After seconds) for an attempt's exception."""
    import openai

    if isinstance(exc, (asyncio.TimeoutError, openai.APIConnectionError)):  # includes APITimeoutError
        return True, None, None
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry_after = _retry_after(exc.response.headers) if status == 429 else None
        return (status in _RETRY_STATUS or status >= 500), status, retry_after
    if isinstance(exc, (MalformedResponseError, openai.APIResponseValidationError, ValueError)):
        # ValueError covers json.JSONDecodeError and pydantic validation of a 2xx body.
        return True, None, None
    return False, None, None


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def _describe(exc: Exception, timeout: float) -> str:
    import openai

    if isinstance(exc, (asyncio.TimeoutError, openai.APITimeoutError)):
        return f"timed out after {timeout:g}s"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {str(exc.message)[:300]}"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return f"connection error ({type(cause).__name__ if cause else 'unknown'})"
    if isinstance(exc, MalformedResponseError):
        return f"malformed response: {exc}"
    if isinstance(exc, json.JSONDecodeError):
        return f"malformed response: body is not valid JSON ({exc.msg} at char {exc.pos})"
    return f"{type(exc).__name__}: {str(exc)[:300]}"
