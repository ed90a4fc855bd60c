"""Real local HTTP servers speaking the hosted providers' own wire formats, scriptable per test:
Anthropic's Messages API (``POST /v1/messages``), the Gemini API
(``POST /v1/models/{model}:generateContent``, the SDK's default version) and OpenAI's Responses API
(``POST /v1/responses``). The provider's official SDK, pointed here with ``base_url``, is the
client under test; nothing of ours is mocked.

Usage::

    with ProviderServer("anthropic", responder=lambda req: Said("Sure: [[412,230]]")) as srv:
        backend = AnthropicBackend("claude-sonnet-4-5", srv.base_url)

Each request is answered by the next scripted reply (``srv.script(...)``) or by ``responder``
(a callable taking a :class:`Request` and returning a :class:`Said` or a plain string). A
:class:`Said` is the model's text and tool calls, with the provider's stop reason, token counts,
or an HTTP error in the provider's own error body (``rate_limited``: 429 with the provider's
retry hint; ``overloaded``: Anthropic's 529, Gemini's 503).
"""

from __future__ import annotations

import base64
import io
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from PIL import Image

from regionfocus.model import Query
from regionfocus.trace import record_call

from .chat_server import Answers, JsonHandler

__all__ = ["PATHS", "ProviderServer", "Request", "Said", "act_recorded", "closed_port"]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PATHS = {
    "anthropic": re.compile(r"^/v1/messages$"),
    "gemini": re.compile(r"^/v1(?:beta)?/models/(?P<model>[^/:]+):generateContent$"),
    "openai": re.compile(r"^/v1/responses$"),
}
# The model lookup each SDK's check makes (models.retrieve, models.get).
MODEL_PATHS = {
    "anthropic": re.compile(r"^/v1/models/(?P<model>[^/]+)$"),
    "gemini": re.compile(r"^/v1(?:beta)?/models/(?P<model>[^/:]+)$"),
    "openai": re.compile(r"^/v1/models/(?P<model>[^/]+)$"),
}
# Where the providers' SDKs send the key (anthropic 2.14 sends a bearer token).
KEY_HEADERS = ("x-api-key", "x-goog-api-key", "authorization")


async def act_recorded(adapter: Any, image: Image.Image, instruction: str = "x") -> tuple[Any, Any]:
    """One ``act`` of a hosted adapter, recorded as the harnesses record it, then its client
    closed; (the reply or None, the call record)."""
    calls: list = []
    try:
        reply = await record_call(calls, "act", adapter.act(image, Query(instruction)))
    finally:
        await adapter.backend.aclose()
    return reply, calls[0]


def error_body(provider: str, status: int, message: str) -> dict[str, Any]:
    """An error in the provider's own shape."""
    if provider == "anthropic":
        kind = {401: "authentication_error", 404: "not_found_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if provider == "gemini":
        state = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}.get(status, "INTERNAL")
        return {"error": {"code": status, "message": message, "status": state}}
    kind = {401: "invalid_api_key", 404: "model_not_found"}.get(status)
    return {"error": {"message": message, "type": "invalid_request_error", "code": kind}}


@dataclass
class Said:
    """One scripted answer. ``text``: the model's prose (None: no text part); ``calls``: tool
    calls as (name, arguments) (Anthropic ``tool_use`` blocks, Gemini ``functionCall`` parts) or,
    for OpenAI, ``computer_call`` actions as ("computer_call", action). ``stop``: the provider's
    stop reason / finish reason / status (None: the one a finished reply carries). ``status``,
    ``headers``, ``error``: an HTTP error with the provider's error body."""

    text: str | None = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stop: str | None = None
    input_tokens: int | None = None
    output_tokens: int = 12
    cached_tokens: int = 0
    reasoning_tokens: int = 0  # thinking inside the output (OpenAI's details, Gemini's thoughts)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error: dict[str, Any] | None = None

    @classmethod
    def rate_limited(cls, provider: str, seconds: float = 0.3) -> Said:
        """A 429 with the provider's retry hint: ``retry-after`` (Anthropic, OpenAI), a
        ``RetryInfo`` detail with ``retryDelay`` (Gemini)."""
        if provider == "gemini":
            detail = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{seconds}s"}
            error = {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                               "status": "RESOURCE_EXHAUSTED", "details": [detail]}}  # fmt: skip
            return cls(status=429, error=error)
        if provider == "anthropic":
            error = {
                "type": "error",
                "error": {
                    "type": "rate_limit_error",
                    "message": "Number of request tokens has exceeded your per-minute rate limit",
                },
            }
        else:
            error = {
                "error": {
                    "message": "Rate limit reached for requests",
                    "type": "requests",
                    "code": "rate_limit_exceeded",
                }
            }
        return cls(status=429, headers={"retry-after": str(seconds)}, error=error)

    @classmethod
    def overloaded(cls, provider: str, seconds: float | None = None) -> Said:
        """Anthropic's 529 overloaded_error; Gemini's 503 UNAVAILABLE; OpenAI's 503."""
        headers = {"retry-after": str(seconds)} if seconds is not None else {}
        if provider == "anthropic":
            return cls(
                status=529,
                headers=headers,
                error={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            )
        if provider == "gemini":
            return cls(
                status=503,
                headers=headers,
                error={
                    "error": {
                        "code": 503,
                        "message": "The model is overloaded. Please try again later.",
                        "status": "UNAVAILABLE",
                    }
                },
            )
        return cls(
            status=503,
            headers=headers,
            error={"error": {"message": "The server is overloaded", "type": "server_error", "code": None}},
        )

    @classmethod
    def cut(cls, provider: str, text: str = "The target is at [[412, 2") -> Said:
        """A reply cut at the token limit: Anthropic ``max_tokens``, Gemini ``MAX_TOKENS``,
        OpenAI ``incomplete``."""
        return cls(
            text=text,
            stop={"anthropic": "max_tokens", "gemini": "MAX_TOKENS", "openai": "incomplete"}[provider],
        )


@dataclass
class Request:
    """One request as the server read it: the JSON body, the path's model (Gemini), headers,
    and the images and text it carries, decoded from the provider's format."""

    provider: str
    body: dict[str, Any]
    headers: dict[str, str]
    model: str

    @property
    def images(self) -> list[Image.Image]:
        out = []
        for data in _image_data(self.provider, self.body):
            out.append(Image.open(io.BytesIO(b64decode(data))))
        return out

    @property
    def text(self) -> str:
        return "\n".join(_texts(self.provider, self.body))

    @property
    def budget(self) -> int | None:
        """The output budget the request carries (thinking included)."""
        if self.provider == "gemini":
            return (self.body.get("generationConfig") or {}).get("maxOutputTokens")
        return self.body.get("max_tokens", self.body.get("max_output_tokens"))

    @property
    def tools(self) -> list[dict[str, Any]]:
        if self.provider == "gemini":
            return (self.body.get("generationConfig") or {}).get("tools") or self.body.get("tools") or []
        return self.body.get("tools") or []


def b64decode(data: str) -> bytes:
    """Standard or URL-safe base64 (google-genai sends the latter), padded or not."""
    data = data.replace("-", "+").replace("_", "/")
    return base64.b64decode(data + "=" * (-len(data) % 4))


def _image_data(provider: str, body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if provider == "anthropic":
        for m in body.get("messages", []):
            for b in m.get("content", []) if isinstance(m.get("content"), list) else []:
                if b.get("type") == "image":
                    out.append(b["source"]["data"])
    elif provider == "gemini":
        for c in body.get("contents", []):
            for p in c.get("parts", []):
                blob = p.get("inlineData") or p.get("inline_data")
                if blob:
                    out.append(blob["data"])
    else:
        for item in body.get("input", []):
            for p in item.get("content", []) if isinstance(item.get("content"), list) else []:
                if p.get("type") == "input_image":
                    out.append(p["image_url"].partition(",")[2])
    return out


def _texts(provider: str, body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if provider == "anthropic":
        system = body.get("system")
        if isinstance(system, str):
            out.append(system)
        elif isinstance(system, list):
            out.extend(b.get("text", "") for b in system)
        for m in body.get("messages", []):
            content = m.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out.extend(b.get("text", "") for b in content if b.get("type") == "text")
    elif provider == "gemini":
        system = body.get("systemInstruction") or body.get("system_instruction")
        if system:
            out.extend(p.get("text", "") for p in system.get("parts", []))
        for c in body.get("contents", []):
            out.extend(p["text"] for p in c.get("parts", []) if "text" in p)
    else:
        for item in body.get("input", []):
            content = item.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out.extend(
                    p.get("text", "") for p in content if p.get("type") in ("input_text", "output_text")
                )
    return out


Responder = Callable[[Request], "Said | str"]


@dataclass
class Stats:
    """Counters, updated under the server's lock. ``requests``: model requests received;
    ``bodies``/``headers``: each one's JSON body and headers; ``statuses``: the status sent;
    ``arrivals``: when each arrived (monotonic); ``max_in_flight``: most requests open at once."""

    requests: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)  # time.monotonic() of each request
    lookups: list[str] = field(default_factory=list)  # the models looked up (GET, the preflight)
    in_flight: int = 0
    max_in_flight: int = 0


class ProviderServer:
    """The server for ``provider`` ("anthropic", "gemini" or "openai"); a context manager.
    ``base_url``: what the provider's SDK takes (the host; ``.../v1`` for OpenAI).
    ``after_answer``: called with the status of each reply once it is sent (tests wait on it)."""

    def __init__(
        self,
        provider: str,
        responder: Responder | Said | str | None = None,
        *,
        model: str = "",
        models: set[str] | None = None,
        key: str | None = None,
    ) -> None:
        if provider not in PATHS:
            raise ValueError(f"unknown provider {provider!r}")
        self.provider = provider
        self.model = model
        self.models = models  # the models it knows (None: any name)
        self.key = key  # the one key it accepts (None: any)
        self._lock = threading.Lock()
        self.answers = Answers(Said, Said, "ok" if responder is None else responder, self._lock)
        self.stats = Stats()
        self.errors: list[str] = []  # the responder's own failures (a broken double, not the product)
        self.answered = threading.Condition(self._lock)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def script(self, *replies: Said | str) -> ProviderServer:
        self.answers.script(replies)
        return self

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1" if self.provider == "openai" else self.url

    def __enter__(self) -> ProviderServer:
        handler = type("_Bound", (_Handler,), {"server_ref": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    # ---- answers in the provider's format
    def reply_body(self, request: Request, said: Said) -> dict[str, Any]:
        model = request.model or self.model or "test-model"
        inp = (
            said.input_tokens
            if said.input_tokens is not None
            else 40 + 100 * len(_image_data(self.provider, request.body))
        )
        if self.provider == "anthropic":
            content: list[dict[str, Any]] = []
            if said.text is not None:
                content.append({"type": "text", "text": said.text})
            for i, (name, args) in enumerate(said.calls):
                content.append({"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args})
            stop = said.stop or ("tool_use" if said.calls else "end_turn")
            usage = {"input_tokens": inp - said.cached_tokens, "output_tokens": said.output_tokens,
                     "cache_read_input_tokens": said.cached_tokens, "cache_creation_input_tokens": 0}  # fmt: skip
            return {"id": "msg_test", "type": "message", "role": "assistant", "model": model, "content": content,
                    "stop_reason": stop, "stop_sequence": None, "usage": usage}  # fmt: skip
        if self.provider == "gemini":
            parts: list[dict[str, Any]] = []
            if said.text is not None:
                parts.append({"text": said.text})
            for name, args in said.calls:
                parts.append({"functionCall": {"name": name, "args": args}})
            usage = {"promptTokenCount": inp, "candidatesTokenCount": said.output_tokens - said.reasoning_tokens,
                     "thoughtsTokenCount": said.reasoning_tokens, "cachedContentTokenCount": said.cached_tokens,
                     "totalTokenCount": inp + said.output_tokens}  # fmt: skip
            candidate = {
                "content": {"role": "model", "parts": parts},
                "finishReason": said.stop or "STOP",
                "index": 0,
            }
            return {
                "candidates": [candidate],
                "usageMetadata": usage,
                "modelVersion": model,
                "responseId": "r1",
            }
        output: list[dict[str, Any]] = []
        if said.text is not None:
            output.append({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": said.text, "annotations": []}]})  # fmt: skip
        for i, (_, action) in enumerate(said.calls):
            output.append({"type": "computer_call", "id": f"cu_{i}", "call_id": f"call_{i}", "action": action,
                           "pending_safety_checks": [], "status": "completed"})  # fmt: skip
        status = said.stop or "completed"
        return {
            "id": "resp_test", "object": "response", "created_at": 0, "model": model, "status": status,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None,
            "usage": {"input_tokens": inp, "input_tokens_details": {"cached_tokens": said.cached_tokens},
                      "output_tokens": said.output_tokens,
                      "output_tokens_details": {"reasoning_tokens": said.reasoning_tokens},
                      "total_tokens": inp + said.output_tokens},
        }  # fmt: skip


class _Handler(JsonHandler):
    server_ref: ProviderServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _refused_key(self) -> bool:
        srv = self.server_ref
        if srv.key is None:
            return False
        sent = {(self.headers.get(h) or "").removeprefix("Bearer ") for h in KEY_HEADERS}
        if srv.key in sent:
            return False
        body = error_body(srv.provider, 401, "invalid x-api-key")
        self._send(401, json.dumps(body).encode())
        return True

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        srv = self.server_ref
        path = self.path.split("?")[0]
        m = MODEL_PATHS[srv.provider].match(path)
        if m is None:
            self._send(404, json.dumps(error_body(srv.provider, 404, f"no route {path}")).encode())
            return
        name = m.group("model")
        with srv._lock:
            srv.stats.lookups.append(name)
        if self._refused_key():
            return
        if srv.models is not None and name not in srv.models:
            self._send(404, json.dumps(error_body(srv.provider, 404, f"model: {name}")).encode())
            return
        if srv.provider == "anthropic":
            body = {"type": "model", "id": name, "display_name": name, "created_at": "2026-01-01T00:00:00Z"}
        elif srv.provider == "gemini":
            body = {"name": f"models/{name}", "displayName": name, "inputTokenLimit": 1048576}
        else:
            body = {"id": name, "object": "model", "created": 0, "owned_by": "test"}
        self._send(200, json.dumps(body).encode())

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        srv = self.server_ref
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0]
        m = PATHS[srv.provider].match(path)
        if m is None:
            self._send(404, json.dumps({"error": {"message": f"no route {path}"}}).encode())
            return
        body = json.loads(raw)
        model = m.groupdict().get("model") or body.get("model", "")
        request = Request(srv.provider, body, {k.lower(): v for k, v in self.headers.items()}, model)
        with srv._lock:
            st = srv.stats
            st.requests += 1
            st.bodies.append(body)
            st.headers.append(request.headers)
            st.paths.append(path)
            st.arrivals.append(time.monotonic())
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            try:
                said = srv.answers.next(request)
            except Exception as e:  # noqa: BLE001 - a broken responder answers 422, never retried
                srv.errors.append(f"{type(e).__name__}: {e}")
                said = Said(status=422, error={"error": {"message": f"responder failed: {e}"}})
            if said.error is not None or said.status != 200:
                payload = json.dumps(said.error or {}).encode()
            else:
                payload = json.dumps(srv.reply_body(request, said)).encode()
            self._send(said.status, payload, said.headers)
        finally:
            with srv._lock:
                st.in_flight -= 1
                st.statuses.append(said.status if "said" in locals() else 500)
                srv.answered.notify_all()
