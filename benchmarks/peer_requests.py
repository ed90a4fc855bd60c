"""The requests GUI-Lens's presets and MVP send for one 3840x2160 screenshot, per family: per
request kind, how many were sent, the images one carries and the first one's size, and whether
the prompt asks for 0-1000 (the official coordinate override); for MVP, the text, image size and
generation budget of its full-image request and attention pass. GUI-Lens runs through the
ScreenSpot-Pro command's own path (``run_peers``, which adds the harness's options) against
local servers speaking each wire format (``tests/chat_server.py``, ``tests/provider_servers.py``;
``over_the_wire`` of ``tests/test_strategy_gui_lens_protocol.py``) with the scripted chat model
of ``tests/test_strategy_gui_lens.py``; MVP's requests come from the adapter's own request
builder. Offline: no key is read, nothing leaves the machine.

    .venv/bin/python -m benchmarks.peer_requests
"""

from __future__ import annotations

import asyncio
from collections import Counter

from PIL import Image, ImageDraw

from ._common import print_table

SCREEN = (3840, 2160)
TARGET = (2790, 590, 2829, 629)
INSTRUCTION = "click the save button"


def screen() -> Image.Image:
    img = Image.new("RGB", SCREEN, (236, 237, 239))
    ImageDraw.Draw(img).rectangle(TARGET, fill=(30, 160, 90))
    return img


def lens_requests(strategy: str, family: str) -> tuple[list[tuple[str, str, list[Image.Image]]], object]:
    """Every request ``strategy`` sends through ``family``'s adapter, and its result. The scripted
    model answers in the coordinates it is asked for (0-1000 for gui-lens-m3), and Qwen3-VL in
    its own 0-1000 whatever it is asked."""
    from regionfocus.strategies import get_strategy
    from tests.test_strategy_gui_lens import LensVLM
    from tests.test_strategy_gui_lens_protocol import over_the_wire

    asks_1000 = get_strategy(strategy).config.coords == "normalized"
    lens = LensVLM(frame="normalized" if asks_1000 or family == "qwen3-vl" else "pixels")
    res, asked = over_the_wire(strategy, family, lens, screen(), INSTRUCTION)
    return asked, res


def lens_rows() -> list[list[str]]:
    rows = []
    for strategy in ("gui-lens", "gui-lens-legacy", "gui-lens-claude", "gui-lens-m3"):
        for family in ("openai", "claude", "qwen3-vl"):
            asked, res = lens_requests(strategy, family)
            kinds = Counter(k for k, _, _ in asked)
            for kind in ("crop", "gate", "click", "review"):
                seen = [(len(ims), ims[0].size, "OVERRIDE" in t) for k, t, ims in asked if k == kind]
                if not seen:
                    continue
                rows.append(
                    [
                        strategy,
                        family,
                        kind,
                        str(kinds[kind]),
                        "/".join(sorted({str(n) for n, _, _ in seen})),
                        "x".join(map(str, seen[0][1])),
                        "0-1000" if any(o for _, _, o in seen) else "pixels",
                        str(len(res.calls)) if not isinstance(res, BaseException) else repr(res),
                    ]
                )
    return rows


def mvp_rows() -> list[list[str]]:
    from regionfocus.adapters import get_adapter
    from regionfocus.model import Query
    from regionfocus.strategies.mvp import MVP_PROMPT

    rows = []
    for family in ("uitars-1.5", "gta1", "qwen3-vl"):
        for name, adapter in (
            ("own", get_adapter(family)),
            ("mvp", get_adapter(family).prompted(MVP_PROMPT)),
        ):
            size = adapter.input_size(SCREEN)
            prompt = asyncio.run(
                adapter.task_prompt_async(
                    "grounding", Image.new("RGB", size), SCREEN, Query(INSTRUCTION), False
                )
            )
            texts = [
                p["text"] if isinstance(p, dict) else str(p)
                for m in prompt.messages
                for p in (m["content"] if isinstance(m["content"], list) else [m["content"]])
                if not isinstance(p, dict) or p.get("type") == "text"
            ]
            head = " ".join(t.strip().splitlines()[-1] for t in texts if t.strip())[:70]
            rows.append(
                [
                    family,
                    name,
                    "x".join(map(str, size)),
                    str(adapter.max_tokens),
                    prompt.prefill[-24:] or "-",
                    head,
                ]
            )
    return rows


def main() -> None:
    print_table(
        "GUI-Lens requests for a 3840x2160 screenshot",
        ["strategy", "family", "kind", "requests", "images/request", "first image", "coordinates", "calls"],
        lens_rows(),
    )
    print_table(
        "MVP's grounding request (full image; its attention pass sends the same) vs the family's own",
        ["family", "request", "image", "max tokens", "pre-fill", "last line of each text"],
        mvp_rows(),
    )


if __name__ == "__main__":
    main()
