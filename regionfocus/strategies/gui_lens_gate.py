"""GUI-Lens's commit gate (``_run_crop_check``, Fzkuji/GUI-Agent-Harness @ 23e75e0,
``gui_harness/planning/screenspot_locator.py``): the proposed crop drawn as a magenta rectangle
on the current one, the hints inside and outside it listed, and the model's verdict; it
accepts only with ``target_inside`` and ``context_sufficient`` and no
``discarded_plausible_targets``. Its booleans are read as the config says (``reading``: the
code's ``bool()``, or ours)."""

from __future__ import annotations

from typing import Any

from .gui_lens_geometry import Shown, overlay
from .gui_lens_sample import Sample
from .gui_lens_text import IBox, action_of, flag, number, partition_lines, stage_guidance, text


def gate_prompt(
    s: Sample, r: int, a: int, stage: int, shown: Shown, nxt: IBox, parsed: dict[str, Any]
) -> str:
    """The gate's request for the proposal ``parsed`` (next crop ``nxt``), in the config's layout."""
    c = s.config
    inside, outside = partition_lines(s.candidates, shown.frame, nxt)
    frame = text("gate_frame").format(
        width=s.size[0],
        height=s.size[1],
        crop=list(shown.frame.box),
        scale=shown.frame.sx,
        proposal=parsed.get("bbox"),
        next=nxt,
    )
    head = text("gate_head").format(
        task=s.instruction,
        target=s.instruction,
        frame=frame,
        round=r + 1,
        attempt=a + 1,
        stage=stage + 1,
        guidance=stage_guidance(stage, c.staged_crop),
        inside=inside or "(none)",
        outside=outside or "(none)",
    )
    why = text("gate_rationale").format(
        element=parsed.get("target_visible_element", ""),
        reasoning=parsed.get("reasoning", ""),
        confidence=parsed.get("confidence", ""),
    )
    if c.prompt_layout == "legacy":
        return head + "\n\n" + text("gate_rules") + "\n\n" + why + "\n\n" + text("gate_json")
    return "\n\n".join((text("gate_rules"), text("gate_json"), head, why, text("gate_json")))


async def gate(
    s: Sample, r: int, a: int, stage: int, shown: Shown, bbox: list[float], nxt: IBox, parsed: dict[str, Any]
) -> dict[str, Any]:
    """The gate's verdict on a proposed crop: "accept" or "reject", with its fields."""
    prompt = gate_prompt(s, r, a, stage, shown, nxt, parsed)
    answer, failed = await s.ask(f"gate[r{r + 1}.{a + 1}]", overlay(shown, bbox), prompt)
    if answer is None:
        return {"action": "reject", "confidence": 0.0, "reasoning": f"crop check failed: {failed}"}
    verdict = {
        name: flag(answer.get(name), s.official)
        for name in ("target_inside", "context_sufficient", "discarded_plausible_targets")
    }
    accepted = (
        action_of(answer) == "accept"
        and verdict["target_inside"]
        and verdict["context_sufficient"]
        and not verdict["discarded_plausible_targets"]
    )
    return {
        "action": "accept" if accepted else "reject",
        **verdict,
        "confidence": number(answer.get("confidence", 0)) or 0.0,
        "reasoning": answer.get("reasoning", ""),
    }
