"""Transports for chat models: OpenAI-compatible HTTP and in-process transformers.

Both implement :class:`regionfocus.adapters.backend.ChatBackend`. Importing this package imports neither
``openai``'s network stack nor ``torch``; each backend loads its heavy dependency when built or
first used.
"""

from .encoding import ImageEncoder, encode_data_url
from .openai_http import BackendError, OpenAIBackend
from .transformers_local import TransformersBackend

__all__ = ["BackendError", "ImageEncoder", "OpenAIBackend", "TransformersBackend", "encode_data_url"]
