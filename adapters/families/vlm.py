"""Shared VLM adapter logic: frames, prompt templates, the GroundingModel requests, and the
parsers every family shares (verdict, choice, bare coordinates, boxes).

Frames. "given pixels": pixels of the image a request was given (a screenshot, an annotated
screenshot or a zoomed view), which is what every returned point/box is in. "model frame":
what the model writes, either ``relative`` (0-1000 on each axis of the image it saw) or
``absolute`` (pixels of the smart_resized image it saw). Only this module and the family
modules convert between the two.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.backends.base import ChatBackend, Message
from regionfocus.adapters.families.answers import find_coordinates
from regionfocus.adapters.families.attention import attention, can_attend
from regionfocus.adapters.families.prompting import GIVEN_SIZE_KEY, Prompt, given_size, render
from regionfocus.adapters.families.resize import Resized, ResizeSpec, resize_for_model
from regionfocus.adapters.families.round_requests import RoundRequests
from regionfocus.adapters.families.star_patch import starred_patch
from regionfocus.adapters.families.strategy_requests import StrategyRequests
from regionfocus.adapters.model_text import bounded, sound_action
from regionfocus.geometry import Box, Point
from regionfocus.model import ModelReply, Option, Query, Turn
from regionfocus.stars import draw_stars

if TYPE_CHECKING:
    from regionfocus.strategies.protocol import OwnPrompt

Frame = Literal["relative", "absolute"]
# `vllm serve` flags every family shares (docs/ARCHITECTURE.md §5): --generation-config vllm, or
# the checkpoint's own generation settings apply to every request that does not override them;
# five images for a RegionFocus round's requests.
VLLM_FLAGS = (
    "--limit-mm-per-prompt",
    '{"image":5}',
    "--max-model-len",
    "32768",
    "--generation-config",
    "vllm",
)
RELATIVE_SCALE = 1000.0  # UI-TARS 1.0 and Qwen3-VL write 0-1000 on each axis

log = logging.getLogger(__name__)


# ------------------------------------------------------------------ frame maps
def model_extent(frame: Frame, model_size: tuple[int, int]) -> tuple[float, float]:
    """The (W, H) extent of the model frame's coordinates: 1000 x 1000 when relative, the
    resized image's pixels when absolute."""
    return (
        (RELATIVE_SCALE, RELATIVE_SCALE)
        if frame == "relative"
        else (float(model_size[0]), float(model_size[1]))
    )


def from_model(
    x: float, y: float, frame: Frame, given: tuple[int, int], model_size: tuple[int, int]
) -> Point:
    """Model-frame (x, y) -> given-image pixels."""
    ew, eh = model_extent(frame, model_size)
    return Point(x * given[0] / ew, y * given[1] / eh)


def to_model(
    p: Point, frame: Frame, given: tuple[int, int], model_size: tuple[int, int]
) -> tuple[float, float]:
    """Given-image pixels -> model-frame (x, y): the inverse of :func:`from_model`."""
    ew, eh = model_extent(frame, model_size)
    return p.x * ew / given[0], p.y * eh / given[1]


# ------------------------------------------------------------------ the adapter
class VlmAdapter(RoundRequests, StrategyRequests):
    """A GroundingModel over a :class:`~regionfocus.adapters.backends.base.ChatBackend` for one model family.

    Subclasses set ``name``, ``frame``, ``default_resize``, the prompt file names and
    implement :meth:`parse_model_action` (text -> Action in model-frame numbers) and
    :meth:`_messages`. Each request resizes the image it is given to exactly what the model
    sees (``input_size``) and returns points/boxes in pixels of the given image.
    """

    name: str = "vlm"
    frame: Frame = "absolute"
    # A bound for callers that keep many screenshots alive (entries also go with their images).
    resized_cache_size: int = 256
    default_history_images: int = 0
    default_resize: ResizeSpec = ResizeSpec(28, 4 * 28 * 28, 16384 * 28 * 28)
    # The family's facts the registry hands to the rest of the project (adapters/registry.py
    # Facts): the rest never branches on a family's name.
    is_family = True
    checkpoint: str | None = None  # the public checkpoint `serve-command` starts
    serve_flags: tuple[str, ...] = VLLM_FLAGS
    viewport: tuple[int, int] = (1440, 1440)  # the paper's browser window for UI-TARS
    own_prompt: OwnPrompt | None = None  # a strategy's own grounding request (:meth:`prompted`)

    def __init__(
        self,
        backend: ChatBackend | None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        factor: int | None = None,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        language: str = "English",
        sampling: dict[str, Any] | None = None,
        prefill: bool = True,
        history_images: int | None = None,
        zoom_note: bool = False,
    ):
        d = self.default_resize
        self.resize = ResizeSpec(
            factor if factor is not None else d.factor,
            min_pixels if min_pixels is not None else d.min_pixels,
            max_pixels if max_pixels is not None else d.max_pixels,
            d.then,  # a family's second pass (the options set the first)
        )
        # A bound the caller set (not the family's default) stays a bound for a strategy's own
        # request too (:meth:`prompted`): a test's tiny model sees tiny images.
        self.max_pixels_given = max_pixels is not None
        self.backend = backend
        if can_attend(backend):  # in process only: MVP's attention pass (the core's AttentionModel)
            self.attention = partial(attention, self)
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.language = language
        self.sampling = dict(sampling or {})
        # Pre-fill the assistant turn where the official evaluation does (Qwen grounding).
        self.prefill = bool(prefill)
        # Earlier screenshots shown to multi-turn families (UI-TARS); None = the family default.
        self.history_images = self.default_history_images if history_images is None else int(history_images)
        # Tell the model a view is magnified. Off by default: the official templates do not,
        # and a view is then just a screenshot to the model, as in the paper.
        self.zoom_note = bool(zoom_note)
        # Resized images, keyed by the identity of the image given, each dropped when that image
        # is: a round asks several questions about one screenshot, and resizing 4K costs ~0.1 s
        # each time. Given images are treated as immutable: the core draws stars on copies.
        self._resized: OrderedDict[int, tuple[weakref.ref, Resized]] = OrderedDict()
        self._resized_lock = threading.Lock()  # _prepare resizes in worker threads

    def __repr__(self) -> str:
        r = self.resize
        return (
            f"{type(self).__name__}(factor={r.factor}, min_pixels={r.min_pixels}, max_pixels={r.max_pixels})"
        )

    # ---- frames
    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        """(W, H) of the image the model sees for an image of ``size``: its smart_resize."""
        return self.resize.model_size(size)

    @property
    def max_pixels(self) -> int:
        """The most pixels of an image the model is sent (its resize rule's cap)."""
        return self.resize.max_pixels

    def from_model(self, x: float, y: float, given: tuple[int, int]) -> Point:
        return from_model(x, y, self.frame, given, self.input_size(given))

    def to_model(self, p: Point, given: tuple[int, int]) -> tuple[float, float]:
        return to_model(p, self.frame, given, self.input_size(given))

    def frame_note(self, model_size: tuple[int, int]) -> str:
        if self.frame == "relative":
            return render("frame_relative.txt")
        return render("frame_pixels.txt", width=model_size[0], height=model_size[1])

    def fmt_point(self, x: float, y: float) -> str:
        """A model-frame point as the family writes it."""
        return f"({round(x)},{round(y)})"

    # ---- parsing
    def parse_model_action(self, text: str) -> Action | None:
        """``text`` -> Action with model-frame numbers as points, or None."""
        raise NotImplementedError

    def parse_action(self, text: str, width: int, height: int) -> Action | None:
        """The action in ``text`` with points in pixels of the ORIGINAL screenshot of
        ``width`` x ``height``, assuming it was sent at this adapter's own resize. None on
        junk; never raises."""
        try:
            action = sound_action(self.parse_model_action(bounded(text)))
            if action is None:
                return None
            return sound_action(action.map_points(lambda p: self.from_model(p.x, p.y, (width, height))))
        except Exception:  # noqa: BLE001 - untrusted text must never end a round; tests fuzz the parsers
            return None

    def parse_point(self, text: str, width: int, height: int) -> Point | None:
        """A focal point answer (an action's point, or bare coordinates), original pixels."""
        action = self.parse_action(text, width, height)
        if action is not None and action.point is not None:
            return action.point
        xy = find_coordinates(text, 2) if isinstance(text, str) else None
        return self.from_model(xy[0], xy[1], (width, height)) if xy else None

    def parse_box(self, text: str, width: int, height: int) -> Box | None:
        """A region answer ([x1, y1, x2, y2] in the model frame) as a Box in original pixels."""
        nums = find_coordinates(text, 4) if isinstance(text, str) else None
        if nums is None:
            return None
        a = self.from_model(nums[0], nums[1], (width, height))
        b = self.from_model(nums[2], nums[3], (width, height))
        return Box.from_corners(a, b)

    # ---- messages (family hooks)
    def task_prompt(
        self, kind: str, image: Image.Image, given: tuple[int, int], query: Query, zoomed: bool
    ) -> Prompt:
        """The model's own interface for ``kind`` ("grounding" or "agent"): its official template,
        exactly. ``image`` is already at the model's size; ``given`` is the size of the image the
        caller gave (its pixels are the frame of ``query.view`` and of history points)."""
        raise NotImplementedError

    def format_action(self, action: Action, given: tuple[int, int]) -> str:
        """``action`` (points in pixels of ``given``) written as this family writes actions, in
        its own frame: how earlier steps appear in its history."""
        raise NotImplementedError

    def own_messages(self, image: Image.Image, text: str) -> list[Message]:
        """One of our own RegionFocus requests (focal, judge, choose, region) as messages."""
        return [
            {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}
        ]

    # ---- history, in the model's own frame
    def turn_action(self, turn: Turn, query: Query, given: tuple[int, int]) -> Action | None:
        """A turn's action with points in pixels of the image given now: scaled from the turn's
        screenshot to the current one, then into the view when the request is about a view (a
        point outside the view keeps its out-of-frame coordinates: that is where it is)."""
        if turn.action is None:
            return None
        view = query.view

        def to_given(p: Point) -> Point:
            if view is not None:
                return view.screen_to_view(p)
            return Point(p.x * given[0] / max(turn.size[0], 1), p.y * given[1] / max(turn.size[1], 1))

        return turn.action.map_points(to_given)

    def history_lines(self, query: Query, given: tuple[int, int]) -> list[str]:
        """One line per earlier step: the action in this family's syntax and frame, and what it did."""
        lines = []
        for turn in query.turns:
            action = self.turn_action(turn, query, given)
            text = self.format_action(action, given) if action is not None else "(no action)"
            lines.append(f"{text} -> {turn.outcome}" if turn.outcome else text)
        return lines

    def _history_block(self, query: Query, given: tuple[int, int]) -> str:
        lines = self.history_lines(query, given)
        if not lines:
            return ""
        return render(
            "rf_history.txt", steps="\n".join(f"Step {i}: {line}" for i, line in enumerate(lines, 1))
        )

    def _avoid_block(self, avoid: Sequence[Point], on_image: bool, given: tuple[int, int]) -> str:
        if not avoid:
            return ""
        if on_image:
            return render("rf_avoid_stars.txt")
        return render(
            "rf_avoid_listed.txt", points=", ".join(self.fmt_point(*self.to_model(p, given)) for p in avoid)
        )

    def describe_option(self, option: Option, given: tuple[int, int]) -> str:
        """One candidate as text, coordinates in the model frame."""
        a = option.action
        verb = {
            ActionType.CLICK: "click",
            ActionType.DOUBLE_CLICK: "double-click",
            ActionType.RIGHT_CLICK: "right-click",
            ActionType.MIDDLE_CLICK: "middle-click",
            ActionType.HOVER: "move the mouse",
            ActionType.DRAG: "drag",
            ActionType.TYPE: "type",
            ActionType.HOTKEY: "press keys",
            ActionType.SCROLL: "scroll",
            ActionType.WAIT: "wait",
            ActionType.BACK: "go back",
            ActionType.FINISHED: "finish",
            ActionType.CALL_USER: "ask the user",
        }[a.type]
        parts = [verb]
        if a.point is not None:
            where = (
                f"star {option.number}" if option.on_image else self.fmt_point(*self.to_model(a.point, given))
            )
            parts.append(f"at {where}")
        if a.end_point is not None:
            parts.append(f"to {self.fmt_point(*self.to_model(a.end_point, given))}")
        return f"Candidate {option.number}: " + " ".join(parts + a.detail_words("then press Enter"))

    # ---- the requests
    def resize_image(self, image: Image.Image) -> Resized:
        """``image`` at :meth:`input_size`, RGB, with its per-axis scale: the family's resize
        (smart_resize here; a hosted family shrinks by its provider's rule)."""
        return resize_for_model(image, spec=self.resize)

    def _resize_cached(self, image: Image.Image) -> Resized:
        with self._resized_lock:
            hit = self._resized.get(id(image))
            if hit is not None and hit[0]() is image and hit[1].image.size == self.input_size(image.size):
                self._resized.move_to_end(id(image))
                return hit[1]
        r = self.resize_image(image)
        if r.image is image:  # already the model's size: nothing to keep (it would keep the image alive)
            return r
        key = id(image)
        with self._resized_lock:
            # The copy lives as long as the image it was made from (every request about one
            # screenshot reuses it, however many samples are in flight) and goes with it.
            self._resized[key] = (weakref.ref(image, lambda ref, k=key: self._forget(k, ref)), r)
            while len(self._resized) > self.resized_cache_size:
                self._resized.popitem(last=False)
        return r

    def _forget(self, key: int, ref: weakref.ref) -> None:
        with self._resized_lock:
            hit = self._resized.get(key)
            if hit is not None and hit[0] is ref:
                del self._resized[key]

    async def _prepare(self, image: Image.Image) -> tuple[Image.Image, tuple[int, int], dict[str, str]]:
        # Resizing a 4K screenshot costs ~0.1 s of CPU: in a worker thread, so the event loop
        # keeps serving the other requests in flight (Pillow releases the GIL while resampling).
        # An image already at the model's size is returned as is, without a thread hop.
        if image.size == self.input_size(image.size) and image.mode == "RGB":
            r = self._resize_cached(image)
        else:
            r = await asyncio.to_thread(self._resize_cached, image)
        ms = r.image.size
        ew, eh = model_extent(self.frame, ms)
        return r.image, ms, {"frame_note": self.frame_note(ms), "width": f"{ew:.0f}", "height": f"{eh:.0f}"}

    async def annotate(
        self,
        image: Image.Image,
        points: Sequence[Point],
        labels: Sequence[str] | None = None,
        *,
        scale: float = 1.0,
    ) -> Image.Image:
        """``image`` with numbered stars at ``points`` (pixels of ``image``), drawn on the copy
        at the model's size (the cached one the other requests about ``image`` use): one copy of
        the model-size image, no full-resolution copy, no resize of the annotated image. Stars
        and tags are sized relative to ``image`` and shrunk with it, so the model sees what a
        star drawn on ``image`` and resized with it would look like (core ``AnnotatingModel``)."""
        return await asyncio.to_thread(self._annotate, image, list(points), labels, scale)

    def _annotate(
        self, image: Image.Image, points: list[Point], labels: Sequence[str] | None, scale: float
    ) -> Image.Image:
        given = given_size(image)
        base = self._resize_cached(image).image
        sx, sy = base.width / given[0], base.height / given[1]
        if base.size == given or not points:  # the model sees the screenshot's own size
            out = draw_stars(base, points, labels, scale=scale)
        elif min(sx, sy) >= 0.95 or image.size != given:
            # About the model's size (a 4K screenshot at 3836x2156): draw straight on the copy.
            # Pillow draws in edge coordinates (pixel i spans [i, i + 1)), as resampling maps
            # them: a plain scale puts the star where resizing a full-resolution star would.
            mapped = [Point(p.x * sx, p.y * sy) for p in points]
            out = draw_stars(base.copy(), mapped, labels, scale=scale, reference=given, in_place=True)
        else:
            out = base.copy()
            patch, (left, top) = starred_patch(image, base.size, points, labels, scale)
            out.paste(patch, (left, top))
        out.info[GIVEN_SIZE_KEY] = given
        return out

    async def model_image(self, image: Image.Image) -> Image.Image:
        """``image`` at exactly the size the model sees (cached per image)."""
        return (await self._prepare(image))[0]

    async def _complete(self, messages: list[Message], temperature: float | None = None, **extra: Any):
        if self.backend is None:
            raise ValueError(f"{self.name}: no backend; pass backend=<ChatBackend> to get_adapter")
        return await self.backend.complete(
            messages,
            max_tokens=self.max_tokens,
            temperature=self.temperature if temperature is None else temperature,
            **self.sampling,
            **extra,
        )

    async def ask(self, prompt: Prompt, temperature: float | None = None) -> tuple[str, str, Any]:
        """Send ``prompt``; returns (answer, continuation, usage). With a pre-fill the answer is
        the pre-fill followed by the continuation, so it parses as the model's whole message.

        The pre-fill travels as a final assistant message with vLLM's ``continue_final_message``
        (and ``add_generation_prompt: false``). A server that refuses those options (HTTP 400,
        as OpenAI's hosted API does for unknown fields) gets the request again without the
        pre-fill; when that one goes through, this adapter stops pre-filling (logged once). A
        server that ignores the options and starts a fresh message is handled by the parser,
        which also reads the continuation alone.
        """
        if prompt.prefill and self.prefill:
            messages = [*prompt.messages, {"role": "assistant", "content": prompt.prefill}]
            try:
                resp = await self._complete(
                    messages, temperature, continue_final_message=True, add_generation_prompt=False
                )
                return prompt.prefill + resp.text, resp.text, resp.usage
            except Exception as e:
                if getattr(e, "status", None) != 400:
                    raise
                refused = e
            # Only a request that goes through without the pre-fill shows that the pre-fill was
            # what the server refused; a request it refuses either way (an image too large, a
            # bad prompt) fails here and leaves the pre-fill on for the rest of the run.
            resp = await self._complete(prompt.messages, temperature)
            if self.prefill:
                self.prefill = False
                log.warning(
                    "%s: the server refused the assistant pre-fill (continue_final_message) with HTTP 400 "
                    "and accepted the request without it; sending requests without it from now on "
                    "(answers may then be worse than the official evaluation's): %s",
                    self.name,
                    refused,
                )
            return resp.text, resp.text, resp.usage
        resp = await self._complete(prompt.messages, temperature)
        return resp.text, resp.text, resp.usage

    def _parse_answer(self, answer: str, continuation: str, size: tuple[int, int]) -> Action | None:
        if self.own_prompt is not None:
            return self._own_answer(answer, size)
        action = self.parse_action(answer, *size)
        if action is None and continuation is not answer:
            action = self.parse_action(continuation, *size)
        return action

    async def act(self, image: Image.Image, query: Query, *, zoomed: bool = False) -> ModelReply:
        """The next action on ``image``; its points are in pixels of ``image``."""
        resized = await self.model_image(image)
        given = given_size(image)
        kind = "agent" if query.mode == "agent" else "grounding"
        prompt = await self.task_prompt_async(kind, resized, given, query, zoomed)
        if query.elements and query.observation != "screenshot" and not zoomed:
            prompt = self.with_observation(prompt, query, given)
        del resized, image  # the prompt holds it until the backend has encoded it, then lets it go
        answer, continuation, usage = await self.ask(prompt)
        action = self._parse_answer(answer, continuation, given)
        return ModelReply(answer, action=action, point=action.point if action else None, usage=usage)

    def with_observation(self, prompt: Prompt, query: Query, given: tuple[int, int]) -> Prompt:
        """``prompt`` with the page's accessibility tree as text after the last user message's
        own text (coordinates in this family's frame). A text-only observation ("a11y",
        "compressed-a11y") also takes the screenshot out of that message: the model reads the
        tree alone, as a text-only model would. The modal phase's temporal signal comes with the
        tree: the browser marks the elements that appeared since its previous snapshot."""
        from regionfocus.a11y import observation_text

        text, _ = observation_text(
            query.observation,
            query.elements,
            given,
            query.instruction,
            phases=query.observation_phases,
            to_model=lambda p: self.to_model(p, given),
        )
        messages = [dict(m) for m in prompt.messages]
        last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        content = messages[last]["content"]
        parts = list(content) if isinstance(content, list) else [{"type": "text", "text": content}]
        if "screenshot" not in query.observation:
            parts = [p for p in parts if p.get("type") != "image"]
        parts.append(
            {"type": "text", "text": f"\n\nThe page's accessibility tree ({query.observation}):\n{text}"}
        )
        messages[last] = {**messages[last], "content": parts}
        return Prompt(messages, prompt.prefill)

    async def task_prompt_async(
        self, kind: str, image: Image.Image, given: tuple[int, int], query: Query, zoomed: bool
    ) -> Prompt:
        """:meth:`task_prompt` after resizing the earlier screenshots a multi-turn family shows."""
        return self.task_prompt(kind, image, given, query, zoomed)

    def _own_vars(self, query: Query, given: tuple[int, int], v: dict[str, str]) -> dict[str, str]:
        return {**v, "instruction": query.instruction, "history_block": self._history_block(query, given)}

    # ---- what the test-time strategies ask beyond the GroundingModel protocol
    def image_tokens(self, size: tuple[int, int]) -> int:
        """Vision tokens for an image of ``size`` = (W, H): the smart_resized image cut into
        ``factor`` px cells, one token each (patch 14 x merge 2 = 28 for Qwen2-VL, Qwen2.5-VL and
        UI-TARS; patch 16 x merge 2 = 32 for Qwen3-VL). Start/end markers are not counted."""
        w, h = self.input_size(size)
        f = self.resize.last.factor
        return -(-w // f) * -(-h // f)
