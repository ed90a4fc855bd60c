"""Hosted model families: Claude (Anthropic Messages API), Gemini (Gemini API) and OpenAI models
(Responses API), each through its provider's SDK (``adapters/backends/``).

What the model sees is known, not guessed: each request's image is resized on the client to the
size the provider's model sees (``hosted_models.py``, the table ``prompts/hosted/models.json``),
so the provider does not resize it again and the answer's frame is that image's:

- Claude answers in pixels of the image it saw; its computer tool in the declared display, which
  is that image.
- OpenAI models, asked the official ScreenSpot-Pro way, answer a box with x and y from 0 to 1;
  the computer tool's ``computer_call`` carries pixels of the image as seen (the declared
  display for the preview tool, which is that image).
- Gemini writes points as [y, x] normalised to 0-1000; its Computer Use functions carry x, y on
  a 1000 grid (0-999), as the reference agent denormalises them (x / 1000 * width).

``request``: ``prompt`` (default) sends the plain grounding prompt, from the benchmark's official
evaluation (Claude, OpenAI) or the provider's documentation (Gemini); ``computer-use`` declares
the provider's computer-use tool instead and reads its calls. RegionFocus's own requests (focal
point, judge, choice, region) are the shared ``rf_*.txt`` texts with the family's frame note.
Every answer is mapped back to pixels of the image the caller gave. Sources:
``prompts/hosted/SOURCES.md``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.backends.base import Message, ToolCall
from regionfocus.adapters.families.answers import bare_click, find_coordinates
from regionfocus.adapters.families.hosted_models import ImageRule, ModelRule, model_rule, warn_if_unnamed
from regionfocus.adapters.families.hosted_tools import (
    Answer,
    claude_action,
    gemini_action,
    openai_action,
    tool_calls,
    xy_pair,
)
from regionfocus.adapters.families.prompting import Prompt, render
from regionfocus.adapters.families.qwen import loads_lenient
from regionfocus.adapters.families.resize import Resized
from regionfocus.adapters.families.vlm import VlmAdapter
from regionfocus.adapters.model_text import bounded, sound_action
from regionfocus.geometry import Point
from regionfocus.model import ModelReply, Option, Query
from regionfocus.resample import bicubic

log = logging.getLogger(__name__)

REQUESTS = ("prompt", "computer-use")


@dataclass
class HostedPrompt(Prompt):
    """A request plus the provider options it needs (``tools``, ``betas``, ``truncation``)."""

    options: dict[str, Any] = field(default_factory=dict)


class HostedAdapter(VlmAdapter):
    """The shared part of the three hosted families; subclasses are mostly data.

    ``provider``: whose table rows apply. ``backend_class``: ``module:Class`` of the backend the
    CLI builds (``adapters/cli_args.py``). ``text_scale``: the extent of the coordinates the
    family writes in text (None: pixels of the image it saw). ``tool_scale``: the same for its
    computer-use calls. ``text_yx``: text points are [y, x]."""

    provider = ""
    backend_class = ""
    checkpoint = None  # no vLLM line: the provider serves it
    serve_flags = ()
    text_scale: float | None = None
    tool_scale: float | None = None
    text_yx = False
    frame_file = "frame_pixels.txt"
    default_model = "MODEL"

    def __init__(
        self,
        backend: Any = None,
        *,
        model: str | None = None,
        request: str = "prompt",
        detail: str | None = None,
        rule_model: str | None = None,
        **options: Any,
    ) -> None:
        options.pop("prefill", None)  # no provider continues a pre-filled turn the vLLM way
        self.model_name = model or getattr(backend, "model", None) or self.default_model
        self.rule_model = rule_model or getattr(backend, "rule_model", None)
        self.rule: ModelRule = getattr(backend, "rule", None) or model_rule(
            self.provider, self.rule_model or self.model_name
        )
        warn_if_unnamed(
            self.provider,
            self.model_name,
            self.rule,
            bool(rule_model or getattr(backend, "rule_model", None)),
        )
        if options.get("max_tokens") is None:
            options["max_tokens"] = self.rule.max_tokens  # the model's default output budget
        super().__init__(backend, prefill=False, **options)
        self.detail = detail or getattr(backend, "detail", None) or self.rule.default_detail
        self.image_rule: ImageRule = self.rule.image(self.detail)
        if request not in REQUESTS:
            raise ValueError(f"{self.name}: request must be one of {', '.join(REQUESTS)}, got {request!r}")
        if request == "computer-use" and self.rule.computer_tool is None:
            raise ValueError(
                f"{self.name}: model {self.model_name!r} has no computer-use tool in prompts/hosted/models.json; "
                "use the plain grounding prompt (request=prompt)"
            )
        self.request = request
        self.resize = None  # no smart_resize: the provider's rule (image_rule) is the resize

    def request_facts(self) -> dict[str, Any]:
        """What shapes every request beyond the family (a run folder pins it): the provider,
        the model whose rule applies, the request format, the detail level, the image rule."""
        return {
            "provider": self.provider,
            "model_rule": self.rule.pattern_for(self.rule_model or self.model_name),
            "request_format": self.request,
            "detail": self.detail,
            "image_rule": {k: v for k, v in vars(self.image_rule).items() if v},
            "reasoning": getattr(self.backend, "reasoning", None) or self.rule.reasoning_setting(None),
            # None: no temperature is sent and the provider's default applies (its guidance)
            "temperature": self.temperature if self.rule.temperature else None,
            **({"media_resolution": self.rule.media_resolution} if self.rule.media_resolution else {}),
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model_name!r}, request={self.request!r}, detail={self.detail!r})"

    # ---- what the model sees
    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        return self.image_rule.seen(size)

    def resize_image(self, image: Image.Image) -> Resized:
        w, h = image.size
        target = self.input_size((w, h))
        out = image if image.mode == "RGB" else image.convert("RGB")
        if target != (w, h):
            out = bicubic(out, target)
        return Resized(out, target[0] / w, target[1] / h)

    @property
    def max_pixels(self) -> int:
        r = self.image_rule
        if r.kind == "fit" and r.max_patches:
            return r.max_patches * r.patch * r.patch
        if r.kind == "tile" and r.square and r.short_side:
            return r.square * r.short_side
        return 8000 * 8000  # sent as is: the largest image the providers take

    def image_tokens(self, size: tuple[int, int]) -> int:
        """Visual tokens of an image of ``size`` as the provider counts them: the patches of the
        seen image (Claude, OpenAI's patch models), 85 + 170 per 512-px tile of it (OpenAI's
        tile models), a fixed budget per image by ``media_resolution`` (Gemini 3), else 258
        per 768-px tile (Gemini 2.5: an estimate)."""
        fixed = (self.rule.image_tokens or {}).get(self.rule.media_resolution or "")
        if fixed is not None:
            return int(fixed)
        patches = self.image_rule.patches(size)
        if patches is not None:
            return patches
        w, h = self.input_size(size)
        if self.image_rule.kind == "tile":
            return 85 + 170 * -(-w // 512) * -(-h // 512)
        return 258 * -(-w // 768) * -(-h // 768)

    # ---- frames
    def _from(self, x: float, y: float, given: tuple[int, int], scale: float | None) -> Point:
        if scale is None:
            ms = self.input_size(given)
            return Point(x * given[0] / ms[0], y * given[1] / ms[1])
        return Point(x * given[0] / scale, y * given[1] / scale)

    def from_model(self, x: float, y: float, given: tuple[int, int]) -> Point:
        return self._from(x, y, given, self.text_scale)

    def to_model(self, p: Point, given: tuple[int, int]) -> tuple[float, float]:
        if self.text_scale is None:
            ms = self.input_size(given)
            return p.x * ms[0] / given[0], p.y * ms[1] / given[1]
        return p.x * self.text_scale / given[0], p.y * self.text_scale / given[1]

    def frame_note(self, model_size: tuple[int, int]) -> str:
        if self.frame_file == "frame_pixels.txt":
            return render("frame_pixels.txt", width=model_size[0], height=model_size[1])
        return render(self.frame_file)

    # ---- parsing
    def parse_model_action(self, text: str) -> Action | None:
        """A text answer: the first coordinates as a click, in the family's text frame."""
        return bare_click(text)

    def tool_action(self, call: ToolCall) -> Action | None:
        """A computer-use call as an Action in the tool's frame, or None (a screenshot, a zoom)."""
        raise NotImplementedError

    def parse_action(self, text: str, width: int, height: int) -> Action | None:
        """The first tool call the provider returned that is an action (the tool's frame), else
        the text answer (the family's text frame); points in pixels of the ``width`` x
        ``height`` image. Only calls the API returned as data count (:class:`Answer`): a
        tag in the prose is prose."""
        calls = tool_calls(text)
        if calls:
            try:
                for call in calls:
                    action = sound_action(self.tool_action(call))
                    if action is not None:
                        return sound_action(
                            action.map_points(
                                lambda p: self._from(p.x, p.y, (width, height), self.tool_scale)
                            )
                        )
            except Exception:  # noqa: BLE001 - untrusted arguments must never end a round
                return None
            return None  # a tool call that is no action is not a click at the prose's numbers
        return super().parse_action(getattr(text, "prose", text), width, height)

    # ---- requests
    def system_text(self) -> str | None:
        return None

    def user_text(self, instruction: str) -> str:
        raise NotImplementedError

    def tools_for(self, image: Image.Image) -> dict[str, Any]:
        """The options that declare the computer-use tool for a request on ``image`` (the
        display is the image the model sees)."""
        raise NotImplementedError

    def task_prompt(
        self, kind: str, image: Image.Image, given: tuple[int, int], query: Query, zoomed: bool
    ) -> Prompt:
        history = self._history_block(query, given) if kind == "agent" else ""
        shot = {"type": "image", "image": image}
        if self.request == "computer-use":
            # The task in the user's words beside the screenshot, as the reference agents send
            # the task: the tool's own definition tells the model how to answer.
            text = query.instruction + history
            return HostedPrompt(
                [{"role": "user", "content": [shot, {"type": "text", "text": text}]}],
                options=self.tools_for(image),
            )
        messages: list[Message] = []
        system = self.system_text()
        if system is not None:
            messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
        messages.append(
            {
                "role": "user",
                "content": [shot, {"type": "text", "text": self.user_text(query.instruction) + history}],
            }
        )
        return HostedPrompt(messages)

    async def ask(self, prompt: Prompt, temperature: float | None = None) -> tuple[str, str, Any]:
        options = getattr(prompt, "options", None) or {}
        resp = await self._complete(prompt.messages, temperature, **options)
        answer = Answer(resp.text, getattr(resp, "tool_calls", None) or ())
        return answer, answer, resp.usage

    async def sample(self, image: Image.Image, query: Query, n: int, temperature: float) -> Any:
        """``n`` grounding answers on ``image`` (the strategies' sampling): ``n`` requests, each
        with the family's own request (tools included) and ``temperature`` where the model takes
        one; no provider here returns token log-probabilities, so confidences are None."""
        from regionfocus.strategies.protocol import Samples  # the core's type; adapters may import the core

        resized = await self.model_image(image)
        kind = "agent" if query.mode == "agent" else "grounding"
        prompt = self.task_prompt(kind, resized, image.size, query, False)
        del resized
        answers = await asyncio.gather(*(self.ask(prompt, temperature) for _ in range(n)))
        replies = []
        for text, _, _ in answers:
            action = self.parse_action(text, *image.size)
            replies.append(ModelReply(text, action=action, point=action.point if action else None))
        usage = answers[0][2] if answers else None
        if usage is not None:
            usage.latency_s = max(u.latency_s for _, _, u in answers)
            for name in ("prompt_tokens", "completion_tokens", "cached_tokens"):
                values = [getattr(u, name) for _, _, u in answers if getattr(u, name) is not None]
                setattr(usage, name, sum(values) if values else None)
            return Samples(replies, [None] * len(replies), usage)
        return Samples(replies, [None] * len(replies))

    def format_action(self, action: Action, given: tuple[int, int]) -> str:
        """An earlier step in plain words, points in the family's text frame."""
        return self.describe_option(Option(0, action, False), given).split(": ", 1)[1]


class ClaudeAdapter(HostedAdapter):
    """Claude through the Messages API. Text answers ``[[x,y]]`` (ScreenSpot-Pro's official
    Claude prompt) in pixels of the image it saw; the computer tool's ``coordinate`` in the
    declared display, the same image."""

    name = "claude"
    provider = "anthropic"
    backend_class = "regionfocus.adapters.backends.anthropic_messages:AnthropicBackend"
    frame = "absolute"
    # WXGA, one of the reference computer-use demo's scaling targets (computer.py).
    viewport = (1280, 800)
    default_model = "claude-sonnet-4-5"

    def system_text(self) -> str:
        return render("hosted/screenspot_expert_system.txt")

    def user_text(self, instruction: str) -> str:
        return render("hosted/claude_screenspot_user.txt", instruction=instruction)

    def tools_for(self, image: Image.Image) -> dict[str, Any]:
        tool = dict(self.rule.computer_tool or {})
        kind, beta, display = tool.get("type"), tool.get("beta"), tool.get("display", True)
        definition: dict[str, Any] = {"type": kind}
        if display:
            definition.update(name="computer", display_width_px=image.width, display_height_px=image.height)
        return {"tools": [definition], **({"betas": [beta]} if beta else {})}

    def tool_action(self, call: ToolCall) -> Action | None:
        return claude_action(call)


class OpenAIAdapter(HostedAdapter):
    """OpenAI models through the Responses API. Text answers ``[[x0,y0,x1,y1]]`` with x and y
    from 0 to 1 (ScreenSpot-Pro's official GPT-5 prompt; the centre of the box is the point);
    the computer tool's actions in pixels of the image as seen."""

    name = "openai"
    provider = "openai"
    backend_class = "regionfocus.adapters.backends.openai_responses:ResponsesBackend"
    frame = "relative"
    text_scale = 1.0
    tool_scale = None
    frame_file = "hosted/frame_unit.txt"
    # The reference CUA sample app's browser (computers/base_playwright.py).
    viewport = (1024, 768)
    default_model = "gpt-5.4"

    def fmt_point(self, x: float, y: float) -> str:
        return f"({x:.3f},{y:.3f})"

    def system_text(self) -> str:
        return render("hosted/screenspot_expert_system.txt")

    def user_text(self, instruction: str) -> str:
        return render("hosted/gpt5_screenspot_user.txt", instruction=instruction)

    def tools_for(self, image: Image.Image) -> dict[str, Any]:
        tool = dict(self.rule.computer_tool or {})
        definition: dict[str, Any] = {"type": tool.get("type")}
        if tool.get("display"):
            definition.update(
                display_width=image.width,
                display_height=image.height,
                environment=tool.get("environment", "browser"),
            )
            return {"tools": [definition], "truncation": "auto"}  # the preview tool requires it
        return {"tools": [definition]}

    def tool_action(self, call: ToolCall) -> Action | None:
        return openai_action(call)


class GeminiAdapter(HostedAdapter):
    """Gemini through the Gemini API. Text answers ``[{"point": [y, x], "label": ...}]``
    normalised to 0-1000 (the documentation's pointing prompt); Computer Use calls
    (``click_at``, ``click``, ...) carry x, y on a 1000 grid."""

    name = "gemini"
    provider = "gemini"
    backend_class = "regionfocus.adapters.backends.gemini_genai:GeminiBackend"
    frame = "relative"
    text_scale = 1000.0
    tool_scale = 1000.0
    text_yx = True
    frame_file = "hosted/frame_gemini.txt"
    # The reference Computer Use agent's browser (computer-use-preview main.py).
    viewport = (1440, 900)
    default_model = "gemini-2.5-flash"

    def fmt_point(self, x: float, y: float) -> str:
        return f"[{round(y)}, {round(x)}]"

    def point_format(self) -> str:
        return "[y, x]"

    def user_text(self, instruction: str) -> str:
        return render("hosted/gemini_point.txt", instruction=instruction)

    def tools_for(self, image: Image.Image) -> dict[str, Any]:
        tool = self.rule.computer_tool or {}
        return {"tools": [{"computer_use": {"environment": tool.get("environment", "ENVIRONMENT_BROWSER")}}]}

    def _yx_point(self, text: str) -> Point | None:
        """The first point of a Gemini text answer as (x, y): a "point" [y, x], the centre of a
        "box_2d" [ymin, xmin, ymax, xmax], else the first bare pair read as [y, x]."""
        text = bounded(text)
        for m in re.finditer(r"\{", text):
            obj = loads_lenient(text[m.start() :])
            if not isinstance(obj, dict):
                continue
            yx = xy_pair(obj.get("point"))
            if yx is not None:
                return Point(yx.y, yx.x)
            box = obj.get("box_2d")
            if isinstance(box, list) and len(box) == 4 and all(isinstance(v, (int, float)) for v in box):
                return Point((box[1] + box[3]) / 2, (box[0] + box[2]) / 2)
            break
        nums = find_coordinates(text, 2)
        return Point(nums[1], nums[0]) if nums else None

    def parse_model_action(self, text: str) -> Action | None:
        p = self._yx_point(text)
        return Action(ActionType.CLICK, p) if p is not None else None

    def parse_point(self, text: str, width: int, height: int) -> Point | None:
        action = self.parse_action(text, width, height)
        return action.point if action is not None else None

    def _choice_by_point(self, answer: str, options, size):
        # RoundRequests reads a pointed-at candidate as (x, y); Gemini writes [y, x].
        p = self._yx_point(answer) if isinstance(answer, str) else None
        return super()._choice_by_point(f"({p.x}, {p.y})", options, size) if p is not None else None

    def tool_action(self, call: ToolCall) -> Action | None:
        return gemini_action(call)


def build_hosted(
    name: str,
    *,
    model: str | None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    timeout: float = 120.0,
    max_in_flight: int = 8,
    image_format: str = "png",
    image_quality: int = 90,
    temperature: float = 0.0,
    request: str = "prompt",
    detail: str | None = None,
    max_tokens: int | None = None,
    reasoning: str | None = None,
    rule_model: str | None = None,
    max_wait: float | None = None,
    max_reply_bytes: int | None = None,
) -> HostedAdapter:
    """The hosted family ``name`` over its provider's backend. ``max_tokens``/``reasoning``:
    the output budget and reasoning word (None: the model rule's defaults); ``rule_model``: apply
    this model's rule; ``max_wait``: the longest wait a server may ask for. Raises ValueError
    naming the flag to fix; ModuleNotFoundError when the provider's SDK is not installed."""
    import importlib

    from regionfocus.adapters.registry import family_class

    cls = family_class(name)
    if not (isinstance(cls, type) and issubclass(cls, HostedAdapter)):
        raise ValueError(f"--agent {name} is not a hosted family")
    if not model:
        raise ValueError(
            f"--agent {name} needs --model: the provider's model name (e.g. {cls.default_model})"
        )
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"--max-tokens must be at least 1, got {max_tokens}")
    module, _, attr = cls.backend_class.partition(":")
    backend_cls = getattr(importlib.import_module(module), attr)
    # The provider's SDK, imported now: a missing one is the 'hosted' extra not installed
    # (regionfocus/cli.py turns that into the pip line and exit 2), not a failure per call.
    importlib.import_module(backend_cls.sdk_module)
    extra: dict[str, Any] = {}
    if max_wait is not None:
        extra["max_wait"] = max_wait
    if max_reply_bytes is not None:
        extra["max_reply_bytes"] = max_reply_bytes
    backend = backend_cls(
        model,
        base_url,
        api_key_env=api_key_env,
        timeout=timeout,
        max_in_flight=max_in_flight,
        image_format=image_format,
        image_quality=image_quality,
        detail=detail,
        reasoning=reasoning,
        rule_model=rule_model,
        **extra,
    )
    adapter = cls(backend, request=request, detail=detail, temperature=temperature, max_tokens=max_tokens)
    adapter.rule.check_budget(backend.reasoning, adapter.max_tokens)
    if temperature and not adapter.rule.temperature:
        log.warning(
            "%s: --temperature %g is not sent to %s: %s",
            name,
            temperature,
            model,
            adapter.rule.sampling or "the model takes none",
        )
    return adapter
