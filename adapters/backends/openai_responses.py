"""OpenAI models through the Responses API and the official ``openai`` SDK.

``base_url`` ends in ``/v1``, as the SDK takes it (it posts to ``{base_url}/responses``); the key
comes from ``OPENAI_API_KEY``. The SDK's retries are off (``max_retries=0``); ours
(:mod:`.retry`) retry 408/409/429/5xx, waiting out ``retry-after-ms`` / ``retry-after``. A
response is an answer when its ``status`` is ``completed``; ``incomplete`` for
``max_output_tokens`` is a length cut (not retried), for ``content_filter``, like ``failed`` and
the rest, a failed attempt.

Our messages become input items: text parts ``input_text`` (``output_text`` in an assistant
turn), an image ``input_image`` with the backend's ``detail`` level; responses are not stored
(``store: false``). A computer-use request passes ``tools``; each ``computer_call`` action comes
back as a :class:`~regionfocus.adapters.backends.base.ToolCall` named by its ``type`` (one per
action of a batched call). The reasoning effort (``reasoning.effort``) comes from the model's
rule or ``--reasoning-effort``; reasoning tokens are counted inside the output tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from regionfocus.adapters.backends.base import (
    LengthCut,
    Message,
    ToolCall,
    UnfinishedReply,
    length_cut_message,
)
from regionfocus.adapters.backends.hosted_base import HostedBackend, Wire, parts_of, token_fields

FINISHED = frozenset({"completed"})


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True) if dump is not None else value


class ResponsesBackend(HostedBackend):
    """:class:`~regionfocus.adapters.backends.base.ChatBackend` over the Responses API. Extra
    ``complete`` options: ``tools``, ``truncation`` (``auto`` for the computer-use preview)."""

    provider = "openai"
    sdk_module = "openai"
    default_key_env = ("OPENAI_API_KEY",)
    default_base_url = "https://api.openai.com/v1"
    provider_name = "OpenAI"
    finished = FINISHED

    def make_client(self, timeout: float | None = None) -> Any:
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient

        return self.sdk_client(AsyncOpenAI, DefaultAsyncHttpxClient, timeout)

    def build(self, messages: Sequence[Message], options: dict[str, Any]) -> Wire:
        options = dict(options)
        wire = Wire({})
        items: list[dict[str, Any]] = []
        for i, message in enumerate(messages):
            role = message.get("role")
            if role not in ("system", "developer", "user", "assistant"):
                raise ValueError(f"message {i}: unsupported role {role!r}")
            content: list[dict[str, Any]] = []
            for j, part in enumerate(parts_of(message)):
                kind = part.get("type")
                if kind == "text":
                    content.append(
                        {"type": "output_text" if role == "assistant" else "input_text", "text": part["text"]}
                    )
                elif kind == "image" and role != "assistant":
                    blob = self.blob(part["image"], wire)
                    url = f"data:{blob.media_type};base64,{blob.data}"
                    content.append({"type": "input_image", "image_url": url, "detail": self.detail})
                else:
                    raise ValueError(f"message {i} part {j}: unsupported part type {kind!r} for role {role}")
            items.append({"role": role, "content": content})
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": items,
            "max_output_tokens": int(options.pop("max_tokens", 512)),
            "store": False,
        }
        temperature = options.pop("temperature", None)
        if temperature is not None and self.rule.temperature:
            kwargs["temperature"] = float(temperature)
        kwargs.update(self.rule.thinking_kwargs(self.reasoning, kwargs["max_output_tokens"]))
        for name in ("tools", "truncation", "tool_choice", "top_p", "reasoning"):
            if options.get(name) is not None:
                kwargs[name] = options.pop(name)
        wire.kwargs = kwargs
        return wire

    async def call(self, client: Any, kwargs: dict[str, Any]) -> Any:
        return await client.responses.create(**kwargs)

    def said(self, reply: Any, budget: int | None) -> tuple[list[str], list[ToolCall], Any]:
        status = getattr(reply, "status", None)
        if status == "incomplete":
            reason = getattr(getattr(reply, "incomplete_details", None), "reason", None)
            if reason == "max_output_tokens":
                raise LengthCut(length_cut_message("OpenAI", reason, budget))
            raise UnfinishedReply(f"the model did not finish its reply (OpenAI status incomplete: {reason})")
        pieces: list[str] = []
        calls: list[ToolCall] = []
        for item in getattr(reply, "output", None) or []:
            kind = getattr(item, "type", None)
            if kind == "message":
                for part in getattr(item, "content", None) or []:
                    if getattr(part, "type", None) == "output_text":
                        pieces.append(part.text or "")
                    elif getattr(part, "type", None) == "refusal":
                        raise UnfinishedReply(
                            f"the model refused: {str(getattr(part, 'refusal', ''))[:200]!r}"
                        )
            elif kind == "computer_call":
                actions = getattr(item, "actions", None) or (
                    [item.action] if getattr(item, "action", None) else []
                )
                for action in actions:
                    args = _plain(action)
                    if isinstance(args, dict):
                        calls.append(ToolCall(str(args.get("type", "")), args))
        return pieces, calls, status

    def usage(self, reply: Any) -> dict[str, Any]:
        usage = getattr(reply, "usage", None)
        details = getattr(usage, "input_tokens_details", None)
        out_details = getattr(usage, "output_tokens_details", None)
        return token_fields(
            prompt=getattr(usage, "input_tokens", None),  # cached tokens included
            cached=getattr(details, "cached_tokens", None),
            completion=getattr(usage, "output_tokens", None),  # reasoning included
            reasoning=getattr(out_details, "reasoning_tokens", None),
            model=getattr(reply, "model", None) or self.model,
        )
