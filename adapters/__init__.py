"""Model adapters: prompts, parsers and coordinate frames per model family.

``get_adapter(name, **options)`` builds one (``uitars-1.0``, ``uitars-1.5``, ``qwen2.5-vl``,
``qwen3-vl``, ``ocr`` or a name added with ``register_adapter``). Importing this package is
cheap: families load on first use.
"""

from regionfocus.adapters.registry import get_adapter, known_adapters, register_adapter

__all__ = ["get_adapter", "known_adapters", "register_adapter"]
