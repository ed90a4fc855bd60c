"""GUI-Lens's steps for a model that only grounds (no free-text ``chat``: the OCR agent): the
crop request becomes ``propose_box`` on the crop, the gate ``act`` in the proposed crop
(accepted when it finds a point), the final click ``act``, the review ``judge`` of the click then
``act`` on the next wider crop when the judge says no. Hints are text, so unused; a request
already refused is not sent again (the same request gets the same answer)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..geometry import Point
from ..model import Query, Verdict
from ..stars import mark_for_model
from .base import reply_point
from .gui_lens_geometry import Shown, area, clamp, click_boxes, next_box, restart_box
from .gui_lens_sample import Sample, entry, keep_best, trace_box
from .gui_lens_text import IBox


class GroundLens:
    def __init__(self, s: Sample):
        self.s = s

    def query(self, shown: Shown) -> Query:
        return Query(self.s.instruction, view=shown.transform)

    async def locate(self) -> Point | None:
        s, c = self.s, self.s.config
        current: IBox = [0, 0, s.size[0], s.size[1]]
        refused: set[tuple[tuple[int, ...], int]] = set()  # (crop, stage) whose proposal failed
        for r in range(c.rounds):
            stage = s.committed()
            if (tuple(clamp(current, *s.size)), stage) in refused:
                s.ledger.note(
                    "the crop loop ended early: its next request was one already refused "
                    "(the same request gets the same answer)"
                )
                break
            current, stop = await self.round(r, stage, current, refused)
            if stop:
                break
        for i, box in enumerate(click_boxes(current, s.history, s.size, c)):
            point = await self.click(box, i + 1)
            if point is not None:
                return point
        return keep_best(s, current)

    async def round(
        self, r: int, stage: int, current: IBox, refused: set[tuple[tuple[int, ...], int]]
    ) -> tuple[IBox, bool]:
        """One round: (the crop now, whether the loop stops)."""
        s, c = self.s, self.s.config
        shown = await s.shown(current)
        reply = await s.call(
            f"box[r{r + 1}]", shown.image, s.model.propose_box(shown.image, self.query(shown), None)
        )
        box = reply.box
        e = entry(r, 0, "crop" if box is not None else "recrop", shown, {})
        step: dict[str, Any] = {
            "stage": "crop",
            "round": r + 1,
            "attempt": 1,
            "crop": trace_box(shown.frame.box),
            "action": e["action"],
        }
        nxt = None
        if box is not None:
            bbox = [box.left, box.top, box.right, box.bottom]
            nxt = next_box(bbox, replace(shown.frame, normalized=False), s.size, c, stage)
            step["proposal"] = [round(v, 1) for v in bbox]
        if nxt is None:
            refused.add((shown.frame.box, stage))
            e["fallback_box"] = restart_box(current, s.history, s.size)
            s.history.append(e)
            s.ledger.step(**step, next=None, fallback=trace_box(e["fallback_box"]))
            return e["fallback_box"], False
        if s.check_now(r):
            view = await s.shown(nxt)
            got = await s.call(
                f"gate[r{r + 1}]", view.image, s.model.act(view.image, self.query(view), zoomed=True)
            )
            inside = reply_point(got)
            e["crop_check"] = {"action": "accept" if inside is not None else "reject"}
            if inside is None:
                refused.add((shown.frame.box, stage))
                s.history.append(e)
                s.ledger.step(**step, next=trace_box(nxt), gate=e["crop_check"])
                full = c.crop_check_reject_mode == "restart_full"
                return [0, 0, s.size[0], s.size[1]] if full else restart_box(
                    current, s.history, s.size
                ), False
        e["next_box"] = nxt
        e["area_fraction"] = round(area(nxt) / area(shown.frame.box), 4)
        s.history.append(e)
        s.ledger.step(**step, next=trace_box(nxt), gate=e.get("crop_check"))
        return nxt, nxt[2] - nxt[0] <= c.min_width or nxt[3] - nxt[1] <= c.min_height

    async def click(self, box: IBox, attempt: int) -> Point | None:
        s = self.s
        shown = await s.shown(box, final=True)
        reply = await s.call(
            f"click[f{attempt}]", shown.image, s.model.act(shown.image, self.query(shown), zoomed=True)
        )
        local = reply_point(reply)
        step = {"stage": "click", "attempt": attempt, "crop": trace_box(shown.frame.box)}
        if local is None or not (0 < local.x <= shown.image.width and 0 < local.y <= shown.image.height):
            s.ledger.step(**step, point=None)
            return None
        px, py = shown.to_screen(local.x, local.y)
        point, review = Point(int(round(px)), int(round(py))), None
        if s.config.final_recheck:
            point, review = await self.review(shown, local, point, attempt)
        s.ledger.step(**step, point=point, review=review)
        return point

    async def review(
        self, shown: Shown, local: Point, point: Point, attempt: int
    ) -> tuple[Point, dict[str, Any]]:
        """Keep the click when the model's judge accepts it; else the point the next wider crop
        of the history gives, when it gives one."""
        s = self.s
        marked = await mark_for_model(s.model, shown.image, [local], [""])
        got = await s.call(f"judge[f{attempt}]", shown.image, s.model.judge(marked, self.query(shown), local))
        verdict = got.verdict if got.verdict else Verdict.UNKNOWN
        if verdict != Verdict.NO:
            return point, {"action": "keep", "verdict": verdict.value}
        wider = next((e for e in reversed(s.history) if area(e["crop_box"]) > area(shown.frame.box)), None)
        if wider is None:
            return point, {"action": "keep", "verdict": verdict.value, "reasoning": "no wider crop"}
        view = await s.shown(wider["crop_box"])
        again = await s.call(
            f"replace[f{attempt}]", view.image, s.model.act(view.image, self.query(view), zoomed=True)
        )
        p = reply_point(again)
        if p is None or not (0 < p.x <= view.image.width and 0 < p.y <= view.image.height):
            return point, {
                "action": "keep",
                "verdict": verdict.value,
                "reasoning": "the wider crop gave no point",
            }
        px, py = view.to_screen(p.x, p.y)
        return Point(int(round(px)), int(round(py))), {
            "action": "replace",
            "verdict": verdict.value,
            "source": list(view.frame.box),
        }
