"""The seam between adapters (prompts, parsing, frames) and backends (transport).

Messages use the OpenAI chat shape, except that an image part carries the PIL image itself:
``{"type": "image", "image": <PIL.Image>}``. The adapter has already resized it to exactly
the size its model sees; a backend encodes it for transport (HTTP) or hands it to a processor
(in-process) and must not resize it again.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

from regionfocus.model import Usage

Message = dict[str, Any]

# The most a reply's body may hold after decompression (``--max-reply-bytes``): an answer is a
# few KB and the largest we ask for (n choices with log-probabilities) well under a MB, while a
# server or proxy can send a gzip body that inflates a thousandfold.
MAX_REPLY_BYTES = 8 * 2**20


class UnfinishedReply(Exception):
    """The server answered, but with no answer: the model did not finish its reply (cut at the
    token limit, stopped by a content filter) or the reply holds no text. A failed call, like a
    malformed body: backends retry it, then raise, so the sample is recorded as failed (error or
    partial) instead of scoring a cut ``[188, 6`` as a click at (188, 6)."""


class LengthCut(UnfinishedReply):
    """The reply reached its output budget (the provider's token limit, thinking included):
    another attempt with the same budget stops at the same place, so the call fails at once,
    naming the budget and the flag that raises it."""


class PreflightFailed(Exception):
    """The model cannot be reached as configured, found before the first sample: a dead server,
    a refused or missing key, an unknown model. The message is one line naming the cause."""


class ReplyTooLarge(Exception):
    """A reply's body grew past the limit while it was being read and decompressed."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"reply larger than {limit} bytes after decompression (--max-reply-bytes)")
        self.limit = limit


def reply_cap(limit: int) -> Callable[[Any], Any]:
    """A "response" event hook for an httpx (or httpx2) async client, which runs before the body
    is read: every reader of that body (an SDK reads answers and error pages alike through
    ``aiter_bytes``) counts its decoded bytes and raises :class:`ReplyTooLarge` past ``limit``.
    httpx decodes gzip, deflate, brotli and zstd in pieces of at most 1 MiB, so a body that
    inflates to gigabytes costs the limit plus one piece. Usage:
    ``AsyncClient(event_hooks={"response": [reply_cap(n)]})``, passed to the provider's SDK."""

    async def hook(response: Any) -> None:
        read = response.aiter_bytes

        async def counted(chunk_size: int | None = None):
            total = 0
            async with contextlib.aclosing(read(chunk_size)) as chunks:
                async for chunk in chunks:
                    total += len(chunk)
                    if total > limit:
                        raise ReplyTooLarge(limit)
                    yield chunk

        response.aiter_bytes = counted  # this response's readers only

    return hook


def finished_text(
    text: str | None,
    reason: Any,
    finished: Collection[str],
    provider: str = "the server",
    length: Collection[str] = (),
    budget: int | None = None,
) -> str:
    """``text`` when the model finished it, else :class:`UnfinishedReply`. ``reason``: the
    provider's stop reason for this reply; ``finished``: that provider's words for a reply the
    model ended itself (OpenAI's ``stop`` and ``tool_calls``, Anthropic's ``end_turn``, ...).
    Anything else (a token limit, a filter, no reason at all) is a cut reply, whose last number
    may be half written. A reply with no text (``None``) is no answer either; an empty string
    the model finished is its answer (it wrote nothing, and will again). ``length``: the
    provider's words for a reply that reached its output budget (``budget`` tokens), raised as
    :class:`LengthCut`."""
    if reason in length:
        raise LengthCut(length_cut_message(provider, reason, budget))
    if reason not in finished:
        shown = str(reason)[:60] if reason is not None else "none given"
        raise UnfinishedReply(f"the model did not finish its reply (stop reason from {provider}: {shown})")
    if text is None:
        raise UnfinishedReply(f"the reply from {provider} has no text")
    return text


def token_count(value: Any) -> int | None:
    """A server's token count as a count, or None: NaN, 1e999, -3 or "12" are no counts, and a
    record's sums and the cost table would carry them."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if value >= 0 else None


def length_cut_message(provider: str, reason: Any, budget: int | None) -> str:
    spent = f"its output budget of {budget} tokens" if budget else "its output budget"
    return (
        f"the reply from {provider} reached {spent} (stop reason {str(reason)[:40]}; thinking counts "
        "against it): not retried with the same budget; raise it with --max-tokens"
    )


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the provider's API returned it, kept as data from the SDK to the reader
    (never written into the reply's text, where a tag the model wrote in its prose would read
    like a call): the function or tool name, its arguments. OpenAI's ``computer_call`` actions
    are named by their ``type``."""

    name: str
    args: dict[str, Any]


@dataclass
class ChatResponse:
    text: str
    usage: Usage = field(default_factory=Usage)
    tool_calls: list[ToolCall] = field(default_factory=list)


class ChatBackend(Protocol):
    async def complete(
        self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0, **sampling: Any
    ) -> ChatResponse:
        """One chat completion. Transport failures after retries raise; the caller records
        them. ``usage`` carries latency, token counts and the endpoint used."""
        ...

    async def aclose(self) -> None: ...
