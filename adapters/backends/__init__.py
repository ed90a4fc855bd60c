"""Transports for chat models: OpenAI-compatible HTTP and in-process transformers.

Both implement :class:`regionfocus.adapters.backends.base.ChatBackend`. Importing this package imports neither
``openai``'s network stack nor ``torch``; each backend loads its heavy dependency when built or
first used.
"""

from regionfocus.adapters.backends.encoding import ImageEncoder, encode_data_url
from regionfocus.adapters.backends.openai_http import BackendError, OpenAIBackend
from regionfocus.adapters.backends.transformers_local import TransformersBackend

__all__ = ["BackendError", "ImageEncoder", "OpenAIBackend", "TransformersBackend", "encode_data_url"]
