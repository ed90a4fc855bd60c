"""CPU to parse one hostile model reply, per parser entry point.

A reply of ``--kb`` KB made of one fragment repeated (an opening tag that never closes, a call
that never ends, a JSON object left open, ...), handed to every parser a model's text reaches.
What a model can send costs the event loop this much before the next sample in flight moves.

    python -m benchmarks.parse_hostile            # 224 KB, the size that took 18 s before
    python -m benchmarks.parse_hostile --kb 64
    python -m benchmarks.parse_hostile --ui-tars-package   # + the package's UI-TARS parser, wrapped

``--ui-tars-package`` adds :func:`uitars_package`, the ``ui-tars`` package's
``parse_action_to_structure_output`` behind the thinnest wrapper that passes most of our tests:
the measurement behind keeping our own scanner (BENCHMARKS.md, "Library or ours").
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import time
from collections.abc import Callable

from regionfocus.actions import Action
from regionfocus.adapters.agents.react_agent import parse_answer
from regionfocus.adapters.families.answers import bare_click, find_coordinates, parse_choice, parse_verdict
from regionfocus.adapters.families.qwen import parse_qwen
from regionfocus.adapters.families.uitars import RawCall, call_to_action, parse_uitars
from regionfocus.adapters.model_text import bounded, sound_action
from regionfocus.adapters.reasoning.coat import parse_coat

from ._common import print_machine, print_table

# Fragments that open something a parser then searches the rest of the reply for.
FRAGMENTS = {
    "box_start": "<|box_start|>(1,",
    "bbox": "<bbox>1 2 ",
    "point": "<point>1 ",
    "call": "click(start_box='(1,",
    "type": ("Action: ", "type(content='a"),  # (once, then repeated)
    "action": "Thought: x Action: click(",
    "json": '{"action": "left_click", "coordinate": [1, ',
    "tool_call": '<tool_call>{"name": "computer_use", "arguments": {',
    "bracket": "[1, 2, (3, ",
    "choice": "Candidate 1, 2, ",
    "words": "the answer is maybe yes no ",
}

PARSERS: dict[str, Callable[[str], object]] = {
    "find_coordinates": find_coordinates,
    "parse_uitars": parse_uitars,
    "parse_qwen": parse_qwen,
    "parse_verdict": parse_verdict,
    "parse_choice": parse_choice,
    "parse_coat": parse_coat,
    "react parse_answer": parse_answer,
}


_TOKENS = re.compile(r"\[EOS\]|<\|im_end\|>|<\|endoftext\|>|<\|box_start\|>|<\|box_end\|>")


def uitars_package(text: str) -> Action | None:
    """parse_uitars done by ``ui_tars.action_parser.parse_action_to_structure_output``: reply
    bounded, box tokens and end tokens removed, ``Action:`` given the space the package splits
    on, its prints silenced and its exceptions read as no action (bare coordinates then, as
    ours); its first call that makes a sound action, through our ``call_to_action``."""
    from ui_tars.action_parser import parse_action_to_structure_output

    text = bounded(text)
    if not text.strip():
        return None
    text = re.sub(r"Action:[ \t]*", "Action: ", _TOKENS.sub("", text))
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            # qwen2vl with factor 1: the package divides each number by 1, so model-frame numbers
            actions = parse_action_to_structure_output(text, 1, 1000, 1000, model_type="qwen2vl")
    except Exception:  # noqa: BLE001 - AssertionError, ValueError, SyntaxError ...: no action
        return None if "Action:" in text else bare_click(text)
    for a in actions:
        args = {k: str(v) for k, v in a["action_inputs"].items()}
        if any(bad in v for v in args.values() for bad in ("inf", "nan")):
            continue  # a 400-digit number came back as a float inf
        action = sound_action(call_to_action(RawCall(a["action_type"], args)))
        if action is not None:
            if a.get("thought") or a.get("reflection"):
                action.extras["thought"] = a.get("thought") or a.get("reflection")
            return action
    return None


def cpu_seconds(fn: Callable[[str], object], text: str) -> float:
    t0 = time.process_time()
    try:
        fn(text)
    except Exception:  # noqa: BLE001 - a parser that raises still cost what it cost
        pass
    return time.process_time() - t0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kb", type=int, default=224, help="reply size in KB (default 224)")
    p.add_argument("--ui-tars-package", action="store_true", help="add the package's parser, wrapped")
    args = p.parse_args(argv)
    print_machine()
    parsers = dict(PARSERS)
    if args.ui_tars_package:
        parsers["ui-tars package (wrapped)"] = uitars_package
        uitars_package("Action: wait()")  # its import out of the timings
    rows = []
    for name, fn in parsers.items():
        worst, worst_fragment = 0.0, ""
        for label, fragment in FRAGMENTS.items():
            head, fragment = fragment if isinstance(fragment, tuple) else ("", fragment)
            text = (head + fragment * (args.kb * 1024 // len(fragment) + 1))[: args.kb * 1024]
            s = cpu_seconds(fn, text)
            if s > worst:
                worst, worst_fragment = s, label
        rows.append((name, args.kb, worst_fragment, f"{worst:.3f}"))
    print_table(
        f"worst CPU seconds to parse one {args.kb} KB reply", ["parser", "KB", "fragment", "CPU s"], rows
    )


if __name__ == "__main__":
    main()
