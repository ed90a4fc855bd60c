"""A real local HTTP server speaking the OpenAI chat-completions protocol, scriptable per test.

Used by the backend tests and reused by harness tests and throughput benchmarks: it stands in
for vLLM/SGLang/a hosted API at the HTTP level, so the client code under test is the real one.

Usage::

    with ChatServer(responder=lambda req: Reply.text("Action: click(start_box='(5,5)')")) as srv:
        backend = OpenAIBackend([srv.base_url], model="m")   # base_url ends in /v1
        ...
        assert srv.stats.max_in_flight <= 4

Each chat request is answered by the next scripted :class:`Reply` (``srv.script(...)``, consumed
in order) or, when the script is empty, by ``responder`` (a callable taking the request JSON and
returning a Reply or a plain string, or a fixed Reply/string). Replies can be text in any model
family's format, a 429 with Retry-After, a 5xx, a hang longer than the client's timeout, an
invalid JSON body, empty choices, or an added latency.

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /health``.
``max_concurrency`` makes the server process at most that many chat requests at once (the rest
queue), like a server with a fixed batch size; ``latency`` adds a fixed delay to every reply.
"""

from __future__ import annotations

import base64
import collections
import io
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, TypeVar

from PIL import Image

A = TypeVar("A")

__all__ = ["Answers", "ChatServer", "Reply", "Router", "ServerStats", "request_images", "request_text"]


@dataclass
class Reply:
    """One scripted answer. Use the constructors; fields are the raw knobs.

    ``status``/``headers``: the HTTP status and extra headers. ``body``: bytes sent verbatim
    instead of a completion (invalid JSON, error bodies). ``choices``: None for one choice
    carrying ``content``; ``[]`` for an empty choices list. ``delay``: seconds to wait before
    answering (a hang, when longer than the client's timeout). Token counts default to simple
    deterministic counts of the request and answer (see :func:`count_tokens`). ``content=None``
    sends ``content: null``; ``finish_reason`` what the server says ended the reply ("length":
    it reached max_tokens); ``tool_calls`` structured calls, as a server with a tool parser sends.
    """

    content: str | None = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    choices: list[Any] | None = None
    delay: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"
    tool_calls: list[dict[str, Any]] | None = None

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0, **kw: Any) -> Reply:
        return cls(content=content, delay=delay, **kw)

    @classmethod
    def rate_limited(cls, retry_after: float | str | None = 0.2) -> Reply:
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        body = json.dumps({"error": {"message": "rate limited", "type": "rate_limit_error"}}).encode()
        return cls(status=429, headers=headers, body=body)

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        body = json.dumps({"error": {"message": f"scripted error {status}", "type": "server_error"}}).encode()
        return cls(status=status, body=body)

    @classmethod
    def client_error(cls, status: int = 400, message: str = "bad request") -> Reply:
        body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
        return cls(status=status, body=body)

    @classmethod
    def hang(cls, seconds: float = 30.0) -> Reply:
        """Answer (with text "late") only after ``seconds``; the server's stop() cuts it short."""
        return cls(content="late", delay=seconds)

    @classmethod
    def invalid_json(cls) -> Reply:
        return cls(body=b'{"id": "x", "choices": [{"message": {"content": "trunc')

    @classmethod
    def empty_choices(cls) -> Reply:
        return cls(choices=[])


Responder = Callable[[dict[str, Any]], "Reply | str"]


class Answers(Generic[A]):
    """A test server's answers: the scripted ones first, in order, then ``responder`` (a fixed
    answer or a function of the request). ``kind`` is the server's answer type and ``make`` turns
    a plain string into one; ``lock`` is the server's own (its handler threads share it)."""

    def __init__(self, kind: type[A], make: Callable[[str], A], responder: Any, lock: threading.Lock):
        self._kind, self._make, self._responder, self._lock = kind, make, responder, lock
        self._script: collections.deque[A] = collections.deque()

    def _as_answer(self, answer: Any) -> A:
        return answer if isinstance(answer, self._kind) else self._make(str(answer))

    def script(self, answers: Iterable[Any]) -> None:
        with self._lock:
            self._script.extend(self._as_answer(a) for a in answers)

    def set(self, responder: Any) -> None:
        with self._lock:
            self._responder = responder

    def next(self, request: Any) -> A:
        with self._lock:
            scripted = self._script.popleft() if self._script else None
            responder = self._responder
        if scripted is not None:
            return scripted
        return self._as_answer(responder(request) if callable(responder) else responder)


@dataclass
class ServerStats:
    """Counters, updated under the server's lock. ``max_in_flight``: most chat requests received
    and not yet answered at one time; ``max_active``: most being processed at once (differs
    from ``max_in_flight`` only with ``max_concurrency``). ``bodies``: the chat request JSONs in
    arrival order; ``statuses``: the status sent for each; ``auth_headers``: Authorization
    header values received."""

    requests: int = 0
    chat_requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    active: int = 0
    max_active: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    auth_headers: list[str | None] = field(default_factory=list)
    sessions: list[str | None] = field(default_factory=list)  # X-Session-ID of each chat request
    disconnects: int = 0


def request_text(body: dict[str, Any]) -> str:
    """All text parts of a chat request's messages, joined with newlines."""
    out: list[str] = []
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(p.get("text", "") for p in content if p.get("type") == "text")
    return "\n".join(out)


def request_images(body: dict[str, Any]) -> list[Image.Image]:
    """The images a chat request carries as base64 data URLs, decoded, in order."""
    images = []
    for msg in body.get("messages", []):
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") != "image_url":
                continue
            url = part["image_url"]["url"]
            _, _, data = url.partition(",")
            images.append(Image.open(io.BytesIO(base64.b64decode(data))))
    return images


def count_tokens(body: dict[str, Any], content: str) -> tuple[int, int]:
    """Deterministic stand-in token counts: whitespace words of the text, plus 100 per image."""
    n_images = sum(
        1
        for m in body.get("messages", [])
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    )
    return len(request_text(body).split()) + 100 * n_images, len((content or "").split())


class ChatServer:
    """The server; start with ``with ChatServer(...) as srv`` or ``start()``/``stop()``.

    ``responder``: callable(request_json) -> Reply | str, or a fixed Reply or string (default:
    the text "ok"). ``latency``: seconds added before every chat reply. ``max_concurrency``:
    process at most this many chat requests at once (None: unbounded). ``model``: the id listed
    by /v1/models. ``keep_bodies``: record every request JSON in ``stats.bodies``.
    """

    def __init__(
        self,
        responder: Responder | Reply | str | None = None,
        *,
        latency: float = 0.0,
        max_concurrency: int | None = None,
        model: str = "test-model",
        host: str = "127.0.0.1",
        keep_bodies: bool = True,
    ) -> None:
        self.latency = latency
        self.model = model
        # Long benchmark runs send thousands of multi-MB requests: keep_bodies=False stops
        # stats.bodies from holding them all.
        self.keep_bodies = keep_bodies
        self.stats = ServerStats()
        self._lock = threading.Lock()
        self.answers = Answers(Reply, Reply.text, "ok" if responder is None else responder, self._lock)
        self._stopping = threading.Event()
        self._slots = threading.BoundedSemaphore(max_concurrency) if max_concurrency else None
        self._host = host
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    # -- control -----------------------------------------------------------------------------
    def script(self, *replies: Reply | str) -> ChatServer:
        """Queue replies for the next chat requests, in order (then ``responder`` again)."""
        self.answers.script(replies)
        return self

    def set_responder(self, responder: Responder | Reply | str) -> None:
        self.answers.set(responder)

    def reset_stats(self) -> None:
        with self._lock:
            self.stats = ServerStats()

    @property
    def port(self) -> int:
        """The bound port (kept after stop(), so tests can aim at a closed port)."""
        if self._port is None:
            raise RuntimeError("ChatServer was never started")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in ``/v1``."""
        return f"{self.url}/v1"

    def start(self) -> ChatServer:
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"chat_server": self})
        httpd = ThreadingHTTPServer((self._host, 0), handler)
        httpd.daemon_threads = True
        # Do not join handler threads on close: a scripted hang must not hold up the test.
        httpd.block_on_close = False
        self._httpd = httpd
        self._port = httpd.server_address[1]
        self._stopping.clear()
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="chat-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping in a delay
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling (handler threads) --------------------------------------------------
    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        if reply.choices is not None:
            choices = reply.choices
        else:
            message: dict[str, Any] = {"role": "assistant", "content": reply.content}
            if reply.tool_calls is not None:
                message["tool_calls"] = reply.tool_calls
            choices = [
                {"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}
            ]
        prompt_tokens, completion_tokens = count_tokens(body, reply.content or "")
        if reply.prompt_tokens is not None:
            prompt_tokens = reply.prompt_tokens
        if reply.completion_tokens is not None:
            completion_tokens = reply.completion_tokens
        return {
            "id": f"chatcmpl-{self.stats.chat_requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler that answers with JSON bodies (the provider servers share it)."""

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)


class _Handler(JsonHandler):
    chat_server: ChatServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers and the openai client use

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet: tests read ServerStats instead

    def handle(self) -> None:
        # A client that stops reading a reply (a timeout, a reply past its size cap) resets
        # the connection: expected here, not a traceback on stderr.
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            with self.chat_server._lock:
                self.chat_server.stats.disconnects += 1

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        srv = self.chat_server
        with srv._lock:
            srv.stats.requests += 1
        if self.path.rstrip("/") == "/health":
            self._send(200, b"{}")
        elif self.path.rstrip("/") == "/v1/models":
            data = {"object": "list", "data": [{"id": srv.model, "object": "model", "owned_by": "test"}]}
            self._send(200, json.dumps(data).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        srv = self.chat_server
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            with srv._lock:
                srv.stats.requests += 1
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, b'{"error": {"message": "request body is not JSON"}}')
            return
        with srv._lock:
            st = srv.stats
            st.requests += 1
            st.chat_requests += 1
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
            if srv.keep_bodies:
                st.bodies.append(body)
            st.auth_headers.append(self.headers.get("Authorization"))
            st.sessions.append(self.headers.get("X-Session-ID"))
        try:
            if srv._slots is not None:
                srv._slots.acquire()
            try:
                with srv._lock:
                    st.active += 1
                    st.max_active = max(st.max_active, st.active)
                try:
                    self._answer(srv, body)
                finally:
                    with srv._lock:
                        st.active -= 1
            finally:
                if srv._slots is not None:
                    srv._slots.release()
        finally:
            with srv._lock:
                st.in_flight -= 1

    def _answer(self, srv: ChatServer, body: dict[str, Any]) -> None:
        st = srv.stats
        if body.get("stream"):
            reply = Reply.client_error(400, "streaming is not supported by the test server")
        else:
            reply = srv.answers.next(body)
        srv._sleep(srv.latency + reply.delay)
        if reply.body is not None:
            payload = reply.body
        else:
            payload = json.dumps(srv._completion(body, reply)).encode()
        with srv._lock:
            st.statuses.append(reply.status)
        try:
            self._send(reply.status, payload, reply.headers)
        except (BrokenPipeError, ConnectionResetError):
            with srv._lock:
                st.disconnects += 1  # the client gave up (its timeout): expected for hangs
            self.close_connection = True


class Router:
    """vllm-router (the Rust binary of the ``vllm-router`` wheel) in front of ``worker_urls``,
    in a child process: ``with Router([srv.url, ...]) as r: ... r.base_url``. ``policy``:
    sticky_least_loaded and consistent_hash both keep each X-Session-ID (one sample's requests)
    on one replica; the first places it on the least-loaded one, the second by its hash. Raises
    :class:`RuntimeError` saying why when the binary is absent or does not answer in time."""

    def __init__(self, worker_urls: list[str], policy: str = "sticky_least_loaded", timeout: float = 30.0):
        self.worker_urls = [u.removesuffix("/v1") for u in worker_urls]
        self.policy = policy
        self.timeout = timeout
        self.base_url = ""

    def __enter__(self) -> Router:
        import os
        import shutil
        import socket
        import subprocess
        import sys
        import urllib.request
        from pathlib import Path

        exe = shutil.which("vllm-router", path=str(Path(sys.executable).parent)) or shutil.which(
            "vllm-router"
        )
        if exe is None:
            raise RuntimeError("vllm-router is not installed (pip install vllm-router, in the dev extra)")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd = [exe, "--host", "127.0.0.1", "--port", str(port), "--policy", self.policy,
               "--worker-urls", *self.worker_urls, "--log-level", "error"]  # fmt: skip
        # RUST_LOG: its per-request routing lines would otherwise cost CPU the client needs.
        env = {**os.environ, "RUST_LOG": "error"}
        self._proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"vllm-router exited at start (code {self._proc.returncode}): {cmd}")
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as r:
                    if r.status == 200:
                        self.base_url = f"{url}/v1"
                        return self
            except OSError:
                time.sleep(0.1)
        self.__exit__()
        raise RuntimeError(f"vllm-router did not answer within {self.timeout} s: {cmd}")

    def __exit__(self, *exc: object) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a router that ignores SIGTERM is killed
            self._proc.kill()
            self._proc.wait()
