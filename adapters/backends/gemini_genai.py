"""Gemini through the Gemini API and the official ``google-genai`` SDK.

``base_url`` is the host, as the SDK's ``http_options`` take it (it posts to
``{base_url}/{version}/models/{model}:generateContent``); the key comes from ``GEMINI_API_KEY``
(or ``GOOGLE_API_KEY``). The SDK's own retries (``HttpRetryOptions``) stay off: the waits are
ours (:mod:`.retry`), for 408/429/5xx, waiting what the error names: the ``RetryInfo`` detail's
``retryDelay`` of a 429 RESOURCE_EXHAUSTED, or a ``Retry-After`` header. The SDK is given our
httpx2 client (with the reply cap), so it never takes its aiohttp path, which sleeps 1-10 s and
retries once on a connection error by itself. A reply is an answer when its candidate's
``finish_reason`` is ``STOP``; ``MAX_TOKENS`` is a length cut (not retried); ``SAFETY``,
``RECITATION``, ``MALFORMED_FUNCTION_CALL`` and the rest are failed attempts.

Our messages become ``contents`` (an assistant turn is role ``model``) and ``system_instruction``;
an image is ``inline_data`` (at most the inline request size: ``gemini_image.py``) with the
rule's ``media_resolution``. Function calls (the Computer Use tool's) come back as
:class:`~regionfocus.adapters.backends.base.ToolCall` data beside the text; thought parts are
not the answer. The thinking setting comes from the model's rule or ``--reasoning-effort``.
"""

from __future__ import annotations

import base64
import logging
import math
import re
from collections.abc import Sequence
from typing import Any

from PIL import Image

from regionfocus.adapters.backends.base import Message, ToolCall, UnfinishedReply
from regionfocus.adapters.backends.hosted_base import (
    Blob,
    HostedBackend,
    Wire,
    parts_of,
    system_and_turns,
    token_fields,
)
from regionfocus.adapters.backends.retry import Failure, hint_from_headers
from regionfocus.resample import bicubic

log = logging.getLogger(__name__)

# The Gemini API takes a request of at most 20 MB with its images inline (the limit its image
# and file pages give for inline data); base64 carries 4 bytes per 3. A few hundred KB stay for
# the text, and the images of one request share the rest.
INLINE_LIMIT = 20_000_000
TEXT_MARGIN = 256_000

FINISHED = frozenset({"STOP"})
LENGTH = frozenset({"MAX_TOKENS"})
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def retry_delay(exc: Any) -> tuple[float | None, str]:
    """(seconds, where) a Gemini error asks to wait: its ``google.rpc.RetryInfo``
    ``retryDelay`` ("41s"), else a ``Retry-After`` header; (None, "") when it names none."""
    body = getattr(exc, "details", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    for detail in (error or {}).get("details", None) or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            m = _DURATION.match(str(detail.get("retryDelay", "")))
            if m:
                return float(m.group(1)), "RetryInfo"
    return hint_from_headers(getattr(getattr(exc, "response", None), "headers", None))


class GeminiBackend(HostedBackend):
    """:class:`~regionfocus.adapters.backends.base.ChatBackend` over the Gemini API. Extra
    ``complete`` options: ``tools`` (``types.Tool`` values or their dicts)."""

    provider = "gemini"
    sdk_module = "google.genai"
    default_key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    default_base_url = "https://generativelanguage.googleapis.com"
    provider_name = "Gemini"
    finished = FINISHED
    length = LENGTH
    _shrink_logged = False
    inline_limit = INLINE_LIMIT  # bytes of a request with its images inline

    def make_client(self, timeout: float | None = None) -> Any:
        import httpx2
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            base_url=self.base_url,
            timeout=int((timeout or self.timeout) * 1000),  # milliseconds
            retry_options=None,  # retries are ours: the SDK's ignore the server's delay
            httpx_async_client=httpx2.AsyncClient(**self.http_options()),
        )
        return genai.Client(api_key=self.api_key(), http_options=options)

    async def check_model(self, client: Any) -> None:
        await client.aio.models.get(model=self.model)

    def inline_blob(self, image: Image.Image, wire: Wire, budget: int) -> Blob:
        """``image`` as base64 of at most ``budget`` characters: as captured when it fits, else
        scaled down (aspect kept, the format unchanged) until it does. Gemini answers in a
        normalised frame, so the size sent never enters the answer's map; the record keeps it."""
        blob = self.blob(image, wire)
        shrunk = image
        while len(blob.data) > budget and min(shrunk.size) > 16:
            factor = max(0.25, 0.95 * math.sqrt(budget / len(blob.data)))
            size = (max(1, int(shrunk.width * factor)), max(1, int(shrunk.height * factor)))
            shrunk = bicubic(shrunk if shrunk.mode == "RGB" else shrunk.convert("RGB"), size)
            wire.image_bytes -= len(blob.data)
            wire.sent.pop()
            blob = self.blob(shrunk, wire)
        if shrunk is not image and not self._shrink_logged:
            self._shrink_logged = True
            log.warning(
                "gemini: a %dx%d image is over the %g MB inline request limit as %s; sent at %dx%d "
                "(each call records the size sent)",
                image.width,
                image.height,
                self.inline_limit / 1_000_000,
                blob.media_type,
                shrunk.width,
                shrunk.height,
            )
        return blob

    def build(self, messages: Sequence[Message], options: dict[str, Any]) -> Wire:
        options = dict(options)
        wire = Wire({})
        n_images = sum(1 for m in messages for p in parts_of(m) if p.get("type") == "image")
        budget = max(1, self.inline_limit - TEXT_MARGIN) // max(1, n_images)

        def inline(image: Any) -> dict[str, Any]:
            blob = self.inline_blob(image, wire, budget)
            return {"inline_data": {"mime_type": blob.media_type, "data": base64.b64decode(blob.data)}}

        system, turns = system_and_turns(messages, lambda text: {"text": text}, inline)
        contents = [{"role": "user" if role == "user" else "model", "parts": parts} for role, parts in turns]
        config: dict[str, Any] = {"max_output_tokens": int(options.pop("max_tokens", 512))}
        config.update(self.rule.thinking_kwargs(self.reasoning, config["max_output_tokens"]))
        if self.rule.media_resolution:
            config["media_resolution"] = self.rule.media_resolution
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

    def status_failure(self, exc: BaseException) -> Failure | None:
        code = getattr(exc, "code", None)
        if not isinstance(code, int) or isinstance(code, bool):
            return None
        retry = code in RETRY_STATUS
        hint, where = retry_delay(exc) if retry else (None, "")
        return Failure(retry, code, hint, where, f"{code} {getattr(exc, 'status', '') or ''}".strip())

    def said(self, reply: Any, budget: int | None) -> tuple[list[str], list[ToolCall], Any]:
        candidates = getattr(reply, "candidates", None) or []
        if not candidates:
            feedback = getattr(reply, "prompt_feedback", None)
            blocked = getattr(feedback, "block_reason", None)
            raise UnfinishedReply(f"Gemini gave no candidate (prompt feedback: {blocked})")
        candidate = candidates[0]
        pieces: list[str] = []
        calls: list[ToolCall] = []
        for part in getattr(getattr(candidate, "content", None), "parts", None) or []:
            if getattr(part, "thought", None):
                continue  # a thought summary is not the answer
            if getattr(part, "text", None):
                pieces.append(part.text)
            call = getattr(part, "function_call", None)
            if call is not None:
                calls.append(ToolCall(str(call.name), dict(call.args or {})))
        reason = getattr(candidate, "finish_reason", None)
        return pieces, calls, getattr(reason, "value", reason)

    def usage(self, reply: Any) -> dict[str, Any]:
        usage = getattr(reply, "usage_metadata", None)
        out_tokens = getattr(usage, "candidates_token_count", None)
        thoughts = getattr(usage, "thoughts_token_count", None)
        return token_fields(
            prompt=getattr(usage, "prompt_token_count", None),  # cached content included
            cached=getattr(usage, "cached_content_token_count", None),
            # thinking is billed as output, and Gemini counts it apart from the candidates
            completion=None if out_tokens is None else out_tokens + (thoughts or 0),
            reasoning=thoughts,
            model=getattr(reply, "model_version", None) or self.model,
        )

    async def close_client(self, client: Any) -> None:
        await super().close_client(client)
        # The httpx2 client we handed the SDK is ours to close.
        http = getattr(getattr(client, "_api_client", None), "_async_httpx_client", None)
        if http is not None:
            await http.aclose()
