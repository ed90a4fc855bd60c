"""SAM box proposer: segment the element under the focal point and box it.

segment-anything (Kirillov et al., 2023) is imported only when a :class:`SamProposer` first
needs the model, so ``import regionfocus`` never pulls in torch. Install it with the ``sam``
extra; real checkpoints are a path the user supplies (no weights are downloaded).

Frames: the focal point, masks and returned boxes are all in pixels of the original screenshot
(segment-anything's ``SamPredictor`` takes (X, Y) prompts in original pixels and returns
masks at the original (H, W)).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ..checks import require
from ..geometry import Box, Point, clamp_point
from .base import BoxProposer, FixedRatioProposer, ProposalContext, enforce_min_size

# segment-anything's sam_model_registry keys, checked before torch is imported.
SAM_MODEL_TYPES = ("default", "vit_h", "vit_l", "vit_b")


def image_key(image: Image.Image) -> str:
    """Content key of a screenshot, so an equal image reuses its embedding even as a new object."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{image.mode}:{image.size}".encode())
    h.update(image.tobytes())
    return h.hexdigest()


def mask_to_box(mask: np.ndarray) -> Box | None:
    """Tight XYXY box (right/bottom exclusive, original pixels) of a (H, W) boolean mask;
    None when the mask is empty."""
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(mask.any(axis=0))
    return Box(float(cols[0]), float(rows[0]), float(cols[-1] + 1), float(rows[-1] + 1))


def add_margin(box: Box, margin: float, size: tuple[int, int]) -> Box:
    """Grow ``box`` by ``margin`` x its own width/height on each side, clipped to ``size`` = (W, H)."""
    dx, dy = margin * box.width, margin * box.height
    w, h = size
    return Box(
        max(0.0, box.left - dx), max(0.0, box.top - dy), min(w, box.right + dx), min(h, box.bottom + dy)
    )


@dataclass(eq=False)
class SamProposer:
    """Boxes from segment-anything masks prompted with the focal point (a foreground click).

    The best-scoring of SAM's three multimask outputs becomes a box: its tight bounding box,
    plus ``margin`` (fraction of the box size) on every side, grown to ``min_size`` and kept
    inside the image. ``n_masks`` > 1 returns up to that many boxes from the next-best masks,
    dropping any whose IoU with an earlier box exceeds ``dedup_iou``. Like the paper's SAM
    variant, the SAM boxes *replace* the fixed-ratio boxes: fallback boxes are returned only
    when every mask is degenerate — empty, under ``min_mask_pixels`` pixels, a bounding box
    covering more than ``max_cover`` of the image, or a final box that misses the focal point.

    The image embedding (``SamPredictor.set_image``) is the expensive step; it is cached per
    screenshot content (LRU of ``cache_size`` embeddings), so later rounds on the same screen
    only run the light mask decoder. All torch work runs in a worker thread, one call at a time.
    """

    name = "sam"

    checkpoint: str | Path | None = None
    model_type: str = "vit_b"
    margin: float = 0.15
    min_size: float = 64
    fallback: BoxProposer | None = None
    _: KW_ONLY
    sam: Any = None
    device: str = "cpu"
    n_masks: int = 1
    dedup_iou: float = 0.8
    min_mask_pixels: int = 16
    max_cover: float = 0.9
    cache_size: int = 4

    def __post_init__(self) -> None:
        if self.sam is None:
            if self.checkpoint is None:
                raise ValueError(
                    "SAM proposer needs a checkpoint path (config sam_checkpoint) or a built sam="
                )
            if self.model_type not in SAM_MODEL_TYPES:
                raise ValueError(
                    f"unknown SAM model type {self.model_type!r}: expected one of {', '.join(SAM_MODEL_TYPES)}"
                )
            self.checkpoint = Path(self.checkpoint).expanduser()
            if not self.checkpoint.is_file():
                raise FileNotFoundError(f"SAM checkpoint not found: {self.checkpoint}")
        self.fallback = self.fallback or FixedRatioProposer()
        require(self, "margin >= 0, n_masks >= 1, cache_size >= 1")
        self._predictor: Any = None
        self._current: str | None = None  # key of the image whose embedding the predictor holds
        self._cache: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def predictor(self) -> Any:
        """The ``segment_anything.SamPredictor`` (built, and the checkpoint loaded, on first use)."""
        if self._predictor is None:
            sam = self.sam if self.sam is not None else _load_sam(self.checkpoint, self.model_type)
            self._predictor = _predictor(sam, self.device)
        return self._predictor

    async def propose(self, ctx: ProposalContext) -> list[Box]:
        boxes = await asyncio.to_thread(self.boxes_for, ctx.screenshot, ctx.focal)
        return boxes or await self.fallback.propose(ctx)

    def boxes_for(self, image: Image.Image, focal: Point) -> list[Box]:
        """SAM boxes for ``focal`` (screenshot pixels), best first; [] when every mask is
        degenerate. Blocking; :meth:`propose` runs it in a thread."""
        size = image.size
        focal = clamp_point(focal, size)
        with self._lock:
            self._set_image(image)
            masks, scores, _ = self.predictor.predict(
                point_coords=np.array([[focal.x, focal.y]], dtype=np.float32),
                point_labels=np.array([1]),
                multimask_output=True,
            )
        boxes: list[Box] = []
        for i in np.argsort(-np.asarray(scores), kind="stable"):
            box = self._mask_box(np.asarray(masks[i], dtype=bool), focal, size)
            if box is not None and all(box.iou(b) <= self.dedup_iou for b in boxes):
                boxes.append(box)
                if len(boxes) == self.n_masks:
                    break
        return boxes

    def _mask_box(self, mask: np.ndarray, focal: Point, size: tuple[int, int]) -> Box | None:
        tight = mask_to_box(mask)
        if tight is None or int(mask.sum()) < self.min_mask_pixels:
            return None
        if tight.area > self.max_cover * size[0] * size[1]:
            return None  # "the whole screen" is no zoom at all
        box = enforce_min_size(add_margin(tight, self.margin, size), self.min_size, size)
        return box if box.contains(focal) else None

    def _set_image(self, image: Image.Image) -> None:
        """Make the predictor hold ``image``'s embedding, computing it only on a cache miss."""
        key = image_key(image)
        if key == self._current:
            return
        predictor = self.predictor
        if key in self._cache:
            self._cache.move_to_end(key)
            for name, value in self._cache[key].items():
                setattr(predictor, name, value)
        else:
            predictor.set_image(np.asarray(image.convert("RGB")), image_format="RGB")
            # The state set_image leaves behind; restoring it is all predict() needs.
            self._cache[key] = {
                name: getattr(predictor, name)
                for name in ("features", "original_size", "input_size", "is_image_set")
            }
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        self._current = key


def _import_sam() -> Any:
    try:
        import segment_anything
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError(
            "the SAM proposer needs segment-anything and torch: pip install 'regionfocus[sam]'"
        ) from e
    return segment_anything


def _load_sam(checkpoint: Path, model_type: str) -> Any:
    """Build ``model_type`` from segment-anything's registry and load ``checkpoint`` on the CPU."""
    sa = _import_sam()
    registry = sa.sam_model_registry
    if model_type not in registry:
        raise ValueError(f"unknown SAM model type {model_type!r}: expected one of {', '.join(registry)}")
    import torch

    # Loaded here rather than through registry(checkpoint=...) so a checkpoint saved on a GPU
    # loads on a CPU-only machine and a bad file gives an error naming it.
    try:
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except Exception as e:
        raise ValueError(f"SAM checkpoint {checkpoint} could not be read: {e}") from e
    sam = registry[model_type](checkpoint=None)
    try:
        sam.load_state_dict(state)
    except RuntimeError as e:
        raise ValueError(f"SAM checkpoint {checkpoint} does not fit model type {model_type!r}: {e}") from e
    return sam


def _predictor(sam: Any, device: str) -> Any:
    sa = _import_sam()
    sam.to(device)
    sam.eval()
    return sa.SamPredictor(sam)
