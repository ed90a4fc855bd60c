"""A chat request's JSON body as bytes, with its image data URLs spliced in unscanned.

``json.dumps`` reads every character of a string to escape it: ~3.5 ms of CPU per MB, 45 ms per
RegionFocus sample at a 4K model size with JPEG and ~130 ms with PNG, for base64 text that
never needs escaping. Here each data URL our encoder made (:class:`.encoding.DataUrl`) is
swapped for a short token, the small rest is dumped, and the URL goes in where its token was.
Any other string is left to the encoder. The result parses to exactly the body given.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from regionfocus.adapters.backends.encoding import DataUrl


def dumps(body: dict[str, Any]) -> bytes:
    """``body`` as UTF-8 JSON (compact separators, non-ASCII kept, as the openai client sends)."""
    marker = f"@rf{secrets.token_hex(6)}@"
    urls: list[str] = []
    text = json.dumps(_swap(body, marker, urls), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if not urls:
        return text.encode()
    head, *rest = text.encode().split(marker.encode())
    out = [head]
    for chunk in rest:
        index, tail = chunk.split(b"@", 1)
        out.append(urls[int(index)].encode("ascii"))
        out.append(tail)
    return b"".join(out)


def _swap(obj: Any, marker: str, urls: list[str]) -> Any:
    """A copy of ``obj`` with every :class:`DataUrl` replaced by the token ``<marker><i>@``."""
    if isinstance(obj, DataUrl):
        urls.append(obj)
        return f"{marker}{len(urls) - 1}@"
    if isinstance(obj, dict):
        return {k: _swap(v, marker, urls) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_swap(v, marker, urls) for v in obj]
    return obj
