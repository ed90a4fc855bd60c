"""GUI-Lens's final click and its review, in free text (Fzkuji/GUI-Agent-Harness @ 23e75e0,
``gui_harness/planning/screenspot_locator.py``: ``_iterative_final_box_candidates``,
``_iterative_zoom_final_click``, ``_iterative_zoom_review_click``): the current crop, then the
wider crops of the history, then the whole screenshot, each enlarged and clicked in its
displayed pixels (or on a hint's id); the review sees the final crop and up to 3 wider ones in
one request (a model offering ``chat_images``) and keeps the click or moves it to one of them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from ..geometry import Point
from ..model import ModelReply
from .gui_lens_geometry import Shown, click_boxes, resample
from .gui_lens_sample import Sample, keep_best, read_hints, trace_box
from .gui_lens_text import (
    Frame,
    IBox,
    action_of,
    breaks_control_type,
    candidate_lines,
    history_lines,
    number,
    read_json,
    text,
)

REVIEW_CROPS = 4  # the final crop and up to 3 wider ones (the code's ``len(review_crops) >= 4``)


@runtime_checkable
class MultiImageChat(Protocol):
    """A model that takes several images in one free-form request (the review's crops)."""

    async def chat_images(self, images: Sequence[Image.Image], text: str) -> ModelReply: ...


async def finish(s: Sample, current: IBox) -> Point | None:
    """The final clicks on the config's final boxes, in turn, until one gives a point; else
    ``keep_best``."""
    boxes = click_boxes(current, s.history, s.size, s.config)
    for i, box in enumerate(boxes):
        point = await click(s, box, i + 1, len(boxes))
        if point is not None:
            return point
    return keep_best(s, current)


def click_xy(parsed: dict[str, Any], normalized: bool) -> tuple[float | None, float | None]:
    p = parsed.get("point_2d")
    if normalized and isinstance(p, list) and len(p) >= 2:
        return number(p[0]), number(p[1])
    return number(parsed.get("x", 0)), number(parsed.get("y", 0))


async def click_prompt(s: Sample, shown: Shown, attempt: int, attempts: int) -> tuple[str, list]:
    """The final click's request and the candidates it lists (id, candidate)."""
    c, f = s.config, shown.frame
    candidates = list(s.candidates)
    if c.final_candidate_detect and s.hints is not None:
        region = s.screenshot.crop(f.box)
        found = await read_hints(s.ledger, s.hints, region, f"final crop {attempt}", limit=80)
        candidates += [x.moved(f.box[0], f.box[1]) for x in found]
    lines, scoped = candidate_lines(candidates, f, c.final_candidates, s.instruction, c.candidate_sort)
    frame = text("click_frame").format(width=s.size[0], height=s.size[1], crop=list(f.box), scale=f.sx)
    head = text("click_head").format(
        task=s.instruction,
        target=s.instruction,
        frame=frame,
        attempt=attempt,
        attempts=attempts,
        history=history_lines(s.history),
        lines=lines or "(none)",
    )
    rules = text("click_rules") + ("\n\n" + text("norm_click") if s.normalized else "")
    if c.prompt_layout == "legacy":
        return head + "\n\n" + rules, scoped
    return rules + "\n\n" + head + "\n\n" + text("click_tail"), scoped


async def click(s: Sample, box: IBox, attempt: int, attempts: int) -> Point | None:
    """``_iterative_zoom_final_click``: one final click on ``box`` (None: try the next)."""
    shown = await s.shown(box, final=True)
    f = shown.frame
    prompt, scoped = await click_prompt(s, shown, attempt, attempts)
    parsed, why = await s.ask(f"click[f{attempt}]", shown.image, prompt)
    step = {"stage": "click", "attempt": attempt, "crop": trace_box(f.box)}
    action = action_of(parsed) if parsed is not None else None
    if parsed is None or action != "click":
        s.ledger.step(**step, action=action, why=why or None)
        return None
    picked = str(parsed.get("candidate_id") or "").strip()
    chosen = next((cand for cid, cand in scoped if cid == picked), None) if picked else None
    lx, ly = click_xy(parsed, s.normalized)
    x1, y1, x2, y2 = f.box
    cx = cy = None
    if s.normalized and lx is not None and ly is not None and 0 < lx <= 1000 and 0 < ly <= 1000:
        cx, cy = int(round(x1 + lx / 1000.0 * (x2 - x1))), int(round(y1 + ly / 1000.0 * (y2 - y1)))
    elif lx is not None and ly is not None and 0 < lx <= shown.image.width and 0 < ly <= shown.image.height:
        sx_, sy_ = shown.to_screen(lx, ly)
        cx, cy = int(round(sx_)), int(round(sy_))
    elif chosen is not None:
        cx, cy = (
            int(round((chosen.box[0] + chosen.box[2]) / 2)),
            int(round((chosen.box[1] + chosen.box[3]) / 2)),
        )
        lx, ly = (cx - x1) * f.sx, (cy - y1) * f.sy
    if cx is None or cy is None or cx <= 0 or cy <= 0 or cx > s.size[0] or cy > s.size[1]:
        s.ledger.step(**step, action=action, point=None, why="no usable point")
        return None
    result = None
    if s.config.final_recheck:
        proposed = {
            "cx": cx,
            "cy": cy,
            "local_x": lx,
            "local_y": ly,
            "target_visible_element": parsed.get("target_visible_element", ""),
            "reasoning": parsed.get("reasoning", ""),
        }
        result = await review(s, shown, proposed, attempt)
        if result.get("action") == "replace":
            cx, cy = result["cx"], result["cy"]
    s.ledger.step(**step, action=action, candidate=picked or None, point=Point(cx, cy), review=result)
    return Point(cx, cy)


async def review_crops(s: Sample, final: Shown) -> tuple[list[tuple[str, str, str]], list[Shown]]:
    """The review's sources (id, description, what was visible there) and their crops: the
    final one, then the history's wider ones, newest first, each once; only the final one for
    a model that takes one image per request (said in the result)."""
    sources = [("r0", "final upscaled crop", "")]
    shown = [final]
    seen = {final.frame.box}
    several = isinstance(s.model, MultiImageChat)
    for e in reversed(s.history):
        key = tuple(e["crop_box"])
        if len(sources) >= REVIEW_CROPS:
            break
        if key in seen:
            continue
        seen.add(key)
        if not several:
            s.ledger.note(
                f"review: {type(s.model).__name__} takes one image per request (no chat_images), so "
                "only the final crop (r0) is attached, not the wider ones the code attaches"
            )
            break
        b, (w, h) = e["crop_box"], e["seen"]
        img = await asyncio.to_thread(resample, s.screenshot, b, (w, h))
        sources.append(
            (
                f"r{len(sources)}",
                f"wider crop from round {e.get('round')}",
                e.get("target_visible_element", ""),
            )
        )
        shown.append(Shown(img, Frame(tuple(b), w / (b[2] - b[0]), h / (b[3] - b[1]), s.normalized)))
    return sources, shown


async def review(s: Sample, final: Shown, proposed: dict[str, Any], attempt: int) -> dict[str, Any]:
    """``_iterative_zoom_review_click``: keep the click, or move it to a point on a wider crop."""
    sources, shown = await review_crops(s, final)
    listing = "\n".join(
        f"{src}: {desc} original_box={list(sh.frame.box)} display_scale={sh.frame.sx:.4f} visible={vis}"
        for (src, desc, vis), sh in zip(sources, shown, strict=True)
    )
    prompt = text("review").format(
        task=s.instruction,
        target=s.instruction,
        width=s.size[0],
        height=s.size[1],
        cx=proposed["cx"],
        cy=proposed["cy"],
        local_x=proposed["local_x"],
        local_y=proposed["local_y"],
        element=proposed["target_visible_element"],
        reasoning=proposed["reasoning"],
        sources=listing,
        policy=text("review_policy"),
    )
    images = [sh.image for sh in shown]
    if isinstance(s.model, MultiImageChat):
        reply = await s.call(f"review[f{attempt}]", images, s.model.chat_images(images, prompt))
    else:
        reply = await s.call(f"review[f{attempt}]", images[0], s.model.chat(images[0], prompt))
    parsed = read_json(reply.text, s.official)
    if parsed is None:
        return {"action": "keep", "reasoning": "review failed: no answer", "images": len(images)}
    return {
        **replacement(s, parsed, proposed, dict(zip([x[0] for x in sources], shown, strict=True))),
        "images": len(images),
    }


def replacement(
    s: Sample, parsed: dict[str, Any], proposed: dict[str, Any], crops: dict[str, Shown]
) -> dict[str, Any]:
    """The review's answer read as the code reads it: a replacement stands only on a listed
    source, inside that crop and the screenshot, and never swaps an editable control for a
    passive label on an adjust-like instruction."""
    action = action_of(parsed)
    result: dict[str, Any] = {
        "action": action or "keep",
        "source": str(parsed.get("source") or ""),
        "target_visible_element": parsed.get("target_visible_element", ""),
        "reasoning": parsed.get("reasoning", ""),
    }
    if action != "replace":
        return result
    if breaks_control_type(s.instruction, proposed, result):
        return {
            **result,
            "action": "keep",
            "reasoning": "review replacement rejected: it would replace a direct editable control with a passive label/icon marker",
        }
    pick = crops.get(result["source"])
    if pick is None:
        return {
            **result,
            "action": "keep",
            "reasoning": f"review replacement source not found: {result['source']}",
        }
    x, y = number(parsed.get("x", 0)), number(parsed.get("y", 0))
    if x is None or y is None:
        return {**result, "action": "keep", "reasoning": "review replacement had invalid coordinates"}
    if x <= 0 or y <= 0 or x > pick.image.width or y > pick.image.height:
        return {**result, "action": "keep", "reasoning": "review replacement outside selected crop"}
    px, py = pick.to_screen(x, y)
    cx, cy = int(round(px)), int(round(py))
    if cx <= 0 or cy <= 0 or cx > s.size[0] or cy > s.size[1]:
        return {**result, "action": "keep", "reasoning": "review replacement outside original image"}
    return {**result, "cx": cx, "cy": cy}
