"""Claude through the Anthropic Messages API and the official ``anthropic`` SDK.

``base_url`` is the host, as the SDK takes it (it posts to ``{base_url}/v1/messages``); the key
comes from ``ANTHROPIC_API_KEY``. The SDK's retries are off (``max_retries=0``: it would sleep
any ``retry-after`` inside ``create``, uncapped and unseen); ours (:mod:`.retry`) retry
408/409/429/5xx, Anthropic's 529 overloaded included, and obey ``x-should-retry`` as the SDK
does. A reply is an answer when Claude ended it itself (``stop_reason`` ``end_turn``,
``tool_use`` or ``stop_sequence``); ``max_tokens`` is a length cut (not retried), ``refusal``,
``pause_turn`` and the rest are failed attempts.

Our messages become the API's: a system message goes to ``system``, an image part to a base64
``image`` block. A computer-use request passes ``tools`` (and ``betas``, which routes it to
the beta endpoint the tool needs). Claude's ``tool_use`` blocks come back as
:class:`~regionfocus.adapters.backends.base.ToolCall` data beside the text; thinking blocks are
not the answer. The model's thinking setting (``thinking``, ``output_config.effort``) comes from
its rule (``hosted_models.py``) or ``--reasoning-effort``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from regionfocus.adapters.backends.base import Message, ToolCall
from regionfocus.adapters.backends.hosted_base import (
    HostedBackend,
    Wire,
    system_and_turns,
    token_fields,
)

# Claude ended the reply itself: its turn is over, it called a tool, or it wrote a stop string.
FINISHED = frozenset({"end_turn", "tool_use", "stop_sequence"})
LENGTH = frozenset({"max_tokens", "model_context_window_exceeded"})


class AnthropicBackend(HostedBackend):
    """:class:`~regionfocus.adapters.backends.base.ChatBackend` over Anthropic's Messages API.
    Extra ``complete`` options: ``tools`` (tool definitions), ``betas`` (beta flags)."""

    provider = "anthropic"
    sdk_module = "anthropic"
    default_key_env = ("ANTHROPIC_API_KEY",)
    default_base_url = "https://api.anthropic.com"
    provider_name = "Anthropic"
    finished = FINISHED
    length = LENGTH

    def make_client(self, timeout: float | None = None) -> Any:
        from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

        return self.sdk_client(AsyncAnthropic, DefaultAsyncHttpxClient, timeout)

    def build(self, messages: Sequence[Message], options: dict[str, Any]) -> Wire:
        options = dict(options)
        wire = Wire({})

        def image_block(image: Any) -> dict[str, Any]:
            blob = self.blob(image, wire)
            source = {"type": "base64", "media_type": blob.media_type, "data": blob.data}
            return {"type": "image", "source": source}

        system, turns = system_and_turns(messages, lambda text: {"type": "text", "text": text}, image_block)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": int(options.pop("max_tokens", 512)),
            "messages": [{"role": role, "content": blocks} for role, blocks in turns],
        }
        # The Messages API takes no sampling parameters any more (the SDK's create has none):
        # the rules say so for every Claude model, and a rule that allowed one would send it.
        temperature = options.pop("temperature", None)
        if temperature is not None and self.rule.temperature:
            kwargs["extra_body"] = {"temperature": float(temperature)}
        if system:
            kwargs["system"] = [{"type": "text", "text": text} for text in system]
        for name in ("tools", "betas", "tool_choice", "stop_sequences"):
            if options.get(name) is not None:
                kwargs[name] = options.pop(name)
        kwargs.update(self.rule.thinking_kwargs(self.reasoning, kwargs["max_tokens"]))
        wire.kwargs = kwargs
        return wire

    async def call(self, client: Any, kwargs: dict[str, Any]) -> Any:
        if kwargs.get("betas"):
            return await client.beta.messages.create(**kwargs)
        return await client.messages.create(**kwargs)

    def said(self, reply: Any, budget: int | None) -> tuple[list[str], list[ToolCall], Any]:
        pieces: list[str] = []
        calls: list[ToolCall] = []
        for block in getattr(reply, "content", None) or []:
            kind = getattr(block, "type", None)
            if kind == "text":
                pieces.append(block.text or "")
            elif kind == "tool_use":
                args = block.input if isinstance(block.input, dict) else {}
                calls.append(ToolCall(str(block.name), args))
        return pieces, calls, getattr(reply, "stop_reason", None)

    def usage(self, reply: Any) -> dict[str, Any]:
        usage = getattr(reply, "usage", None)
        fresh = getattr(usage, "input_tokens", None)
        read = getattr(usage, "cache_read_input_tokens", None) or 0
        written = getattr(usage, "cache_creation_input_tokens", None) or 0
        # input_tokens counts what came neither from nor into the cache: the whole input is all
        # three (a cache write bills as plain input, a read at its own rate). Anthropic reports
        # no thinking count apart: output_tokens holds it.
        return token_fields(
            prompt=None if fresh is None else fresh + read + written,
            cached=read if fresh is not None else None,
            completion=getattr(usage, "output_tokens", None),
            reasoning=None,
            model=getattr(reply, "model", None) or self.model,
        )
