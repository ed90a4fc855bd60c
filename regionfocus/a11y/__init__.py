"""Accessibility observations: the plain linearized tree and A11y-Compressor's compressed one.

After Takeshita, Kawada, Ohashi, Kitada and Iyatomi, "A11y-Compressor: A Framework for Enhancing
the Efficiency of GUI Agent Observations through Visual Context Reconstruction and Redundancy
Reduction" (Hosei University; Japanese version "Compressed-a11y"). No code was released; every
rule below is written from the paper's text, section numbers cited where each one is used.
Three phases, each a pure function, each switchable for the paper's ablation (§4.5, Table 2):

1. :func:`detect_modal` (§3.1, Appendices A and B): foreground modal elements apart from the
   background, from roles/attributes (a visible ``dialog``/``alertdialog``: our web addition,
   the tree states it outright), the temporal difference against the previous step (App. A;
   ours besides: a new layer that covers the page, a pop-up's backdrop, is modal whatever its
   words) and keywords clustered in space (App. B, used when no temporal correspondence
   exists). A caller handed one snapshot at a time gets the difference as marks
   (:func:`mark_appeared`; the browser tree sets them).
2. :func:`reduce` (§3.2, App. C): invisible / off-viewport / contentless elements dropped,
   duplicates merged by Table 4's priorities, strings normalised, long text cut around the
   instruction's keywords (C.2: Table 5's stop words, 50 characters of context, else the first
   100), and each box written as its centre.
3. :func:`structure` (§3.3, App. D): reading order by centres (D.1, rows as the JA §3.3 step 2
   says), regions from landmarks and layout (D.2; web regions are ours, D.4.1 only separates
   browser chrome from PAGE_CONTENT, and our screenshots hold the page alone), ``[BLOCK]``
   breaks at the adaptive gap Θ (D.3, D.5) and before headings (JA §3.3 step 3).

:func:`compress` runs them and renders ``MODAL:`` first, then one block per region, each line
``[role] "name" @ (x, y)`` (JA Figure 1). :func:`linearize` is the baseline (§4.3 (2), Figure 1:
role, name, text, top-left position and size per line).

Frames: every box here is in pixels of the original screenshot. Coordinates written into text
go through ``to_model`` (a callable from screenshot :class:`Point` to the model's own (x, y),
identity by default), so adapters keep owning model frames.
"""

from .elements import (
    CONTAINER_ROLES,
    DIALOG_ROLES,
    LANDMARK_REGIONS,
    LINEAR_HEADER,
    PHASES,
    REGION_ORDER,
    A11yElement,
    ToModel,
    ancestors,
    display_role,
    element_at,
    elements_at,
    ensure_ids,
    hits_interactive,
    identity_frame,
    in_viewport,
    landmark_of,
    linear_line,
    linearize,
    normalize_space,
    point_text,
    says_something,
    tag_priority,
    union_box,
)
from .modal import (
    APPEARED,
    KEYWORDS_ACTION,
    KEYWORDS_CLOSE,
    KEYWORDS_CONTENT,
    KEYWORDS_DECIDE,
    KEYWORDS_FUNC,
    MODAL_DECORATIVE_TAGS,
    MODAL_INTERACTIVE_TAGS,
    ModalParams,
    ModalResult,
    covering_layer,
    detect_by_attribute,
    detect_by_keywords,
    detect_modal,
    detect_temporal,
    mark_appeared,
    modal_score,
)
from .reduce import (
    STOP_WORDS,
    ReduceParams,
    compress_text,
    dedupe,
    instruction_keywords,
    reduce,
    reduce_elements,
)
from .render import OBSERVATIONS, A11yState, Compressed, compress, element_line, observation_text
from .structure import (
    Region,
    StructureParams,
    assign_regions,
    block_threshold,
    element_groups,
    reading_order,
    structure,
)

__all__ = [
    "APPEARED",
    "A11yElement",
    "A11yState",
    "CONTAINER_ROLES",
    "Compressed",
    "DIALOG_ROLES",
    "KEYWORDS_ACTION",
    "KEYWORDS_CLOSE",
    "KEYWORDS_CONTENT",
    "KEYWORDS_DECIDE",
    "KEYWORDS_FUNC",
    "LANDMARK_REGIONS",
    "LINEAR_HEADER",
    "MODAL_DECORATIVE_TAGS",
    "MODAL_INTERACTIVE_TAGS",
    "ModalParams",
    "ModalResult",
    "OBSERVATIONS",
    "PHASES",
    "REGION_ORDER",
    "ReduceParams",
    "Region",
    "STOP_WORDS",
    "StructureParams",
    "ToModel",
    "ancestors",
    "assign_regions",
    "block_threshold",
    "compress",
    "compress_text",
    "covering_layer",
    "dedupe",
    "detect_by_attribute",
    "detect_by_keywords",
    "detect_modal",
    "detect_temporal",
    "display_role",
    "element_at",
    "element_groups",
    "element_line",
    "elements_at",
    "ensure_ids",
    "hits_interactive",
    "identity_frame",
    "in_viewport",
    "instruction_keywords",
    "landmark_of",
    "linear_line",
    "linearize",
    "mark_appeared",
    "modal_score",
    "normalize_space",
    "observation_text",
    "point_text",
    "reading_order",
    "reduce",
    "reduce_elements",
    "says_something",
    "structure",
    "tag_priority",
    "union_box",
]
