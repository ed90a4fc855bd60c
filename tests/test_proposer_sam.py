"""SAM proposer on a real, tiny, randomly initialised segment-anything model (docs/ARCHITECTURE.md §10).

The model's masks are random, so tests on its own output assert the machinery (boxes inside
the image, minimum size, the focal point, the embedding cache, the worker thread). Exact box
arithmetic and the degenerate-mask fallback use masks scripted into the third-party
``SamPredictor.predict``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image, ImageDraw

from regionfocus import Box, FixedRatioProposer, Point, Query, RegionFocusConfig
from regionfocus.proposers import build_proposer
from regionfocus.proposers.base import ProposalContext

pytest.importorskip("segment_anything")

from regionfocus.proposers.sam import SamProposer, add_margin, mask_to_box  # noqa: E402

W, H = 640, 480


@pytest.fixture(scope="session")
def tiny_sam():
    import torch
    from segment_anything.build_sam import _build_sam

    torch.manual_seed(0)
    return _build_sam(
        encoder_embed_dim=192,
        encoder_depth=2,
        encoder_num_heads=3,
        encoder_global_attn_indexes=[1],
        checkpoint=None,
    )


def screen(seed: int = 0) -> Image.Image:
    """A small GUI-like picture: panels and buttons on a light background."""
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (W, H), (236, 236, 240))
    d = ImageDraw.Draw(img)
    d.rectangle((0, 0, W, 40), fill=(40, 44, 52))
    for _ in range(12):
        x, y = int(rng.integers(0, W - 90)), int(rng.integers(50, H - 40))
        colour = tuple(int(c) for c in rng.integers(0, 255, 3))
        d.rectangle((x, y, x + 80, y + 28), fill=colour, outline=(0, 0, 0))
    return img


def ctx(image: Image.Image, focal: Point) -> ProposalContext:
    return ProposalContext(screenshot=image, focal=focal, query=Query(instruction="click the button"))


def rect_mask(left: int, top: int, right: int, bottom: int) -> np.ndarray:
    m = np.zeros((H, W), dtype=bool)
    m[top:bottom, left:right] = True
    return m


@pytest.fixture
def scripted(tiny_sam, monkeypatch):
    """A proposer whose predictor returns the masks/scores a test sets in ``outputs``; the real
    (0.6 s) embedding is skipped because the scripted masks do not use it."""
    proposer = SamProposer(sam=tiny_sam, margin=0.1, min_size=64)
    outputs: dict = {}
    prompts: list = []

    def predict(point_coords=None, point_labels=None, multimask_output=True, **_):
        prompts.append((point_coords.copy(), point_labels.copy(), multimask_output))
        masks = np.stack(outputs["masks"])
        return masks, np.asarray(outputs["scores"], dtype=np.float32), np.zeros((len(masks), 256, 256))

    def set_image(image, image_format="RGB"):
        # What the real set_image leaves behind, minus the embedding the scripts do not need.
        predictor = proposer.predictor
        predictor.original_size = predictor.input_size = image.shape[:2]
        predictor.features, predictor.is_image_set = None, True

    monkeypatch.setattr(proposer.predictor, "set_image", set_image)
    monkeypatch.setattr(proposer.predictor, "predict", predict)
    return proposer, outputs, prompts


def test_mask_helpers():
    assert mask_to_box(np.zeros((5, 5), dtype=bool)) is None
    m = np.zeros((10, 20), dtype=bool)
    m[2:5, 3:9] = True
    m[7, 15] = True
    assert mask_to_box(m) == Box(3, 2, 16, 8)
    assert add_margin(Box(10, 10, 30, 20), 0.5, (100, 100)) == Box(0, 5, 40, 25)
    assert add_margin(Box(90, 90, 100, 100), 0.5, (100, 100)) == Box(85, 85, 100, 100)


async def test_best_mask_becomes_box_with_margin_and_min_size(scripted):
    proposer, outputs, prompts = scripted
    outputs["masks"] = [
        rect_mask(10, 10, 50, 50),
        rect_mask(200, 300, 300, 350),
        rect_mask(190, 290, 600, 470),
    ]
    outputs["scores"] = [0.2, 0.9, 0.5]
    boxes = await proposer.propose(ctx(screen(), Point(250.4, 320.6)))
    # Best mask (score 0.9): 100 x 50 at (200, 300); margin 0.1 -> 120 x 60, then the height
    # grows to min_size 64 about the centre (250, 325).
    assert boxes == [Box(190, 293, 310, 357)]
    coords, labels, multimask = prompts[0]
    assert coords.tolist() == [[pytest.approx(250.4), pytest.approx(320.6)]]
    assert labels.tolist() == [1] and multimask is True


async def test_box_stays_inside_the_image_at_a_corner(scripted):
    proposer, outputs, _ = scripted
    outputs["masks"] = [rect_mask(W - 20, H - 10, W, H)] * 3
    outputs["scores"] = [0.5, 0.4, 0.3]
    (box,) = await proposer.propose(ctx(screen(), Point(W - 5, H - 5)))
    assert box == Box(W - 64, H - 64, W, H)


async def test_focal_outside_the_image_is_clamped(scripted):
    proposer, outputs, prompts = scripted
    outputs["masks"] = [rect_mask(W - 100, 0, W, 60)] * 3
    outputs["scores"] = [0.5, 0.4, 0.3]
    (box,) = await proposer.propose(ctx(screen(), Point(W + 30, -12)))
    assert prompts[0][0].tolist() == [[W - 1, 0]]
    assert box.contains(Point(W - 1, 0))


@pytest.mark.parametrize(
    "mask",
    [
        np.zeros((H, W), dtype=bool),  # empty
        rect_mask(300, 200, 303, 203),  # 9 px: too small to be an element
        rect_mask(0, 0, W, H),  # the whole screen
        rect_mask(10, 10, 100, 60),  # nowhere near the focal point
    ],
    ids=["empty", "tiny", "whole-image", "misses-focal"],
)
async def test_degenerate_masks_fall_back_to_fixed_ratios(scripted, mask):
    proposer, outputs, _ = scripted
    outputs["masks"] = [mask] * 3
    outputs["scores"] = [0.9, 0.8, 0.7]
    image, focal = screen(), Point(500, 400)
    boxes = await proposer.propose(ctx(image, focal))
    assert boxes == await FixedRatioProposer().propose(ctx(image, focal))


async def test_a_degenerate_best_mask_yields_to_the_next_best(scripted):
    proposer, outputs, _ = scripted
    outputs["masks"] = [rect_mask(0, 0, W, H), rect_mask(400, 380, 560, 420), np.zeros((H, W), dtype=bool)]
    outputs["scores"] = [0.99, 0.6, 0.8]
    (box,) = await proposer.propose(ctx(screen(), Point(500, 400)))
    assert box == Box(384, 368, 576, 432)


async def test_n_masks_returns_distinct_boxes_best_first(scripted):
    proposer, outputs, _ = scripted
    proposer.n_masks = 3
    outputs["masks"] = [
        rect_mask(410, 380, 560, 420),
        rect_mask(400, 380, 560, 420),
        rect_mask(300, 300, 620, 460),
    ]
    outputs["scores"] = [0.7, 0.9, 0.5]
    boxes = await proposer.propose(ctx(screen(), Point(500, 400)))
    # The 0.7 mask's box overlaps the 0.9 one's by IoU 0.94 and is dropped.
    assert boxes == [Box(384, 368, 576, 432), Box(268, 284, 640, 476)]


@pytest.mark.slow  # a real model or engine end to end: seconds of CPU
async def test_real_tiny_sam_boxes_and_embedding_cache(tiny_sam, monkeypatch):
    proposer = SamProposer(sam=tiny_sam, margin=0.15, min_size=96, n_masks=3)
    embedded: list[tuple[int, int]] = []
    real_set_image = proposer.predictor.set_image

    def counting_set_image(image, image_format="RGB"):
        embedded.append(image.shape[:2])
        real_set_image(image, image_format)

    monkeypatch.setattr(proposer.predictor, "set_image", counting_set_image)
    a, b = screen(0), screen(1)

    # The first call embeds in a worker thread: the event loop keeps ticking meanwhile.
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    t0 = time.perf_counter()
    first = await proposer.propose(ctx(a, Point(320, 20)))
    elapsed = time.perf_counter() - t0
    task.cancel()
    assert embedded == [(H, W)]
    # A blocking call would starve the ticker completely; a threaded one lets it run.
    assert elapsed > 0.05 and ticks >= 3

    again = await proposer.propose(ctx(a.copy(), Point(320, 20)))  # an equal image, new object
    other_point = await proposer.propose(ctx(a, Point(100, 300)))
    assert len(embedded) == 1
    assert again == first

    await proposer.propose(ctx(b, Point(320, 20)))
    assert len(embedded) == 2
    back = await proposer.propose(ctx(a, Point(320, 20)))  # restored from the cache
    assert len(embedded) == 2
    assert back == first

    for focal, boxes in ((Point(320, 20), first), (Point(100, 300), other_point)):
        fallback = await FixedRatioProposer().propose(ctx(a, focal))
        assert boxes
        for box in boxes:
            assert 0 <= box.left and 0 <= box.top and box.right <= W and box.bottom <= H
            assert box.width >= 96 and box.height >= 96
        sam_boxes = proposer.boxes_for(a, focal)
        assert boxes == (sam_boxes or fallback)
        assert all(box.contains(focal) for box in sam_boxes)
        assert len(sam_boxes) <= 3
        assert all(x.iou(y) <= 0.8 for i, x in enumerate(sam_boxes) for y in sam_boxes[i + 1 :])


def test_missing_checkpoint_error_names_the_path(tmp_path):
    missing = tmp_path / "sam_vit_b_01ec64.pth"
    with pytest.raises(FileNotFoundError, match="sam_vit_b_01ec64.pth"):
        SamProposer(checkpoint=missing)
    config = RegionFocusConfig(proposer="sam", sam_checkpoint=str(missing))
    with pytest.raises(FileNotFoundError, match=str(missing)):
        build_proposer(config)
    with pytest.raises(ValueError, match="checkpoint"):
        build_proposer(RegionFocusConfig(proposer="sam"))


def test_bad_model_type_and_unreadable_checkpoint(tmp_path):
    junk = tmp_path / "junk.pth"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="vit_q"):
        SamProposer(checkpoint=junk, model_type="vit_q")
    proposer = SamProposer(checkpoint=junk, model_type="vit_b")  # cheap: loads on first use
    with pytest.raises(ValueError, match="junk.pth"):
        _ = proposer.predictor


def test_importing_regionfocus_does_not_import_torch():
    code = "import sys, regionfocus, regionfocus.proposers.sam, regionfocus.proposers.layout; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
