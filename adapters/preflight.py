"""The check before the first sample: does the model answer as configured?

:func:`preflight` finds the backend of any model the harnesses build (a family's ``backend``, the
family inside a Chain-of-Action-Thought wrapper, the screen-text agent's) and runs its own check
(``preflight`` of :mod:`regionfocus.adapters.backends`: one cheap request, models list or model
lookup, within seconds). A model with no backend (the OCR and accessibility stand-ins, an
in-process model) has nothing to check.
"""

from __future__ import annotations

from typing import Any

from regionfocus.adapters.backends.base import PreflightFailed

__all__ = ["PreflightFailed", "backend_of", "preflight"]


def backend_of(model: Any) -> Any:
    """The backend ``model`` sends its requests through (``model`` itself when it is a backend,
    as a command that only chats, such as ``webvoyager judge``, holds one), or None."""
    seen: set[int] = set()
    while model is not None and id(model) not in seen:
        seen.add(id(model))
        if callable(getattr(model, "complete", None)):  # the ChatBackend protocol's one call
            return model
        backend = getattr(model, "backend", None)
        if backend is not None:
            return backend
        model = getattr(model, "inner", None)  # CoatModel and other wrappers
    return None


async def preflight(model: Any) -> None:
    """Check ``model``'s server, key and model name before the first sample; raises
    :class:`PreflightFailed` with one line naming the cause. A no-op for a model without a
    backend, or whose backend has no check (in-process transformers)."""
    check = getattr(backend_of(model), "preflight", None)
    if check is not None:
        await check()
