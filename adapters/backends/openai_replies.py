"""Reading what an OpenAI-compatible server answered: a completion's text and choices, whether
a failure is worth another try and after how long, and the one line that describes it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from regionfocus.adapters.backends.base import ReplyTooLarge, UnfinishedReply, finished_text
from regionfocus.adapters.backends.retry import Failure, hint_from_headers
from regionfocus.adapters.model_text import stops_mid_number

RETRY_STATUS = frozenset({408, 409, 429})

# The chat API's finish reasons for a reply the model ended itself: "stop" (its end-of-turn
# token or a stop string; vLLM and SGLang say the same) and "tool_calls" (it ended by calling a
# tool, the arguments written out; "function_call" is the older name). Every other reason is a
# cut reply: "length" (max_tokens reached: the last number may be half written),
# "content_filter", vLLM's and SGLang's "abort", and none at all (a server that does not say
# cannot be trusted to have finished).
FINISHED = frozenset({"stop", "tool_calls", "function_call"})


class MalformedResponseError(Exception):
    """The server answered 2xx with something that is not a usable chat completion."""


def completion_text(completion: Any) -> str:
    """The first choice's text (:func:`choice_text`). Raises :class:`MalformedResponseError`
    for a body that is no chat completion, :class:`UnfinishedReply` for one that is no answer."""
    if isinstance(completion, (str, bytes)) or not hasattr(completion, "choices"):
        raise MalformedResponseError(f"response is not a chat completion object: {str(completion)[:200]!r}")
    if not completion.choices:
        raise MalformedResponseError("response has no choices")
    return choice_text(completion.choices[0])


def choice_text(choice: Any) -> str:
    """One choice's text, once the model finished it; tool calls returned as structured data
    (a server started with a tool parser) are rendered back as the ``<tool_call>`` text the
    adapters parse. A cut reply (a stop reason other than a finished one, or tool-call arguments
    that stop inside a number), or one with neither text nor tool calls (``content: null``, a
    refusal), raises :class:`UnfinishedReply`: every request's failed call, retried."""
    message = getattr(choice, "message", None)
    if message is None:
        raise MalformedResponseError("a choice has no message")
    text = message.content
    if text is not None and not isinstance(text, str):
        raise MalformedResponseError(f"message content is not text: {type(text).__name__}")
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if function is None:
            continue
        try:
            arguments = json.loads(function.arguments or "{}")
        except ValueError:
            arguments = function.arguments
            # A server's tool parser hands on what the model wrote, cut or not, under a finish
            # reason ("tool_calls") that says it finished: only the arguments can tell.
            said_finished = getattr(choice, "finish_reason", None) in FINISHED  # else: finished_text
            if said_finished and isinstance(arguments, str) and stops_mid_number(arguments.rstrip()):
                raise UnfinishedReply(
                    f"the reply's tool-call arguments stop inside a number ({arguments[-40:]!r}): "
                    "cut, not finished"
                ) from None
        text = (text or "") + "<tool_call>" + json.dumps({"name": function.name, "arguments": arguments})
        text += "</tool_call>"
    refusal = getattr(message, "refusal", None)
    if text is None and isinstance(refusal, str) and refusal:
        raise UnfinishedReply(f"the model refused: {refusal[:200]!r}")
    return finished_text(text, getattr(choice, "finish_reason", None), FINISHED)


def completion_choices(completion: Any) -> list[tuple[str, list[float] | None]]:
    """Every choice's text (as :func:`choice_text` reads it) with its tokens' log-probabilities
    (None when the server sent none). One cut choice fails the call, as a cut single reply
    does: ``n`` answers means ``n`` answers."""
    completion_text(completion)  # validates the shape
    out = []
    for choice in completion.choices:
        text = choice_text(choice)
        content = getattr(getattr(choice, "logprobs", None), "content", None)
        lps = (
            [float(t.logprob) for t in content if getattr(t, "logprob", None) is not None]
            if content
            else None
        )
        out.append((text, lps or None))
    return out


def classify_failure(exc: Exception) -> Failure:
    """What an attempt's exception was: worth another try, its HTTP status, and the wait a 429
    or 5xx asked for (``retry-after-ms``, ``Retry-After``)."""
    import openai

    if isinstance(exc, (asyncio.TimeoutError, openai.APIConnectionError)):  # includes APITimeoutError
        return Failure(True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry = status in RETRY_STATUS or status >= 500
        hint, where = hint_from_headers(exc.response.headers) if retry else (None, "")
        return Failure(retry, status, hint, where)
    if isinstance(exc, (MalformedResponseError, UnfinishedReply, ReplyTooLarge)):
        # Another attempt may get a finished, sane reply (another server, another sample).
        return Failure(True)
    if isinstance(exc, (openai.APIResponseValidationError, ValueError)):
        # ValueError covers json.JSONDecodeError and pydantic validation of a 2xx body.
        return Failure(True)
    return Failure(False)


def describe_failure(exc: Exception, timeout: float, url: str = "") -> str:
    """One line: why the attempt failed (a transport failure by its real cause, found down the
    exception chain: "Connection error." alone says nothing)."""
    import openai

    from regionfocus.adapters.backends.transport import transport_cause

    if isinstance(exc, (asyncio.TimeoutError, openai.APITimeoutError)):
        return f"timed out after {timeout:g}s"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {str(exc.message)[:300]}"
    if isinstance(exc, openai.APIConnectionError):
        cause = transport_cause(exc, url, timeout) if url else None
        if cause:
            return f"connection error: {cause}"
        inner = exc.__cause__
        return f"connection error ({type(inner).__name__ if inner else 'unknown'})"
    if isinstance(exc, MalformedResponseError):
        return f"malformed response: {exc}"
    if isinstance(exc, (UnfinishedReply, ReplyTooLarge)):
        return str(exc)
    if isinstance(exc, json.JSONDecodeError):
        return f"malformed response: body is not valid JSON ({exc.msg} at char {exc.pos})"
    return f"{type(exc).__name__}: {str(exc)[:300]}"
