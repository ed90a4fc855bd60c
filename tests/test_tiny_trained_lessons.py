"""The lessons the tiny trained Qwen2.5-VL learns from (tests/tiny_trained.py) are answers our
own adapters read as meant: each family's format parses, the point is the centre of the target's
cell at the model's size (so on the green square, in pixels of the image given), the verdict,
choice and region are what the lesson says. A lesson our parsers misread would teach the served
model a wrong answer that every end-to-end test then trusts."""

from __future__ import annotations

import json
import re

from regionfocus import Point, Verdict
from regionfocus.adapters import get_adapter
from tests import tiny_trained
from tests.tiny_trained import CELL, FAMILIES, MAX_PIXELS, answer_point, in_model_frame

POINT_KINDS = ("grounding", "agent", "focal", "focal-avoid", "zoom")


def test_every_lesson_answer_is_read_as_taught():
    adapters = {f: get_adapter(f, max_pixels=MAX_PIXELS) for f in FAMILIES}
    drawn = set()
    for lesson in tiny_trained.lessons(seed=7, n=120):
        drawn.add((lesson.family, lesson.kind))
        what = (lesson.family, lesson.kind, lesson.answer, lesson.target, lesson.size)
        reply, box, (w, h) = lesson.reply, lesson.target, lesson.size
        if lesson.kind == "plain":
            assert reply is None and lesson.answer.startswith("("), what
            continue
        assert reply.text.endswith(lesson.answer), what  # the answer, after any pre-fill
        seen = adapters[lesson.family].input_size(lesson.size)
        centre = Point(w / 2, h / 2) if box is None else Point((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        if lesson.kind in POINT_KINDS:
            assert all(len(n) == 3 for n in re.findall(r"\d+", lesson.answer)), what  # 3 digits
            # half a cell of the model's image, in pixels of the image given, from the centre
            p = reply.point
            assert p is not None, what
            assert abs(p.x - centre.x) <= CELL / 2 * w / seen[0] + 1e-6, what
            assert abs(p.y - centre.y) <= CELL / 2 * h / seen[1] + 1e-6, what
        elif lesson.kind in ("judge", "judge-own"):
            assert reply.verdict == (Verdict.YES if "YES" in lesson.answer else Verdict.NO), what
        elif lesson.kind == "choose":
            assert reply.choice == 1, what
        else:
            assert lesson.kind == "region" and reply.box is not None and reply.box.contains(centre), what
    assert {f for f, _ in drawn} == set(FAMILIES) and {k for _, k in drawn} == set(tiny_trained._KINDS)


def test_answer_point_is_the_centre_of_the_target_cell():
    assert answer_point((30, 30, 60, 60), (280, 280)) == (42, 42)
    assert answer_point(None, (280, 196)) == (154, 98)
    assert in_model_frame((100, 50, 200, 150), (1000, 500), (500, 250)) == (50.0, 25.0, 100.0, 75.0)


def test_recipe_key_follows_the_lessons_text(monkeypatch):
    key = tiny_trained.recipe_key()
    assert key == tiny_trained.recipe_key()
    monkeypatch.setattr(tiny_trained, "_instruction", lambda rng: "click " + json.dumps(rng.random()))
    assert tiny_trained.recipe_key() != key
