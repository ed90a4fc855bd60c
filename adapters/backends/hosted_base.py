"""What the three hosted-provider backends share (Anthropic Messages, Gemini, OpenAI Responses):
the API key from the provider's environment variable (never shown), a concurrency cap per
provider, the images of a request as base64 with their sizes, and the retry of replies the model
did not finish.

Each backend speaks its provider's own API through the provider's official SDK; HTTP failures
(429 with Retry-After, Anthropic's 529 overloaded, 5xx) are retried by the SDK where the SDK
honours the provider's retry hint (Anthropic, OpenAI), by the backend where it does not (Gemini).
A reply the model did not finish (a token limit, a filter) is a failed attempt
(:class:`~regionfocus.adapters.backends.base.UnfinishedReply`), retried here like the others,
then raised: the core records the call as failed and the sample as partial.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from regionfocus.adapters.backends.base import ChatResponse, Message, UnfinishedReply
from regionfocus.adapters.backends.encoding import ImageEncoder
from regionfocus.adapters.families.hosted_models import model_rule
from regionfocus.adapters.redact import protect_http_logs, redact_text, redact_url
from regionfocus.model import Usage

log = logging.getLogger(__name__)

# The most a provider's retry hint is waited out per attempt: a hint of hours is a quota, not a
# rate limit, and a run should fail the call rather than hang.
MAX_RETRY_AFTER_S = 120.0


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


class HostedBackend:
    """The shared part of a hosted backend; subclasses set ``provider``, ``default_key_env``,
    ``default_base_url`` and implement ``build`` (messages -> SDK arguments), ``call`` (one SDK
    request) and ``read`` (SDK reply -> text, usage fields; raising UnfinishedReply).

    ``base_url``: as the provider's SDK takes it (``None``: the provider's own host).
    ``max_in_flight``: requests in flight at once (the provider's concurrency cap).
    ``max_retries``: further attempts after the first, for HTTP failures and unfinished replies.
    ``detail``: OpenAI's image detail level (others have none)."""

    provider = ""
    sdk_module = ""  # the provider's SDK package, imported when the model is built
    default_key_env: tuple[str, ...] = ()
    default_base_url = ""

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
    ) -> None:
        if not model:
            raise ValueError(f"{self.provider}: --model is required (the provider's model name)")
        if base_url is not None and not (
            isinstance(base_url, str) and base_url.startswith(("http://", "https://"))
        ):
            raise ValueError(
                f"{self.provider}: --base-url must be an http(s) URL, got {redact_url(str(base_url))!r}"
            )
        if timeout <= 0 or max_in_flight < 1 or max_retries < 0:
            raise ValueError(
                f"need timeout > 0, max_in_flight >= 1, max_retries >= 0; got timeout={timeout}, "
                f"max_in_flight={max_in_flight}, max_retries={max_retries}"
            )
        self.model = model
        self.base_url = base_url.rstrip("/") if base_url else None
        self.key_envs = (api_key_env,) if api_key_env else self.default_key_env
        self.timeout = float(timeout)
        self.max_in_flight = int(max_in_flight)
        self.max_retries = int(max_retries)
        self.encoder = ImageEncoder(image_format, image_quality)
        self.rule = model_rule(self.provider, model)
        self.detail = detail or self.rule.default_detail
        self.rule.image(self.detail)  # an unknown detail level fails here, naming the model
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
        """The key from the first set variable of ``key_envs``; ValueError naming them."""
        if self._key is None:
            for name in self.key_envs:
                value = os.environ.get(name)
                if value:
                    self._key = value
                    protect_http_logs([value])
                    break
            else:
                raise ValueError(
                    f"{self.provider}: no API key: set {' or '.join(self.key_envs)} (or name another "
                    "variable with --api-key-env)"
                )
        return self._key

    def make_client(self) -> Any:
        raise NotImplementedError

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

    def read(self, reply: Any) -> tuple[str, dict[str, Any]]:
        """(text, usage fields) of a finished reply; raises UnfinishedReply otherwise."""
        raise NotImplementedError

    def classify(self, exc: BaseException) -> tuple[bool, int | None, float | None]:
        """(retry here, HTTP status, seconds the provider asked to wait) for a failed attempt.
        Only failures the SDK did not already retry are retried here."""
        if isinstance(exc, UnfinishedReply):
            return True, None, None
        return False, getattr(exc, "status_code", None), None

    def request_body(self, messages: Sequence[Message], **options: Any) -> dict[str, Any]:
        """The arguments the SDK is called with for this request (images as base64): what
        ``show-prompt`` prints."""
        return self.build(messages, options).kwargs

    async def complete(
        self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0, **sampling: Any
    ) -> ChatResponse:
        """One request. Usage: latency of the whole call, tokens as the provider counts them
        (``prompt_tokens`` all input, cached included), the served model, each image's size as
        sent and as the model sees it."""
        started = time.perf_counter()
        options = {"max_tokens": max_tokens, "temperature": temperature, **sampling}
        wire = await asyncio.to_thread(self.build, messages, options)
        self.api_key()
        semaphore = self._bind_loop()
        attempts = 0

        def wait(state) -> float:
            _, _, hint = self.classify(state.outcome.exception())
            if hint is not None:
                return min(max(hint, 0.0), MAX_RETRY_AFTER_S)
            return wait_exponential_jitter(initial=0.5, max=30.0)(state)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            retry=retry_if_exception(lambda e: self.classify(e)[0]),
            wait=wait,
            before_sleep=lambda state: log.warning(
                "%s call attempt %d failed (%s); retrying",
                self.provider,
                state.attempt_number,
                self._redact(str(state.outcome.exception())[:200]),
            ),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    async with semaphore:
                        reply = await self.call(self._client, wire.kwargs)
                    text, fields = self.read(reply)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - classified, masked and raised as one error type
            raise self._failure(e, attempts) from None
        usage = Usage(
            latency_s=time.perf_counter() - started,
            endpoint=self.endpoint,
            encode_s=round(wire.encode_s, 6),
            image_bytes=wire.image_bytes,
            image_sent=wire.sent or None,
            image_seen=[self.image_size_seen(tuple(s)) for s in wire.sent] or None,
            **fields,
        )
        return ChatResponse(text=text, usage=usage)

    def _failure(self, exc: Exception, attempts: int) -> HostedError:
        retry, status, _ = self.classify(exc)
        what = f"HTTP {status}: " if status else ""
        reason = self._redact(f"{what}{type(exc).__name__}: {exc}"[:400])
        return HostedError(
            f"{self.provider} call failed after {attempts} attempt(s) at {self.endpoint}: {reason}",
            status=status,
            retryable=retry,
        )

    def _redact(self, text: str) -> str:
        return redact_text(text, [self._key] if self._key else [])

    async def aclose(self) -> None:
        client, self._client = self._client, None
        self._semaphore = self._loop = None
        close = getattr(client, "close", None) or getattr(client, "aclose", None)
        if close is not None:
            result = close()
            if isinstance(result, Awaitable):
                await result


def parts_of(message: Message) -> list[dict[str, Any]]:
    """A message's content as a list of parts (a plain string is one text part)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    raise ValueError(f"message content must be a string or a list of parts, got {type(content).__name__}")
