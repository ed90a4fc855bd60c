"""Plug-ins: RegionFocus around agents that other frameworks run (docs/guides/wrap.md).

:class:`Focus` is the synchronous, host-agnostic face any Python loop can call; the
framework-specific plug-ins (BrowserGym and AgentLab, OSWorld-style ``predict()``) sit in
modules of their own and are imported by name, so this package needs none of them installed.
"""

from .focus import Decision, Focus, as_image

__all__ = ["Decision", "Focus", "as_image"]
