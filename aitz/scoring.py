"""AITZ scoring: a prediction against a step's gold action, and an episode's progress.

Matching (per step, the prediction against the gold action):
- the types must agree (a dual point is a CLICK when touch and lift are within 0.04 of the
  screen, else a SCROLL);
- CLICK, against the gold touch point (the gold states the lift point, rounded, as the
  official ``extract_gt_action`` does; AITW's matching compares the touch); predicted as a
  point (AITW's rule): both points inside one UI box enlarged by 1.4 of its height and width
  (``_resize_annotation_bounding_boxes``: top and left move out by 0.7 of the size, clamped at
  the screen's edge, and the box keeps its full 2.4x size, so a clamped box reaches further
  down or right), or within 0.14 of the screen of each other (relative coordinates); predicted
  as a box (the CoAT evaluator's rule, in its whole pixels: the gold point truncated, the box's
  corners rounded): the gold point inside the box enlarged 1.2x, or the box overlapping
  (IoU > 0.5) a 1.2x-enlarged UI box that holds the gold point;
- SCROLL: the same direction, named as the finger moves (AITZ "scroll up" = a swipe from bottom
  to top, which reveals content below; :func:`from_action` converts a mouse-wheel direction);
- TYPE: one text contains the other, or their Levenshtein ratio (indel-normalised, as the
  ``Levenshtein`` package computes it) exceeds 0.8;
- PRESS: the same button (back, home, enter); STOP: the type alone.
Two behaviours of the released evaluator are not the paper's metric and stay off unless asked
for (switches of :func:`match_step`, :func:`score` and ``regionfocus aitz score``):
- ``empty_text_matches``: an empty typed text matches any gold text (the empty string is a
  substring of everything). Typing nothing changes no screen, and the paper scores an action
  by whether it is the annotated one (§4.2); off, it matches only an empty gold text.
- ``click_gold_at_origin``: every click scored against the point [0, 0], as evaluate.py does
  (its gold point is only filled in for scroll steps). That measures taps near the top-left
  corner, not the annotated target the paper's click accuracy is about; off, the gold touch.
The rules are measured against the upstream code by benchmarks/aitz_agreement.py.
Goal progress of an episode: the number of steps matched before the first miss, divided by the
episode length; success: every step matched.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rapidfuzz.distance import Indel

from regionfocus.actions import Action, ActionType
from regionfocus.geometry import Box, Point
from regionfocus.kit import stats

from .episodes import AitzEpisode, AitzStep

ACTION_TYPES = ("click", "scroll", "type", "press", "stop")
TAP_DISTANCE = 0.14  # AITW _TAP_DISTANCE_THRESHOLD, fraction of the screen
BOX_AUGMENT = 1.4  # AITW ANNOTATION_{WIDTH,HEIGHT}_AUGMENT_FRACTION
PRED_BOX_SCALE = 1.2  # CoAT evaluate.py enlarge_bbox default
TEXT_RATIO = 0.8


@dataclass(frozen=True)
class Prediction:
    """A predicted action in AITZ's five types. ``point`` or ``box`` (image pixels) for
    CLICK; ``direction`` (finger movement) for SCROLL; ``text``; ``button``. ``type`` None:
    the agent's answer had no readable action (counts against the format hit rate)."""

    type: str | None
    point: Point | None = None
    box: Box | None = None
    direction: str = ""
    text: str = ""
    button: str = ""


def from_action(action: Action | None) -> Prediction:
    """A regionfocus action in AITZ's types. A mouse-wheel scroll "down" (content moves up,
    revealing what is below) is the finger's "up" swipe in AITZ, so scroll directions invert."""
    if action is None:
        return Prediction(None)
    t = action.type
    if t in (ActionType.CLICK, ActionType.DOUBLE_CLICK, ActionType.RIGHT_CLICK, ActionType.MIDDLE_CLICK):
        return Prediction("click", point=action.point)
    if t == ActionType.SCROLL:
        inv = {"up": "down", "down": "up", "left": "right", "right": "left"}
        return Prediction("scroll", direction=inv.get((action.direction or "down").lower(), ""))
    if t == ActionType.TYPE:
        return Prediction("type", text=action.text)
    if t == ActionType.HOTKEY and len(action.keys) == 1 and action.keys[0].lower() in ("enter", "return"):
        return Prediction("press", button="enter")
    if t == ActionType.HOTKEY and len(action.keys) == 1 and action.keys[0].lower() == "home":
        return Prediction("press", button="home")  # Android's home button, as a key name
    if t == ActionType.BACK:
        return Prediction("press", button="back")
    if t in (ActionType.FINISHED, ActionType.CALL_USER):
        return Prediction("stop")
    return Prediction(None)


def levenshtein_ratio(a: str, b: str) -> float:
    """1 - indel distance / (len a + len b): the ``Levenshtein.ratio`` the CoAT evaluator uses
    (rapidfuzz's Indel similarity is the same number)."""
    return Indel.normalized_similarity(a, b)


def _grow(b: Box, f: float, size: tuple[int, int]) -> Box:
    """AITW's ``_resize_annotation_bounding_boxes`` (google-research/google-research
    android_in_the_wild/action_matching.py at 1d49f2c), in pixels: the top-left corner moves
    out by ``f / 2`` of the size and stops at 0, the size grows by ``f`` times itself, capped at
    the screen's; the box is not re-centred after the clamp."""
    dw, dh = f * b.width, f * b.height
    left, top = max(0.0, b.left - dw / 2), max(0.0, b.top - dh / 2)
    return Box(left, top, left + min(size[0], b.width + dw), top + min(size[1], b.height + dh))


def _scale(b: Box, s: float) -> Box:
    c = b.center
    return Box(c.x - b.width * s / 2, c.y - b.height * s / 2, c.x + b.width * s / 2, c.y + b.height * s / 2)


def match_step(
    step: AitzStep, pred: Prediction, *, empty_text_matches: bool = False, click_gold_at_origin: bool = False
) -> tuple[bool, bool]:
    """(type_match, exact_match) of ``pred`` against the step's gold action (rules and
    switches above)."""
    gold = step.gold
    if pred.type != gold.type:
        return False, False
    if gold.type == "click":
        assert gold.point is not None
        # AITW matches taps by the gold touch point, not the lift point the gold states.
        g = Point(0.0, 0.0) if click_gold_at_origin else (gold.touch or gold.point)
        w, h = step.size
        if pred.point is not None:
            p = pred.point
            for b in step.ui_boxes:
                big = _grow(b, BOX_AUGMENT, step.size)
                if big.contains(p) and big.contains(g):
                    return True, True
            rel = math.hypot((p.x - g.x) / w, (p.y - g.y) / h)
            return True, rel <= TAP_DISTANCE
        if pred.box is not None:
            # The CoAT evaluator's pixels (coat/evaluate.py at 9ab1a9f): the gold point truncated,
            # int(rel * size) (line 86), the predicted box's corners rounded (lines 50-53). AITW's
            # tap rule above compares relative coordinates and keeps the touch point exact.
            g = Point(float(int(g.x)), float(int(g.y)))
            pb = pred.box
            box = _scale(
                Box(round(pb.left), round(pb.top), round(pb.right), round(pb.bottom)), PRED_BOX_SCALE
            )
            if box.contains(g):
                return True, True
            holders = [_scale(b, PRED_BOX_SCALE) for b in step.ui_boxes]
            return True, any(b.contains(g) and box.iou(b) > 0.5 for b in holders)
        return True, False
    if gold.type == "scroll":
        return True, pred.direction == gold.direction
    if gold.type == "type":
        a, b = pred.text, gold.text
        if not a and not empty_text_matches:
            return True, not b
        return True, a in b or b in a or levenshtein_ratio(a, b) > TEXT_RATIO
    if gold.type == "press":
        return True, pred.button == gold.button
    return True, True  # stop


@dataclass
class AitzScores:
    """Atomic scores per gold action type and in total (count, type accuracy, exact
    accuracy), the format hit rate, and the episodic success rate and goal progress."""

    atomic: dict[str, dict[str, float]]
    hit_rate: float
    success_rate: float
    goal_progress: float
    episodes: int
    steps: int

    def table(self) -> str:
        """Accuracies with their 95 % Wilson intervals (over steps; success over episodes)."""
        lines = [f"{'type':<7} {'steps':>6} {'type acc':>9} {'match':>7}  {'match 95 % CI':<13}"]
        for k in ("total", *[t.upper() for t in ACTION_TYPES]):
            r = self.atomic.get(k)
            if r and r["count"]:
                n = int(r["count"])
                lines.append(
                    f"{k:<7} {n:>6} {r['type_acc']:>9.3f} {r['exact_acc']:>7.3f}  "
                    f"{_interval(round(r['exact_acc'] * n), n)}"
                )
        lines.append(
            f"format hit rate {self.hit_rate:.3f}; episodes {self.episodes}: "
            f"success {self.success_rate:.3f}, goal progress {self.goal_progress:.3f}"
            f" (success 95 % CI {_interval(round(self.success_rate * self.episodes), self.episodes)})"
        )
        return "\n".join(lines)


def _interval(k: int, n: int) -> str:
    ci = stats.wilson(k, n)
    return "-" if ci is None else f"{ci[0]:.3f}-{ci[1]:.3f}"


def score(
    episodes: Sequence[AitzEpisode],
    predictions: dict[tuple[str, int], Prediction],
    *,
    empty_text_matches: bool = False,
    click_gold_at_origin: bool = False,
) -> AitzScores:
    """Score ``predictions`` keyed by (episode_id, step_id); a missing key counts as no answer."""
    rec = {k: {"count": 0, "type": 0, "exact": 0} for k in ("total", *[t.upper() for t in ACTION_TYPES])}
    hits = 0
    success, progress = [], []
    n_steps = 0
    for ep in episodes:
        ok_so_far, prog = True, 0
        for st in ep.steps:
            pred = predictions.get((st.episode_id, st.step_id), Prediction(None))
            type_ok, exact = match_step(
                st, pred, empty_text_matches=empty_text_matches, click_gold_at_origin=click_gold_at_origin
            )
            n_steps += 1
            hits += pred.type is not None
            for k in ("total", st.gold.type.upper()):
                rec[k]["count"] += 1
                rec[k]["type"] += type_ok
                rec[k]["exact"] += exact
            if ok_so_far and exact:
                prog += 1
            else:
                ok_so_far = False
        success.append(ok_so_far)
        progress.append(prog / len(ep.steps))
    atomic = {
        k: {
            "count": v["count"],
            "type_acc": v["type"] / v["count"] if v["count"] else 0.0,
            "exact_acc": v["exact"] / v["count"] if v["count"] else 0.0,
        }
        for k, v in rec.items()
    }
    return AitzScores(
        atomic,
        hits / n_steps if n_steps else 0.0,
        sum(success) / len(success) if success else 0.0,
        sum(progress) / len(progress) if progress else 0.0,
        len(episodes),
        n_steps,
    )


def prediction_from_dict(d: dict, where: str) -> Prediction:
    """A prediction as a predictions file writes it: ``{"type": "click", "point": [x, y]}``
    (image pixels), ``"box": [x1, y1, x2, y2]``, ``"direction"``, ``"text"``, ``"button"``;
    ``"type": null`` for an unreadable answer."""
    t = d.get("type")
    if t is not None and t not in ACTION_TYPES:
        raise ValueError(f"{where}: type must be one of {', '.join(ACTION_TYPES)} or null, got {t!r}")
    point = d.get("point")
    box = d.get("box")
    try:
        return Prediction(
            t,
            point=Point(float(point[0]), float(point[1])) if point is not None else None,
            box=Box(*(float(v) for v in box)) if box is not None else None,
            direction=str(d.get("direction", "")),
            text=str(d.get("text", "")),
            button=str(d.get("button", "")),
        )
    except (TypeError, ValueError, IndexError) as e:
        raise ValueError(f"{where}: point must be [x, y] and box [x1, y1, x2, y2] ({e})") from None


def prediction_to_dict(pred: Prediction) -> dict:
    d: dict = {"type": pred.type}
    if pred.point is not None:
        d["point"] = [pred.point.x, pred.point.y]
    if pred.box is not None:
        d["box"] = [pred.box.left, pred.box.top, pred.box.right, pred.box.bottom]
    d.update({k: v for k in ("direction", "text", "button") if (v := getattr(pred, k))})
    return d


def read_predictions(path: str | Path) -> dict[tuple[str, int], Prediction]:
    """A predictions file: JSON Lines of ``{"episode_id", "step_id", "prediction": {...}}``."""
    out: dict[tuple[str, int], Prediction] = {}
    text = Path(path).read_text(encoding="utf-8")
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            rec = json.loads(line)
            key = (str(rec["episode_id"]), int(rec["step_id"]))
            pred = rec["prediction"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise ValueError(f'{where}: expected {{"episode_id", "step_id", "prediction"}} ({e})') from None
        out[key] = prediction_from_dict(pred if isinstance(pred, dict) else {}, where)
    return out
