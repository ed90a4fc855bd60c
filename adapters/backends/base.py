"""The seam between adapters (prompts, parsing, frames) and backends (transport).

Messages use the OpenAI chat shape, except that an image part carries the PIL image itself:
``{"type": "image", "image": <PIL.Image>}``. The adapter has already resized it to exactly
the size its model sees; a backend encodes it for transport (HTTP) or hands it to a processor
(in-process) and must not resize it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from regionfocus.model import Usage

Message = dict[str, Any]


@dataclass
class ChatResponse:
    text: str
    usage: Usage = field(default_factory=Usage)


class ChatBackend(Protocol):
    async def complete(
        self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0, **sampling: Any
    ) -> ChatResponse:
        """One chat completion. Transport failures after retries raise; the caller records
        them. ``usage`` carries latency, token counts and the endpoint used."""
        ...

    async def aclose(self) -> None: ...
