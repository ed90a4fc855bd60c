"""MVP's attention-guided views against the official code, on the same attention tensors.

Ours is three pieces in three layers: the backend reads a query and its keys into the image
cells attended to most (``transformers_local.image_weights``, ``top_cells``), the adapter maps
cells to pixels of the screenshot (``families.attention.cell_centres``), the core ranks windows
around them (``strategies.mvp.ranked_windows``). The oracle below is a transcription of what the
official code does with the states its model fork captures: ZJUSCL/MVP at commit
988ff3c61b9f7632d780ae27c83260de75b3c95f,

- ``qwen2_5_vl/modeling_qwen2_5_vl.py`` lines 688-697 (``repeat_kv``) and 858-889 (the capture
  hook sees the keys after they are repeated to the query heads);
- ``mvp_sspro.py`` lines 100-136 (scores, softmax, maximum over heads, the image tokens between
  the markers, ``torch.topk``, token index to the centre of its 28 px cell in screenshot pixels)
  and 149-217 (``rank_regions_by_coverage``: a window per position, its coverage, sorted, the
  integer boxes deduplicated).

Given one tensor, both must name the same windows with the same coverages, in the same order.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from regionfocus.adapters.backends.transformers_local import image_weights, top_cells  # noqa: E402
from regionfocus.adapters.families.attention import cell_centres  # noqa: E402
from regionfocus.geometry import Point  # noqa: E402
from regionfocus.strategies.mvp import ranked_windows  # noqa: E402

CELL = 28  # Qwen2.5-VL: 14 px patches merged 2x2, the code's ``patch_size`` default


# ------------------------------------------------------------------ the official code's behaviour
def official_repeat_kv(key, n_rep):
    b, kv, n, d = key.shape
    if n_rep == 1:
        return key
    return key[:, :, None, :, :].expand(b, kv, n_rep, n, d).reshape(b, kv * n_rep, n, d)


def official_positions(query, key, img_start, img_end, width, height, resized, top_k, patch_size=CELL):
    """mvp_sspro.py 100-136 on the captured states (keys already repeated, as the hook sees them)."""
    _, _, _, head_dim = query.shape
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(head_dim)
    scores = scores.squeeze(2)
    weights = torch.nn.functional.softmax(scores, dim=-1)
    weights = weights.max(dim=1)[0]
    visual = weights[0, img_start + 1 : img_end]
    top_k = min(top_k, len(visual))
    top_indices = torch.topk(visual, top_k).indices.cpu().numpy()
    resized_width, resized_height = resized
    n_w = resized_width // patch_size
    out = []
    for idx in top_indices:
        py, px = idx // n_w, idx % n_w
        out.append(
            (
                (px + 0.5) * patch_size * (width / resized_width),
                (py + 0.5) * patch_size * (height / resized_height),
            )
        )
    return out


def official_regions(positions, width, height, max_regions, sub_w_in=1288, sub_h_in=728):
    """mvp_sspro.py 149-217."""
    pos = np.array(positions)
    sub_w, sub_h = min(sub_w_in, width), min(sub_h_in, height)
    cands = []
    for cx, cy in pos:
        left, top = max(0, cx - sub_w / 2), max(0, cy - sub_h / 2)
        right, bottom = min(width, left + sub_w), min(height, top + sub_h)
        if right - left < sub_w:
            if left == 0:
                right = sub_w
            else:
                left = right - sub_w
        if bottom - top < sub_h:
            if top == 0:
                bottom = sub_h
            else:
                top = bottom - sub_h
        region = (int(left), int(top), int(right), int(bottom))
        count = sum(1 for x, y in pos if left <= x <= right and top <= y <= bottom)
        cands.append((region, count))
    cands.sort(key=lambda c: c[1], reverse=True)
    out, seen = [], set()
    for region, count in cands:
        if region not in seen and len(out) < max_regions:
            out.append((region, count))
            seen.add(region)
    return out


# ------------------------------------------------------------------ ours
def our_windows(query, key, img_start, img_end, given, cols, top_k, n, window):
    cells = top_cells(image_weights(query, key, img_start, img_end), cols, top_k)
    rows = (img_end - img_start - 1) // cols
    points = cell_centres(cells, CELL, given, (cols * CELL, rows * CELL))
    return [(tuple(int(v) for v in box.to_list()), c) for box, c in ranked_windows(points, given, window, n)]


@st.composite
def attention_case(draw):
    kv = draw(st.sampled_from([1, 2, 4]))
    groups = draw(st.sampled_from([1, 2, 3]))
    dim = draw(st.sampled_from([4, 8, 32]))
    cols, rows = draw(st.integers(1, 30)), draw(st.integers(1, 20))
    before, after = draw(st.integers(0, 6)), draw(st.integers(1, 6))  # text around the image
    width, height = draw(st.integers(50, 7000)), draw(st.integers(50, 4500))
    window = (
        draw(st.sampled_from([1288, 728, 300, 5000, 41])),
        draw(st.sampled_from([728, 1288, 200, 3000, 17])),
    )
    return {
        "kv": kv,
        "heads": kv * groups,
        "dim": dim,
        "cols": cols,
        "rows": rows,
        "before": before,
        "after": after,
        "given": (width, height),
        "window": window,
        "top_k": draw(st.sampled_from([1, 5, 40, 100])),
        "n": draw(st.integers(1, 10)),
        # peaked or flat attention; bfloat16 (the code's dtype) makes ties common
        "scale": draw(st.sampled_from([0.01, 1.0, 6.0])),
        "dtype": draw(st.sampled_from([torch.float32, torch.bfloat16])),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(attention_case())
@pytest.mark.slow  # a real model or engine end to end: seconds of CPU
def test_our_windows_are_the_official_codes_on_the_same_attention_tensor(case):
    g = torch.Generator().manual_seed(case["seed"])
    n_keys = case["before"] + 1 + case["cols"] * case["rows"] + 1 + case["after"]
    start = case["before"]
    end = start + 1 + case["cols"] * case["rows"]
    query = (torch.randn(1, case["heads"], 1, case["dim"], generator=g) * case["scale"]).to(case["dtype"])
    key = (torch.randn(1, case["kv"], n_keys, case["dim"], generator=g) * case["scale"]).to(case["dtype"])
    resized = (case["cols"] * CELL, case["rows"] * CELL)
    width, height = case["given"]
    positions = official_positions(
        query,
        official_repeat_kv(key, case["heads"] // case["kv"]),
        start,
        end,
        width,
        height,
        resized,
        case["top_k"],
    )
    expected = official_regions(positions, width, height, case["n"], *case["window"])
    got = our_windows(
        query, key, start, end, case["given"], case["cols"], case["top_k"], case["n"], case["window"]
    )
    assert got == expected


def test_the_oracle_and_ours_on_a_tensor_worked_by_hand():
    """Two heads over a 4 x 2 grid of image cells between one text token and the end marker:
    head 0 attends to cell 7 = (3, 1) (score 5/sqrt 2: softmax weight 0.78), head 1 to cell 0 =
    (0, 0) (4/sqrt 2: 0.63), the rest at most 0.04. On a 112 x 56 image seen at its own size the
    centres are (98, 42) and (14, 14); 56 x 28 windows around them: (56, 28, 112, 56) (shifted
    left from the right edge) and (0, 0, 56, 28), each holding one centre, in attention order."""
    key = torch.zeros(1, 1, 1 + 1 + 8 + 1, 2)
    key[0, 0, 2 + 7] = torch.tensor([5.0, 0.0])
    key[0, 0, 2 + 0] = torch.tensor([0.0, 4.0])
    query = torch.tensor([[[[1.0, 0.0]], [[0.0, 1.0]]]])  # (1, 2 heads, 1, d 2); 1 kv head
    positions = official_positions(query, official_repeat_kv(key, 2), 1, 10, 112, 56, (112, 56), 2)
    assert positions == [(98.0, 42.0), (14.0, 14.0)]
    expected = [((56, 28, 112, 56), 1), ((0, 0, 56, 28), 1)]
    assert official_regions(positions, 112, 56, 4, 56, 28) == expected
    assert our_windows(query, key, 1, 10, (112, 56), 4, 2, 4, (56, 28)) == expected
    # the same cells on a screenshot twice the size it was sent at
    assert [(p.x, p.y) for p in cell_centres([(3, 1), (0, 0)], CELL, (224, 112), (112, 56))] == [
        (196.0, 84.0),
        (28.0, 28.0),
    ]
    assert ranked_windows([Point(98, 42), Point(14, 14)], (112, 56), (56, 28), 1) == [
        (ranked_windows([Point(98, 42)], (112, 56), (56, 28), 1)[0][0], 1)
    ]
