"""AITZ episodes on disk: the released layout read into steps with their gold actions.

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
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from PIL import Image

from regionfocus.adapters.reasoning.coat import CoatHistory, CoatStep
from regionfocus.geometry import Box, Point
from regionfocus.kit.atomic import lone_surrogate
from regionfocus.kit.data_pin import DataPin

SWIPE_DISTANCE = 0.04  # AITW _SWIPE_DISTANCE_THRESHOLD
COAT_KEYS = ("screen_desc", "action_think", "action_desc", "action_result")


class AitzError(ValueError):
    """A file or step that is not in the AITZ layout (names the file and what is wrong)."""


@dataclass(frozen=True)
class GoldAction:
    """The annotated action of one step. ``point``: the CLICK point in whole image pixels as the
    official code states it (the lift point, rounded); ``touch``: where the finger touched, in
    image pixels, unrounded, which AITW's tap matching compares (:func:`~regionfocus.aitz.scoring.match_step`);
    ``direction``: SCROLL direction as the finger moves; ``text``: TYPE text; ``button``: PRESS
    button (back, home, enter)."""

    type: str
    point: Point | None = None
    direction: str = ""
    text: str = ""
    button: str = ""
    touch: Point | None = None


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
            # Two points, as the official code has them (IMNearth/CoAT coat/action_utils.py at
            # bddd262a255203f11ba5bbdf5cd3484ab42c3590): extract_gt_action states a tap as its
            # lift point in whole pixels, (round(lift_y * h), round(lift_x * w)), which is the
            # gold click CoAT reports; check_actions_match compares taps by their touch_yx,
            # unrounded, so the verdicts keep that one (benchmarks/aitz_agreement.py).
            lift_px = Point(float(round(lift[1] * w)), float(round(lift[0] * h)))
            return GoldAction("click", lift_px, touch=Point(touch[1] * w, touch[0] * h))
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


# The text of a step that reaches a model: the instruction, the gold history's typed text and
# CoAT chain (teacher forcing), the screen's element texts.
SENT_FIELDS = ("instruction", "result_action_text", "ui_text", *(f"coat_{k}" for k in COAT_KEYS))


def _sendable(step: dict, where: str) -> None:
    """Refuse a text no request can carry (a lone surrogate, valid JSON as ``\\ud800``): every
    call of the episode would fail on it, on every retry; a replaced character would change it."""
    for key in SENT_FIELDS:
        value = _json_field(step, key, where)  # ui_text is a list inside a JSON string
        for text in value if isinstance(value, list) else [value]:
            at = lone_surrogate(text) if isinstance(text, str) else None
            if at is not None:
                raise AitzError(
                    f"{where}: field {key!r} holds a lone surrogate ({at}), which no request can carry"
                )


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
            _sendable(s, where)
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


def coat_history(episode: AitzEpisode, upto: int) -> CoatHistory:
    """The gold CoAT chain before step ``upto`` (for teacher-forced evaluation): one
    :class:`regionfocus.adapters.reasoning.coat.CoatStep` per earlier step with its annotated description and result."""
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


def episodes_pin(episodes: Sequence[AitzEpisode], root: str | Path) -> DataPin:
    """The episodes by content, each under its file (relative to ``root``): every step as read
    (instruction, gold action, UI boxes and texts, CoAT annotations, the screenshot's size), not
    where its files sit, so a run folder refuses changed episodes and resumes moved ones."""
    base = Path(root).resolve()

    def where(ep: AitzEpisode) -> str:
        src = Path(ep.source).resolve() if ep.source else None
        return (
            str(src.relative_to(base))
            if src and src.is_relative_to(base)
            else (src.name if src else ep.episode_id)
        )

    return DataPin.of(
        (
            ep.episode_id,
            {where(ep): [{k: v for k, v in asdict(st).items() if k != "image"} for st in ep.steps]},
        )
        for ep in episodes
    )
