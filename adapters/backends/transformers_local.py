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
import copy
import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from regionfocus.adapters.backends.base import ChatResponse, Message
from regionfocus.model import Usage

log = logging.getLogger(__name__)

# MVP's defaults (ZJUSCL/MVP @988ff3c6, eval_uitars_1_5.sh and eval_gta1.sh: ATTN_LAYER=20,
# TARGET_TOKEN_ID=","; the Qwen3-VL scripts use layer 24 or 48).
ATTENTION_LAYER = 20
SEPARATOR = ","
# The name our capturing attention function is registered under in transformers.
_CAPTURE = "regionfocus-attention-capture"


@dataclass
class AttendedCells:
    """What MVP's attention pass found. ``cells``: (column, row) of the image's token cells the
    separator attended to most, most first; ``cell``: the side of one cell in pixels of the
    image sent (patch size x merge size); ``grid``: (columns, rows) of cells; ``text``: the
    greedy answer; ``separator_at``: index of the separator among the answer's tokens (None:
    the answer has none the model read back, and ``cells`` is empty)."""

    cells: list[tuple[int, int]]
    cell: int
    grid: tuple[int, int]
    text: str
    separator_at: int | None
    usage: Usage = field(default_factory=Usage)


class TransformersBackend:
    """:class:`regionfocus.adapters.backends.base.ChatBackend` over ``AutoModelForImageTextToText``.

    ``model_path``: a local model folder. ``device``: "cpu", "cuda", "cuda:1", ...
    ``dtype``: a torch dtype name ("float32", "bfloat16", ...) or None for the folder's own.
    ``max_new_tokens``: a cap on every call's ``max_tokens`` (None: no cap), for tests and
    slow CPUs. ``attention_layer`` and ``separator``: the decoder layer and the answer token MVP's
    attention pass reads (:meth:`attend`; the official defaults, layer 20 and ",").
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        device: str = "cpu",
        dtype: str | None = None,
        max_new_tokens: int | None = None,
        attention_layer: int = ATTENTION_LAYER,
        separator: str = SEPARATOR,
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
        if not isinstance(attention_layer, int) or attention_layer < 0:
            raise ValueError(f"attention_layer must be a decoder layer index >= 0, got {attention_layer!r}")
        self.attention_layer = attention_layer
        self.separator = separator
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
            inputs = self._inputs(messages, sampling)

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

    def _inputs(self, messages: list[Message], sampling: dict[str, Any]) -> Any:
        """The processor's tensors for ``messages`` on the model's device (lock held)."""
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
        return processor(**proc_kwargs).to(model.device)

    # -- MVP's attention pass ----------------------------------------------------------------
    async def attend(
        self, messages: list[Message], *, top_k: int, max_tokens: int = 512, **sampling: Any
    ) -> AttendedCells:
        """A greedy answer to ``messages`` (one image) and the ``top_k`` image cells its separator
        token attended to most at layer ``attention_layer``: the query of the decoding step that
        reads the separator back (the last such step), against every key before it, softmax,
        maximum over heads, the image's tokens. ``sampling`` may carry ``continue_final_message``
        (a pre-filled answer, continued; the separator is looked for in the continuation)."""
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        started = time.perf_counter()
        found = await asyncio.to_thread(self._attend, messages, top_k, max_tokens, sampling)
        found.usage.latency_s = time.perf_counter() - started
        found.usage.endpoint = f"hf:{self.model_path}"
        return found

    def _attend(
        self, messages: list[Message], top_k: int, max_tokens: int, sampling: dict[str, Any]
    ) -> AttendedCells:
        import torch

        with self._lock:
            self._load_locked()
            processor, model = self._processor, self._model
            layers = model.get_decoder().layers
            if self.attention_layer >= len(layers):
                raise ValueError(
                    f"attention_layer {self.attention_layer} is past the model's last decoder layer "
                    f"({len(layers)} layers in {self.model_path})"
                )
            separator = processor.tokenizer.encode(self.separator, add_special_tokens=False)
            if len(separator) != 1:
                raise ValueError(f"separator {self.separator!r} is {len(separator)} tokens, not one")
            inputs = self._inputs(messages, sampling)
            ids = inputs["input_ids"][0]
            grid = inputs.get("image_grid_thw")
            starts = torch.nonzero(ids == model.config.vision_start_token_id).flatten()
            ends = torch.nonzero(ids == model.config.vision_end_token_id).flatten()
            if grid is None or not len(starts) or not len(ends):
                raise ValueError("the attention pass needs a request with an image")
            merge = getattr(processor.image_processor, "merge_size", None) or 1
            columns, rows = int(grid[0][2]) // merge, int(grid[0][1]) // merge
            start, end = int(starts[0]), int(ends[0])
            steps: list[Any] = []  # per decoding step: the image tokens' weights

            def sink(query: Any, key: Any) -> None:
                steps.append(image_weights(query, key, start, end))

            limit = max_tokens if self.max_new_tokens is None else min(max_tokens, self.max_new_tokens)
            greedy = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
            with torch.inference_mode(), capture_queries(layers[self.attention_layer].self_attn, sink):
                output = model.generate(**inputs, max_new_tokens=max(1, int(limit)), **greedy)
            n_prompt = int(ids.shape[0])
            new = output[0, n_prompt:].tolist()
            # Decoding step j reads answer token j (the prompt's pass is no step): a separator is
            # read back only when a token follows it.
            read = [j for j, t in enumerate(new[:-1]) if t == separator[0] and j < len(steps)]
            at = read[-1] if read else None
            cells = top_cells(steps[at], columns, top_k) if at is not None else []
            return AttendedCells(
                cells=cells,
                cell=_resize_factor(processor) or 1,
                grid=(columns, rows),
                text=processor.decode(output[0, n_prompt:], skip_special_tokens=True),
                separator_at=at,
                usage=Usage(prompt_tokens=n_prompt, completion_tokens=len(new)),
            )


def image_weights(query: Any, key: Any, start: int, end: int) -> Any:
    """How much one query attends to each image token, as MVP's code measures it: scores
    q·kᵀ/√d against every key (keys repeated to the query heads, as grouped-query attention
    shares them), softmax over the keys, the maximum over heads, the tokens strictly between
    the image's ``start`` and ``end`` markers. ``query``: (1, heads, 1, d); ``key``:
    (1, kv_heads, keys, d). Computed in the tensors' own dtype, as that code does."""
    import torch

    key = key.repeat_interleave(query.shape[1] // key.shape[1], dim=1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.shape[-1])
    weights = torch.softmax(scores.squeeze(2), dim=-1).max(dim=1)[0]
    return weights[0, start + 1 : end]


def top_cells(weights: Any, columns: int, top_k: int) -> list[tuple[int, int]]:
    """(column, row) of the ``top_k`` largest ``weights`` (image tokens row by row, ``columns``
    a row), largest first."""
    import torch

    k = min(top_k, int(weights.shape[0]))
    return [(i % columns, i // columns) for i in torch.topk(weights, k).indices.tolist()]


def _capturing_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, **kwargs: Any):
    """The layer's own attention, after handing a decoding step's query and keys to its sink."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    sink = module.__dict__.get("_regionfocus_sink")
    if sink is not None and query.shape[2] == 1:
        sink(query, key)
    eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    inner = ALL_ATTENTION_FUNCTIONS.get_interface(module.__dict__["_regionfocus_inner"], eager)
    return inner(module, query, key, value, attention_mask, **kwargs)


@contextmanager
def capture_queries(attention: Any, sink: Callable[[Any, Any], None]) -> Iterator[None]:
    """While open, every decoding step of ``attention`` (one decoder layer's attention module)
    hands ``sink`` its query (after rotary embedding) and all keys so far: transformers looks the
    attention function up by the name in the module's config, so this one module gets a config
    of its own naming a function that calls the sink, then the module's usual attention."""
    from transformers import AttentionInterface

    AttentionInterface.register(_CAPTURE, _capturing_attention)
    config = attention.config
    own = copy.copy(config)
    own._attn_implementation = _CAPTURE
    attention.__dict__["_regionfocus_inner"] = config._attn_implementation
    attention.__dict__["_regionfocus_sink"] = sink
    attention.config = own
    try:
        yield
    finally:
        attention.config = config
        attention.__dict__.pop("_regionfocus_sink", None)


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
