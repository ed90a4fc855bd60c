"""ScreenSpot-Pro scoring, exactly as the official harness (eval_screenspot_pro.py) scores it.

A prediction is a point in pixels of the original screenshot. It is correct iff
x1 <= x <= x2 and y1 <= y <= y2, edges inclusive, compared after dividing both the point and the
box by ``img_size`` (the official script works in normalised coordinates). No point is
"wrong_format", which counts as wrong. Every sample stays in the denominator.

The output is the official ``{"details": [...], "metrics": {...}}`` document, with the official
metric blocks and keys, so leaderboard tooling reads our files unchanged. Accuracies are
fractions in [0, 1] as there; reports print percentages.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

CORRECT, WRONG, WRONG_FORMAT = "correct", "wrong", "wrong_format"

# What the official harness is run with (docs/ARCHITECTURE.md §6); written into every detail.
GT_TYPE = "positive"
INSTRUCTION_STYLE = "instruction"


def correctness(point: Sequence[float] | None, bbox: Sequence[float], img_size: Sequence[float]) -> str:
    """ "correct", "wrong" or "wrong_format" for a point (x, y) in screenshot pixels against an
    XYXY ``bbox`` in the same pixels, compared in coordinates normalised by ``img_size`` (W, H)."""
    if point is None:
        return WRONG_FORMAT
    w, h = float(img_size[0]), float(img_size[1])
    x, y = float(point[0]) / w, float(point[1]) / h
    x1, y1, x2, y2 = bbox[0] / w, bbox[1] / h, bbox[2] / w, bbox[3] / h
    return CORRECT if (x1 <= x <= x2 and y1 <= y <= y2) else WRONG


def judge(sample: Any, point: Sequence[float] | None, declined: bool = False) -> str:
    """The verdict on a sample's answer, by its target: a box as :func:`correctness`; a polygon
    by the ray-casting test OSWorld-G's script uses; an absent target (``refusal``) right only
    when the answer declines: an action without a point (``declined``), or a point with both
    coordinates negative, OSWorld-G's own sign for "not there"."""
    if sample.refusal:
        if declined or (point is not None and point[0] < 0 and point[1] < 0):
            return CORRECT
        return WRONG if point is not None else WRONG_FORMAT
    if point is None or not sample.polygon:
        return correctness(point, sample.bbox, sample.img_size)
    return CORRECT if in_polygon(point, sample.polygon) else WRONG


def in_polygon(point: Sequence[float], polygon: Sequence[float]) -> bool:
    """Even-odd ray casting over the flat vertex list (x0, y0, x1, y1, ...), in pixels.
    OSWorld-G's rule (its evaluation/eval.py ``_is_point_in_polygon``, the upstream file not
    in our reference store; read as reproduced at EvolvingLMMs-Lab/lmms-eval
    lmms_eval/tasks/osworld_g/utils.py, commit 18b594d03fbcf11a328f1b6f9e354add2bf262f8, and
    in cua-lite's osworld_g env, which cites the upstream function): strict comparisons,
    so an edge point counts on some sides and not on others, as there."""
    x, y = float(point[0]), float(point[1])
    verts = list(zip(polygon[0::2], polygon[1::2], strict=True))
    inside = False
    for (xi, yi), (xj, yj) in zip(verts, verts[-1:] + verts[:-1], strict=True):
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
            inside = not inside
    return inside


def detail(
    meta: dict[str, Any], pred: Sequence[float] | None, raw_response: str, verdict: str
) -> dict[str, Any]:
    """One official detail entry. ``meta`` is :meth:`Sample.meta`; ``pred`` is in pixels."""
    return {
        "id": meta["id"],
        "img_path": meta["img_path"],
        "group": meta.get("group"),
        "platform": meta["platform"],
        "application": meta["application"],
        "lang": meta["lang"],
        "instruction_style": INSTRUCTION_STYLE,
        "prompt_to_evaluate": meta["instruction"],
        "gt_type": "negative" if meta.get("refusal") else GT_TYPE,  # ScreenSpot-Pro's word for "absent"
        "ui_type": meta["ui_type"],
        "task_filename": meta["task_filename"],
        "pred": list(pred) if pred is not None else None,
        "raw_response": raw_response,
        "bbox": meta["bbox"],
        "correctness": verdict,
        **{k: meta[k] for k in ("splits", "polygon") if k in meta},
    }


def simple_block(details: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts and accuracy of a subset (UI-Vision's ``calc_metric_for_result_list_simple``, the
    first half of ScreenSpot-Pro's block). An empty subset gives zeros."""
    total = len(details)
    correct = sum(d["correctness"] == CORRECT for d in details)
    return {
        "num_correct_action": correct,
        "num_total": total,
        "wrong_format_num": sum(d["correctness"] == WRONG_FORMAT for d in details),
        "action_acc": correct / total if total else 0,
    }


def metric_block(details: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The official per-subset block. An empty subset gives zeros, never a division by zero."""

    def acc(subset: list[dict[str, Any]]) -> float:
        return sum(d["correctness"] == CORRECT for d in subset) / len(subset) if subset else 0

    return {
        **simple_block(details),
        "text_acc": acc([d for d in details if d["ui_type"] == "text"]),
        "icon_acc": acc([d for d in details if d["ui_type"] == "icon"]),
    }


def _blocks_by(
    details: Iterable[dict[str, Any]], key: Callable[[dict[str, Any]], str]
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in details:
        groups[key(d)].append(d)
    return {k: metric_block(groups[k]) for k in sorted(groups)}


def evaluate(details: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The official report document for ``details`` (official key formats, subsets sorted)."""
    details = list(details)
    metrics = {
        "fine_grained": _blocks_by(
            details,
            lambda d: (
                f"plat:{d['platform']} app:{d['application']} "
                f"inst_style:{d['instruction_style']} gt_type:{d['gt_type']}"
            ),
        ),
        "seeclick_style": _blocks_by(
            details,
            lambda d: f"plat:{d['platform']} inst_style:{d['instruction_style']} gt_type:{d['gt_type']}",
        ),
        "leaderboard_simple_style": _blocks_by(details, lambda d: f"group:{d['group']}"),
        "leaderboard_detailed_style": _blocks_by(details, lambda d: f"app:{d['application']}"),
        "overall": metric_block(details),
    }
    return {"details": details, "metrics": metrics}


def evaluate_splits(
    details: Sequence[dict[str, Any]], order: Sequence[str] = (), mean_of: Sequence[str] = ()
) -> dict[str, Any]:
    """The report of a benchmark scored by splits (ScreenSpot-v2, OSWorld-G, UI-Vision): one
    :func:`simple_block` per key in the details' ``splits`` (``order`` first, then the rest
    sorted; a sample may count in several, as OSWorld-G's categories overlap), ``overall`` over
    every sample, and ``mean_of_splits``, the unweighted mean accuracy of the ``mean_of``
    splits (UI-Vision's "Final Avg") when given."""
    details = list(details)
    keys = {k for d in details for k in d.get("splits", ())}
    names = [k for k in order if k in keys] + sorted(keys - set(order))
    splits = {k: simple_block([d for d in details if k in d.get("splits", ())]) for k in names}
    metrics: dict[str, Any] = {"splits": splits, "overall": simple_block(details)}
    if mean_of:
        accs = [splits[k]["action_acc"] for k in mean_of if k in splits]
        metrics["mean_of_splits"] = sum(accs) / len(accs) if accs else 0
    return {"details": details, "metrics": metrics}
