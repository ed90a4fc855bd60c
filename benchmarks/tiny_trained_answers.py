"""How the tiny trained Qwen2.5-VL of the vLLM end-to-end tests (tests/tiny_trained.py) answers
requests it was never trained on: a fresh stream of lessons (another seed), each request built by
the family's own adapter, answered by the model in process (TransformersBackend, greedy) and read
back by that adapter. Per family and request kind: how many replies ended before the cap (the
end token, what a server reports as ``finish_reason: "stop"``), how many the adapter read as the
kind asks (a point, a verdict, a choice, a box), and how far the points land from the taught
point, in 28-px cells of the image the model saw.

    .venv/bin/python -m benchmarks.tiny_trained_answers [--n 120] [--seed 1000]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections import defaultdict

from ._common import machine, print_table

CAP = 64  # new tokens: the longest taught answer (Qwen's tool call) is under 50
POINTS = ("grounding", "agent", "focal", "focal-avoid", "zoom")


def _read(kind: str, reply) -> bool:
    """Whether the adapter read the answer as the request asks."""
    if kind in ("judge", "judge-own"):
        return reply.verdict is not None and reply.verdict.value in ("yes", "no")
    if kind == "choose":
        return reply.choice is not None
    if kind == "region":
        return reply.box is not None
    return reply.point is not None


def _cells(lesson, point) -> tuple[float, float]:
    """How far ``point`` (pixels of the image given) and the image's centre cell are from the
    taught point, in 28-px cells of the image the model saw."""
    from regionfocus.adapters import get_adapter
    from tests import tiny_trained

    seen = get_adapter(lesson.family, max_pixels=tiny_trained.MAX_PIXELS).input_size(lesson.size)
    box = tiny_trained.in_model_frame(lesson.target, lesson.size, seen)
    tx, ty = tiny_trained.answer_point(box, seen)
    cx, cy = tiny_trained.answer_point(None, seen)
    px, py = point.x * seen[0] / lesson.size[0], point.y * seen[1] / lesson.size[1]
    cell = tiny_trained.CELL
    return math.hypot(px - tx, py - ty) / cell, math.hypot(cx - tx, cy - ty) / cell


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=120, help="lessons to answer")
    p.add_argument("--seed", type=int, default=1000, help="the lesson stream (training used 0)")
    p.add_argument("--cache", default=None, help="model cache folder (default ~/.cache/regionfocus)")
    args = p.parse_args(argv)

    from regionfocus.adapters.backends.transformers_local import TransformersBackend
    from tests import tiny_trained
    from tests.vllm_support.server import cache_root

    folder = tiny_trained.ensure_trained_model(args.cache or cache_root())

    class Answering(TransformersBackend):
        """The model as the lessons' backend: it keeps each request (the lesson stream reads it)
        and answers it, so ``lesson.reply`` is the adapter's reading of the model's answer."""

        answer = ""
        sent = None

        async def complete(self, messages, *, max_tokens=512, temperature=0.0, **extra):
            self.sent = (messages, extra)
            return await super().complete(messages, max_tokens=CAP, temperature=0.0, **extra)

    tiny_trained._Recorder = lambda: Answering(folder, max_new_tokens=CAP)  # the stream's backend
    rows: dict[tuple[str, str], dict] = defaultdict(
        lambda: {"n": 0, "ended": 0, "read": 0, "cells": [], "centre": []}
    )
    t0 = time.perf_counter()
    for lesson in tiny_trained.lessons(args.seed, args.n):
        if lesson.kind == "plain":  # no adapter reads these
            continue
        reply = lesson.reply
        for row in (rows[("family", lesson.family)], rows[("request", lesson.kind)], rows[("all", "")]):
            row["n"] += 1
            row["ended"] += reply.usage.completion_tokens < CAP
            row["read"] += _read(lesson.kind, reply)
            if lesson.kind in POINTS and reply.point is not None:
                error, centre = _cells(lesson, reply.point)
                row["cells"].append(error)
                row["centre"].append(centre)
    wall = time.perf_counter() - t0

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.1f}" if values else "–"

    print_table(
        f"tiny trained Qwen2.5-VL on {args.n} unseen lessons (seed {args.seed}), {wall:.0f} s; {machine()}",
        ["by", "", "n", "ended", "read as asked", "point error (cells, median)", "the image's centre"],
        [
            [by, name, r["n"], r["ended"], r["read"], med(r["cells"]), med(r["centre"])]
            for (by, name), r in rows.items()
            if by == "all"
        ]
        + [
            [by, name, r["n"], r["ended"], r["read"], med(r["cells"]), med(r["centre"])]
            for (by, name), r in sorted(rows.items())
            if by != "all"
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
