"""The body of an OpenAI-compatible chat request: our messages as the API's, each image as a data
URL or, with the local transport, as a ``file://`` URL of a file written once under a folder the
server reads (vLLM's ``--allowed-local-media-path``); the sampling options the endpoint names
apart from those that travel in the body (vLLM's and SGLang's own). :class:`ChatWire` is the half
of :class:`~regionfocus.adapters.backends.openai_http.OpenAIBackend` that builds requests; the
other half sends them.
"""

from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from regionfocus.adapters.backends import body_json
from regionfocus.adapters.backends.base import Message
from regionfocus.adapters.backends.encoding import LocalFiles

log = logging.getLogger("regionfocus.adapters.backends.openai_http")  # one logger for the backend

# Parameters the chat-completions endpoint takes by name; any other sampling option (top_k,
# repetition_penalty, min_p, ... which vLLM and SGLang accept) travels in the request body.
_NAMED_PARAMS = frozenset(
    {
        "top_p",
        "seed",
        "stop",
        "n",
        "presence_penalty",
        "frequency_penalty",
        "logprobs",
        "top_logprobs",
        "logit_bias",
    }
)


@dataclass
class _WireStats:
    """What building one request body cost: CPU seconds encoding/writing images, bytes of
    images as sent, and the local files it holds until its answer."""

    encode_s: float = 0.0
    image_bytes: int = 0
    files: list[str] = field(default_factory=list)


def _merged(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``create``'s arguments as the JSON body it sends: ``extra_body`` merged in."""
    return {**{k: v for k, v in kwargs.items() if k != "extra_body"}, **kwargs.get("extra_body", {})}


class ChatWire:
    """Building requests (a mix-in of the backend): the encoder (``self.encoder``), the local
    transport (``self.local``, with its per-image file cache), the extra body and the model
    name are the backend's."""

    def use_local_media(self, folder: str | None = None, image_format: str = "bmp") -> LocalFiles:
        """Send images as ``file://`` URLs of files written under ``folder`` (see the class
        notes); ``None``: /dev/shm/regionfocus-media, the folder ``serve-command`` names."""
        self.local = LocalFiles(folder, image_format)
        self._local_ok = True
        return self.local

    def request_kwargs(
        self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0, **sampling: Any
    ) -> dict[str, Any]:
        """The arguments of ``chat.completions.create`` for this request: named parameters, and
        everything else (vLLM's ``continue_final_message``, ``top_k``, ...) in ``extra_body``,
        which the client merges into the JSON body. Images are encoded here (data URLs)."""
        options = {"max_tokens": max_tokens, "temperature": temperature, **sampling}
        return self._build(messages, options, False)[0]

    def request_body(self, messages: list[Message], **options: Any) -> dict[str, Any]:
        """The JSON body the server receives (``extra_body`` merged in, as the client sends it)."""
        return _merged(self.request_kwargs(messages, **options))

    def _content(
        self, messages: list[Message], options: dict[str, Any], local: bool
    ) -> tuple[bytes, _WireStats]:
        """The request's JSON body as bytes (images encoded, data URLs spliced in unscanned)."""
        kwargs, stats = self._build(messages, options, local)
        return body_json.dumps(_merged(kwargs)), stats

    def _build(
        self, messages: list[Message], options: dict[str, Any], local: bool
    ) -> tuple[dict[str, Any], _WireStats]:
        stats = _WireStats()
        options = dict(options)
        max_tokens, temperature = options.pop("max_tokens", 512), options.pop("temperature", 0.0)
        sampling = options
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": self._to_wire(messages, stats, local),
            "max_tokens": int(max_tokens),
            "temperature": float(temperature),
        }
        extra = dict(self.extra_body)
        for name, value in sampling.items():
            if name in _NAMED_PARAMS:
                kwargs[name] = value
            else:
                extra[name] = value
        if extra:
            kwargs["extra_body"] = extra
        return kwargs, stats

    def _image_url(self, image: Any, stats: _WireStats, local: bool) -> str:
        """The URL one image travels as; its encoding cost and size go into ``stats``."""
        c0 = time.thread_time()
        url = self._local_file(image) if local and self.local is not None else None
        if url is not None:
            stats.files.append(url)  # acquired in _local_file: held until the answer
            stats.image_bytes += self._local_size.get(url, 0)
        else:
            url = self.encoder.data_url(image)
            stats.image_bytes += len(url)
        stats.encode_s += time.thread_time() - c0
        return url

    def _local_file(self, image: Any) -> str | None:
        """The file URL of ``image``, written on first use (cached per image object, like the
        data-URL encoder) and acquired for the calling request; None when it cannot be written
        (the caller sends a data URL: a full /dev/shm must not fail the sample)."""
        key = id(image)
        with self._local_lock:
            hit = self._local_urls.get(key)
            if hit is not None and hit[0]() is image and self.local.acquire(hit[1]):
                return hit[1]
            try:
                url, size = self.local.write(image)
            except OSError as e:
                self._write_failed(e)
                return None
            self.local.acquire(url)
            self._local_size[url] = size
            self._local_urls[key] = (weakref.ref(image), url)
            while len(self._local_urls) > 64:
                self._local_urls.popitem(last=False)
            while len(self._local_size) > 1024:
                self._local_size.pop(next(iter(self._local_size)))
        return url

    def _write_failed(self, error: OSError) -> None:
        """Warn once per backend: under a full folder every request would fail its write, and
        the local transport stays on (space may come back) without a warning per image."""
        if self._write_warned:
            return
        self._write_warned = True
        log.warning(
            "could not write an image under %s (%s); sending images that cannot be written as data "
            "URLs (further write failures are not logged)",
            self.local.folder if self.local else "",
            error.strerror or type(error).__name__,
        )

    def _to_wire(
        self, messages: list[Message], stats: _WireStats | None = None, local: bool = False
    ) -> list[dict[str, Any]]:
        """Our messages with every ``{"type": "image", "image": PIL}`` part as an image_url part
        (data URLs, or file:// URLs when ``local``). An image part is replaced in the caller's
        message too, so the image can be freed while the request waits; an image_url part with
        one of our own file URLs is re-acquired (local) or turned back into a data URL."""
        stats = stats if stats is not None else _WireStats()
        wire = []
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or "role" not in message:
                raise ValueError(f"message {i} must be a dict with a 'role'; got {type(message).__name__}")
            content = message.get("content")
            if isinstance(content, list):
                parts = []
                for j, part in enumerate(content):
                    kind = part.get("type") if isinstance(part, dict) else None
                    if kind == "image":
                        url = self._image_url(part["image"], stats, local)
                        wired = {"type": "image_url", "image_url": {"url": url}}
                        parts.append(wired)
                        # The caller's message keeps the URL instead of the image, so the image
                        # can be freed while the request waits; a file URL carries a hold on its
                        # file for as long as the message lives (it may be sent again).
                        hold = self.local.hold(url) if local and self.local is not None else None
                        content[j] = {**wired, "hold": hold} if hold is not None else wired
                    elif (
                        kind == "image_url"
                        and self.local is not None
                        and self.local.owns(str(part.get("image_url", {}).get("url", "")))
                    ):
                        url = part["image_url"]["url"]
                        if local and self.local.acquire(url):
                            stats.files.append(url)
                            stats.image_bytes += self._local_size.get(url, 0)
                        else:  # the data-URL fallback: the file still exists, we hold it
                            c0 = time.thread_time()
                            url = self.encoder.data_url(self.local.read(url))
                            stats.encode_s += time.thread_time() - c0
                            stats.image_bytes += len(url)
                        parts.append({"type": "image_url", "image_url": {"url": url}})
                    elif kind in ("text", "image_url"):
                        parts.append(part)
                    else:
                        raise ValueError(f"message {i} part {j}: unsupported content part type {kind!r}")
                message = {**message, "content": parts}
            wire.append(message)
        return wire
