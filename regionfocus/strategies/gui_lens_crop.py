"""GUI-Lens's crop loop in free text (``_iterative_zoom_locate``, Fzkuji/GUI-Agent-Harness @
23e75e0, ``gui_harness/planning/screenspot_locator.py``): each round, up to 1 +
``crop_retry_limit`` attempts on the current crop; an attempt asks for the next crop (or
``final``, or ``recrop``), checks its geometry, has the commit gate judge it
(:mod:`.gui_lens_gate`), and commits it or records why not for the next attempt's request. The
final click and its review follow (:mod:`.gui_lens_review`)."""

from __future__ import annotations

from typing import Any

from ..geometry import Point
from .gui_lens_gate import gate
from .gui_lens_geometry import Shown, area, next_box, normalize_bbox_to_display, restart_box
from .gui_lens_review import finish
from .gui_lens_sample import Sample, entry, trace_box
from .gui_lens_text import (
    IBox,
    action_of,
    candidate_lines,
    history_lines,
    quad,
    rejection_lines,
    scale_line,
    stage_guidance,
    text,
)

BACK_OUT = {"recrop", "restart", "widen", "fail"}


def crop_prompt(s: Sample, r: int, a: int, attempts: int, shown: Shown, rejected: list[dict]) -> str:
    """The crop request of round ``r``, attempt ``a``, in the config's prompt layout."""
    c = s.config
    stage = s.committed()
    lines, _ = candidate_lines(s.candidates, shown.frame, c.candidate_limit, s.instruction, c.candidate_sort)
    frame = text("crop_frame").format(
        width=s.size[0],
        height=s.size[1],
        crop=list(shown.frame.box),
        scale_line=scale_line(shown.frame.box, shown.frame),
    )
    head = text("crop_head").format(
        task=s.instruction,
        target=s.instruction,
        frame=frame,
        round=r + 1,
        rounds=c.rounds,
        attempt=a + 1,
        attempts=attempts,
        stage=stage + 1,
        guidance=stage_guidance(stage, c.staged_crop),
        history=history_lines(s.history),
        rejections=rejection_lines(rejected),
    )
    block = text("crop_candidates").format(lines=lines or "(none)")
    intro, body = text("crop_intro"), text("crop_rules")
    if s.normalized:
        body = body + "\n\n" + text("norm_crop")
    if c.prompt_layout == "legacy":
        return head + "\n\n" + intro + "\n\n" + block + "\n\n" + body
    return intro + "\n\n" + body + "\n\n" + head + "\n\n" + block + "\n\n" + text("crop_tail")


class ChatLens:
    """The official protocol, in text, for a model offering ``chat``."""

    def __init__(self, s: Sample):
        self.s = s

    async def locate(self) -> Point | None:
        s, c = self.s, self.s.config
        current: IBox = [0, 0, s.size[0], s.size[1]]
        for r in range(c.rounds):
            rejected: list[dict[str, Any]] = []
            attempts = 1 + (c.crop_retry_limit if c.crop_retry else 0)
            stop = False
            for a in range(attempts):
                done, current, stop = await self.attempt(r, a, a + 1 >= attempts, current, rejected)
                if done:
                    break
            if stop:
                break
        return await finish(s, current)

    async def attempt(
        self, r: int, a: int, last: bool, current: IBox, rejected: list[dict[str, Any]]
    ) -> tuple[bool, IBox, bool]:
        """One attempt on ``current``: (whether the round is done, the crop now, whether the
        loop stops), ``rejected`` extended with why the attempt did not commit."""
        s, c = self.s, self.s.config
        stage = s.committed()
        shown = await s.shown(current)
        attempts = 1 + (c.crop_retry_limit if c.crop_retry else 0)
        prompt = crop_prompt(s, r, a, attempts, shown, rejected)
        parsed, why = await s.ask(f"crop[r{r + 1}.{a + 1}]", shown.image, prompt)
        step = {"stage": "crop", "round": r + 1, "attempt": a + 1, "crop": trace_box(shown.frame.box)}
        if parsed is None:
            rejected.append({"action": "exception", "reason": why})
            s.ledger.step(**step, action=None, why=why)
            return False, current, False
        action = action_of(parsed)
        e = entry(r, a, action, shown, parsed)
        step["action"] = action
        if action in BACK_OUT or action not in ("crop", "final"):
            e["fallback_box"] = restart_box(current, s.history, s.size)
            reason = parsed.get("reasoning", "") if action in BACK_OUT else "invalid crop action"
            rejected.append(
                {
                    "action": action,
                    "bbox": parsed.get("bbox"),
                    "reasoning": reason,
                    "fallback_box": e["fallback_box"],
                }
            )
            s.ledger.step(**step, fallback=trace_box(e["fallback_box"]))
            if action in BACK_OUT or last:
                s.history.append(e)
                current = e["fallback_box"]
            return last, current, False
        if action == "final":
            s.ledger.step(**step)
            if c.crop_check and not any(x.get("next_box") for x in s.history):
                rejected.append(
                    {
                        "action": action,
                        "bbox": parsed.get("bbox"),
                        "reasoning": "final requested before any committed crop",
                    }
                )
                if not last:
                    return False, current, False
            s.history.append(e)
            return True, current, True
        return await self.propose(r, a, last, current, rejected, shown, parsed, e, step, stage)

    async def propose(
        self,
        r: int,
        a: int,
        last: bool,
        current: IBox,
        rejected: list[dict[str, Any]],
        shown: Shown,
        parsed: dict[str, Any],
        e: dict[str, Any],
        step: dict[str, Any],
        stage: int,
    ) -> tuple[bool, IBox, bool]:
        """A ``crop`` answer: its geometry, the gate, and the commit."""
        s, c = self.s, self.s.config
        bbox = quad(parsed.get("bbox"))
        if bbox is not None and shown.frame.sx < 1.0:
            bbox = normalize_bbox_to_display(bbox, shown.frame)
            parsed = {**parsed, "bbox": bbox}
        nxt = next_box(bbox, shown.frame, s.size, c, stage) if bbox is not None else None
        if nxt is None:
            e["rejected_next_box"] = parsed.get("bbox")
            rejected.append(
                {"action": "crop", "bbox": parsed.get("bbox"), "reasoning": "bbox failed geometric checks"}
            )
            s.ledger.step(**step, proposal=parsed.get("bbox"), next=None)
            if not last:
                return False, current, False
            s.history.append(e)
            return True, restart_box(current, s.history, s.size), False
        if s.check_now(r):
            verdict = await gate(s, r, a, stage, shown, bbox, nxt, parsed)
            e["crop_check"] = verdict
            if verdict["action"] != "accept":
                rejected.append(
                    {
                        "action": "crop_check_reject",
                        "bbox": parsed.get("bbox"),
                        "reasoning": verdict.get("reasoning", "crop check rejected crop"),
                    }
                )
                s.ledger.step(**step, proposal=bbox, next=trace_box(nxt), gate=verdict)
                if not last:
                    return False, current, False
                s.history.append(e)
                full = c.crop_check_reject_mode == "restart_full"
                return (
                    True,
                    [0, 0, s.size[0], s.size[1]] if full else restart_box(current, s.history, s.size),
                    False,
                )
        e["next_box"] = nxt
        e["area_fraction"] = round(area(nxt) / area(shown.frame.box), 4) if area(shown.frame.box) else 1.0
        s.history.append(e)
        s.ledger.step(**step, proposal=bbox, next=trace_box(nxt), gate=e.get("crop_check"))
        narrow = nxt[2] - nxt[0] <= c.min_width or nxt[3] - nxt[1] <= c.min_height
        return True, nxt, narrow
