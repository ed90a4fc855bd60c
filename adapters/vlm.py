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
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from string import Template
from typing import Any, Literal

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.geometry import Box, Point
from regionfocus.model import ModelReply, Option, Query, Verdict

from .backend import ChatBackend, Message
from .resize import Resized, ResizeSpec, resize_for_model

Frame = Literal["relative", "absolute"]
RELATIVE_SCALE = 1000.0  # UI-TARS 1.0 and Qwen3-VL write 0-1000 on each axis

NUM = r"-?\d+(?:\.\d+)?"


# ------------------------------------------------------------------ prompt templates
@lru_cache(maxsize=64)
def load_prompt(name: str) -> Template:
    """The template ``adapters/prompts/<name>`` (``$var`` placeholders, string.Template)."""
    text = resources.files("adapters").joinpath("prompts", name).read_text(encoding="utf-8")
    return Template(text)


def render(name: str, **values: Any) -> str:
    """Fill a template; a missing placeholder raises KeyError naming it (a bug, not input)."""
    return load_prompt(name).substitute({k: str(v) for k, v in values.items()})


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


# ------------------------------------------------------------------ shared parsers
_VERDICT_WORDS = {
    "yes": Verdict.YES,
    "correct": Verdict.YES,
    "true": Verdict.YES,
    "right": Verdict.YES,
    "no": Verdict.NO,
    "incorrect": Verdict.NO,
    "false": Verdict.NO,
    "wrong": Verdict.NO,
}
# A verdict line: "Verdict: YES", "**Verdict:** no.", "... so. Verdict: No, the star is off".
# The value is one word; after it only punctuation or a clause opened by punctuation may
# follow, so "Verdict: not sure", "Verdict: YES or NO" and "Verdict: I do not know" read as
# unknown.
_VERDICT_LINE = re.compile(
    r"(?:^|(?<=[\s*_#>`(\[]))verdict[\s*_`]*[:=\-]\s*[*_`\"']*\s*([a-z]+)\b([^\n]*)", re.I | re.M
)
_LONE_WORD = re.compile(r"^[\s*_`\"']*([a-z]+)[\s.!*_`\"']*$", re.I)


def _rest_ok(rest: str) -> bool:
    """After a verdict word or choice number: nothing, or punctuation opening a clause."""
    r = rest.lstrip(" \t*_`\"')]")
    return r == "" or r[0] in ",;:.!-\u2013\u2014("


def parse_verdict(text: str) -> Verdict:
    """The explicit final verdict of a judge answer; UNKNOWN when none can be read.

    Reads the last ``Verdict: X`` whose value is exactly one verdict word (yes/no, or
    correct/incorrect, true/false, right/wrong). A whole answer that is a single such word
    counts too. Nothing else does: never a substring test, so "I do not know", "not precise",
    "INCORRECT" inside prose, or "NOTE" are never read as a verdict.
    """
    if not isinstance(text, str):
        return Verdict.UNKNOWN
    for m in reversed(list(_VERDICT_LINE.finditer(text))):
        word = m.group(1).lower()
        if word in _VERDICT_WORDS and _rest_ok(m.group(2)):
            return _VERDICT_WORDS[word]
        return Verdict.UNKNOWN  # the last verdict is unreadable: do not look further up
    m = _LONE_WORD.match(text.strip())
    if m and m.group(1).lower() in _VERDICT_WORDS:
        return _VERDICT_WORDS[m.group(1).lower()]
    return Verdict.UNKNOWN


_CHOICE_LINE = re.compile(
    r"(?:^|(?<=[\s*_#>`(\[]))(?:final\s+)?(?:choice|answer)[\s*_`]*[:=\-]\s*[*_`\"'#\[(]*\s*"
    r"(?:(?:candidate|option|star|number|no\.?)\s*#?\s*)?(\d+)\b([^\n]*)",
    re.I | re.M,
)
_LONE_NUMBER = re.compile(
    r"^[\s*_`\"'#\[(]*(?:(?:candidate|option|star|number)\s*#?\s*)?(\d+)[\s.!*_`\"')\]]*$", re.I
)


def parse_choice(text: str, valid: Sequence[int] | None = None) -> int | None:
    """The option number a choice answer names: the last ``Choice: N`` (optionally followed
    by a clause: "Choice: 2, the closer one"), or an answer that is a lone number ("2",
    "Star 2.", "**3**"). None when unreadable ("Choice: 1 or 2") or not in ``valid``; never a
    silent default."""
    if not isinstance(text, str):
        return None
    matches = list(_CHOICE_LINE.finditer(text))
    n: int | None = None
    if matches:
        last = matches[-1]
        if not _rest_ok(last.group(2)):
            return None
        n = int(last.group(1))
    else:
        m = _LONE_NUMBER.match(text.strip())
        if m:
            n = int(m.group(1))
    if n is None or (valid is not None and n not in set(valid)):
        return None
    return n


# Bare coordinates, most specific first. Each yields 2 numbers (a point) or 4 (a box).
_COORD_PATTERNS = [
    re.compile(rf"<point>\s*({NUM})[\s,]+({NUM})\s*</point>"),
    re.compile(r"<\|box_start\|>(.*?)<\|box_end\|>", re.S),
    re.compile(r"<bbox>(.*?)</bbox>", re.S),
    re.compile(
        rf"\"(?:bbox_2d|bbox|box)\"\s*:\s*\[\s*({NUM})\s*,\s*({NUM})\s*,\s*({NUM})\s*,\s*({NUM})\s*\]"
    ),
    re.compile(rf"\"(?:point_2d|point|coordinate|coordinates)\"\s*:\s*\[\s*({NUM})\s*,\s*({NUM})\s*\]"),
    re.compile(rf"[\[(]\s*({NUM})\s*,\s*({NUM})\s*\)?\s*,\s*\(?\s*({NUM})\s*,\s*({NUM})\s*[\])]"),
    re.compile(rf"[\[(]\s*({NUM})\s*,\s*({NUM})\s*[\])]"),
]


def numbers_in(s: str) -> list[float]:
    return [float(v) for v in re.findall(NUM, s)]


def coords_from_value(value: str) -> tuple[float, float] | None:
    """A point from a coordinate value as models write it: "(x,y)", "<point>x y</point>",
    "<|box_start|>(x,y)<|box_end|>", "[x1, y1, x2, y2]" (the centre) ..., else None."""
    nums = numbers_in(value)
    if len(nums) == 2:
        return nums[0], nums[1]
    if len(nums) == 4:
        return (nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2
    return None


def find_coordinates(text: str, want: int = 2) -> list[float] | None:
    """The earliest bare coordinate group in ``text``: a point (``want=2``; a box gives its
    centre) or a box (``want=4``; only 4-number groups). Model-frame numbers, or None."""
    best: tuple[int, list[float]] | None = None
    for pat in _COORD_PATTERNS:
        for m in pat.finditer(text):
            nums = [float(g) for g in m.groups()] if len(m.groups()) > 1 else numbers_in(m.group(1))
            if len(nums) not in (2, 4) or (want == 4 and len(nums) != 4):
                continue
            if best is None or m.start() < best[0]:
                best = (m.start(), nums)
            break
    if best is None:
        return None
    nums = best[1]
    if want == 2 and len(nums) == 4:
        return [(nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2]
    return nums


def bare_click(text: str) -> Action | None:
    """A click at the first bare coordinates in ``text`` (grounding answers are often just
    "(x,y)" or a box), in model-frame numbers."""
    xy = find_coordinates(text, 2)
    return Action(ActionType.CLICK, Point(xy[0], xy[1])) if xy else None


def unescape_model_string(s: str) -> str:
    r"""Undo the escapes the UI-TARS prompt asks for (\', \", \n, \t, \\); other backslashes
    stay literal. Never eval."""
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "'": "'", '"': '"', "\\": "\\"}
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] in simple:
            out.append(simple[s[i + 1]])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def typed_text(content: str) -> tuple[str, bool]:
    """(text, submit): a trailing newline means "press Enter" in both families."""
    submit = content.endswith("\n")
    return (content.rstrip("\n") if submit else content), submit


def split_keys(keys: Any) -> tuple[str, ...]:
    """Key names, lower case: "ctrl c", "Ctrl+C", ["ctrl", "c"] -> ("ctrl", "c")."""
    if isinstance(keys, str):
        parts = re.split(r"[\s+]+", keys.strip())
    elif isinstance(keys, (list, tuple)):
        parts = [str(k).strip() for k in keys]
    else:
        return ()
    aliases = {
        "arrowleft": "left",
        "arrowright": "right",
        "arrowup": "up",
        "arrowdown": "down",
        "return": "enter",
    }
    return tuple(aliases.get(p.lower(), p.lower()) for p in parts if p)


# ------------------------------------------------------------------ the adapter
class VlmAdapter:
    """A GroundingModel over a :class:`~adapters.backend.ChatBackend` for one model family.

    Subclasses set ``name``, ``frame``, ``default_resize``, the prompt file names and
    implement :meth:`parse_model_action` (text -> Action in model-frame numbers) and
    :meth:`_messages`. Each request resizes the image it is given to exactly what the model
    sees (``input_size``) and returns points/boxes in pixels of the given image.
    """

    name: str = "vlm"
    frame: Frame = "absolute"
    default_resize: ResizeSpec = ResizeSpec(28, 4 * 28 * 28, 16384 * 28 * 28)

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
    ):
        d = self.default_resize
        self.resize = ResizeSpec(
            factor if factor is not None else d.factor,
            min_pixels if min_pixels is not None else d.min_pixels,
            max_pixels if max_pixels is not None else d.max_pixels,
        )
        self.backend = backend
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.language = language
        self.sampling = dict(sampling or {})
        # The last few resized images, keyed by the identity of the image given: a round asks
        # several questions about one screenshot, and resizing 4K costs ~0.2 s each time.
        # Given images are treated as immutable: the core draws stars on copies.
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

    def from_model(self, x: float, y: float, given: tuple[int, int]) -> Point:
        return from_model(x, y, self.frame, given, self.input_size(given))

    def to_model(self, p: Point, given: tuple[int, int]) -> tuple[float, float]:
        return to_model(p, self.frame, given, self.input_size(given))

    def frame_note(self, model_size: tuple[int, int]) -> str:
        if self.frame == "relative":
            return (
                "Coordinates are relative: 0 to 1000 on each axis, (0,0) top-left, (1000,1000) bottom-right."
            )
        return f"Coordinates are pixels of this image, which is {model_size[0]}x{model_size[1]}."

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
            action = self.parse_model_action(text)
            if action is None:
                return None
            return action.map_points(lambda p: self.from_model(p.x, p.y, (width, height)))
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
    def _messages(self, kind: str, image: Image.Image, text_vars: dict[str, str]) -> list[Message]:
        raise NotImplementedError

    def _history_block(self, query: Query) -> str:
        if not query.history:
            return ""
        lines = "\n".join(f"{i}. {h}" for i, h in enumerate(query.history, start=1))
        return f"\n## Previous Actions\n{lines}\n"

    def _avoid_block(self, avoid: Sequence[Point], on_image: bool, given: tuple[int, int]) -> str:
        if not avoid:
            return ""
        if on_image:
            return (
                "Numbered pink stars on the screenshot mark points that were already tried and were "
                "wrong. Do not answer on or right next to a star: look for the target elsewhere.\n"
            )
        pts = ", ".join(self.fmt_point(*self.to_model(p, given)) for p in avoid)
        return (
            f"These points were already tried and were wrong: {pts}. Do not answer on or right next "
            "to any of them: look for the target elsewhere.\n"
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
        if a.keys:
            parts.append("+".join(a.keys))
        if a.direction:
            parts.append(a.direction)
        if a.text:
            parts.append(repr(a.text))
        if a.submit:
            parts.append("then press Enter")
        return f"Candidate {option.number}: " + " ".join(parts)

    # ---- the requests
    def _resize_cached(self, image: Image.Image) -> Resized:
        with self._resized_lock:
            hit = self._resized.get(id(image))
            if hit is not None and hit[0]() is image and hit[1].image.size == self.input_size(image.size):
                self._resized.move_to_end(id(image))
                return hit[1]
        r = resize_for_model(image, self.resize.factor, self.resize.min_pixels, self.resize.max_pixels)
        with self._resized_lock:
            self._resized[id(image)] = (weakref.ref(image), r)
            while len(self._resized) > 4:
                self._resized.popitem(last=False)
        return r

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

    async def _complete(self, messages: list[Message]):
        if self.backend is None:
            raise ValueError(f"{self.name}: no backend; pass backend=<ChatBackend> to get_adapter")
        return await self.backend.complete(
            messages, max_tokens=self.max_tokens, temperature=self.temperature, **self.sampling
        )

    async def act(self, image: Image.Image, query: Query, *, zoomed: bool = False) -> ModelReply:
        """The next action on ``image``; its points are in pixels of ``image``."""
        resized, ms, v = await self._prepare(image)
        v.update(instruction=query.instruction, history_block=self._history_block(query))
        v["history_inline"] = "; ".join(query.history) if query.history else "None"
        v["zoom_note"] = self._zoom_note(v) if zoomed else ""
        kind = "agent" if query.mode == "agent" else "grounding"
        resp = await self._complete(self._messages(kind, resized, v))
        action = self.parse_action(resp.text, *image.size)
        return ModelReply(resp.text, action=action, point=action.point if action else None, usage=resp.usage)

    def _zoom_note(self, v: dict[str, str]) -> str:
        raise NotImplementedError

    async def propose_point(
        self, image: Image.Image, query: Query, avoid: Sequence[Point], avoid_on_image: bool
    ) -> ModelReply:
        """A focal point in pixels of ``image``, away from ``avoid`` (stars or listed)."""
        resized, ms, v = await self._prepare(image)
        v.update(
            instruction=query.instruction,
            history_block=self._history_block(query),
            avoid_block=self._avoid_block(avoid, avoid_on_image, image.size),
        )
        resp = await self._complete(self._messages("focal", resized, v))
        action = self.parse_action(resp.text, *image.size)
        point = self.parse_point(resp.text, *image.size)
        return ModelReply(resp.text, action=action, point=point, usage=resp.usage)

    async def judge(self, image: Image.Image, query: Query, point: Point) -> ModelReply:
        """Is the starred ``point`` (pixels of ``image``) right? Sets ``verdict``."""
        resized, ms, v = await self._prepare(image)
        v.update(
            instruction=query.instruction,
            history_block=self._history_block(query),
            point=self.fmt_point(*self.to_model(point, image.size)),
        )
        resp = await self._complete(self._messages("judge", resized, v))
        return ModelReply(resp.text, verdict=parse_verdict(resp.text), usage=resp.usage)

    async def choose(self, image: Image.Image, query: Query, options: Sequence[Option]) -> ModelReply:
        """Pick an option by number; ``choice`` None when unreadable."""
        resized, ms, v = await self._prepare(image)
        starred = [o.number for o in options if o.on_image]
        stars_note = ""
        if starred:
            stars_note = (
                "Candidates drawn as numbered pink stars on the screenshot act where their star is; "
                "a star's number is its candidate's number.\n"
            )
        if any(o.action.points and not o.on_image for o in options):
            stars_note += v["frame_note"] + "\n"
        v.update(
            instruction=query.instruction,
            history_block=self._history_block(query),
            stars_note=stars_note,
            options_block="\n".join(self.describe_option(o, image.size) for o in options),
        )
        resp = await self._complete(self._messages("choose", resized, v))
        return ModelReply(
            resp.text, choice=parse_choice(resp.text, [o.number for o in options]), usage=resp.usage
        )

    async def propose_box(self, image: Image.Image, query: Query, focal: Point | None) -> ModelReply:
        """A region likely to contain the target, in pixels of ``image`` (predict-region)."""
        resized, ms, v = await self._prepare(image)
        focal_note = ""
        if focal is not None:
            focal_note = f"The target is probably near {self.fmt_point(*self.to_model(focal, image.size))}.\n"
        v.update(instruction=query.instruction, focal_note=focal_note)
        resp = await self._complete(self._messages("region", resized, v))
        box = self.parse_box(resp.text, *image.size)
        return ModelReply(resp.text, box=box, usage=resp.usage)
