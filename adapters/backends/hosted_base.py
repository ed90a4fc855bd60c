"""What the three hosted-provider backends share (Anthropic Messages, Gemini, OpenAI Responses):
the API key from the provider's environment variable (never shown), a concurrency cap per
provider, the images of a request as base64 with their sizes, the retry loop, the check before
the first sample, and one line naming why a call failed.

Each backend speaks its provider's own API through the provider's official SDK, with the SDK's
own retries off (``max_retries=0``; google-genai's are off by default): every wait is ours
(:mod:`.retry`), capped, announced and counted. HTTP failures worth another try (408, 409, 429,
Anthropic's 529, 5xx, a lost connection) are retried after the wait the provider asks for; a
reply the model did not finish (a filter) is a failed attempt retried the same way, except a
reply that reached its output budget (:class:`~regionfocus.adapters.backends.base.LengthCut`),
which would stop at the same place again and fails at once, naming the budget.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from regionfocus.adapters.backends.base import (
    MAX_REPLY_BYTES,
    ChatResponse,
    LengthCut,
    Message,
    PreflightFailed,
    ReplyTooLarge,
    ToolCall,
    UnfinishedReply,
    finished_text,
    reply_cap,
    token_count,
)
from regionfocus.adapters.backends.encoding import ImageEncoder
from regionfocus.adapters.backends.retry import MAX_WAIT_S, Failure, Ledger, RetryPolicy, hint_from_headers
from regionfocus.adapters.backends.transport import (
    client_options,
    key_problem,
    proxy_problem,
    transport_cause,
)
from regionfocus.adapters.families.hosted_models import model_rule
from regionfocus.adapters.redact import protect_http_logs, redact_text, redact_url
from regionfocus.model import Usage

log = logging.getLogger(__name__)

# HTTP statuses worth another attempt (the providers' SDKs retry the same ones; 529 is
# Anthropic's "overloaded", inside 5xx).
RETRY_STATUS = frozenset({408, 409, 429})

# The check before the first sample answers within seconds or the server is as good as dead.
PREFLIGHT_TIMEOUT_S = 15.0


class HostedError(RuntimeError):
    """A hosted call that failed for good (credentials masked, the SDK's exception dropped: it
    carries the request, headers included). ``status``: the last HTTP status, if any."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


@dataclass
class Blob:
    """One image of a request as the wire carries it."""

    media_type: str
    data: str  # base64
    size: tuple[int, int]


@dataclass
class Wire:
    """A request as the provider's SDK takes it, with the sizes of the images it carries."""

    kwargs: dict[str, Any]
    sent: list[list[int]] = field(default_factory=list)
    encode_s: float = 0.0
    image_bytes: int = 0


@dataclass
class Read:
    """A finished reply: its prose, its tool calls (as data) and its usage fields."""

    text: str
    calls: list[ToolCall]
    usage: dict[str, Any]


class HostedBackend:
    """The shared part of a hosted backend; subclasses set ``provider``, ``default_key_env``,
    ``default_base_url`` and implement ``make_client``, ``build`` (messages -> SDK arguments),
    ``call`` (one SDK request), ``read`` (SDK reply -> :class:`Read`, raising UnfinishedReply),
    ``status_failure`` (an SDK error -> :class:`Failure`) and ``check_model`` (the preflight's
    request).

    ``base_url``: as the provider's SDK takes it (``None``: the provider's own host).
    ``max_in_flight``: requests in flight at once (the provider's concurrency cap).
    ``max_retries``: further attempts after the first. ``max_wait``: the longest wait a server
    may ask for (a longer one fails the call at once). ``detail``: OpenAI's image detail level.
    ``reasoning``: the model's reasoning or thinking setting (the provider's word; None: the
    rule's default). ``rule_model``: the model whose rule applies (default ``model``; for a new
    id no rule names). ``sleep``: how waits are spent (tests pass a recorder)."""

    provider = ""
    sdk_module = ""  # the provider's SDK package, imported when the model is built
    default_key_env: tuple[str, ...] = ()
    default_base_url = ""
    provider_name = ""  # the provider as a failed reply names it
    finished: frozenset[str] = frozenset()  # its stop reasons for a reply the model ended itself
    length: frozenset[str] = frozenset()  # those for a reply that reached its output budget

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        api_key_env: str | None = None,
        timeout: float = 120.0,
        max_in_flight: int = 8,
        max_retries: int = 4,
        image_format: str = "png",
        image_quality: int = 90,
        detail: str | None = None,
        reasoning: str | None = None,
        rule_model: str | None = None,
        max_wait: float = MAX_WAIT_S,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        if not model:
            raise ValueError(f"{self.provider}: --model is required (the provider's model name)")
        if base_url is not None and not (
            isinstance(base_url, str) and base_url.startswith(("http://", "https://"))
        ):
            raise ValueError(
                f"{self.provider}: --base-url must be an http(s) URL, got {redact_url(str(base_url))!r}"
            )
        if timeout <= 0 or max_in_flight < 1 or max_retries < 0 or not max_wait >= 0:
            raise ValueError(
                f"need timeout > 0, max_in_flight >= 1, max_retries >= 0, max_wait >= 0; got timeout={timeout}, "
                f"max_in_flight={max_in_flight}, max_retries={max_retries}, max_wait={max_wait}"
            )
        self.model = model
        self.base_url = base_url.rstrip("/") if base_url else None
        self.key_envs = (api_key_env,) if api_key_env else self.default_key_env
        self.timeout = float(timeout)
        self.max_in_flight = int(max_in_flight)
        self.max_retries = int(max_retries)
        self.max_wait = float(max_wait)
        self.max_reply_bytes = int(max_reply_bytes)
        self.sleep = asyncio.sleep
        self.encoder = ImageEncoder(image_format, image_quality)
        self.rule_model = rule_model
        self.rule = model_rule(self.provider, rule_model or model)
        self.detail = detail or self.rule.default_detail
        self.rule.image(self.detail)  # an unknown detail level fails here, naming the model
        self.reasoning = self.rule.reasoning_setting(reasoning)  # a word the model does not take fails here
        problem = proxy_problem(self.base_url or self.default_base_url)
        if problem:
            raise ValueError(f"{self.provider}: {problem}")
        self._key: str | None = None
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={self.endpoint!r}, "
            f"api_key_env={self.key_envs[0] if self.key_envs else None!r})"
        )

    @property
    def endpoint(self) -> str:
        return redact_url(self.base_url or self.default_base_url)

    # ---- the key and the client
    def api_key(self) -> str:
        """The key from the first set variable of ``key_envs``; ValueError naming them (or what
        is wrong with the key, never the key)."""
        if self._key is None:
            for name in self.key_envs:
                value = os.environ.get(name)
                if value:
                    problem = key_problem(name, value)
                    if problem:
                        raise ValueError(f"{self.provider}: {problem}")
                    self._key = value
                    protect_http_logs([value])
                    break
            else:
                raise ValueError(
                    f"{self.provider}: no API key: set {' or '.join(self.key_envs)} (or name another "
                    "variable with --api-key-env)"
                )
        return self._key

    def http_options(self) -> dict[str, Any]:
        """Keyword arguments of the httpx2 client under the SDK: the reply cap, and no proxy for
        a server on this machine."""
        return {
            "event_hooks": {"response": [reply_cap(self.max_reply_bytes)]},
            **client_options(self.base_url or self.default_base_url),
        }

    def make_client(self, timeout: float | None = None) -> Any:
        """The SDK client, its own retries off, with the request timeout ``timeout`` (default
        the backend's)."""
        raise NotImplementedError

    def sdk_client(self, client_cls: Any, http_cls: Any, timeout: float | None) -> Any:
        """A client of the Anthropic or OpenAI SDK (both generated alike): the key, the host
        (None: the SDK's default), retries off (the waits are ours), and the SDK's own httpx2
        client with the reply cap and no proxy for this machine."""
        return client_cls(
            api_key=self.api_key(),
            base_url=self.base_url,
            max_retries=0,
            timeout=timeout or self.timeout,
            http_client=http_cls(**self.http_options()),
        )

    def _bind_loop(self) -> asyncio.Semaphore:
        """The client and semaphore of the running loop (SDK clients pool connections on it)."""
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore = asyncio.Semaphore(self.max_in_flight)
            self._loop = loop
            self._client = self.make_client()
        return self._semaphore

    # ---- images
    def image_size_seen(self, size: tuple[int, int]) -> list[int]:
        w, h = self.rule.image(self.detail).seen(size)
        return [w, h]

    def blob(self, image: Image.Image, wire: Wire) -> Blob:
        """``image`` as base64, encoded once per image object (the round's requests share it);
        its size goes into the request's record."""
        c0 = time.thread_time()
        url = self.encoder.data_url(image)
        wire.encode_s += time.thread_time() - c0
        head, _, data = url.partition(",")
        wire.image_bytes += len(data)
        wire.sent.append([image.width, image.height])
        return Blob(head[len("data:") :].split(";")[0], data, image.size)

    # ---- the request
    def build(self, messages: Sequence[Message], options: dict[str, Any]) -> Wire:
        raise NotImplementedError

    async def call(self, client: Any, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def read(self, reply: Any, budget: int | None = None) -> Read:
        """The finished reply's prose, tool calls and usage fields; raises UnfinishedReply
        (LengthCut when it reached ``budget``) otherwise. With no text, a reply of tool calls is
        the empty answer and one of neither is no answer."""
        pieces, calls, reason = self.said(reply, budget)
        text = "\n".join(pieces) if pieces else ("" if calls else None)
        text = finished_text(text, reason, self.finished, self.provider_name, self.length, budget)
        return Read(text, calls, self.usage(reply))

    def said(self, reply: Any, budget: int | None) -> tuple[list[str], list[ToolCall], Any]:
        """The reply's text pieces, its tool calls and its stop reason (raising UnfinishedReply
        for a reply the provider marks unfinished in its own way)."""
        raise NotImplementedError

    def usage(self, reply: Any) -> dict[str, Any]:
        """The reply's usage fields (:func:`token_fields`)."""
        raise NotImplementedError

    def status_failure(self, exc: BaseException) -> Failure | None:
        """An SDK error that carries an HTTP status as a :class:`Failure`; None for any other."""
        status = getattr(exc, "status_code", None)
        if not isinstance(status, int):
            return None
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        should = headers.get("x-should-retry") if headers is not None else None
        retry = should == "true" or (should != "false" and (status in RETRY_STATUS or status >= 500))
        hint, where = hint_from_headers(headers) if retry else (None, "")
        return Failure(retry, status, hint, where, str(status))

    def classify(self, exc: BaseException) -> Failure:
        """What a failed attempt was (worth another try, its status, the wait asked for)."""
        if isinstance(exc, LengthCut):
            return Failure(False, label="length cut")
        if isinstance(exc, (UnfinishedReply, ReplyTooLarge)):
            return Failure(True, label="unfinished reply")
        failure = self.status_failure(exc)
        if failure is not None:
            return failure
        if self.is_transport(exc):
            return Failure(True, label="connection error")
        return Failure(False)

    def is_transport(self, exc: BaseException) -> bool:
        """A failure to reach the server or read its answer (a connection, a timeout)."""
        import httpx2

        return isinstance(exc, (httpx2.TransportError, TimeoutError, ConnectionError)) or (
            type(exc).__name__ in ("APIConnectionError", "APITimeoutError")
        )

    def describe(self, exc: BaseException) -> str:
        """One line: why the attempt failed (the real cause of a transport failure)."""
        status = self.classify(exc).status
        if status is None and self.is_transport(exc):
            cause = transport_cause(exc, self.base_url or self.default_base_url, self.timeout)
            if cause:
                return f"connection error: {cause}"
        if isinstance(exc, (UnfinishedReply, ReplyTooLarge)):
            return str(exc)
        message = getattr(exc, "message", None) or str(exc)
        what = f"HTTP {status}: " if status else ""
        return f"{what}{type(exc).__name__}: {message}"

    def request_body(self, messages: Sequence[Message], **options: Any) -> dict[str, Any]:
        """The arguments the SDK is called with for this request (images as base64): what
        ``show-prompt`` prints."""
        return self.build(messages, options).kwargs

    async def complete(
        self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0, **sampling: Any
    ) -> ChatResponse:
        """One request. Usage: latency of the whole call, tokens as the provider counts them
        (``prompt_tokens`` all input, cached included; ``reasoning_tokens`` inside
        ``completion_tokens``), the served model, each image's size as sent and as the model
        sees it, and the attempts and waits when there was more than one attempt."""
        started = time.perf_counter()
        options = {"max_tokens": max_tokens, "temperature": temperature, **sampling}
        wire = await asyncio.to_thread(self.build, messages, options)
        self.api_key()
        semaphore = self._bind_loop()
        ledger = Ledger()
        policy = RetryPolicy(self.max_retries, self.max_wait, sleep=self.sleep)
        try:
            async for attempt in policy.loop(self.provider, self.classify, ledger):
                with attempt:
                    ledger.attempts += 1
                    async with semaphore:
                        reply = await self.call(self._client, wire.kwargs)
                    read = self.read(reply, int(max_tokens))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - classified, masked and raised as one error type
            raise self._failure(e, ledger, policy) from None
        usage = Usage(
            latency_s=time.perf_counter() - started,
            endpoint=self.endpoint,
            encode_s=round(wire.encode_s, 6),
            image_bytes=wire.image_bytes,
            image_sent=wire.sent or None,
            image_seen=[self.image_size_seen(tuple(s)) for s in wire.sent] or None,
            **ledger.usage_fields(),
            **read.usage,
        )
        return ChatResponse(text=read.text, usage=usage, tool_calls=read.calls)

    def _failure(self, exc: Exception, ledger: Ledger, policy: RetryPolicy) -> HostedError:
        failure = self.classify(exc)
        reason = self._redact(self.describe(exc)[:400])
        return HostedError(
            f"{self.provider} call failed {ledger.describe()} at {self.endpoint}: {reason}"
            + policy.refused_wait(ledger),
            status=failure.status,
            retryable=failure.retry,
        )

    # ---- before the first sample
    async def check_model(self, client: Any) -> None:
        """One cheap request that fails unless the key is accepted and the model exists: the
        model lookup (Anthropic's and OpenAI's ``models.retrieve``)."""
        await client.models.retrieve(self.model)

    async def preflight(self) -> None:
        """Check, before the first sample, that the key is set and accepted, the server answers
        and knows the model: one request (a second only after a transport failure or a 5xx),
        each within :data:`PREFLIGHT_TIMEOUT_S`. Raises :class:`PreflightFailed` with one line
        naming the cause."""
        try:
            self.api_key()
        except ValueError as e:
            raise PreflightFailed(str(e)) from None
        client = self.make_client(timeout=min(self.timeout, PREFLIGHT_TIMEOUT_S))
        try:
            for attempt in (1, 2):
                try:
                    await self.check_model(client)
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001 - named in one line
                    failure = self.classify(e)
                    transient = failure.status is None or failure.status >= 500
                    if attempt == 1 and failure.retry and transient:
                        continue
                    raise PreflightFailed(self._preflight_reason(e, failure)) from None
        finally:
            await self.close_client(client)

    def _preflight_reason(self, exc: BaseException, failure: Failure) -> str:
        where = f"{self.provider} at {self.endpoint}"
        status = failure.status
        detail = self._redact(self.describe(exc))[:300]
        if status in (401, 403):
            return f"{where} refused the API key in {' or '.join(self.key_envs)} ({detail})"
        if status == 404:
            return f"{where} has no model {self.model!r} ({detail}); check --model"
        if status is None and self.is_transport(exc):
            return f"{where} cannot be reached: {detail.removeprefix('connection error: ')}"
        return f"{where} refused the model check for {self.model!r}: {detail}"

    def _redact(self, text: str) -> str:
        return redact_text(text, [self._key] if self._key else [])

    async def close_client(self, client: Any) -> None:
        await _close(client)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        self._semaphore = self._loop = None
        await self.close_client(client)


async def _close(client: Any) -> None:
    close = getattr(client, "close", None) or getattr(client, "aclose", None)
    if close is not None:
        result = close()
        if isinstance(result, Awaitable):
            await result


def token_fields(
    *, prompt: Any, cached: Any, completion: Any, reasoning: Any, model: str | None
) -> dict[str, Any]:
    """A reply's usage fields from the provider's counts, each a count or None (a count that is
    no count, NaN or -3 or "12", is None: a record's sums and the cost would carry it).
    ``prompt``: all input, cached included; ``completion``: all output, ``reasoning`` included."""
    return {
        "prompt_tokens": token_count(prompt),
        "cached_tokens": token_count(cached),
        "completion_tokens": token_count(completion),
        "reasoning_tokens": token_count(reasoning) or None,
        "model": model,
    }


def parts_of(message: Message) -> list[dict[str, Any]]:
    """A message's content as a list of parts (a plain string is one text part)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    raise ValueError(f"message content must be a string or a list of parts, got {type(content).__name__}")


def system_and_turns(
    messages: Sequence[Message], text: Callable[[str], Any], image: Callable[[Image.Image], Any]
) -> tuple[list[str], list[tuple[str, list[Any]]]]:
    """The system text of ``messages`` and their user and assistant turns, each part built in
    the provider's form by ``text`` or ``image`` (for the APIs that take the system text apart
    from the turns). A part of another kind, an image in a system message or another role is
    refused naming the message."""
    system: list[str] = []
    turns: list[tuple[str, list[Any]]] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        parts = parts_of(message)
        built: list[Any] = []
        for j, part in enumerate(parts):
            kind = part.get("type")
            if kind == "text":
                built.append(text(part["text"]))
            elif kind == "image":
                built.append(image(part["image"]))
            else:
                raise ValueError(f"message {i} part {j}: unsupported part type {kind!r}")
        if role == "system":
            if any(part["type"] != "text" for part in parts):
                raise ValueError(f"message {i}: a system message holds text only")
            system.extend(part["text"] for part in parts)
        elif role in ("user", "assistant"):
            turns.append((role, built))
        else:
            raise ValueError(f"message {i}: unsupported role {role!r}")
    return system, turns
