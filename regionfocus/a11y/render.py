"""The compressed observation: the phases run in order and written out (``MODAL:`` first,
then one block per region), and the observation text a model is given."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .elements import (
    LINEAR_HEADER,
    PHASES,
    A11yElement,
    ToModel,
    display_role,
    ensure_ids,
    identity_frame,
    linear_line,
    linearize,
    normalize_space,
    point_text,
    says_something,
)
from .modal import ModalParams, ModalResult, detect_modal
from .reduce import ReduceParams, reduce
from .structure import Region, StructureParams, structure


def element_line(el: A11yElement, to_model: ToModel = identity_frame) -> str:
    """``[role] "name" @ (x, y)`` with the centre (JA Figure 1), plus a value or state when the
    element has one (App. C Table 3 keeps tag and name; JA §3.2 step 3 adds the value)."""
    label = el.label.replace('"', "'")
    parts = [f"[{display_role(el.role)}]", f'"{label}"']
    value = el.attributes.get("value", "")
    if value and value != el.name:
        parts.append(f'value="{normalize_space(value)[:100]}"')
    for state in ("checked", "selected", "expanded", "pressed", "disabled"):
        if el.attributes.get(state) in ("true", "mixed"):
            parts.append(state if el.attributes[state] == "true" else f"{state}=mixed")
    if el.box is not None:
        parts.append(f"@ {point_text(el.box.center, to_model)}")
    return " ".join(parts)


@dataclass
class Compressed:
    """:func:`compress`'s result. ``text``: the observation. ``modal``/``background``: the
    elements after the phases that ran. ``regions``: phase 3's regions (empty when it is off).
    ``detection``: phase 1's result (None when off). ``state``: pass it back as ``previous``
    next step (temporal modal detection and tracking)."""

    text: str
    modal: list[A11yElement]
    background: list[A11yElement]
    regions: list[Region]
    detection: ModalResult | None
    state: A11yState


@dataclass(frozen=True)
class A11yState:
    """What the next step's modal detection needs from this one."""

    elements: tuple[A11yElement, ...]
    modal: tuple[A11yElement, ...]


def compress(
    elements: Sequence[A11yElement],
    instruction: str = "",
    previous: A11yState | None = None,
    phases: Iterable[str] = PHASES,
    *,
    viewport: tuple[int, int],
    to_model: ToModel = identity_frame,
    modal_params: ModalParams = ModalParams(),
    reduce_params: ReduceParams = ReduceParams(),
    structure_params: StructureParams = StructureParams(),
) -> Compressed:
    """A11y-Compressor (§3): run the ``phases`` named (any of "modal", "reduce", "structure";
    the full pipeline by default, one alone for Table 2's ablation) and render the observation.

    ``elements``: the page's nodes in tree order, boxes in screenshot pixels; ``viewport``:
    the screenshot's (W, H); ``instruction``: the task, for C.2's keywords; ``previous``: the
    last call's ``.state`` on the same task (None on the first step); ``to_model``: screenshot
    point -> the model's (x, y). Without "reduce", lines keep the baseline's top-left and size
    (the centre form is part of phase 2); without "structure", lines keep tree order under
    ``MODAL:``/``BACKGROUND:`` headers (no headers without "modal" either).
    """
    phases = set(phases)
    unknown = phases - set(PHASES)
    if unknown:
        raise ValueError(f"unknown a11y phase(s) {sorted(unknown)}; known: {', '.join(PHASES)}")
    elements = ensure_ids(elements)
    detection = None
    modal: list[A11yElement] = []
    background = elements
    if "modal" in phases:
        detection = detect_modal(
            elements,
            viewport,
            previous.elements if previous is not None else None,
            previous.modal if previous is not None else (),
            modal_params,
        )
        modal, background = detection.modal, detection.background
    if "reduce" in phases:
        modal, background = reduce(modal, background, viewport, instruction, reduce_params)
        line: Callable[[A11yElement], str] = lambda e: element_line(e, to_model)  # noqa: E731
    else:
        modal = [e for e in modal if says_something(e)]
        background = [e for e in background if says_something(e)]
        line = lambda e: linear_line(e, to_model)  # noqa: E731
    regions: list[Region] = []
    out: list[str] = []
    if "structure" in phases:
        regions = structure(modal, background, viewport, elements, structure_params)
        for r in regions:
            out.append(f"{r.name}:")
            for i, block in enumerate(r.blocks):
                if i:
                    out.append("[BLOCK]")
                out += [line(e) for e in block]
        # elements without a box cannot be placed; listed after the regions
        rest = [e for e in [*modal, *background] if e.box is None]
        if rest:
            out.append("UNPLACED:")
            out += [line(e) for e in rest]
    elif "modal" in phases:
        if modal:
            out.append("MODAL:")
            out += [line(e) for e in modal]
            out.append("BACKGROUND:")
        out += [line(e) for e in background]
    else:
        out += [line(e) for e in background]
    if "reduce" not in phases:
        out.insert(0, LINEAR_HEADER)
    state = A11yState(tuple(elements), tuple(detection.modal if detection else ()))
    return Compressed("\n".join(out), list(modal), list(background), regions, detection, state)


OBSERVATIONS = ("screenshot", "a11y", "compressed-a11y", "screenshot+compressed-a11y")


def observation_text(
    fmt: str,
    elements: Sequence[A11yElement],
    viewport: tuple[int, int],
    instruction: str = "",
    previous: A11yState | None = None,
    phases: Iterable[str] = PHASES,
    to_model: ToModel = identity_frame,
) -> tuple[str, A11yState | None]:
    """The text part of a browsing observation ``fmt`` (one of ``OBSERVATIONS``) and the state
    to pass back as ``previous`` next step: "" for "screenshot"; the linearized tree for
    "a11y"; :func:`compress`'s text for "compressed-a11y" and "screenshot+compressed-a11y"."""
    if fmt not in OBSERVATIONS:
        raise ValueError(f"unknown observation {fmt!r}; known: {', '.join(OBSERVATIONS)}")
    if fmt == "screenshot":
        return "", previous
    if fmt == "a11y":
        return linearize(elements, to_model), previous
    c = compress(elements, instruction, previous, phases, viewport=viewport, to_model=to_model)
    return c.text, c.state
