"""The request a 3840x2160 screenshot produces for each hosted model of the price table: the size
the model sees (and so the size sent), the computer-use tool its rule declares, the output budget,
the reasoning setting and the temperature the request carries, the image tokens the provider
counts, and the model's price. Built from the real requests (each backend's ``request_body``,
what ``regionfocus show-prompt`` prints), offline: no key is read, nothing is sent.

    .venv/bin/python -m benchmarks.hosted_requests
"""

from __future__ import annotations

import json

from PIL import Image

from ._common import print_table

SCREEN = (3840, 2160)
AGENT = {"anthropic": "claude", "openai": "openai", "gemini": "gemini"}


def price_table_models() -> list[tuple[str, str]]:
    """(provider, a model id) for each entry of the built-in price table: the glob's own name
    (a dated-snapshot glob and the bracketed Opus range are given by their members)."""
    from regionfocus.kit import prices

    out: list[tuple[str, str]] = []
    for p in prices.load().prices:
        glob = p.match
        if "-20*" in glob or "2025*" in glob:
            continue  # the dated snapshots of a model listed beside it
        names = [glob.replace("[5-8]", d) for d in "5678"] if "[5-8]" in glob else [glob]
        names = [n.replace("[01]", d) for n in names for d in ("0", "1")] if "[01]" in glob else names
        for name in names:
            name = name.rstrip("*")
            provider = (
                "anthropic"
                if name.startswith("claude")
                else "gemini"
                if name.startswith("gemini")
                else "openai"
            )
            out.append((provider, name))
    return out


def describe(provider: str, model: str) -> list:
    from regionfocus.adapters.families.hosted import build_hosted
    from regionfocus.kit import prices

    adapter = build_hosted(AGENT[provider], model=model)
    backend = adapter.backend
    seen = adapter.input_size(SCREEN)
    shot = Image.new("RGB", seen)
    body = json.dumps(
        backend.request_body(
            [{"role": "user", "content": [{"type": "image", "image": shot}]}],
            max_tokens=adapter.max_tokens,
            temperature=adapter.temperature,
        )
    )
    body = json.loads(body)
    config = body.get("config", {})
    budget = body.get("max_tokens") or body.get("max_output_tokens") or config.get("max_output_tokens")
    reasoning = _reasoning(body, config)
    temperature = body.get("temperature", config.get("temperature", "none sent"))
    tool = (adapter.rule.computer_tool or {}).get("type") or "–"
    price = prices.load().lookup(model)
    rate = f"${price.rates.input:g} / ${price.rates.output:g}" if price else "–"
    return [
        model,
        adapter.rule.pattern_for(model),
        f"{seen[0]}x{seen[1]}",
        adapter.image_tokens(SCREEN),
        tool,
        budget,
        reasoning or "none (not a reasoning model)",
        temperature,
        rate,
    ]


def _reasoning(body: dict, config: dict) -> str:
    """The reasoning setting a request carries, in words."""
    thinking = body.get("thinking")
    if thinking == {"type": "adaptive"}:
        return f"adaptive thinking, effort {body['output_config']['effort']}"
    if thinking is not None:
        return f"thinking {thinking.get('type')}" + (
            f" {thinking['budget_tokens']}" if "budget_tokens" in thinking else ""
        )
    if "reasoning" in body:
        return f"effort {body['reasoning']['effort']}"
    level = config.get("thinking_config") or {}
    if level:
        return ", ".join(f"{k} {v}" for k, v in level.items())
    return "none sent"


def main() -> None:
    import logging

    logging.disable(logging.WARNING)  # the catch-all notes; every model here has a rule
    rows = [describe(p, m) for p, m in price_table_models()]
    print_table(
        f"The request of a {SCREEN[0]}x{SCREEN[1]} screenshot, per model of the price table",
        [
            "model",
            "rule",
            "seen (= sent)",
            "image tokens",
            "computer-use tool",
            "output budget",
            "reasoning",
            "temperature",
            "$ in / out per MTok",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
