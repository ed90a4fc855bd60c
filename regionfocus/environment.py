"""The environment protocol: what a live loop needs from the world it acts in.

Beside the model protocol (:mod:`regionfocus.model`): an environment starts a task, shows the
screen, executes an action and says what it did (the effect that drives the no-effect trigger
and the history stars), offers true zoom (a :class:`~regionfocus.views.ViewSource` that
re-renders a region), and says when the task is over by its own judgement (a MiniWoB++ page
that handed out its reward). The browser implements it; tests implement it with a scripted
world. Points are screenshot pixels, as everywhere across module boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from .actions import Action
from .triggers import Effect
from .views import ViewSource


@dataclass
class StepResult:
    """What executing one action did. ``screenshot``: the screen afterwards (the next
    observation); ``events``: dialogs, new pages, blocked navigations, crashes during the step;
    ``crashed``: the environment cannot go on (the task ends with an error)."""

    effect: Effect
    screenshot: Image.Image | None
    url: str = ""
    error: str | None = None
    events: list[dict] = field(default_factory=list)
    crashed: bool = False
    details: dict = field(default_factory=dict)


@dataclass
class EpisodeStatus:
    """The environment's own verdict. ``done``: the episode is over; ``raw_reward``: +1 / -1
    (0 while running); ``reward``: a shaped reward (MiniWoB++: time-discounted);
    ``success``: done with a positive raw reward."""

    done: bool
    raw_reward: float = 0.0
    reward: float = 0.0
    reason: str | None = None

    @property
    def success(self) -> bool:
        return self.done and self.raw_reward > 0


@runtime_checkable
class Environment(Protocol):
    """A live world for one task. All methods are async: they wait on a browser or a device."""

    views: ViewSource  # true zoom: re-renders a region of the current screen

    async def start(self) -> str:
        """Open the task (load the page, seed the episode) and return its instruction."""
        ...

    async def observe(self) -> Image.Image:
        """The current screen (first step; later steps use :attr:`StepResult.screenshot`)."""
        ...

    async def act(self, action: Action) -> StepResult:
        """Execute ``action`` and report its effect and the screen afterwards."""
        ...

    async def status(self) -> EpisodeStatus | None:
        """The environment's own verdict, or None when it has none (open-web tasks)."""
        ...

    @property
    def url(self) -> str:
        """Where the environment is (a page address; empty when it has none)."""
        ...

    async def info(self) -> dict[str, Any]:
        """What else it offers about the current screen: ``"elements"``, the accessibility tree
        (:class:`regionfocus.a11y.A11yElement`, boxes in screenshot pixels) when it has one."""
        ...
