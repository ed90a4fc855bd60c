"""An agent over AITZ episodes, step by step with the gold history (teacher forcing, as the CoAT
paper evaluates): each step's screenshot and the episode's instruction, the earlier steps as
the agent's turns (their gold actions, and with CoAT their annotated screen description,
action think, next-action description and result), one action asked for.

One record per episode in the run folder (``records.jsonl``): every step's prediction, its
matches, the model's raw answer; ``partial`` when some step's call failed, ``error`` when the
episode could not be run. A rerun resumes; ``--retry-errors`` reruns both.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Sequence
from typing import Any

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.kit.progress import Progress
from regionfocus.kit.runlog import RunFolder
from regionfocus.model import GroundingModel, Query, Turn

from .episodes import AitzEpisode, AitzStep, GoldAction
from .scoring import from_action, match_step, prediction_to_dict

_TEXT_OR_NULL = {"type": ["string", "null"]}

# An episode's record beyond the log's shared fields (run_episode, _error_record), as a JSON
# Schema: every field the command's scoring and predictions.jsonl read, with its type.
STEP_FIELDS: dict[str, Any] = {
    "type": "object",
    "required": ["step_id", "prediction"],
    "properties": {
        "step_id": {"type": "integer", "minimum": 0},
        "prediction": {"type": "object"},
        "type_match": {"type": "boolean"},
        "exact": {"type": "boolean"},
        "raw": {"type": "string"},
        "error": _TEXT_OR_NULL,
    },
}
RECORD_FIELDS: dict[str, Any] = {
    "type": "object",
    "required": ["steps"],
    "properties": {
        "instruction": {"type": "string"},
        "steps": {"type": "array", "items": STEP_FIELDS},
        "goal_progress": {"type": "number", "minimum": 0, "maximum": 1},
        "success": {"type": "boolean"},
        "seconds": {"type": "number", "minimum": 0},
    },
}

# Labels the CoAT reader (regionfocus.adapters.reasoning.coat.parse_coat) takes back from a turn's text.
_COAT_LINES = (
    ("Screen description", "screen_description"),
    ("Previous action result", "previous_result"),
    ("Action think", "action_think"),
    ("Next action description", "action_description"),
)


def gold_as_action(gold: GoldAction) -> Action | None:
    """The gold action as the agent would have executed it (a finger's "up" swipe is a mouse
    wheel "down": the inverse of :func:`~regionfocus.aitz.scoring.from_action`)."""
    if gold.type == "click":
        return Action(ActionType.CLICK, gold.point)
    if gold.type == "scroll":
        inv = {"up": "down", "down": "up", "left": "right", "right": "left"}
        return Action(ActionType.SCROLL, direction=inv.get(gold.direction, "down"))
    if gold.type == "type":
        return Action(ActionType.TYPE, text=gold.text)
    if gold.type == "press":
        if gold.button == "back":
            return Action(ActionType.BACK)
        return Action(ActionType.HOTKEY, keys=(gold.button,))
    if gold.type == "stop":
        return Action(ActionType.FINISHED, text=gold.text)
    return None


def gold_turns(episode: AitzEpisode, upto: int, coat: bool) -> tuple[Turn, ...]:
    """The steps before ``upto`` as the agent's turns: their gold actions; with ``coat`` their
    text carries the annotated CoAT parts (the result of step k is step k's own annotation,
    read as the "previous action result" of the answer after it)."""
    turns = []
    for k, st in enumerate(episode.steps[:upto]):
        text = ""
        if coat:
            values = {
                "screen_description": st.screen_description,
                "previous_result": episode.steps[k - 1].action_result if k else "",
                "action_think": st.action_think,
                "action_description": st.action_description,
            }
            text = "\n".join(f"{label}: {values[key]}" for label, key in _COAT_LINES if values[key])
        turns.append(Turn(image=None, size=st.size, action=gold_as_action(st.gold), text=text))
    return tuple(turns)


async def run_step(model: GroundingModel, episode: AitzEpisode, i: int, coat: bool) -> dict[str, Any]:
    step: AitzStep = episode.steps[i]
    if step.image is None:
        raise ValueError(f"episode {episode.episode_id} step {step.step_id}: no screenshot to show the agent")
    image = await asyncio.to_thread(_load_rgb, step)
    query = Query(episode.instruction, mode="agent", turns=gold_turns(episode, i, coat))
    reply = await model.act(image, query)
    pred = from_action(reply.action)
    type_ok, exact = match_step(step, pred)
    out = {
        "step_id": step.step_id,
        "prediction": prediction_to_dict(pred),
        "type_match": type_ok,
        "exact": exact,
        "raw": reply.text,
    }
    if reply.usage.error:
        out["error"] = reply.usage.error
    return out


def _load_rgb(step: AitzStep) -> Image.Image:
    with Image.open(step.image) as im:
        return im.convert("RGB")


async def run_episode(model: GroundingModel, episode: AitzEpisode, coat: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    steps: list[dict[str, Any]] = []
    for i, st in enumerate(episode.steps):
        try:
            steps.append(await run_step(model, episode, i, coat))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - a failed step is data: it counts as no answer
            steps.append(
                {
                    "step_id": st.step_id,
                    "prediction": {"type": None},
                    "type_match": False,
                    "exact": False,
                    "raw": "",
                    "error": traceback.format_exception_only(type(e), e)[-1].strip(),
                }
            )
    failed = [s for s in steps if s.get("error")]
    status = "ok" if not failed else ("error" if len(failed) == len(steps) else "partial")
    progress = 0
    for s in steps:
        if not s["exact"]:
            break
        progress += 1
    return {
        "id": episode.episode_id,
        "status": status,
        "error": failed[0]["error"] if status == "error" else None,
        "lost": f"{len(failed)} of {len(steps)} step(s) failed: {failed[0]['error']}"
        if status == "partial"
        else None,
        "instruction": episode.instruction,
        "steps": steps,
        "goal_progress": progress / len(steps),
        "success": progress == len(steps),
        "seconds": round(time.perf_counter() - t0, 3),
    }


async def run_episodes(
    episodes: Sequence[AitzEpisode],
    model: GroundingModel,
    folder: RunFolder,
    *,
    coat: bool = False,
    concurrency: int = 4,
    progress: bool | None = None,
) -> list[dict[str, Any]]:
    """Run every episode not yet finished in ``folder``, ``concurrency`` at a time; return the
    records of ``episodes`` in order."""
    pending = [e for e in episodes if e.episode_id not in folder.done]
    slots = asyncio.Semaphore(concurrency)
    bar = Progress(
        len(episodes), desc="aitz", unit="episode", initial=len(episodes) - len(pending), enabled=progress
    )

    async def one(ep: AitzEpisode) -> None:
        async with slots:
            rec = await run_episode(model, ep, coat)
        folder.add(rec, fallback=lambda msg, ep=ep: _error_record(ep, msg))
        bar.update(error=rec.get("status") == "error")

    try:
        await asyncio.gather(*(one(e) for e in pending))
    finally:
        bar.close()
    return [folder.done[e.episode_id] for e in episodes if e.episode_id in folder.done]


def _error_record(episode: AitzEpisode, message: str) -> dict[str, Any]:
    return {
        "id": episode.episode_id,
        "status": "error",
        "error": message,
        "instruction": episode.instruction,
        "steps": [],
        "goal_progress": 0.0,
        "success": False,
    }
