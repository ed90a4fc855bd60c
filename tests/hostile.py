"""A hostile server for the harness tests: a model-like responder that misbehaves on chosen
calls of chosen samples, the way a real server does under load or a real model does now and
then.

``Hostile(inner, sample_of, faults)`` wraps any responder of :class:`tests.chat_server.ChatServer`
(a callable from the request body to a Reply). ``sample_of(text)`` names the sample a request
belongs to (None: not one of ours). ``faults`` maps ``(sample, call)`` to a fault, where
``call`` is the kind of request within that sample's pass:

* ``"act"``: the sample's first grounding request (the baseline);
* ``"view"``: every later grounding request of the sample (the zoomed views of a round);
* ``"judge"``, ``"focal"``, ``"choose"``: our own requests, told apart by their markers
  (:func:`tests.model_like.request_kind`).

Faults: ``"500"`` (an HTTP 500 on every attempt, so the client's retries are spent too), or a
reply the model writes: ``"nan"`` (a Qwen tool call with a "nan" number), ``"inf"`` (JSON
``1e999`` coordinates), ``"nan-literal"`` (bare ``NaN``/``Infinity`` JSON constants),
``"surrogate"`` (the inner answer with a lone surrogate escaped into the JSON text),
``"huge"`` (a 300 KB reply of fragments that tempt backtracking regexes), and ``"nan-usage"``
(the inner answer with non-finite token counts in ``usage``). Replies that are no answer:
``"cut"`` (the inner answer cut just after the first digit of its last number, ``finish_reason:
"length"``, as a server sends a reply that reached ``max_tokens``), ``"cut-tool"`` (the same, as
structured ``tool_calls`` whose arguments stop mid-number), ``"cut-args"`` (those cut arguments
under ``finish_reason: "tool_calls"``, a cut the server does not declare), ``"null"`` (``content: null``,
finish reason ``stop``) and ``"bomb"`` (a gzip body of a few MB that inflates to
:data:`BOMB_BYTES`). ``every``: one fault for every request, whatever its sample.

``seen`` counts what was answered per (sample, call, fault), so a test proves the faults fired.
"""

from __future__ import annotations

import functools
import json
import re
import threading
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .chat_server import Reply, request_text
from .model_like import request_kind

__all__ = [
    "BOMB_BYTES",
    "HUGE_REPLY_BYTES",
    "MARKUP",
    "MARKUP_ESCAPED",
    "Hostile",
    "colour_sample_of",
    "cut_mid_number",
    "gzip_completion",
    "hostile_text",
]

HUGE_REPLY_BYTES = 300_000
BOMB_BYTES = 2 * 2**30  # what the gzip reply inflated to
# Text a model, a page or a data set may write that must reach a report as text: a script, an
# attribute break-out with an event handler, and template syntax that must not be evaluated.
MARKUP = '<script>alert(1)</script>"><img src=x onerror=alert(2)>{{ 7*7 }}'
MARKUP_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(2)&gt;{{ 7*7 }}"


def hostile_text(fault: str) -> str:
    """The answer text of a content fault, written as a model would write it."""
    if fault == "nan":
        args = '{"action": "wait", "time": "nan"}'
        return f'The page is loading.\n<tool_call>\n{{"name": "computer_use", "arguments": {args}}}\n</tool_call>'
    if fault == "inf":
        args = '{"action": "left_click", "coordinate": [1e999, 12]}'
        return f'<tool_call>\n{{"name": "computer_use", "arguments": {args}}}\n</tool_call>'
    if fault == "nan-literal":
        args = '{"action": "left_click", "coordinate": [NaN, Infinity]}'
        return f'<tool_call>\n{{"name": "computer_use", "arguments": {args}}}\n</tool_call>'
    if fault == "huge":
        # Openers without closers, digits and separators: what makes `.*?` patterns rescan.
        chunk = 'Action: click(start_box=\'(<point>12 {"coordinate": [3, <tool_call>{"action": (4,'
        text = "Let me think about where the swatch is. " + chunk * (HUGE_REPLY_BYTES // len(chunk) + 1)
        return text[:HUGE_REPLY_BYTES]
    raise ValueError(f"not a content fault: {fault!r}")


def cut_mid_number(text: str) -> str:
    """``text`` cut just after the first digit of its last number (``[188, 64]`` -> ``[188, 6``),
    where a reply that reached its token limit may stop; a text without digits, cut in half."""
    numbers = list(re.finditer(r"\d+", text))
    return text[: numbers[-1].start() + 1] if numbers else text[: len(text) // 2]


def _cut_tool_calls(text: str) -> list[dict[str, Any]] | None:
    """The ``<tool_call>`` of ``text`` as the structured ``tool_calls`` a server with a tool
    parser returns, its arguments cut mid-number; None when ``text`` holds no whole call."""
    m = re.search(r"<tool_call>\s*(\{.*\})\s*</tool_call>", text, re.S)
    if not m:
        return None
    call = json.loads(m.group(1))
    arguments = cut_mid_number(json.dumps(call["arguments"]))
    return [{"id": "call_0", "type": "function", "function": {"name": call["name"], "arguments": arguments}}]


@functools.cache
def gzip_completion(size: int = BOMB_BYTES) -> bytes:
    """A chat completion whose answer is ``size`` bytes of "A", gzip-compressed: ~1 KB a MB, so
    a 2 GB answer travels in 2 MB. Each MB of "A" compresses, after a full flush, to the same
    bytes, so the body is built from one block instead of deflating 2 GB."""
    head = json.dumps(
        {"id": "chatcmpl-bomb", "object": "chat.completion", "created": 0, "model": "bomb",
         "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "@"}}]}
    ).encode()  # fmt: skip
    head, tail = head.split(b"@")
    block = b"A" * 2**20
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)  # raw deflate, in our own gzip frame
    out = [raw.compress(head) + raw.flush(zlib.Z_FULL_FLUSH)]
    deflated = raw.compress(block) + raw.flush(zlib.Z_FULL_FLUSH)
    blocks, rest = divmod(size, len(block))
    out.append(deflated * blocks)
    out.append(raw.compress(block[:rest] + tail) + raw.flush())
    crc = zlib.crc32(head)
    for _ in range(blocks):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(block[:rest] + tail, crc)
    length = len(head) + size + len(tail)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # gzip, deflate, no name, no mtime
    return header + b"".join(out) + crc.to_bytes(4, "little") + (length % 2**32).to_bytes(4, "little")


@dataclass
class Hostile:
    inner: Callable[[dict[str, Any]], Any]
    sample_of: Callable[[str], str | None]
    faults: dict[tuple[str, str], str] = field(default_factory=dict)
    every: str | None = None
    seen: Counter = field(default_factory=Counter)
    _grounding: Counter = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def call_of(self, sample: str, text: str) -> str:
        kind = request_kind(text)
        if kind != "ground":
            return kind
        with self._lock:
            self._grounding[sample] += 1
            return "act" if self._grounding[sample] == 1 else "view"

    def __call__(self, body: dict[str, Any]) -> Reply:
        text = request_text(body)
        sample = self.sample_of(text)
        call = self.call_of(sample, text) if sample is not None else None
        fault = self.faults.get((sample, call)) if sample is not None else None
        fault = self.every or fault
        if fault is None:
            return self.inner(body)
        with self._lock:
            self.seen[(sample, call, fault)] += 1
        if fault == "500":
            return Reply.server_error(500)
        if fault == "null":
            return Reply(content=None)
        if fault == "bomb":
            return Reply(body=gzip_completion(), headers={"Content-Encoding": "gzip"})
        if fault in ("cut", "cut-tool", "cut-args"):
            reply = self.inner(body)
            reply = Reply.text(reply) if isinstance(reply, str) else reply
            if reply.status != 200 or reply.body is not None:
                return reply  # an error page is not cut
            calls = _cut_tool_calls(reply.content or "") if fault != "cut" else None
            if calls is None and fault == "cut-args":
                return reply  # no call to cut: the fault is about a call's arguments
            if calls is not None:
                return Reply(
                    content=None,
                    tool_calls=calls,
                    finish_reason="length" if fault == "cut-tool" else "tool_calls",
                )
            return Reply.text(cut_mid_number(reply.content or ""), finish_reason="length")
        if fault in ("surrogate", "nan-usage"):
            reply = self.inner(body)
            reply = Reply.text(reply) if isinstance(reply, str) else reply
            if fault == "nan-usage":
                reply.prompt_tokens = float("nan")
                reply.completion_tokens = float("inf")
                return reply
            # json.dumps escapes a lone surrogate as "\ud800": valid JSON text that decodes to
            # a str UTF-8 cannot encode, exactly what a client gets from such a server.
            reply.content = "\ud800 " + (reply.content or "") + " \udfff"
            return reply
        return Reply.text(hostile_text(fault))


def colour_sample_of(ids_by_colour: dict[str, str]) -> Callable[[str], str | None]:
    """``sample_of`` for the colour-swatch data sets: the request names the swatch's colour."""

    def sample_of(text: str) -> str | None:
        m = re.search(r"#([0-9a-f]{6})", text)
        return ids_by_colour.get(m.group(1)) if m else None

    return sample_of
