"""Gemini through the Gemini API and the official ``google-genai`` SDK.

``base_url`` is the host, as the SDK's ``http_options`` take it (it posts to
``{base_url}/v1/models/{model}:generateContent``, the SDK's default API version); the key comes from ``GEMINI_API_KEY`` (or
``GOOGLE_API_KEY``). The SDK's own retries (``HttpRetryOptions``) wait by exponential backoff and
never read the server's hint, so they stay off and this backend retries 408/429/5xx itself,
waiting what the error names: the ``RetryInfo`` detail's ``retryDelay`` of a 429
RESOURCE_EXHAUSTED, or a ``Retry-After`` header. A reply is an answer when its candidate's
``finish_reason`` is ``STOP``; ``MAX_TOKENS``, ``SAFETY``, ``RECITATION``,
``MALFORMED_FUNCTION_CALL`` and the rest are failed attempts.

Our messages become ``contents`` (an assistant turn is role ``model``) and ``system_instruction``;
an image is ``inline_data``. Function calls (the Computer Use tool's) come back as text the
Gemini adapter reads: ``<function_call name="click_at">{"x": .., "y": ..}</function_call>``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from typing import Any

from regionfocus.adapters.backends.base import Message, UnfinishedReply, finished_text
from regionfocus.adapters.backends.hosted_base import HostedBackend, Wire, parts_of
from regionfocus.adapters.backends.openai_replies import retry_after_header

FINISHED = frozenset({"STOP"})
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def render_function_call(name: str, args: Any) -> str:
    return f'<function_call name="{name}">{json.dumps(args or {}, ensure_ascii=False)}</function_call>'


def retry_delay(exc: Any) -> float | None:
    """Seconds a Gemini error asks to wait: its ``google.rpc.RetryInfo`` ``retryDelay``
    ("41s"), else a ``Retry-After`` header; None when it names none."""
    body = getattr(exc, "details", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    for detail in (error or {}).get("details", None) or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            m = _DURATION.match(str(detail.get("retryDelay", "")))
            if m:
                return float(m.group(1))
    headers = getattr(getattr(exc, "response", None), "headers", None)
    return retry_after_header(headers) if headers is not None else None


class GeminiBackend(HostedBackend):
    """:class:`~regionfocus.adapters.backends.base.ChatBackend` over the Gemini API. Extra
    ``complete`` options: ``tools`` (``types.Tool`` values or their dicts)."""

    provider = "gemini"
    sdk_module = "google.genai"
    default_key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    default_base_url = "https://generativelanguage.googleapis.com"

    def make_client(self) -> Any:
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            base_url=self.base_url,
            timeout=int(self.timeout * 1000),  # milliseconds
            retry_options=None,  # retries are ours: the SDK's ignore the server's delay
        )
        return genai.Client(api_key=self.api_key(), http_options=options)

    def build(self, messages: Sequence[Message], options: dict[str, Any]) -> Wire:
        options = dict(options)
        wire = Wire({})
        system: list[str] = []
        contents: list[dict[str, Any]] = []
        for i, message in enumerate(messages):
            role = message.get("role")
            parts: list[dict[str, Any]] = []
            for j, part in enumerate(parts_of(message)):
                kind = part.get("type")
                if kind == "text":
                    parts.append({"text": part["text"]})
                elif kind == "image":
                    blob = self.blob(part["image"], wire)
                    parts.append(
                        {"inline_data": {"mime_type": blob.media_type, "data": base64.b64decode(blob.data)}}
                    )
                else:
                    raise ValueError(f"message {i} part {j}: unsupported part type {kind!r}")
            if role == "system":
                if any("text" not in p for p in parts):
                    raise ValueError(f"message {i}: a system message holds text only")
                system.extend(p["text"] for p in parts)
            elif role in ("user", "assistant"):
                contents.append({"role": "user" if role == "user" else "model", "parts": parts})
            else:
                raise ValueError(f"message {i}: unsupported role {role!r}")
        config: dict[str, Any] = {"max_output_tokens": int(options.pop("max_tokens", 512))}
        temperature = options.pop("temperature", None)
        if temperature is not None and self.rule.temperature:
            config["temperature"] = float(temperature)
        if system:
            config["system_instruction"] = "\n".join(system)
        for name in ("tools", "top_p", "top_k", "thinking_config", "media_resolution"):
            if options.get(name) is not None:
                config[name] = options.pop(name)
        wire.kwargs = {"model": self.model, "contents": contents, "config": config}
        return wire

    def request_body(self, messages: Sequence[Message], **options: Any) -> dict[str, Any]:
        kwargs = self.build(messages, options).kwargs
        for content in kwargs["contents"]:  # as the wire carries it: base64 text
            for part in content["parts"]:
                if "inline_data" in part:
                    data = part["inline_data"]["data"]
                    part["inline_data"] = {**part["inline_data"], "data": base64.b64encode(data).decode()}
        return kwargs

    async def call(self, client: Any, kwargs: dict[str, Any]) -> Any:
        return await client.aio.models.generate_content(**kwargs)

    def classify(self, exc: BaseException) -> tuple[bool, int | None, float | None]:
        if isinstance(exc, UnfinishedReply):
            return True, None, None
        code = getattr(exc, "code", None)
        if isinstance(code, int):
            return code in RETRY_STATUS, code, retry_delay(exc) if code in RETRY_STATUS else None
        import httpx2

        if isinstance(exc, (httpx2.TransportError, TimeoutError)):
            return True, None, None
        return False, None, None

    def read(self, reply: Any) -> tuple[str, dict[str, Any]]:
        candidates = getattr(reply, "candidates", None) or []
        if not candidates:
            feedback = getattr(reply, "prompt_feedback", None)
            blocked = getattr(feedback, "block_reason", None)
            raise UnfinishedReply(f"Gemini gave no candidate (prompt feedback: {blocked})")
        candidate = candidates[0]
        pieces: list[str] = []
        for part in getattr(getattr(candidate, "content", None), "parts", None) or []:
            if getattr(part, "thought", None):
                continue  # a thought summary is not the answer
            if getattr(part, "text", None):
                pieces.append(part.text)
            call = getattr(part, "function_call", None)
            if call is not None:
                pieces.append(render_function_call(call.name, call.args))
        reason = getattr(candidate, "finish_reason", None)
        reason = getattr(reason, "value", reason)
        text = finished_text("\n".join(pieces) if pieces else None, reason, FINISHED, "Gemini")
        usage = getattr(reply, "usage_metadata", None)
        out_tokens = getattr(usage, "candidates_token_count", None)
        thoughts = getattr(usage, "thoughts_token_count", None)
        return text, {
            "prompt_tokens": getattr(usage, "prompt_token_count", None),  # cached content included
            "cached_tokens": getattr(usage, "cached_content_token_count", None),
            # thinking is billed as output
            "completion_tokens": None if out_tokens is None else out_tokens + (thoughts or 0),
            "model": getattr(reply, "model_version", None) or self.model,
        }
