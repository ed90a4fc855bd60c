"""The built-in OCR stand-in: an offline agent that needs no GPU and no downloads (rapidocr 3.x,
PP-OCRv6 small models shipped in the wheel), and is not a model: fixed rules over OCR lines
implement the whole :class:`regionfocus.model.GroundingModel`, for trying the pipeline and for
tests. Its numbers say what RegionFocus does for a reader with a pixel budget, not what a VLM
scores.

Like a VLM, it sees every image through a pixel budget: an image larger than ``budget`` pixels
is downscaled (aspect ratio kept) before OCR, so small text on a 4K screenshot becomes
unreadable, and the zoomed views RegionFocus cuts read it again. That budget is the thing
RegionFocus exists to beat, which makes this agent a deterministic stand-in for a VLM.

A live task's multi-step instruction (type into that field then click that button, select from
a list) is followed through the shared plan (:mod:`.task_plan`: its generic reading, or the
``task_grammar`` a benchmark's runner supplies) over what the agent reads: its lines and the
controls detected over them (:mod:`.ocr_items`). A goal it cannot read at the budget is no
action, which is RegionFocus's cue to zoom.

Frames: OCR runs on the *budget* image; every point or box this module returns is in pixels of
the image it was given (the budget scale undone).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from regionfocus.a11y.elements import union_box
from regionfocus.actions import Action, ActionType
from regionfocus.adapters.agents.ocr_items import ControlCache, screen_items
from regionfocus.adapters.agents.ocr_seen import BudgetArrays, Seen, SeenCache, grow_box, unread_ink_peak
from regionfocus.adapters.agents.task_plan import (
    Plan,
    ScreenItem,
    TaskGrammar,
    current_goal,
    goal_element,
    next_step,
    plan_of,
)
from regionfocus.adapters.perception.ocr_engine import EnginePool, require_engine, usable_cores
from regionfocus.adapters.perception.ocr_text import (
    Match,
    ParsedInstruction,
    TextLine,
    best_matches,
    echo_lines,
    fraction,
    parse_instruction,
    text_lines,
    token_overlap,
)
from regionfocus.geometry import Point, box_around
from regionfocus.model import Avoid, ModelReply, Option, Query, Usage, Verdict
from regionfocus.stars import star_extent, star_radius

DEFAULT_BUDGET = 1_000_000  # px; about what a 7B VLM sees of a screenshot (~1280x768)

_KIND_TO_ACTION = {
    "click": ActionType.CLICK,
    "double_click": ActionType.DOUBLE_CLICK,
    "right_click": ActionType.RIGHT_CLICK,
    "type": ActionType.TYPE,
}


def budget_size(size: tuple[int, int], budget: int) -> tuple[int, int]:
    """(W, H) after fitting ``size`` into ``budget`` pixels, aspect kept; never upscales."""
    w, h = size
    if w * h <= budget:
        return w, h
    s = math.sqrt(budget / (w * h))
    return max(1, math.floor(w * s)), max(1, math.floor(h * s))


class OcrAgent:
    """A deterministic OCR stand-in for a model, behind the model protocol.

    ``budget``: pixels the agent sees of any image. Options: ``act_threshold`` (a match must
    score this to be acted on), ``judge_threshold`` (a starred point must match this well to be
    accepted; stricter than acting, as a model checking its own answer should be),
    ``partial_threshold`` (weaker matches still count as focal evidence), ``min_conf`` (OCR
    lines below this confidence count as unreadable), ``cache_size`` (reads remembered: a
    screenshot and the views cut from it, shared by every target on that screenshot),
    ``threads`` (onnxruntime threads per OCR call; default 1), ``engines`` (OCR calls that run
    at once, process-wide; default: usable cores / threads), ``task_grammar`` (how a live task's
    instruction becomes a plan, :data:`~.task_plan.TaskGrammar`; None: the generic reading; a
    harness sets the attribute per task for its benchmark's wording).
    """

    name = "ocr"

    def __init__(
        self,
        budget: int = DEFAULT_BUDGET,
        *,
        act_threshold: float = 0.75,
        judge_threshold: float = 0.8,
        partial_threshold: float = 0.6,
        min_conf: float = 0.3,
        cache_size: int = 32,
        threads: int | None = None,
        engines: int | None = None,
        task_grammar: TaskGrammar | None = None,
    ):
        require_engine()
        if int(budget) < 1024:
            raise ValueError(f"ocr budget must be at least 1024 pixels, got {budget!r}")
        self.act_threshold = fraction("ocr", "act_threshold", act_threshold)
        self.judge_threshold = fraction("ocr", "judge_threshold", judge_threshold)
        self.partial_threshold = fraction("ocr", "partial_threshold", partial_threshold)
        self.min_conf = fraction("ocr", "min_conf", min_conf)
        self.budget = int(budget)
        for label, n in (("threads", threads), ("engines", engines)):
            if n is not None and int(n) < 1:
                raise ValueError(f"ocr {label} must be at least 1, got {n!r}")
        self.threads = int(threads or 1)
        self.engines = int(engines or max(1, usable_cores() // self.threads))
        self.cache = SeenCache(cache_size)
        self.arrays = BudgetArrays()
        self.controls = ControlCache()
        self.task_grammar = task_grammar

    # ------------------------------------------------------------------ seeing
    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        return budget_size(size, self.budget)

    def image_tokens(self, size: tuple[int, int]) -> int:
        """No vision tokens: OCR is not a transformer (its cost is CPU time, in the latency)."""
        return 0

    def _budget_array(self, image: Image.Image) -> np.ndarray:
        return self.arrays.get(image, self._resize)

    def _resize(self, image: Image.Image) -> np.ndarray:
        rgb = image.convert("RGB")
        target = self.input_size(rgb.size)
        if target != rgb.size:
            # Bicubic with antialiasing, as the Qwen-VL image processors resize.
            rgb = rgb.resize(target, Image.Resampling.BICUBIC)
        return np.asarray(rgb, dtype=np.uint8)

    def _see(self, image: Image.Image, array: np.ndarray | None = None, through_stars: bool = False) -> Seen:
        """OCR of ``image`` through the budget, read once per budget image (its bytes and the
        given size are the key) while the cache keeps it."""
        if array is None:
            array = self._budget_array(image)
        key = hashlib.blake2b(array.tobytes(), digest_size=16).hexdigest() + f"/{image.size}"

        def read() -> Seen:
            t0 = time.perf_counter()
            lines = EnginePool.get(self.threads, self.engines).read(array)
            return Seen(image.size, array, lines, through_stars, ocr_s=time.perf_counter() - t0)

        return self.cache.get(key, read)

    def _see_starred(self, image: Image.Image, points: Sequence[Point]) -> Seen:
        """What the agent reads of a screen annotated with stars at ``points``.

        A star covers the very text it marks. When the agent has already seen this screen
        without stars (the same budget image except around the stars), it reads that one, as
        a VLM whose requests of one round share the clean screenshot as a cached prefix would; the
        stars then only say where to look. Otherwise it reads the annotated image itself.
        Either way it reads at the budget resolution.
        """
        array = self._budget_array(image)
        if points:
            base = self._clean_base(image.size, array, points)
            if base is not None:
                return base
        return self._see(image, array, through_stars=bool(points))

    def _clean_base(self, size: tuple[int, int], array: np.ndarray, points: Sequence[Point]) -> Seen | None:
        h, w = array.shape[:2]
        sx, sy = size[0] / w, size[1] / h
        # Where the stars may have drawn (star, tag, leader, a crowd's inset and its frame), in
        # budget pixels with a margin for the resize: the only pixels allowed to differ.
        drawn = np.zeros((h, w), dtype=bool)
        for b in star_extent(size, points):
            drawn[
                max(0, math.floor(b.top / sy) - 2) : max(0, math.ceil(b.bottom / sy) + 3),
                max(0, math.floor(b.left / sx) - 2) : max(0, math.ceil(b.right / sx) + 3),
            ] = True
        cands = [s for s in self.cache.recent() if s.size == size and s.array.shape == array.shape]
        cands.sort(key=lambda s: s.through_stars)  # stable: clean reads first, most recent first
        for seen in cands:
            # Every 8th pixel first: a different screen is rejected without the full diff.
            if all(
                self._differs_only_where(seen.array[::s, ::s], array[::s, ::s], drawn[::s, ::s])
                for s in (8, 1)
            ):
                return seen
        return None

    @staticmethod
    def _differs_only_where(a: np.ndarray, b: np.ndarray, allowed: np.ndarray) -> bool:
        """True when every pixel where ``a`` and ``b`` differ is an ``allowed`` one."""
        diff = np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=2) > 24
        return not bool((diff & ~allowed).any())

    async def _look(self, image: Image.Image, points: Sequence[Point] = ()) -> Seen:
        return await asyncio.to_thread(self._see_starred, image, list(points))

    def _readable(self, seen: Seen) -> list[TextLine]:
        return [ln for ln in seen.lines if ln.conf >= self.min_conf]

    def _candidates(
        self, seen: Seen, instruction: str, parsed: ParsedInstruction
    ) -> tuple[list[TextLine], int]:
        """Readable lines that may hold the target: lines echoing the instruction itself are left
        out (``ocr_text.echo_lines``); also returns how many were."""
        readable = self._readable(seen)
        echo = echo_lines(instruction, parsed, readable)
        return [ln for i, ln in enumerate(readable) if i not in echo], len(echo)

    # ------------------------------------------------------------------ protocol
    async def act(self, image: Image.Image, query: Query, *, zoomed: bool = False) -> ModelReply:
        """The best match's centre as a click (or a typed value for enter/type instructions);
        ``action=None`` when nothing matches well enough (RegionFocus's no-action trigger)."""
        t0 = time.perf_counter()
        if (
            plan := plan_of(query, self.task_grammar)
        ) is not None:  # a multi-step task: the current goal's action
            items = await asyncio.to_thread(self._items, await self._look(image))
            why, action = next_step(plan, query, items, self.act_threshold)
            point = action.point if action else None
            return self._reply(why, t0, Usage(endpoint="ocr"), action=action, point=point)
        parsed = parse_instruction(query.instruction)
        seen = await self._look(image)
        usage = Usage(latency_s=0.0, endpoint="ocr")
        if parsed.kind == "type" and not parsed.target:
            action = Action(ActionType.TYPE, text=parsed.value)
            return self._reply(f"type({parsed.value!r}) (no field named)", t0, usage, action=action)
        if not parsed.target:
            return self._reply(f"no target phrase in instruction {query.instruction!r}", t0, usage)
        lines, echoes = self._candidates(seen, query.instruction, parsed)
        matches = best_matches(parsed, lines)
        best = matches[0] if matches else None
        if best is None or best.score < self.act_threshold:
            near = f'; best "{best.text}" score={best.score:.2f}' if best else ""
            skipped = f"; {echoes} echoing the instruction ignored" if echoes else ""
            return self._reply(
                f'no text matching "{parsed.target}" (read {len(seen.lines)} lines{near}{skipped})', t0, usage
            )
        point = seen.to_image(best.box.center)
        extras = {
            "score": round(best.score, 4),
            "matched": best.text,
            "target": parsed.target,
            "zoomed": zoomed,
        }
        action = Action(_KIND_TO_ACTION[parsed.kind], point, text=parsed.value, extras=extras)
        verb = parsed.kind if parsed.kind != "type" else f"type({parsed.value!r}) at"
        text = f'{verb}({point.x:.0f},{point.y:.0f}) "{best.text}" score={best.score:.2f}'
        return self._reply(text, t0, usage, action=action, point=point)

    async def propose_point(
        self, image: Image.Image, query: Query, avoid: Avoid, *, temperature: float | None = None
    ) -> ModelReply:
        """The best partial evidence away from ``avoid``: a weaker match, else the densest patch of
        small marks the OCR could not read (small text is where an unread target hides), else a
        line sharing a word with the target, else the image centre. Deterministic: ``temperature``
        is ignored."""
        t0 = time.perf_counter()
        parsed = parse_instruction(query.instruction)
        seen = await self._look(image, avoid.points if avoid.on_image else ())
        if (plan := plan_of(query, self.task_grammar)) is not None:
            point, why = await asyncio.to_thread(self._plan_focus, seen, query, plan, list(avoid))
        else:
            point, why = self._evidence(seen, query.instruction, parsed, list(avoid))
        return self._reply(
            f"focus({point.x:.0f},{point.y:.0f}) {why}", t0, Usage(endpoint="ocr"), point=point
        )

    async def judge(self, image: Image.Image, query: Query, point: Point) -> ModelReply:
        """YES when the text under the star matches the target at least ``judge_threshold``;
        NO when it reads something else there, or nothing."""
        t0 = time.perf_counter()
        parsed = parse_instruction(query.instruction)
        seen = await self._look(image, [point])
        usage = Usage(endpoint="ocr")
        if (plan := plan_of(query, self.task_grammar)) is not None:
            e = await asyncio.to_thread(self._goal_item, seen, query, plan)
            if e is not None and grow_box(e.box, 2.0).contains(point):
                return self._reply(
                    f'YES: the star is on {e.role} "{e.label}"', t0, usage, verdict=Verdict.YES
                )
            what = f'{e.role} "{e.label}"' if e is not None else "not in sight"
            return self._reply(
                f"NO: the star is not on the goal's element ({what})", t0, usage, verdict=Verdict.NO
            )
        m, here = self._evidence_at(seen, query.instruction, parsed, point)
        if m is not None and m.score >= self.judge_threshold:
            return self._reply(
                f'YES: the star is on "{m.text}" (score={m.score:.2f})', t0, usage, verdict=Verdict.YES
            )
        if here:
            what = f'"{here}"' + (f' (best match "{m.text}" score={m.score:.2f})' if m else "")
            return self._reply(
                f'NO: the star is on {what}, not "{parsed.target}"', t0, usage, verdict=Verdict.NO
            )
        return self._reply("NO: no readable text at the star", t0, usage, verdict=Verdict.NO)

    async def choose(
        self, image: Image.Image, query: Query, options: Sequence[Option], *, retry: int = 0
    ) -> ModelReply:
        """The option with the best evidence at its point; ties go to the lowest number. With no
        evidence at any option it says so and leaves ``choice`` None (the core then applies its
        documented rule: the candidate most views agreed on). Deterministic: a retry is answered
        the same way."""
        t0 = time.perf_counter()
        parsed = parse_instruction(query.instruction)
        starred = [o.action.point for o in options if o.on_image and o.action.point is not None]
        seen = await self._look(image, starred)
        plan = plan_of(query, self.task_grammar)
        goal = await asyncio.to_thread(self._goal_item, seen, query, plan) if plan is not None else None
        scored = []
        for o in sorted(options, key=lambda o: o.number):
            a = o.action
            if plan is not None:  # on the current goal's element, or not
                s = 1.0 if goal is not None and a.point is not None and goal.box.contains(a.point) else 0.0
            elif a.point is not None:
                m, _ = self._evidence_at(seen, query.instruction, parsed, a.point)
                s = m.score if m else 0.0
            else:
                # A pointless typed value is right only if it is the value asked for.
                s = (
                    0.5
                    if (parsed.kind == "type" and a.type == ActionType.TYPE and a.text == parsed.value)
                    else 0.0
                )
            scored.append((o.number, s))
        detail = ", ".join(f"{n}:{s:.2f}" for n, s in scored)
        usage = Usage(endpoint="ocr")
        if not scored or max(s for _, s in scored) <= 0.0:
            return self._reply(f"cannot tell the options apart ({detail})", t0, usage)
        best = max(scored, key=lambda ns: (ns[1], -ns[0]))
        return self._reply(f"choice {best[0]} ({detail})", t0, usage, choice=best[0])

    async def propose_box(self, image: Image.Image, query: Query, focal: Point | None) -> ModelReply:
        """A box around the best evidence (a 0.3 x 0.3 region of the image, the paper's
        smallest fixed box, centred on the evidence; or the matched line, padded, if larger)."""
        t0 = time.perf_counter()
        parsed = parse_instruction(query.instruction)
        seen = await self._look(image)
        if focal is not None:
            point, why = focal, "at the focal point"
        elif (plan := plan_of(query, self.task_grammar)) is not None:
            point, why = await asyncio.to_thread(self._plan_focus, seen, query, plan, [])
        else:
            point, why = self._evidence(seen, query.instruction, parsed, [])
        w, h = image.size
        box = box_around(point, 0.3 * w, 0.3 * h, (w, h))
        text = f"box({box.left:.0f},{box.top:.0f},{box.right:.0f},{box.bottom:.0f}) {why}"
        return self._reply(text, t0, Usage(endpoint="ocr"), box=box)

    # ------------------------------------------------------------------ a multi-step plan
    def _items(self, seen: Seen) -> list[ScreenItem]:
        """The read lines and the controls detected over them, for the plan resolver."""
        lines = text_lines(self._readable(seen))
        return screen_items(seen, lines, self.controls.get(seen, lines))

    def _goal_item(self, seen: Seen, query: Query, plan: Plan) -> ScreenItem | None:
        return goal_element(plan, query, self._items(seen), self.act_threshold)

    def _plan_focus(self, seen: Seen, query: Query, plan: Plan, avoid: list[Point]) -> tuple[Point, str]:
        """The current goal's element; when it is not in sight, the evidence for its name (or,
        for an unnamed one, the unread marks where a zoomed view may show it)."""
        items = self._items(seen)
        e = goal_element(plan, query, items, self.act_threshold)
        if e is not None:
            return e.box.center, f'{e.role} "{e.label}"'
        cur = None if plan.cannot else current_goal(plan, query.turns)
        target = cur[1].target if cur is not None else ""
        variants = (cur[1].variants or ((target, 1.0),)) if cur is not None and target else ()
        p, why = self._evidence(
            seen, query.instruction, ParsedInstruction("click", target, "", variants), avoid
        )
        if why.startswith("no evidence") and items:  # the page's middle, not the empty screen's
            return union_box(s.box for s in items).center, "no evidence: the middle of what is read"
        return p, why

    # ------------------------------------------------------------------ evidence
    def _evidence_at(
        self, seen: Seen, instruction: str, parsed: ParsedInstruction, point: Point
    ) -> tuple[Match | None, str]:
        """The best match among the text at ``point`` (given-image pixels), and what is read
        there. "At" means inside a line's box grown by half a line height, so a point on a
        label's padding still counts; only the matched part of a line counts for the match.
        A line echoing the instruction is read but never matched."""
        if not parsed.variants:
            return None, ""
        p = seen.to_budget(point)
        readable = self._readable(seen)
        echo = echo_lines(instruction, parsed, readable)
        near, echoed = [], []
        for i, ln in enumerate(readable):
            pad = 0.5 * ln.box.height + 1.0
            if grow_box(ln.box, pad).contains(p):
                (echoed if i in echo else near).append(ln)
        if not near:
            return None, " | ".join(f"{ln.text} (the instruction)" for ln in echoed)
        here = " | ".join(ln.text for ln in near)
        best = None
        for m in best_matches(parsed, near):
            pad = 0.5 * m.box.height + 1.0
            if grow_box(m.box, pad).contains(p) and (best is None or m.score > best.score):
                best = m
        if best is None:  # the point is on the line but off the matched words
            ms = best_matches(parsed, near)
            best = ms[0] if ms else None
            if best is not None:
                best = Match(best.line, best.score * 0.5, best.similarity, best.text, best.box)
        return best, here

    def _evidence(
        self, seen: Seen, instruction: str, parsed: ParsedInstruction, avoid: list[Point]
    ) -> tuple[Point, str]:
        w, h = seen.size
        keep_out = 1.5 * star_radius((w, h))

        def free(p: Point) -> bool:
            return all(p.distance(a) > keep_out for a in avoid)

        readable = self._readable(seen)
        lines, _ = self._candidates(seen, instruction, parsed)
        for m in best_matches(parsed, lines) if parsed.variants else []:
            if m.score < self.partial_threshold:
                break
            p = seen.to_image(m.box.center)
            if free(p):
                return p, f'partial match "{m.text}" score={m.score:.2f}'
        ink = unread_ink_peak(seen, readable, avoid, keep_out)
        if ink is not None:
            return ink, "densest unreadable small text"
        overlaps = [(token_overlap(parsed.target, ln), ln) for ln in lines] if parsed.target else []
        for ov, ln in sorted(overlaps, key=lambda t: (-t[0], t[1].box.top, t[1].box.left)):
            p = seen.to_image(ln.box.center)
            if ov > 0 and free(p):
                return p, f'shares a word with "{ln.text}"'
        centre = Point(w / 2, h / 2)
        if free(centre):
            return centre, "no evidence: image centre"
        # Every fallback is taken: the point of a coarse grid farthest from the stars.
        grid = [Point(w * (i + 0.5) / 4, h * (j + 0.5) / 4) for j in range(4) for i in range(4)]
        far = max(grid, key=lambda g: (min(g.distance(a) for a in avoid), -g.y, -g.x))
        return far, "no evidence: away from the stars"

    def _reply(self, text: str, t0: float, usage: Usage, **fields: Any) -> ModelReply:
        """A reply with ``fields`` (action, point, verdict, choice, box) and the time since ``t0``."""
        usage.latency_s = time.perf_counter() - t0
        return ModelReply(text, usage=usage, **fields)
