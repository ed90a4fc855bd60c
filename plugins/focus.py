"""Focus: RegionFocus for an agent loop of the caller's own, in synchronous Python.

The caller's agent keeps acting; each step the caller hands :meth:`Focus.step` the screenshot
and the action its agent proposed, and executes the action it gets back. The grounding model
that runs the RegionFocus rounds is named like the harnesses' ``--agent`` (any family: served,
hosted, in-process with ``backend="hf"``, or the offline ``ocr`` stand-in), built and run on a
:class:`~regionfocus.sync.LoopThread` of its own, so :meth:`Focus.step` works from plain scripts
and from code that already runs an event loop (BrowserGym's sync Playwright). The live
bookkeeping is :class:`~regionfocus.wrapper.FocusWrapper`'s (its docstring says what each
trigger means for a proposal the caller already has).
"""

from __future__ import annotations

import io
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from regionfocus.actions import Action
from regionfocus.adapters.build import aclose_model, build_grounder
from regionfocus.adapters.cli_args import reads_pixels, text_only_config
from regionfocus.config import RegionFocusConfig
from regionfocus.geometry import Box
from regionfocus.model import GroundingModel
from regionfocus.stars import draw_stars
from regionfocus.sync import LoopThread
from regionfocus.wrapper import FocusWrapper, LiveDecision, Observed

# The choice methods of a round whose model was shown the candidates as a numbered star map.
_ASKED = ("model", "model-retry", "rule")


@dataclass
class Decision:
    """What to execute for one step.

    ``action``: the action (points in the caller's screenshot pixels), the agent's own or the
    round's choice; None when neither named one. ``refined``: a RegionFocus round chose it.
    ``trigger``: the trigger that fired ("no-effect", "env-error", "no-action", "repeat",
    "no-target", "self-judge"), or None. ``trace``: the step as JSON-able data (the round's
    focal point, boxes, views, candidates, choice and every call). ``stats``: ``rf_triggered``
    (1 when a round ran), ``rf_calls``, ``rf_prompt_tokens``, ``rf_completion_tokens`` (what the
    step cost beyond the caller's agent). ``choice_image``: the image-as-map the model chose on
    (numbered stars on the screenshot), when a round asked it to choose. ``text``: the agent's
    text as given.
    """

    action: Action | None
    refined: bool
    trigger: str | None
    trace: dict[str, Any]
    stats: dict[str, int]
    choice_image: Image.Image | None = None
    text: str = ""
    decision: LiveDecision | None = field(default=None, repr=False)


def as_image(screenshot: Any) -> Image.Image:
    """An RGB PIL image from a PIL image, an H×W×3 (or ×4) uint8 array, or encoded image bytes
    (PNG). Anything else is a one-line error naming what was given."""
    if isinstance(screenshot, Image.Image):
        return screenshot if screenshot.mode == "RGB" else screenshot.convert("RGB")
    if isinstance(screenshot, np.ndarray):
        if screenshot.dtype != np.uint8 or screenshot.ndim != 3 or screenshot.shape[2] not in (3, 4):
            raise ValueError(
                f"screenshot: an array must be H x W x 3 uint8, got shape {screenshot.shape} {screenshot.dtype}"
            )
        return Image.fromarray(np.ascontiguousarray(screenshot[..., :3]), "RGB")
    if isinstance(screenshot, (bytes, bytearray, memoryview)):
        try:
            with Image.open(io.BytesIO(bytes(screenshot))) as im:
                return im.convert("RGB")
        except (UnidentifiedImageError, OSError) as e:
            raise ValueError(
                f"screenshot: {len(screenshot)} bytes that are no readable image ({e})"
            ) from None
    raise TypeError(
        f"screenshot must be a PIL image, an H x W x 3 uint8 array or PNG bytes, got {type(screenshot).__name__}"
    )


class Focus:
    """RegionFocus around the caller's agent, from synchronous code.

    ``agent``: the grounding model's family name (``"ocr"``: the offline stand-in; ``"qwen2.5-vl"``,
    ``"uitars-1.5"``, ...: a served family at ``base_url`` serving ``model``; ``"claude"``,
    ``"gemini"``, ``"openai"``: hosted, key in ``api_key_env`` or the provider's variable;
    ``backend="hf"``: in-process transformers from the folder ``model``), or a ready
    :class:`~regionfocus.model.GroundingModel`. ``config``: a
    :class:`~regionfocus.config.RegionFocusConfig` or a dict of its fields (the paper's setting
    by default). ``judge``: ask the model about each proposed point (one call a step).
    ``enabled=False``: the same bookkeeping, never a round. ``options``: the rest of
    :func:`~regionfocus.adapters.build.build_grounder`'s settings (``timeout``, ``temperature``,
    ``max_pixels``, ...).

    One Focus follows one episode at a time: :meth:`reset` between episodes, :meth:`close`
    (or ``with``) at the end; steps of one Focus are not to be run concurrently.
    """

    def __init__(
        self,
        agent: str | GroundingModel = "ocr",
        *,
        base_url: str | Sequence[str] | None = None,
        model: str | None = None,
        config: RegionFocusConfig | dict[str, Any] | None = None,
        api_key_env: str | None = None,
        backend: str = "http",
        judge: bool = False,
        enabled: bool = True,
        **options: Any,
    ):
        if isinstance(config, dict):
            config = RegionFocusConfig.from_dict(config)
        elif config is not None and not isinstance(config, RegionFocusConfig):
            raise TypeError(f"config must be a RegionFocusConfig or a dict, got {type(config).__name__}")
        config = config or RegionFocusConfig()
        self._loop = LoopThread("regionfocus-focus")
        try:
            if isinstance(agent, str):
                # Built on the loop thread: whatever binds to a loop binds to that one.
                grounder = self._loop.call(
                    build_grounder,
                    agent,
                    base_url=base_url,
                    model=model,
                    backend=backend,
                    api_key_env=api_key_env,
                    **options,
                )
                config = text_only_config(agent, config) if not reads_pixels(agent) else config
            elif isinstance(agent, GroundingModel):
                grounder = agent
            else:
                raise TypeError(
                    f"agent must be a family name or a GroundingModel, got {type(agent).__name__}"
                )
        except BaseException:
            self._loop.close()
            raise
        self.model = grounder
        self.config = config
        self._wrapper = FocusWrapper(grounder, config, enabled=enabled, judge=judge)
        self._finalizer = weakref.finalize(self, _close, self._loop, grounder)

    # ------------------------------------------------------------------ the step
    def step(
        self,
        screenshot: Any,
        action: Action | None,
        *,
        instruction: str,
        text: str = "",
        url: str | None = None,
        tree: str | None = None,
        error: str | None = None,
        ignore: Sequence[Box | Sequence[float]] = (),
        refine: bool = True,
    ) -> Decision:
        """The action to execute on ``screenshot`` (a PIL image, an H×W×3 uint8 array or PNG
        bytes), given the ``action`` the caller's agent proposed (points in that screenshot's
        pixels; None when it gave nothing parseable) and its ``text``. ``instruction``: what a
        round grounds (the task, or the step's own goal when the agent states one). ``url``,
        ``tree`` (any text form of the accessibility tree or DOM) and ``error`` (the
        environment's error for the last executed action) help tell whether that action changed
        anything; ``ignore``: boxes whose pixels never count as a change (a drawn cursor).
        ``refine=False``: the action is executed as given and no round runs (for an action the
        caller could not rewrite); Focus still records it."""
        return self._loop.run(
            self._step(screenshot, action, instruction, text, url, tree, error, ignore, refine)
        )

    async def astep(
        self,
        screenshot: Any,
        action: Action | None,
        *,
        instruction: str,
        text: str = "",
        url: str | None = None,
        tree: str | None = None,
        error: str | None = None,
        ignore: Sequence[Box | Sequence[float]] = (),
        refine: bool = True,
    ) -> Decision:
        """:meth:`step` for async callers: the work runs on Focus's own loop (where its model's
        clients live), awaited from the caller's."""
        return await self._loop.arun(
            self._step(screenshot, action, instruction, text, url, tree, error, ignore, refine)
        )

    async def _step(
        self, screenshot, action, instruction, text, url, tree, error, ignore, refine=True
    ) -> Decision:
        shot = as_image(screenshot)
        obs = Observed(shot, url=url, tree=tree, error=error, ignore=tuple(ignore))
        decision = await self._wrapper.step(obs, action, instruction=instruction, text=text, refine=refine)
        calls = decision.all_calls
        stats = {
            "rf_triggered": int(decision.round is not None),
            "rf_calls": len(calls),
            "rf_prompt_tokens": sum(c.prompt_tokens or 0 for c in calls),
            "rf_completion_tokens": sum(c.completion_tokens or 0 for c in calls),
        }
        return Decision(
            action=decision.action,
            refined=decision.source == "regionfocus",
            trigger=decision.trigger,
            trace=decision.to_dict(),
            stats=stats,
            choice_image=self._choice_image(shot, decision),
            text=text,
            decision=decision,
        )

    def _choice_image(self, shot: Image.Image, decision: LiveDecision) -> Image.Image | None:
        """The star map the round's choice request showed, drawn again at full resolution."""
        rnd = decision.round
        if rnd is None or rnd.choice_method not in _ASKED or self.config.aggregation != "image":
            return None
        starred = [c for c in rnd.merged if c.action.is_point_action and c.number is not None]
        if not starred:
            return None
        return draw_stars(
            shot,
            [c.action.point for c in starred],
            [str(c.number) for c in starred],
            scale=self.config.star_scale,
        )

    # ------------------------------------------------------------------ life cycle
    def reset(self) -> None:
        """Forget the episode (stars, executed actions, round counts): call between episodes."""
        self._loop.call(self._wrapper.reset)

    @property
    def rounds(self) -> int:
        """RegionFocus rounds run in this episode."""
        return self._wrapper.rounds_total

    def close(self) -> None:
        """Close the model's clients on their loop, then the loop and its thread. Idempotent."""
        self._finalizer()

    def __enter__(self) -> Focus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close(loop: LoopThread, model: GroundingModel) -> None:
    if not loop.closed:
        loop.close(before=lambda: aclose_model(model))
