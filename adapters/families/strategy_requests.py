"""What the test-time strategies ask a VLM adapter beyond the GroundingModel protocol (a mixin of
:class:`~regionfocus.adapters.families.vlm.VlmAdapter`): several sampled answers (UI-Zoomer,
GUI-RC), a free-form question about one image or several (ScreenSeekeR, GUI-Lens, whose review
sends its crops in one request) and a strategy's own grounding request in place of the family's
(MVP's official prompt: :meth:`StrategyRequests.prompted`)."""

from __future__ import annotations

import asyncio
import copy
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Self

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.backends.base import Message
from regionfocus.adapters.families.attention import attention, can_attend
from regionfocus.adapters.families.prompting import Prompt
from regionfocus.adapters.families.resize import ResizeSpec
from regionfocus.adapters.model_text import bounded, sound_action
from regionfocus.model import ModelReply, Query

if TYPE_CHECKING:
    from regionfocus.strategies.protocol import OwnPrompt


class StrategyRequests:
    """The strategies' requests, over the adapter's own resize, prompts and backend."""

    async def sample(self, image: Image.Image, query: Query, n: int, temperature: float) -> Any:
        """``n`` grounding answers on ``image`` at ``temperature`` in one request (the API's
        ``n`` with ``logprobs``), each parsed like :meth:`act`, with its mean token probability.
        A backend without ``complete_n`` (in-process) is asked ``n`` times."""
        from regionfocus.strategies.protocol import Samples  # the core's type; adapters may import the core

        resized = await self.model_image(image)
        kind = "agent" if query.mode == "agent" else "grounding"
        prompt = await self.task_prompt_async(kind, resized, image.size, query, False)
        prefill = prompt.prefill if (prompt.prefill and self.prefill) else ""
        messages = (
            [*prompt.messages, {"role": "assistant", "content": prefill}] if prefill else prompt.messages
        )
        extra = {"continue_final_message": True, "add_generation_prompt": False} if prefill else {}
        many = getattr(self.backend, "complete_n", None)
        if many is not None:
            outs, usage = await many(
                messages, n=n, max_tokens=self.max_tokens, temperature=temperature, **self.sampling, **extra
            )
        else:
            resps = await asyncio.gather(*(self._complete(messages, temperature, **extra) for _ in range(n)))
            outs = [(r.text, None) for r in resps]
            usage = resps[0].usage if resps else None
            if usage is not None:
                usage.latency_s = max(r.usage.latency_s for r in resps)
                usage.prompt_tokens = _sum_or_none([r.usage.prompt_tokens for r in resps])
                usage.completion_tokens = _sum_or_none([r.usage.completion_tokens for r in resps])
        replies, confidences = [], []
        for text, logprobs in outs:
            answer = prefill + text
            action = self._parse_answer(answer, text, image.size)
            replies.append(ModelReply(answer, action=action, point=action.point if action else None))
            confidences.append(math.exp(sum(logprobs) / len(logprobs)) if logprobs else None)
        return Samples(replies, confidences, usage) if usage is not None else Samples(replies, confidences)

    async def chat(self, image: Image.Image | None, text: str) -> ModelReply:
        """A free-form question about ``image`` (or none): a planner's or checker's request."""
        if image is None:
            messages: list[Message] = [{"role": "user", "content": [{"type": "text", "text": text}]}]
        else:
            messages = self.own_messages(await self.model_image(image), text)
        answer, _, usage = await self.ask(Prompt(messages))
        return ModelReply(answer, usage=usage)

    def prompted(self, prompt: OwnPrompt) -> Self:
        """This adapter sending ``prompt`` as its grounding request instead of the family's (its
        system message with the size of the image sent, the image, the instruction; no
        pre-fill), the image resized with the family's factor within ``prompt``'s pixel bounds
        (and within a ``max_pixels`` the caller gave this adapter, when lower), at most
        ``prompt.max_tokens`` new tokens, the answer read by ``prompt.reader`` in the family's
        frame. Its attention pass (in process) sends the same request. The backend is shared;
        resized images are cached apart (their sizes differ)."""
        clone = copy.copy(self)
        clone._resized = OrderedDict()
        clone._resized_lock = threading.Lock()
        if self.resize is not None and (prompt.min_pixels or prompt.max_pixels):
            most = prompt.max_pixels or self.resize.max_pixels
            if getattr(self, "max_pixels_given", False):  # the caller's own bound stays one
                most = min(most, self.resize.max_pixels)
            least = min(prompt.min_pixels or self.resize.min_pixels, most)
            clone.resize = ResizeSpec(self.resize.last.factor, least, most)
        if prompt.max_tokens:
            clone.max_tokens = int(prompt.max_tokens)
        clone.own_prompt = prompt
        clone.task_prompt_async = partial(_own_task_prompt, clone)
        if can_attend(clone.backend):
            clone.attention = partial(attention, clone)
        return clone

    def _own_answer(self, text: str, size: tuple[int, int]) -> Action | None:
        try:
            xy = self.own_prompt.reader(bounded(text)) if isinstance(text, str) else None
            if xy is None or not all(math.isfinite(v) for v in xy):
                return None
            p = self.from_model(float(xy[0]), float(xy[1]), size)
            return sound_action(Action(ActionType.CLICK, p))
        except Exception:  # noqa: BLE001 - untrusted text must never end a round
            return None

    async def chat_images(self, images: Sequence[Image.Image], text: str) -> ModelReply:
        """A free-form question about several images in one request (GUI-Lens's review): the
        request :meth:`chat` sends, every image where it puts its one, in order, each at the
        size the model sees. Every backend here carries several images in a message (vLLM up
        to ``--limit-mm-per-prompt``, 5 with this project's serve flags)."""
        if not images:
            return await self.chat(None, text)
        resized = [await self.model_image(im) for im in images]
        messages = self.own_messages(resized[0], text)
        out: list[Message] = []
        for m in messages:
            content = m.get("content")
            if isinstance(content, list) and any(p.get("image") is resized[0] for p in content):
                parts: list[dict[str, Any]] = []
                for p in content:
                    if p.get("image") is resized[0]:
                        parts += [{**p, "image": im} for im in resized]
                    else:
                        parts.append(p)
                m = {**m, "content": parts}
            out.append(m)
        answer, _, usage = await self.ask(Prompt(out))
        return ModelReply(answer, usage=usage)


async def _own_task_prompt(
    adapter: Any, kind: str, image: Image.Image, given: tuple[int, int], query: Query, zoomed: bool
) -> Prompt:
    """A prompted adapter's request: the strategy's own for grounding, the family's otherwise."""
    own = adapter.own_prompt
    if kind != "grounding" or own is None:
        return await type(adapter).task_prompt_async(adapter, kind, image, given, query, zoomed)
    system = own.system.format(width=image.width, height=image.height)
    return Prompt(
        [
            {"role": "system", "content": [{"type": "text", "text": system}]},
            {
                "role": "user",
                "content": [{"type": "image", "image": image}, {"type": "text", "text": query.instruction}],
            },
        ]
    )


def _sum_or_none(values: Sequence[int | None]) -> int | None:
    return sum(v for v in values if v is not None) if any(v is not None for v in values) else None
