"""CPU to parse one hostile model reply, per parser entry point.

A reply of ``--kb`` KB made of one fragment repeated (an opening tag that never closes, a call
that never ends, a JSON object left open, ...), handed to every parser a model's text reaches.
What a model can send costs the event loop this much before the next sample in flight moves.

    python -m benchmarks.parse_hostile            # 224 KB, the size that took 18 s before
    python -m benchmarks.parse_hostile --kb 64
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from regionfocus.adapters.agents.react_agent import parse_answer
from regionfocus.adapters.families.answers import find_coordinates, parse_choice, parse_verdict
from regionfocus.adapters.families.qwen import parse_qwen
from regionfocus.adapters.families.uitars import parse_uitars
from regionfocus.adapters.reasoning.coat import parse_coat

from ._common import print_machine, print_table

# Fragments that open something a parser then searches the rest of the reply for.
FRAGMENTS = {
    "box_start": "<|box_start|>(1,",
    "bbox": "<bbox>1 2 ",
    "point": "<point>1 ",
    "call": "click(start_box='(1,",
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
    args = p.parse_args(argv)
    print_machine()
    rows = []
    for name, fn in PARSERS.items():
        worst, worst_fragment = 0.0, ""
        for label, fragment in FRAGMENTS.items():
            text = (fragment * (args.kb * 1024 // len(fragment) + 1))[: args.kb * 1024]
            s = cpu_seconds(fn, text)
            if s > worst:
                worst, worst_fragment = s, label
        rows.append((name, args.kb, worst_fragment, f"{worst:.3f}"))
    print_table(
        f"worst CPU seconds to parse one {args.kb} KB reply", ["parser", "KB", "fragment", "CPU s"], rows
    )


if __name__ == "__main__":
    main()
