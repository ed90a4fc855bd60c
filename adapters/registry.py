"""Adapter registry: ``get_adapter(name, **options)`` and ``register_adapter(name, factory)``.

How to add a model family (docs/ARCHITECTURE.md §11): write its class (a module of
``adapters/families/``, prompt files under ``prompts/``) with every fact about the family as a
class attribute: ``name``, ``frame``, ``default_resize``, its prompt files, ``checkpoint`` (what
``serve-command`` starts; None when no vLLM server applies), ``serve_flags``, ``viewport`` (the
browser window a live task opens at). Then add ONE line to ``FAMILIES`` below:
``"its-name": "regionfocus.adapters.families.module:Class"``. Every list of names — the
``--agent`` help, ``serve-command``'s and ``parse``'s choices, the viewport default — is derived
from that table and those attributes; no code branches on a family's name. A family module must
stay cheap to import (no SDK or onnxruntime at its top): the lists import the classes.

Agents that are not model families (``ocr``, ``a11y``, ``screen-text``) sit in ``AGENTS``, with
the facts their classes do not state beside them. A plug-in calls ``register_adapter``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from regionfocus.model import GroundingModel

Factory = Callable[..., GroundingModel]

# name -> "module:Class", imported only when that name is asked for. The class's ``name`` must
# equal the key (tests/test_adapters_registry.py checks).
FAMILIES: dict[str, str] = {
    "uitars-1.0": "regionfocus.adapters.families.uitars:UiTars10Adapter",
    "uitars-1.5": "regionfocus.adapters.families.uitars:UiTars15Adapter",
    "qwen2.5-vl": "regionfocus.adapters.families.qwen:Qwen25Adapter",
    "qwen3-vl": "regionfocus.adapters.families.qwen:Qwen3Adapter",
    "gui-owl-1.5": "regionfocus.adapters.families.grounders:GuiOwl15Adapter",
    "mai-ui": "regionfocus.adapters.families.grounders:MaiUiAdapter",
    "ui-venus-1.5": "regionfocus.adapters.families.grounders:UiVenus15Adapter",
    "holo2": "regionfocus.adapters.families.grounders:Holo2Adapter",
    "gta1": "regionfocus.adapters.families.grounders:Gta1Adapter",
    # Hosted: each through its provider's SDK and API (families/hosted.py), no server to start.
    "claude": "regionfocus.adapters.families.hosted:ClaudeAdapter",
    "gemini": "regionfocus.adapters.families.hosted:GeminiAdapter",
    "openai": "regionfocus.adapters.families.hosted:OpenAIAdapter",
}
# Agents with no VLM of their own: name -> ("module:Class", facts their classes do not state).
AGENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "ocr": ("regionfocus.adapters.agents.ocr:OcrAgent", {"runs_locally": True}),
    "a11y": ("regionfocus.adapters.agents.a11y_agent:A11yAgent", {"runs_locally": True}),
    "screen-text": ("regionfocus.adapters.agents.react_model:ReactModel", {"reads_pixels": False}),
}


@dataclass(frozen=True)
class Facts:
    """What the rest of the project may know about a registered name without building it.
    Each field is read from the class attribute of the same name; the defaults are a VLM
    behind a server the user starts."""

    name: str
    # The public checkpoint `serve-command` starts (a 7B/8B most users mean); None: no vLLM line.
    checkpoint: str | None = None
    # The `vllm serve` flags after the checkpoint (docs/ARCHITECTURE.md §5).
    serve_flags: tuple[str, ...] = ()
    # The browser window (W, H) a live task opens at when --viewport is not given.
    viewport: tuple[int, int] = (1440, 1440)
    # Runs in this process on the CPU: no server, no --base-url.
    runs_locally: bool = False
    # Sees the screenshot (False: RegionFocus's history and aggregation go in text for it).
    reads_pixels: bool = True
    # A model family with a prompt, a frame and a resize (`parse`, `show-prompt` apply).
    is_family: bool = False
    # The hosted provider whose SDK and API serve it ("anthropic", "gemini", "openai"); None: an
    # OpenAI-compatible server (--base-url) or this process.
    provider: str | None = None


class _Entry:
    """A registered name: a factory, and where its facts come from."""

    def __init__(self, name: str, factory: Factory | str | type, facts: dict[str, Any]):
        self.name, self.factory, self.extra = name, factory, dict(facts)
        self._cls: type | None = factory if isinstance(factory, type) else None

    def cls(self) -> type | None:
        if self._cls is None and isinstance(self.factory, str):
            module, _, attr = self.factory.partition(":")
            self._cls = getattr(importlib.import_module(module), attr)
        return self._cls

    def facts(self) -> Facts:
        cls = self.cls()
        values: dict[str, Any] = {"name": self.name}
        if cls is not None:
            for f in fields(Facts)[1:]:
                if hasattr(cls, f.name):
                    values[f.name] = getattr(cls, f.name)
        values.update(self.extra)
        values["serve_flags"] = tuple(values.get("serve_flags", ()))
        values["viewport"] = tuple(values.get("viewport", Facts.viewport))
        return Facts(**values)

    def build(self, **options: Any) -> GroundingModel:
        cls = self.cls()
        return (cls if cls is not None else self.factory)(**options)  # type: ignore[operator]


_REGISTRY: dict[str, _Entry] = {
    **{name: _Entry(name, target, {}) for name, target in FAMILIES.items()},
    **{name: _Entry(name, target, facts) for name, (target, facts) in AGENTS.items()},
}


def known_adapters() -> list[str]:
    return sorted(_REGISTRY)


def agent_names() -> tuple[str, ...]:
    """Every registered name in registration order (families first): the ``--agent`` values.
    Imports nothing."""
    return tuple(_REGISTRY)


def register_adapter(
    name: str, factory: Factory | str | type, *, replace: bool = False, **facts: Any
) -> None:
    """Make ``get_adapter(name, **options)`` call ``factory(**options)``, which must return
    a :class:`regionfocus.model.GroundingModel`. ``factory`` may be a class, a callable or a
    ``"module:Class"`` string (imported on first use). The name's :class:`Facts` are the
    class's attributes, overridden by ``facts``. Re-registering a name needs ``replace=True``."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"adapter name must be a non-empty string, got {name!r}")
    if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
        raise ValueError(f"adapter factory for {name!r} must be callable or 'module:Class', got {factory!r}")
    unknown = set(facts) - {f.name for f in fields(Facts)[1:]}
    if unknown:
        raise ValueError(f"adapter {name!r}: unknown facts {sorted(unknown)}")
    key = name.strip().lower()
    if key in _REGISTRY and not replace:
        raise ValueError(f"adapter {name!r} is already registered; pass replace=True to override it")
    _REGISTRY[key] = _Entry(key, factory, facts)


def _entry(name: str) -> _Entry:
    key = name.strip().lower() if isinstance(name, str) else name
    entry = _REGISTRY.get(key)
    if entry is None:
        raise ValueError(f"unknown adapter {name!r}; known: {', '.join(known_adapters())}")
    return entry


def facts(name: str) -> Facts:
    """The :class:`Facts` of a registered name (imports its class). Raises ValueError naming
    the known names for an unknown one."""
    return _entry(name).facts()


def family_class(name: str) -> type | None:
    """The class registered as ``name`` (None for a plain factory function)."""
    return _entry(name).cls()


def families() -> tuple[str, ...]:
    """The model families (prompt, frame, resize), in registration order."""
    return tuple(n for n, e in _REGISTRY.items() if e.facts().is_family)


def served_families() -> tuple[str, ...]:
    """The names `serve-command` prints a `vllm serve` line for: those with a checkpoint."""
    return tuple(n for n, e in _REGISTRY.items() if e.facts().checkpoint)


def __getattr__(attr: str) -> Any:
    # VLM_FAMILIES, as earlier callers import it: computed when asked for, from the classes.
    if attr == "VLM_FAMILIES":
        return families()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


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
    return _entry(name).build(**options)
