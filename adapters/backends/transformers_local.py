"""Chat backend running a Hugging Face model folder in-process (extra ``hf``: torch + transformers).

For offline use and tests: ``from_pretrained`` on a local folder, the processor's own chat
template, ``generate`` in a worker thread, one generation at a time. Importing this module does
not import torch or transformers; the model loads on first use (or :meth:`load`).

Images arrive already resized by the adapter to the size the model sees. When both sides are a
multiple of the processor's factor (patch size x merge size, 28 for Qwen2/2.5-VL) the processor's
own resize is switched off so that size is kept exactly; otherwise the processor must round the
size to whole patches itself, and a warning says the answer's frame may differ.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import Any

from PIL import Image

from regionfocus.adapters.backends.base import ChatResponse, Message
from regionfocus.model import Usage

log = logging.getLogger(__name__)


class TransformersBackend:
    """:class:`regionfocus.adapters.backends.base.ChatBackend` over ``AutoModelForImageTextToText``.

    ``model_path``: a local model folder. ``device``: "cpu", "cuda", "cuda:1", ...
    ``dtype``: a torch dtype name ("float32", "bfloat16", ...) or None for the folder's own.
    ``max_new_tokens``: a cap on every call's ``max_tokens`` (None: no cap), for tests and
    slow CPUs.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        device: str = "cpu",
        dtype: str | None = None,
        max_new_tokens: int | None = None,
    ) -> None:
        path = Path(model_path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"model_path must be a model folder with a config.json; got {str(path)!r}"
            )
        self.model_path = path
        self.device = device
        self.dtype = dtype
        self.max_new_tokens = max_new_tokens
        self._model: Any = None
        self._processor: Any = None
        self._lock = threading.Lock()  # one generate at a time; a threading lock works across event loops

    def __repr__(self) -> str:
        return f"TransformersBackend(model_path={str(self.model_path)!r}, device={self.device!r})"

    def load(self) -> None:
        """Load processor and model now (otherwise the first call does). Idempotent."""
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        kwargs: dict[str, Any] = {}
        if self.dtype is not None:
            dtype = getattr(torch, self.dtype, None)
            if not isinstance(dtype, torch.dtype):
                raise ValueError(
                    f"dtype must name a torch dtype such as 'float32' or 'bfloat16'; got {self.dtype!r}"
                )
            kwargs["dtype"] = dtype
        self._processor = AutoProcessor.from_pretrained(self.model_path)
        model = AutoModelForImageTextToText.from_pretrained(self.model_path, **kwargs)
        self._model = model.to(self.device).eval()

    async def complete(
        self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0, **sampling: Any
    ) -> ChatResponse:
        """One chat completion; greedy when ``temperature`` is 0. ``usage.latency_s`` includes
        waiting for the previous generation; ``usage.endpoint`` is ``hf:<folder>``."""
        started = time.perf_counter()
        text, n_prompt, n_completion = await asyncio.to_thread(
            self._generate, messages, max_tokens, temperature, sampling
        )
        return ChatResponse(
            text=text,
            usage=Usage(
                latency_s=time.perf_counter() - started,
                prompt_tokens=n_prompt,
                completion_tokens=n_completion,
                endpoint=f"hf:{self.model_path}",
            ),
        )

    async def aclose(self) -> None:
        """Drop the model (after any running generation); a later call loads it again."""
        await asyncio.to_thread(self._unload)

    def _unload(self) -> None:
        with self._lock:
            self._model = None
            self._processor = None

    # -- worker thread -----------------------------------------------------------------------
    def _generate(
        self, messages: list[Message], max_tokens: int, temperature: float, sampling: dict[str, Any]
    ) -> tuple[str, int, int]:
        import torch

        with self._lock:
            self._load_locked()
            processor, model = self._processor, self._model
            template_messages, images = _split_images(messages)
            # An assistant pre-fill (the adapter's last message) is continued, as vLLM does with
            # ``continue_final_message``: the answer is the continuation only.
            prefilled = (
                bool(sampling.get("continue_final_message")) and template_messages[-1]["role"] == "assistant"
            )
            prompt = processor.apply_chat_template(
                template_messages,
                add_generation_prompt=not prefilled,
                continue_final_message=prefilled,
                tokenize=False,
            )
            proc_kwargs: dict[str, Any] = {"text": [prompt], "return_tensors": "pt"}
            if images:
                proc_kwargs["images"] = images
                factor = _resize_factor(processor)
                if factor and all(w % factor == 0 and h % factor == 0 for w, h in (im.size for im in images)):
                    proc_kwargs["do_resize"] = False
                else:
                    log.warning(
                        "image sizes %s are not multiples of %s; the processor will resize them, so the "
                        "answer's frame may differ from the image's",
                        [im.size for im in images],
                        factor,
                    )
            inputs = processor(**proc_kwargs).to(model.device)

            limit = max_tokens if self.max_new_tokens is None else min(max_tokens, self.max_new_tokens)
            gen: dict[str, Any] = {"max_new_tokens": max(1, int(limit))}
            if temperature and temperature > 0:
                gen.update(do_sample=True, temperature=float(temperature))
                for name in ("top_p", "top_k", "repetition_penalty", "min_p"):
                    if name in sampling:
                        gen[name] = sampling[name]
                if "seed" in sampling:
                    torch.manual_seed(int(sampling["seed"]))
            else:
                gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
                if "repetition_penalty" in sampling:
                    gen["repetition_penalty"] = sampling["repetition_penalty"]
            with torch.inference_mode():
                output = model.generate(**inputs, **gen)
            n_prompt = int(inputs["input_ids"].shape[1])
            new_tokens = output[0, n_prompt:]
            # Keep added non-special tokens such as <tool_call>; drop <|im_end|> and padding.
            text = processor.decode(new_tokens, skip_special_tokens=True)
            return text, n_prompt, int(new_tokens.shape[0])


def _split_images(messages: list[Message]) -> tuple[list[dict[str, Any]], list[Image.Image]]:
    """Messages for the chat template (image parts as bare ``{"type": "image"}`` placeholders)
    and the images in order of appearance."""
    out: list[dict[str, Any]] = []
    images: list[Image.Image] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message:
            raise ValueError(f"message {i} must be a dict with a 'role'; got {type(message).__name__}")
        content = message.get("content")
        if isinstance(content, str) or content is None:
            out.append({"role": message["role"], "content": [{"type": "text", "text": content or ""}]})
            continue
        parts = []
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "image":
                image = part.get("image")
                if not isinstance(image, Image.Image):
                    raise ValueError(f"message {i} part {j}: an image part must carry a PIL image")
                images.append(image.convert("RGB") if image.mode != "RGB" else image)
                parts.append({"type": "image"})
            elif kind == "text":
                parts.append({"type": "text", "text": part.get("text", "")})
            else:
                raise ValueError(f"message {i} part {j}: unsupported content part type {kind!r} in-process")
        out.append({"role": message["role"], "content": parts})
    return out, images


def _resize_factor(processor: Any) -> int | None:
    image_processor = getattr(processor, "image_processor", None)
    patch = getattr(image_processor, "patch_size", None)
    merge = getattr(image_processor, "merge_size", None) or 1
    if isinstance(patch, dict):  # some processors store {"height": p, "width": p}
        patch = patch.get("height")
    return int(patch) * int(merge) if patch else None
