"""When is the agent probably wrong? Triggers decide whether RegionFocus runs.

Each trigger looks at a :class:`TriggerState` and names itself when it fires; ``any_of``
composes them. The self-judge needs a model call, so its verdict is put in the state by the
caller and the trigger only reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .a11y import A11yElement, hits_interactive
from .actions import Action, ActionType
from .model import Verdict


@dataclass
class Effect:
    """Did an executed action change anything? Filled by a live environment.

    ``changed`` is the OR of the signals (no single one suffices, see docs/ARCHITECTURE.md §8).
    """

    changed: bool
    url_changed: bool = False
    dom_mutations: int = 0
    new_page: bool = False
    dialog: str | None = None
    pixel_diff: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, False, 0, 0.0) or k == "changed"}


@dataclass
class TriggerState:
    """``proposed``: the action the agent just predicted (None: nothing parseable).
    ``recent``: actions executed on the current screen, oldest first.
    ``last_effect``: the effect of the most recent executed action, if any.
    ``verdict``: the self-judge's verdict on ``proposed``, when one was asked.
    ``elements``: the screen's accessibility tree (boxes in screenshot pixels), when the
    environment offers one; ``modal``: its open modal's elements (``Compressed.detection``)."""

    proposed: Action | None
    recent: Sequence[Action] = field(default_factory=list)
    last_effect: Effect | None = None
    verdict: Verdict | None = None
    elements: Sequence[A11yElement] = ()
    modal: Sequence[A11yElement] = ()


class Trigger(Protocol):
    name: str

    def fires(self, state: TriggerState) -> bool: ...


class NoAction:
    """The agent produced nothing parseable."""

    name = "no-action"

    def fires(self, state: TriggerState) -> bool:
        return state.proposed is None


class NoEffect:
    """The last executed point action changed nothing on screen."""

    name = "no-effect"

    def fires(self, state: TriggerState) -> bool:
        last = state.recent[-1] if state.recent else None
        return (
            last is not None
            and last.is_point_action
            and state.last_effect is not None
            and not state.last_effect.changed
        )


class Repeat:
    """The proposed action equals each of the last ``k - 1`` executed on the same screen."""

    name = "repeat"

    def __init__(self, k: int = 2, radius: float = 12.0):
        self.k, self.radius = k, radius

    def fires(self, state: TriggerState) -> bool:
        if state.proposed is None or self.k < 1:
            return False
        prior = list(state.recent)[-(self.k - 1) :] if self.k > 1 else []
        return len(prior) == self.k - 1 and all(state.proposed.same_as(a, self.radius) for a in prior)


class SelfJudge:
    """The model rejected its own point. ``unknown``: what an unreadable verdict means."""

    name = "self-judge"

    def __init__(self, unknown: str = "reject"):
        self.unknown = unknown

    def fires(self, state: TriggerState) -> bool:
        if state.verdict is None:
            return False
        return state.verdict == Verdict.NO or (state.verdict == Verdict.UNKNOWN and self.unknown == "reject")


CLICK_TYPES = frozenset(
    {ActionType.CLICK, ActionType.DOUBLE_CLICK, ActionType.RIGHT_CLICK, ActionType.MIDDLE_CLICK}
)


class NoTarget:
    """Pre-emptive (opt-in): the proposed click lands on no interactive element of the
    accessibility tree, so RegionFocus runs before the click is executed.

    Hit-tested against ``state.elements`` (grown by ``tolerance`` px); while a modal is open
    (``state.modal``) only its elements can be reached. Silent without a tree (it cannot tell)
    and for actions that are not clicks.
    """

    name = "no-target"

    def __init__(self, tolerance: float = 2.0):
        self.tolerance = tolerance

    def fires(self, state: TriggerState) -> bool:
        a = state.proposed
        if a is None or a.type not in CLICK_TYPES or a.point is None or not state.elements:
            return False
        return hits_interactive(state.elements, a.point, modal=state.modal, tolerance=self.tolerance) is None


def any_of(triggers: Sequence[Trigger], state: TriggerState) -> str | None:
    """The name of the first trigger that fires, or None."""
    for t in triggers:
        if t.fires(state):
            return t.name
    return None
