"""Android-in-the-Zoo (AITZ) reader and scorer, for users who have the data.

Zhang et al., "Android in the Zoo: Chain-of-Action-Thought for GUI Agents", §4.2 (atomic
action matching per action type; goal progress = where the first error falls in the episode),
Appendix A.3 (five action types: CLICK, SCROLL, TYPE, PRESS, STOP); the released data layout
and evaluator in IMNearth/CoAT (data-example/*/*.json at commit 033bbe2; coat/evaluate.py at
9ab1a9f; coat/action_utils.py at bddd262, AITW's matching constants).

Layout: a folder (any depth) of episode files, each a JSON list of steps with ``episode_id``,
``episode_length``, ``step_id``, ``instruction``, ``image_path``, ``ui_positions`` (a JSON string
of [top, left, height, width] boxes in image pixels), ``ui_text``, ``ui_types``,
``result_action_type`` (AITW's integers: 3 type, 4 dual point, 5 back, 6 home, 7 enter, 10
complete, 11 impossible), ``result_action_text``, ``result_touch_yx``/``result_lift_yx``
(relative [y, x], -1 when unused), and the CoAT annotations ``coat_screen_desc``,
``coat_action_think``, ``coat_action_desc``, ``coat_action_result``. Images are found beside the
JSON file or under the root by ``image_path``; only their size is read.

Matching (per step, the prediction against the gold action):
- the types must agree (a dual point is a CLICK when touch and lift are within 0.04 of the
  screen, else a SCROLL);
- CLICK, predicted as a point (AITW's rule): both points inside one UI box enlarged by 1.4 of
  its height and width (``_resize_annotation_bounding_boxes``), or within 0.14 of the screen of
  each other (relative coordinates); predicted as a box (the CoAT evaluator's rule): the gold
  point inside the box enlarged 1.2x, or the box overlapping (IoU > 0.5) a 1.2x-enlarged UI box
  that holds the gold point;
- SCROLL: the same direction, named as the finger moves (AITZ "scroll up" = a swipe from bottom
  to top, which reveals content below; :func:`from_action` converts a mouse-wheel direction);
- TYPE: one text contains the other, or their Levenshtein ratio (indel-normalised, as the
  ``Levenshtein`` package computes it) exceeds 0.8. The evaluator also lets an empty
  prediction match any text (the empty string is a substring of everything); here an empty
  text matches only an empty gold text (``empty_text_matches`` restores the evaluator's rule);
- PRESS: the same button (back, home, enter); STOP: the type alone.
Goal progress of an episode: the number of steps matched before the first miss, divided by the
episode length; success: every step matched.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.coat import CoatHistory, CoatStep
from regionfocus.geometry import Box, Point

ACTION_TYPES = ("click", "scroll", "type", "press", "stop")
TAP_DISTANCE = 0.14  # AITW _TAP_DISTANCE_THRESHOLD, fraction of the screen
BOX_AUGMENT = 1.4  # AITW ANNOTATION_{WIDTH,HEIGHT}_AUGMENT_FRACTION
SWIPE_DISTANCE = 0.04  # AITW _SWIPE_DISTANCE_THRESHOLD
PRED_BOX_SCALE = 1.2  # CoAT evaluate.py enlarge_bbox default
TEXT_RATIO = 0.8


class AitzError(ValueError):
    """A file or step that is not in the AITZ layout (names the file and what is wrong)."""


@dataclass(frozen=True)
class GoldAction:
    """The annotated action of one step. ``point``: CLICK point in image pixels;
    ``direction``: SCROLL direction as the finger moves; ``text``: TYPE text; ``button``:
    PRESS button (back, home, enter)."""

    type: str
    point: Point | None = None
    direction: str = ""
    text: str = ""
    button: str = ""


@dataclass(frozen=True)
class AitzStep:
    episode_id: str
    step_id: int
    instruction: str
    image: Path | None
    size: tuple[int, int]
    gold: GoldAction
    ui_boxes: tuple[Box, ...]
    ui_text: tuple[str, ...]
    screen_description: str = ""
    action_think: str = ""
    action_description: str = ""
    action_result: str = ""


@dataclass
class AitzEpisode:
    episode_id: str
    instruction: str
    steps: list[AitzStep] = field(default_factory=list)
    source: Path | None = None


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


def _json_field(step: dict, key: str, where: str, default=None):
    v = step.get(key, default)
    if isinstance(v, str) and key in (
        "ui_positions",
        "ui_text",
        "ui_types",
        "result_touch_yx",
        "result_lift_yx",
    ):
        try:
            return json.loads(v)
        except json.JSONDecodeError as e:
            raise AitzError(f"{where}: field {key!r} is not JSON: {e}") from None
    return v


def gold_action(step: dict, size: tuple[int, int], where: str = "step") -> GoldAction:
    """The step's gold action from AITW's fields (CoAT action_utils.extract_gt_action)."""
    t = step.get("result_action_type")
    if not isinstance(t, int):
        raise AitzError(f"{where}: result_action_type must be an integer, got {t!r}")
    w, h = size
    if t == 4:
        touch = _json_field(step, "result_touch_yx", where)
        lift = _json_field(step, "result_lift_yx", where)
        if not (isinstance(touch, list) and isinstance(lift, list) and len(touch) == 2 and len(lift) == 2):
            raise AitzError(f"{where}: a dual point needs result_touch_yx and result_lift_yx as [y, x]")
        if math.dist(touch, lift) <= SWIPE_DISTANCE:
            return GoldAction("click", Point(lift[1] * w, lift[0] * h))
        dy, dx = abs(touch[0] - lift[0]), abs(lift[1] - touch[1])
        if dy >= 0.9 * dx:
            direction = "up" if lift[0] < touch[0] else "down"
        else:
            direction = "left" if lift[1] < touch[1] else "right"
        return GoldAction("scroll", direction=direction)
    if t == 3:
        return GoldAction("type", text=str(step.get("result_action_text", "")))
    if t in (5, 6, 7):
        return GoldAction("press", button={5: "back", 6: "home", 7: "enter"}[t])
    if t in (10, 11):
        return GoldAction("stop", text="completed" if t == 10 else "impossible")
    raise AitzError(f"{where}: unknown result_action_type {t}")


def _image_size(path: Path | None, step: dict, where: str) -> tuple[int, int]:
    if "image_size" in step:  # not in AITZ; lets a user without images score clicks
        w, h = step["image_size"]
        return int(w), int(h)
    if path is None or not path.is_file():
        raise AitzError(f"{where}: image {step.get('image_path')!r} not found (its size scales the actions)")
    with Image.open(path) as im:
        return im.size


def load_aitz(root: str | Path) -> list[AitzEpisode]:
    """Every episode under ``root`` (a folder searched recursively for *.json, or one file),
    steps ordered by ``step_id``. Raises :class:`AitzError` naming the file and the problem."""
    root = Path(root)
    files = [root] if root.is_file() else sorted(root.rglob("*.json"))
    if not files:
        raise AitzError(f"no AITZ episode files (*.json) under {root}")
    episodes = []
    for f in files:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise AitzError(f"{f}: not a JSON file: {e}") from None
        if not isinstance(data, list) or not data or not all(isinstance(s, dict) for s in data):
            raise AitzError(f"{f}: an episode file holds a non-empty JSON list of steps")
        steps = []
        for s in data:
            where = f"{f} step {s.get('step_id', '?')}"
            for key in ("episode_id", "step_id", "instruction", "result_action_type"):
                if key not in s:
                    raise AitzError(f"{where}: missing field {key!r}")
            rel = s.get("image_path")
            image = None
            if rel:
                for cand in (f.parent / Path(rel).name, root / rel if root.is_dir() else f.parent / rel):
                    if cand.is_file():
                        image = cand
                        break
            size = _image_size(image, s, where)
            pos = _json_field(s, "ui_positions", where, "[]") or []
            boxes = tuple(Box(x, y, x + bw, y + bh) for y, x, bh, bw in pos)
            steps.append(
                AitzStep(
                    episode_id=str(s["episode_id"]),
                    step_id=int(s["step_id"]),
                    instruction=str(s["instruction"]),
                    image=image,
                    size=size,
                    gold=gold_action(s, size, where),
                    ui_boxes=boxes,
                    ui_text=tuple(_json_field(s, "ui_text", where, "[]") or ()),
                    screen_description=s.get("coat_screen_desc", ""),
                    action_think=s.get("coat_action_think", ""),
                    action_description=s.get("coat_action_desc", ""),
                    action_result=s.get("coat_action_result", ""),
                )
            )
        steps.sort(key=lambda st: st.step_id)
        episodes.append(AitzEpisode(steps[0].episode_id, steps[0].instruction, steps, f))
    return episodes


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
    if t == ActionType.BACK:
        return Prediction("press", button="back")
    if t in (ActionType.FINISHED, ActionType.CALL_USER):
        return Prediction("stop")
    return Prediction(None)


def levenshtein_ratio(a: str, b: str) -> float:
    """1 - indel distance / (len a + len b): the ``Levenshtein.ratio`` the CoAT evaluator uses."""
    if not a and not b:
        return 1.0
    prev = [0] * (len(b) + 1)  # longest common subsequence, one row at a time
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b):
            cur.append(prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j]))
        prev = cur
    return 2.0 * prev[-1] / (len(a) + len(b))


def _grow(b: Box, fw: float, fh: float, size: tuple[int, int] | None = None) -> Box:
    """AITW's enlargement: each side moves out by half of ``f`` times the size."""
    dw, dh = fw * b.width / 2, fh * b.height / 2
    out = Box(b.left - dw, b.top - dh, b.right + dw, b.bottom + dh)
    if size is not None:
        out = Box(max(0.0, out.left), max(0.0, out.top), min(size[0], out.right), min(size[1], out.bottom))
    return out


def _scale(b: Box, s: float) -> Box:
    c = b.center
    return Box(c.x - b.width * s / 2, c.y - b.height * s / 2, c.x + b.width * s / 2, c.y + b.height * s / 2)


def match_step(step: AitzStep, pred: Prediction, *, empty_text_matches: bool = False) -> tuple[bool, bool]:
    """(type_match, exact_match) of ``pred`` against the step's gold action (rules above)."""
    gold = step.gold
    if pred.type != gold.type:
        return False, False
    if gold.type == "click":
        assert gold.point is not None
        w, h = step.size
        if pred.point is not None:
            p, g = pred.point, gold.point
            for b in step.ui_boxes:
                big = _grow(b, BOX_AUGMENT, BOX_AUGMENT, step.size)
                if big.contains(p) and big.contains(g):
                    return True, True
            rel = math.hypot((p.x - g.x) / w, (p.y - g.y) / h)
            return True, rel <= TAP_DISTANCE
        if pred.box is not None:
            box = _scale(pred.box, PRED_BOX_SCALE)
            if box.contains(gold.point):
                return True, True
            holders = [_scale(b, PRED_BOX_SCALE) for b in step.ui_boxes]
            return True, any(b.contains(gold.point) and box.iou(b) > 0.5 for b in holders)
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
        lines = [f"{'type':<7} {'steps':>6} {'type acc':>9} {'match':>7}"]
        for k in ("total", *[t.upper() for t in ACTION_TYPES]):
            r = self.atomic.get(k)
            if r and r["count"]:
                lines.append(f"{k:<7} {int(r['count']):>6} {r['type_acc']:>9.3f} {r['exact_acc']:>7.3f}")
        lines.append(
            f"format hit rate {self.hit_rate:.3f}; episodes {self.episodes}: "
            f"success {self.success_rate:.3f}, goal progress {self.goal_progress:.3f}"
        )
        return "\n".join(lines)


def score(
    episodes: Sequence[AitzEpisode],
    predictions: dict[tuple[str, int], Prediction],
    *,
    empty_text_matches: bool = False,
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
            type_ok, exact = match_step(st, pred, empty_text_matches=empty_text_matches)
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


def coat_history(episode: AitzEpisode, upto: int) -> CoatHistory:
    """The gold CoAT chain before step ``upto`` (for teacher-forced evaluation): one
    :class:`regionfocus.adapters.coat.CoatStep` per earlier step with its annotated description and result."""
    hist = CoatHistory()
    for st in episode.steps[:upto]:
        hist.append(
            CoatStep(
                action=st.action_description,
                screen_description=st.screen_description,
                action_think=st.action_think,
                action_description=st.action_description,
                action_result=st.action_result,
            )
        )
    return hist
