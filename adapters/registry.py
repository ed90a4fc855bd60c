"""Adapter registry: ``get_adapter(name, **options)`` and ``register_adapter(name, factory)``.

Factories are imported lazily so ``import regionfocus.adapters`` stays cheap (the OCR agent pulls in
onnxruntime; the VLM families only PIL).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from regionfocus.model import GroundingModel

Factory = Callable[..., GroundingModel]


def _lazy(target: str) -> Factory:
    """A factory that imports ``module:Class`` only when called (the OCR agent's import pulls in
    onnxruntime; nothing should load before an agent of that kind is asked for)."""

    def factory(**options: Any) -> GroundingModel:
        module, cls = target.split(":")
        return getattr(importlib.import_module(module), cls)(**options)

    factory.__qualname__ = f"lazy({target})"
    return factory


_REGISTRY: dict[str, Factory] = {
    name: _lazy(target)
    for name, target in {
        "uitars-1.0": "regionfocus.adapters.families.uitars:UiTars10Adapter",
        "uitars-1.5": "regionfocus.adapters.families.uitars:UiTars15Adapter",
        "qwen2.5-vl": "regionfocus.adapters.families.qwen:Qwen25Adapter",
        "qwen3-vl": "regionfocus.adapters.families.qwen:Qwen3Adapter",
        "gui-owl-1.5": "regionfocus.adapters.families.grounders:GuiOwl15Adapter",
        "mai-ui": "regionfocus.adapters.families.grounders:MaiUiAdapter",
        "ui-venus-1.5": "regionfocus.adapters.families.grounders:UiVenus15Adapter",
        "holo2": "regionfocus.adapters.families.grounders:Holo2Adapter",
        "gta1": "regionfocus.adapters.families.grounders:Gta1Adapter",
        "ocr": "regionfocus.adapters.agents.ocr:OcrAgent",
        "a11y": "regionfocus.adapters.agents.a11y_agent:A11yAgent",
        "screen-text": "regionfocus.adapters.agents.react_model:ReactModel",
    }.items()
}
# The grounders (families/grounders.py) after the four families with agent prompts of their own.
VLM_FAMILIES = (
    "uitars-1.0",
    "uitars-1.5",
    "qwen2.5-vl",
    "qwen3-vl",
    "gui-owl-1.5",
    "mai-ui",
    "ui-venus-1.5",
    "holo2",
    "gta1",
)


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
