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
        "gt_type": GT_TYPE,
        "ui_type": meta["ui_type"],
        "task_filename": meta["task_filename"],
        "pred": list(pred) if pred is not None else None,
        "raw_response": raw_response,
        "bbox": meta["bbox"],
        "correctness": verdict,
    }


def metric_block(details: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The official per-subset block. An empty subset gives zeros, never a division by zero."""
    total = len(details)
    correct = sum(d["correctness"] == CORRECT for d in details)
    wrong_format = sum(d["correctness"] == WRONG_FORMAT for d in details)

    def acc(subset: list[dict[str, Any]]) -> float:
        return sum(d["correctness"] == CORRECT for d in subset) / len(subset) if subset else 0

    return {
        "num_correct_action": correct,
        "num_total": total,
        "wrong_format_num": wrong_format,
        "action_acc": correct / total if total else 0,
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
