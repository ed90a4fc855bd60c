"""What a ScreenSpot-Pro record in ``records.jsonl`` holds beyond the shared fields, as a JSON
Schema (plain data): every field the reports, ``compare`` and ``merge`` read, with its type.
The run log checks each record against it on every read (:func:`regionfocus.kit.runlog.read_records`),
so a hand-edited line that breaks it is named (file, line, field) instead of turning into a
traceback or a quietly different number. Fields only kept for people (``trace``) are left open.
"""

from __future__ import annotations

from typing import Any

from .metrics import CORRECT, WRONG, WRONG_FORMAT

_TEXT_OR_NULL = {"type": ["string", "null"]}
_COUNT = {"type": "integer", "minimum": 0}
_SECONDS = {"type": ["number", "null"], "minimum": 0}
_NUMBERS = {"type": "array", "items": {"type": "number"}}

# One scored answer: the baseline, the final (+ RegionFocus) and each peer strategy's row.
ROW: dict[str, Any] = {
    "type": "object",
    "required": ["point", "correctness", "raw_response"],
    "properties": {
        "point": {"type": ["array", "null"], "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "action": {"type": ["object", "null"]},
        "correctness": {"enum": [CORRECT, WRONG, WRONG_FORMAT]},
        "raw_response": {"type": "string"},
        "non_click": {"type": "boolean"},  # a scroll, hover or typing at a point: scored wrong
        "error": _TEXT_OR_NULL,
        "cost": {"type": "object"},
        "seconds": _SECONDS,
        "trace": {"type": ["object", "null"]},
    },
}

# The sample as the data set gave it (Sample.meta()): the reports rebuild from it alone.
SAMPLE: dict[str, Any] = {
    "type": "object",
    "required": [
        "id",
        "task_filename",
        "img_path",
        "bbox",
        "instruction",
        "application",
        "platform",
        "lang",
        "ui_type",
    ],
    "properties": {
        "id": {"type": "string"},
        "task_filename": {"type": "string"},
        "img_filename": {"type": "string"},
        "img_path": {"type": "string"},
        "bbox": {**_NUMBERS, "minItems": 4, "maxItems": 4},
        "img_size": {**_NUMBERS, "minItems": 2, "maxItems": 2},
        "instruction": {"type": "string"},
        "lang": {"type": "string"},
        "application": {"type": "string"},
        "platform": {"type": "string"},
        "group": _TEXT_OR_NULL,
        "ui_type": _TEXT_OR_NULL,
        "repairs": {"type": "array"},
        "polygon": {"type": "array"},
        "refusal": {"type": "boolean"},
        "splits": {"type": "array", "items": {"type": "string"}},
    },
}

RECORD_FIELDS: dict[str, Any] = {
    "type": "object",
    "required": ["sample", "baseline", "final"],
    "properties": {
        "sample": SAMPLE,
        "baseline": ROW,
        "final": ROW,
        "strategies": {"type": "object", "additionalProperties": ROW},
        "verdict": _TEXT_OR_NULL,
        "trigger": _TEXT_OR_NULL,
        "rounds": _COUNT,
        "n_calls": _COUNT,
        "n_failed_calls": _COUNT,
        "prompt_tokens": _COUNT,
        "completion_tokens": _COUNT,
        "model_seconds": _SECONDS,
        "seconds": _SECONDS,
        "peak_rss_mb": {"type": "number"},
        "cost": {"type": "object", "additionalProperties": {"type": "object"}},
        "trace": {"type": ["object", "null"]},
    },
}
