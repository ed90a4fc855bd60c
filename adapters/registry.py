"""Adapter registry: ``get_adapter(name, **options)`` and ``register_adapter(name, factory)``.

Factories are imported lazily so ``import regionfocus.adapters`` stays cheap (the OCR agent pulls in
onnxruntime; the VLM families only PIL).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from regionfocus.model import GroundingModel

Factory = Callable[..., GroundingModel]


def _uitars10(**options: Any) -> GroundingModel:
    from regionfocus.adapters.families.uitars import UiTars10Adapter

    return UiTars10Adapter(**options)


def _uitars15(**options: Any) -> GroundingModel:
    from regionfocus.adapters.families.uitars import UiTars15Adapter

    return UiTars15Adapter(**options)


def _qwen25(**options: Any) -> GroundingModel:
    from regionfocus.adapters.families.qwen import Qwen25Adapter

    return Qwen25Adapter(**options)


def _qwen3(**options: Any) -> GroundingModel:
    from regionfocus.adapters.families.qwen import Qwen3Adapter

    return Qwen3Adapter(**options)


def _ocr(**options: Any) -> GroundingModel:
    from regionfocus.adapters.agents.ocr import OcrAgent

    return OcrAgent(**options)


def _a11y(**options: Any) -> GroundingModel:
    from regionfocus.adapters.agents.a11y_agent import A11yAgent

    return A11yAgent(**options)


def _screen_text(**options: Any) -> GroundingModel:
    from regionfocus.adapters.agents.react_model import ReactModel

    return ReactModel(**options)


_REGISTRY: dict[str, Factory] = {
    "uitars-1.0": _uitars10,
    "uitars-1.5": _uitars15,
    "qwen2.5-vl": _qwen25,
    "qwen3-vl": _qwen3,
    "ocr": _ocr,
    "a11y": _a11y,
    "screen-text": _screen_text,
}
VLM_FAMILIES = ("uitars-1.0", "uitars-1.5", "qwen2.5-vl", "qwen3-vl")


def known_adapters() -> list[str]:
    return sorted(_REGISTRY)


def register_adapter(name: str, factory: Factory, *, replace: bool = False) -> None:
    """Make ``get_adapter(name, **options)`` call ``factory(**options)``, which must return
    a :class:`regionfocus.model.GroundingModel`. Re-registering a name needs ``replace=True``."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"adapter name must be a non-empty string, got {name!r}")
    if not callable(factory):
        raise ValueError(f"adapter factory for {name!r} must be callable, got {factory!r}")
    key = name.strip().lower()
    if key in _REGISTRY and not replace:
        raise ValueError(f"adapter {name!r} is already registered; pass replace=True to override it")
    _REGISTRY[key] = factory


def get_adapter(name: str, **options: Any) -> GroundingModel:
    """The adapter registered as ``name`` built with ``options``.

    VLM families take ``backend`` (a ChatBackend; needed before the first request),
    ``temperature``, ``max_tokens``, ``factor``, ``min_pixels``, ``max_pixels``,
    ``language`` and ``sampling`` (extra sampling arguments sent with every request).
    ``ocr`` takes ``budget`` (pixels it sees of a full screenshot) and its own options.
    ``a11y`` takes its thresholds; it reads the tree handed to it with ``set_elements``.
    ``screen-text`` (a text-only LLM reading the screen through OCR) takes ``backend``,
    ``temperature``, ``max_tokens``, ``coat`` (a CoatConfig) and ``exemplars``.
    """
    key = name.strip().lower() if isinstance(name, str) else name
    factory = _REGISTRY.get(key)
    if factory is None:
        raise ValueError(f"unknown adapter {name!r}; known: {', '.join(known_adapters())}")
    return factory(**options)
