"""MVP's attention pass for a VLM adapter whose backend can run one (the in-process transformers
backend: :meth:`regionfocus.adapters.backends.transformers_local.TransformersBackend.attend`).

The core asks a model for it through ``attention`` (:class:`regionfocus.strategies.mvp.AttentionModel`);
:class:`~regionfocus.adapters.families.vlm.VlmAdapter` offers that method only over such a
backend, so a served model is never mistaken for one that can. The request is the family's own
grounding request (the prompt ``act`` sends, pre-fill included); the backend answers with token
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
    attended to most, most first, and the pass's cost; none when the answer has no separator
    the model read back (the usage's ``error`` stays None: the call itself went through)."""
    resized = await adapter.model_image(image)
    given = given_size(image)
    prompt = await adapter.task_prompt_async("grounding", resized, given, query, False)
    del resized
    prefill = prompt.prefill if (prompt.prefill and adapter.prefill) else ""
    messages = [*prompt.messages, {"role": "assistant", "content": prefill}] if prefill else prompt.messages
    extra = {"continue_final_message": True} if prefill else {}
    found = await adapter.backend.attend(messages, top_k=top_k, max_tokens=adapter.max_tokens, **extra)
    # The size the model saw, in whole cells: the image sent (the adapter sends a multiple of
    # the cell), or the processor's own rounding of it (the backend then warned).
    seen = (found.grid[0] * found.cell, found.grid[1] * found.cell)
    return cell_centres(found.cells, found.cell, given, seen), found.usage
