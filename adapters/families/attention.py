"""MVP's attention pass for a VLM adapter whose backend can run one (the in-process transformers
backend: :meth:`regionfocus.adapters.backends.transformers_local.TransformersBackend.attend`).

The core asks a model for it through ``attention`` (:class:`regionfocus.strategies.mvp.AttentionModel`);
:class:`~regionfocus.adapters.families.vlm.VlmAdapter` offers that method only over such a
backend, so a served model is never mistaken for one that can. The request is the adapter's
grounding request (the prompt ``act`` sends, pre-fill included: MVP's own, ``mvp_sspro.py``'s
``SYSTEM_PROMPT``, for the adapter MVP prompts with ``prompted``), at most the adapter's
``max_tokens`` new tokens (32 there, as that code generates); the backend answers with token
cells of the image it was sent, mapped here to pixels of the image given, as MVP's code maps
them (``mvp_sspro.py`` lines 123-136 at the commit ``mvp.py`` cites): the centre of cell
(column, row) is ((column + 0.5) * cell * (W / w), (row + 0.5) * cell * (H / h)) for an image
of W x H sent at w x h.
"""

from __future__ import annotations

from typing import Any

from PIL import Image

from regionfocus.adapters.families.prompting import given_size
from regionfocus.geometry import Point
from regionfocus.model import Query, Usage


def cell_centres(
    cells: list[tuple[int, int]], cell: int, given: tuple[int, int], sent: tuple[int, int]
) -> list[Point]:
    """Centres of token ``cells`` (column, row) of an image sent at ``sent`` = (w, h), each
    ``cell`` px wide, in pixels of the image ``given`` = (W, H); the code's arithmetic."""
    sx, sy = given[0] / sent[0], given[1] / sent[1]
    return [Point((col + 0.5) * cell * sx, (row + 0.5) * cell * sy) for col, row in cells]


def can_attend(backend: Any) -> bool:
    """Whether ``backend`` runs MVP's attention pass (an in-process model does; HTTP cannot)."""
    return callable(getattr(backend, "attend", None))


async def attention(adapter: Any, image: Image.Image, query: Query, top_k: int) -> tuple[list[Point], Usage]:
    """The ``top_k`` positions of ``image`` (pixels of it) the grounding answer's separator
    attended to most, most first, and the pass's cost. Raises ValueError, naming the answer,
    when it holds no separator the model read back: no decoding step to read the attention of
    (MVP's code has no states to read there either)."""
    resized = await adapter.model_image(image)
    given = given_size(image)
    prompt = await adapter.task_prompt_async("grounding", resized, given, query, False)
    del resized
    prefill = prompt.prefill if (prompt.prefill and adapter.prefill) else ""
    messages = [*prompt.messages, {"role": "assistant", "content": prefill}] if prefill else prompt.messages
    extra = {"continue_final_message": True} if prefill else {}
    found = await adapter.backend.attend(messages, top_k=top_k, max_tokens=adapter.max_tokens, **extra)
    if found.separator_at is None:
        sep = getattr(adapter.backend, "separator", ",")
        raise ValueError(
            f"no attention step: the answer {found.text[:200]!r} holds no {sep!r} the model read back "
            "(the attention pass reads the decoding step that reads it)"
        )
    # The size the model saw, in whole cells: the image sent (the adapter sends a multiple of
    # the cell), or the processor's own rounding of it (the backend then warned).
    seen = (found.grid[0] * found.cell, found.grid[1] * found.cell)
    return cell_centres(found.cells, found.cell, given, seen), found.usage
