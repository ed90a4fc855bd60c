"""The built-in accessibility stand-in: an offline agent that needs no GPU and no weights, and
is not a model. It reads the page's accessibility tree instead of pixels and implements the
whole :class:`regionfocus.model.GroundingModel` with fixed rules, for trying the pipeline and for
tests.

It picks the element whose accessible name best matches the instruction (the OCR agent's
instruction reading and fuzzy matcher, :mod:`regionfocus.adapters.perception.ocr_text`, over element names instead of
OCR lines) and clicks its centre. Lines that merely repeat the instruction (a task page may
print it) are left out, and controls win ties over static text. A live task's multi-step
instruction is read by :mod:`.task_plan`: its generic reading, or the ``task_grammar`` a
benchmark's runner supplies for its own wording.

It cannot see pixels, so it must be handed the tree of the screen it is asked about:
``agent.set_elements(elements, size)`` with the elements of the current screen (boxes in pixels
of the screenshot of ``size`` = (W, H)), once per observation, before any request about that
screen. Every image it is then given is read through that tree: the full screenshot as is, a
zoomed view through ``query.view`` (the view's own transform, so points come back in view
pixels as the protocol requires), any other image of a different size by plain scaling.

Frames: every point or box returned is in pixels of the image given, like every adapter.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from PIL import Image

from regionfocus.a11y import A11yElement, normalize_space
from regionfocus.actions import Action, ActionType
from regionfocus.adapters.perception.ocr_text import (
    Match,
    ParsedInstruction,
    TextLine,
    best_matches,
    echo_lines,
    fold,
    fraction,
    parse_instruction,
)
from regionfocus.geometry import Box, Point, box_around
from regionfocus.model import Avoid, ModelReply, Option, Query, Usage, Verdict

from .task_plan import ScreenItem, TaskGrammar, goal_element, next_step, plan_of

_KIND_TO_ACTION = {
    "click": ActionType.CLICK,
    "double_click": ActionType.DOUBLE_CLICK,
    "right_click": ActionType.RIGHT_CLICK,
    "type": ActionType.TYPE,
}
# What an instruction calls an icon, and the accessible name the icon carries instead.
ICON_NAMES = {"x": "close", "×": "close", "✕": "close", "+": "add", "...": "more", "⋮": "more", "☰": "menu"}
# Static text loses this fraction against a control with the same name.
STATIC_PENALTY = 0.97


class A11yAgent:
    """Grounding by accessible names. ``act_threshold``: a match must score this to be acted on;
    ``judge_threshold``: an element under a judged point must match this well; ``partial_threshold``:
    weaker matches still serve as focal evidence; ``task_grammar``: how a live task's instruction
    becomes a plan (:data:`~.task_plan.TaskGrammar`; None: the generic reading). A harness sets
    the attribute per task for its benchmark's wording."""

    name = "a11y"

    def __init__(
        self,
        act_threshold: float = 0.75,
        judge_threshold: float = 0.8,
        partial_threshold: float = 0.5,
        *,
        task_grammar: TaskGrammar | None = None,
    ):
        self.act_threshold = fraction("a11y", "act_threshold", act_threshold)
        self.judge_threshold = fraction("a11y", "judge_threshold", judge_threshold)
        self.partial_threshold = fraction("a11y", "partial_threshold", partial_threshold)
        self.task_grammar = task_grammar
        self._elements: tuple[A11yElement, ...] = ()
        self._size: tuple[int, int] | None = None

    # ------------------------------------------------------------------ the tree
    def set_elements(self, elements: Sequence[A11yElement], size: tuple[int, int]) -> None:
        """The current screen's tree; boxes in pixels of its screenshot of ``size`` = (W, H)."""
        if len(size) != 2 or size[0] <= 0 or size[1] <= 0:
            raise ValueError(f"a11y screen size must be (W, H) > 0, got {size!r}")
        self._elements = tuple(elements)
        self._size = (int(size[0]), int(size[1]))

    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        return size

    def _lines(
        self, image: Image.Image, query: Query, unlabeled: bool = False
    ) -> tuple[list[TextLine], list[A11yElement]]:
        """The visible labelled elements as lines in pixels of ``image``, and the elements (with
        ``unlabeled``, nameless controls too: an empty text field). The tree comes with the
        query (``query.elements``: a live loop passes each screen's) or from :meth:`set_elements`."""
        elements = tuple(query.elements) or self._elements
        # A query's tree is in pixels of the screenshot the query is about: ``image`` itself,
        # unless the request is about a view of it.
        size = image.size if query.elements else self._size
        if size is None or not elements:
            return [], []
        w, h = image.size
        if query.view is not None:
            to_img = query.view.screen_to_view
        elif image.size == size:
            to_img = None
        else:
            sx, sy = w / size[0], h / size[1]

            def to_img(p: Point) -> Point:
                return Point(p.x * sx, p.y * sy)

        lines, els = [], []
        for e in elements:
            label = normalize_space(e.label)
            if (
                not (label or (unlabeled and e.interactive))
                or not e.visible
                or e.box is None
                or e.box.area <= 0
            ):
                continue
            b = e.box
            if to_img is not None:
                a, c = to_img(Point(b.left, b.top)), to_img(Point(b.right, b.bottom))
                b = Box(a.x, a.y, c.x, c.y)
            centre = b.center
            if not (0 <= centre.x < w and 0 <= centre.y < h):
                continue
            lines.append(TextLine(label, 1.0, b))
            els.append(e)
        return lines, els

    def _matches(
        self, parsed: ParsedInstruction, instruction: str, lines: list[TextLine], els: list[A11yElement]
    ) -> list[tuple[float, Match, A11yElement]]:
        """Every element's best match, best first; echoes of the instruction left out. The
        element's whole box is where it is clicked, not the matched words' share of it."""
        parsed = _with_icon_names(parsed)
        if not parsed.variants:
            return []
        echo = echo_lines(instruction, parsed, lines)
        keep = [i for i in range(len(lines)) if i not in echo]
        sub = [lines[i] for i in keep]
        out = []
        for m in best_matches(parsed, sub):
            e = els[keep[m.line]]
            score = m.score * (1.0 if e.interactive else STATIC_PENALTY)
            out.append((score, m, e))
        out.sort(key=lambda t: (-round(t[0], 6), t[1].box.top, t[1].box.left))
        return out

    # ------------------------------------------------------------------ protocol
    async def act(self, image: Image.Image, query: Query, *, zoomed: bool = False) -> ModelReply:
        """A click at the centre of the best-matching element (a typed value at it for type
        instructions); ``action=None`` when nothing matches well enough."""
        t0 = time.perf_counter()
        if (plan := plan_of(query, self.task_grammar)) is not None:
            why, action = next_step(plan, query, self._items(image, query), self.act_threshold)
            return self._reply(why, t0, action=action, point=action.point if action else None)
        parsed = parse_instruction(query.instruction)
        if parsed.kind == "type" and not parsed.target:
            return self._reply(
                f"type({parsed.value!r})", t0, action=Action(ActionType.TYPE, text=parsed.value)
            )
        if self._size is None and not query.elements:
            return self._reply("no accessibility tree was given (query.elements or set_elements)", t0)
        lines, els = self._lines(image, query)
        ranked = self._matches(parsed, query.instruction, lines, els)
        if not ranked or ranked[0][0] < self.act_threshold:
            near = f'; best "{ranked[0][1].text}" score={ranked[0][0]:.2f}' if ranked else ""
            return self._reply(f'no element named like "{parsed.target}" ({len(lines)} elements{near})', t0)
        score, m, e = ranked[0]
        point = lines[els.index(e)].box.center
        extras = {"score": round(score, 4), "matched": e.label, "role": e.role, "zoomed": zoomed}
        action = Action(_KIND_TO_ACTION[parsed.kind], point, text=parsed.value, extras=extras)
        return self._reply(
            f'{parsed.kind}({point.x:.0f},{point.y:.0f}) [{e.role}] "{e.label}" score={score:.2f}',
            t0,
            action=action,
            point=point,
        )

    def _items(self, image: Image.Image, query: Query) -> list[ScreenItem]:
        """The screen as the shared plan resolver reads it: every visible element, nameless
        controls included."""
        lines, els = self._lines(image, query, unlabeled=True)
        return [
            ScreenItem(ln.text, ln.box, e.role, e.attributes, e.interactive)
            for ln, e in zip(lines, els, strict=True)
        ]

    async def propose_point(
        self, image: Image.Image, query: Query, avoid: Avoid, *, temperature: float | None = None
    ) -> ModelReply:
        """The best match at least ``partial_threshold`` whose centre is not within 8 px of an
        ``avoid`` point, else the image centre. Deterministic."""
        t0 = time.perf_counter()
        if (plan := plan_of(query, self.task_grammar)) is not None:
            e = goal_element(plan, query, self._items(image, query), self.act_threshold)
            p = e.box.center if e is not None else Point(image.size[0] / 2, image.size[1] / 2)
            return self._reply(f"focus({p.x:.0f},{p.y:.0f}) {e.label if e else 'image centre'}", t0, point=p)
        parsed = parse_instruction(query.instruction)
        lines, els = self._lines(image, query)
        for score, _, e in self._matches(parsed, query.instruction, lines, els):
            if score < self.partial_threshold:
                break
            p = lines[els.index(e)].box.center
            if all(p.distance(a) > 8.0 for a in avoid):
                return self._reply(f'focus({p.x:.0f},{p.y:.0f}) "{e.label}" score={score:.2f}', t0, point=p)
        p = Point(image.size[0] / 2, image.size[1] / 2)
        return self._reply(f"focus({p.x:.0f},{p.y:.0f}) no evidence: image centre", t0, point=p)

    def _score_at(self, image: Image.Image, query: Query, point: Point) -> tuple[float, str | None]:
        """How well the element under ``point`` is named like the target, and its name."""
        # In a plan: is the point on the current goal's element?
        if (plan := plan_of(query, self.task_grammar)) is not None:
            e = goal_element(plan, query, self._items(image, query), self.act_threshold)
            return (1.0, e.label or e.role) if e is not None and e.box.contains(point) else (0.0, None)
        parsed = _with_icon_names(parse_instruction(query.instruction))
        lines, els = self._lines(image, query)
        under = [(ln, e) for ln, e in zip(lines, els, strict=True) if ln.box.contains(point)]
        if not under:
            return 0.0, None
        under.sort(key=lambda le: (-le[1].paint_order, le[0].box.area))
        best = (0.0, under[0][1].label)
        for ln, e in under:
            for m in best_matches(parsed, [ln]):
                s = m.score * (1.0 if e.interactive else STATIC_PENALTY)
                if s > best[0]:
                    best = (s, e.label)
        return best

    async def judge(self, image: Image.Image, query: Query, point: Point) -> ModelReply:
        """YES when an element under ``point`` is named like the target (``judge_threshold``)."""
        t0 = time.perf_counter()
        score, name = self._score_at(image, query, point)
        if name is not None and score >= self.judge_threshold:
            return self._reply(f'YES: the point is on "{name}" ({score:.2f})', t0, verdict=Verdict.YES)
        what = f'"{name}"' if name is not None else "no element"
        return self._reply(f"NO: the point is on {what}", t0, verdict=Verdict.NO)

    async def choose(
        self, image: Image.Image, query: Query, options: Sequence[Option], *, retry: int = 0
    ) -> ModelReply:
        """The option whose point lies on the best-named element; ties go to the lowest number;
        ``choice`` None when no option lies on a matching element."""
        t0 = time.perf_counter()
        scored = []
        for o in sorted(options, key=lambda o: o.number):
            s = self._score_at(image, query, o.action.point)[0] if o.action.point is not None else 0.0
            scored.append((o.number, s))
        detail = ", ".join(f"{n}:{s:.2f}" for n, s in scored)
        if not scored or max(s for _, s in scored) <= 0.0:
            return self._reply(f"cannot tell the options apart ({detail})", t0)
        best = max(scored, key=lambda ns: (ns[1], -ns[0]))
        return self._reply(f"choice {best[0]} ({detail})", t0, choice=best[0])

    async def propose_box(self, image: Image.Image, query: Query, focal: Point | None) -> ModelReply:
        """A 0.3 x 0.3 box of the image around ``focal``, else around the best match."""
        t0 = time.perf_counter()
        point = focal
        if point is None:
            point = (await self.propose_point(image, query, Avoid(on_image=False))).point
        w, h = image.size
        box = box_around(point, 0.3 * w, 0.3 * h, (w, h))
        return self._reply(f"box({box.left:.0f},{box.top:.0f},{box.right:.0f},{box.bottom:.0f})", t0, box=box)

    def _reply(self, text: str, t0: float, **fields) -> ModelReply:
        return ModelReply(text, usage=Usage(latency_s=time.perf_counter() - t0, endpoint="a11y"), **fields)


def _with_icon_names(parsed: ParsedInstruction) -> ParsedInstruction:
    """Adds the accessible name of an icon the instruction names by its glyph ("the x")."""
    extra = [(ICON_NAMES[fold(t)], f * 0.98) for t, f in parsed.variants if fold(t) in ICON_NAMES]
    if not extra:
        return parsed
    return replace(parsed, variants=(*parsed.variants, *extra))
