"""The requests GUI-Lens's presets and MVP send for one 3840x2160 screenshot, per family: per
request kind, how many were sent, the images one carries and the first one's size, and whether
the prompt asks for 0-1000 (the official coordinate override); for MVP, the text, image size and
generation budget of its full-image request and attention pass. GUI-Lens runs through the
ScreenSpot-Pro command's own path (``run_peers``, which adds the harness's options) against
local servers speaking each wire format (``tests/chat_server.py``, ``tests/provider_servers.py``)
with the scripted chat model of ``tests/test_strategy_gui_lens.py``; MVP's requests come from the
adapter's own request builder. Offline: no key is read, nothing leaves the machine.

    .venv/bin/python -m benchmarks.peer_requests
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter

from PIL import Image, ImageDraw

from ._common import print_table

SCREEN = (3840, 2160)
TARGET = (2790, 590, 2829, 629)
INSTRUCTION = "click the save button"
HOSTED = {"openai": ("openai", "gpt-5.5"), "claude": ("anthropic", "claude-opus-4-7")}


def screen() -> Image.Image:
    img = Image.new("RGB", SCREEN, (236, 237, 239))
    ImageDraw.Draw(img).rectangle(TARGET, fill=(30, 160, 90))
    return img


def lens_requests(strategy: str, family: str) -> tuple[list[tuple[str, str, list[Image.Image]]], object]:
    """Every request ``strategy`` sends through ``family``'s adapter, and its result."""
    from regionfocus.agent import StaticPrediction
    from regionfocus.screenspot_pro.strategies import run_peers
    from tests.test_strategy_gui_lens import LensVLM, kind_of

    asked: list[tuple[str, str, list[Image.Image]]] = []
    lens = LensVLM(frame="normalized" if family == "qwen3-vl" else "pixels")

    def answer(text: str, images: list[Image.Image]) -> str:
        asked.append((kind_of(text), text, images))
        return lens.answer(text, images).text

    async def go(adapter):
        pred = StaticPrediction(baseline=None, final=None, verdict=None, trigger=None)
        try:
            got = await run_peers(
                [strategy], adapter, screen(), INSTRUCTION, pred, {strategy: {"hints": None}}
            )
        finally:
            if hasattr(adapter.backend, "aclose"):
                await adapter.backend.aclose()
        return got[strategy]

    if family in HOSTED:
        from regionfocus.adapters.families.hosted import build_hosted
        from tests.provider_servers import ProviderServer, Said

        provider, model = HOSTED[family]
        os.environ.setdefault(
            "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY", "sk-local-0000"
        )
        with ProviderServer(provider, lambda req: Said(answer(req.text, req.images))) as srv:
            return asked, asyncio.run(go(build_hosted(family, model=model, base_url=srv.base_url)))
    from regionfocus.adapters import get_adapter
    from regionfocus.adapters.backends.openai_http import OpenAIBackend
    from tests.chat_server import ChatServer, Reply, request_images, request_text

    with ChatServer(lambda b: Reply.text(answer(request_text(b), request_images(b)))) as srv:
        return asked, asyncio.run(go(get_adapter(family, backend=OpenAIBackend([srv.base_url], model="m"))))


def lens_rows() -> list[list[str]]:
    rows = []
    for strategy in ("gui-lens", "gui-lens-legacy", "gui-lens-claude"):
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
