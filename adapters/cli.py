"""``regionfocus parse``, ``serve-command`` and ``show-prompt``: the adapters' own subcommands,
registered as entry points (pyproject.toml) through the three small functions at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import importlib
import io
import json
import re
import sys

from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters.backends.base import ChatResponse
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.adapters.registry import facts, families, family_class, get_adapter, served_families
from regionfocus.adapters.serving import default_local_media_dir, serve_command
from regionfocus.geometry import Point
from regionfocus.kit.command import Parser, run_command
from regionfocus.model import Avoid, Option, Query, Turn


def _size(value: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX*,]\s*(\d+)\s*", value)
    if not m or int(m.group(1)) <= 0 or int(m.group(2)) <= 0:
        raise argparse.ArgumentTypeError(
            f"--size must be WIDTHxHEIGHT in pixels, e.g. 3840x2160; got {value!r}"
        )
    return int(m.group(1)), int(m.group(2))


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="regionfocus", description="Model adapter tools.")
    sub = p.add_subparsers(dest="command", required=True)
    _parse_arguments(sub)
    _show_prompt_arguments(sub)
    _serve_command_arguments(sub)
    return p


def _parse_arguments(sub) -> None:
    pp = sub.add_parser(
        "parse",
        help="parse a model answer into an action in original-screenshot pixels",
        description="Parse TEXT as the family --agent answers for a screenshot of --size, sent at the "
        "adapter's own resize.",
        epilog="exit codes: 0 an action (JSON on standard output), 2 bad flags, 3 the text holds no action "
        "the family's reader accepts (named on standard error)",
    )
    pp.add_argument("--agent", required=True, choices=families(), help="model family")
    pp.add_argument("--size", required=True, type=_size, metavar="WxH", help="original screenshot size")
    pp.add_argument("text", nargs="+", help="the answer text ('-' reads standard input)")


def _show_prompt_arguments(sub) -> None:
    show = sub.add_parser(
        "show-prompt",
        help="print exactly the request a family sends (JSON body, images abbreviated)",
        description="Print the chat-completions JSON body --agent would send for one request, as it "
        "goes over the wire: the model's own template, the screenshot at the size the model sees "
        "(its base64 abbreviated), sampling options and any assistant pre-fill.",
    )
    show.add_argument("--agent", required=True, choices=families(), help="model family")
    show.add_argument(
        "--kind",
        choices=SHOW_KINDS,
        default="grounding",
        help="grounding (ScreenSpot-Pro), agent (a WebVoyager step with one earlier step), zoomed (a "
        "candidate request on a view), or one of our RegionFocus requests: focal, judge, choose, "
        "region (default grounding)",
    )
    show.add_argument("--size", type=_size, default=(3840, 2160), metavar="WxH", help="screenshot size")
    show.add_argument("--instruction", default="open the Layers panel", help="the instruction or task")
    show.add_argument(
        "--model",
        default=None,
        help="model name put in the body (default MODEL; for claude, gemini and openai the family's "
        "default model, whose image rule sets the size shown)",
    )
    show.add_argument(
        "--request-format",
        choices=("prompt", "computer-use"),
        default="prompt",
        help="claude, gemini, openai: the plain grounding prompt or the provider's computer-use tool",
    )
    show.add_argument("--image-detail", default=None, metavar="LEVEL", help="openai: the image detail level")


def _serve_command_arguments(sub) -> None:
    sp = sub.add_parser("serve-command", help="print the recommended `vllm serve` line for a family")
    sp.add_argument("--agent", required=True, choices=served_families(), help="model family")
    sp.add_argument(
        "--model",
        "--model-path",
        dest="model",
        default=None,
        help="the checkpoint to serve, a folder or hub id: the name clients then pass as --model "
        "(default: the family's 7B/8B)",
    )
    sp.add_argument(
        "--local-media-path",
        nargs="?",
        const=default_local_media_dir(),
        default=None,
        metavar="DIR",
        help="client on the same machine: let the server read images from DIR, a folder kept for them "
        f"(default {default_local_media_dir()}; the client's default too) and bind it to 127.0.0.1 "
        "(--allowed-local-media-path; run the client with --local-media-dir DIR)",
    )
    sp.add_argument(
        "--data-parallel-size",
        type=int,
        metavar="N",
        help="N replicas on this node's N GPUs behind one port (vLLM balances them)",
    )
    sp.add_argument(
        "--nodes",
        nargs="+",
        metavar="URL",
        help="servers on several nodes (e.g. http://node1:8000): also print the vllm-router line "
        "that fronts them (clients then use the router's one --base-url)",
    )


SHOW_KINDS = ("grounding", "agent", "zoomed", "focal", "judge", "choose", "region")


class _Capture:
    """A backend that records the body a real OpenAI-compatible request would carry."""

    def __init__(self, model: str, backend=None):
        # A hosted family's backend builds its provider's request (never sending it).
        self.http = backend or OpenAIBackend(["http://127.0.0.1:8000/v1"], model)
        self.model = model
        self.detail = getattr(backend, "detail", None)
        self.bodies: list[dict] = []

    async def complete(self, messages, **options):
        self.bodies.append(self.http.request_body(messages, **options))
        return ChatResponse("")

    async def aclose(self) -> None:
        return None


def _abbreviate(value):
    """The body with each image (a data URL, or a provider's base64 ``data`` field) shortened to
    its byte count and the pixel size it travels at: the size the model sees."""
    if isinstance(value, dict):
        return {k: _abbreviate_data(v) if k == "data" else _abbreviate(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_abbreviate(v) for v in value]
    if isinstance(value, str) and value.startswith("data:image/"):
        head, _, data = value.partition(",")
        return f"{head},{_image_note(data)}"
    return value


def _abbreviate_data(value):
    return _image_note(value) if isinstance(value, str) and len(value) > 64 else _abbreviate(value)


def _image_note(data: str) -> str:
    try:
        w, h = Image.open(io.BytesIO(base64.b64decode(data[:4096] + "=" * (-len(data[:4096]) % 4)))).size
    except Exception:  # noqa: BLE001 - not an image: its length is what matters
        return f"<{len(data) * 3 // 4} bytes>"
    return f"<{len(data) * 3 // 4} bytes, {w}x{h} px>"


async def show_prompt(
    agent: str,
    kind: str,
    size: tuple[int, int],
    instruction: str,
    model: str | None,
    request_format: str = "prompt",
    detail: str | None = None,
) -> list[dict]:
    """The request bodies ``agent`` sends for one ``kind`` of request on a blank screenshot. A
    hosted family's body is what its provider's SDK is called with."""
    hosted = facts(agent).provider
    if hosted:
        cls = family_class(agent)
        module, _, attr = cls.backend_class.partition(":")
        model = model or cls.default_model
        backend = getattr(importlib.import_module(module), attr)(model, detail=detail)
        capture = _Capture(model, backend)
        adapter = get_adapter(agent, backend=capture, request=request_format, detail=detail)
    else:
        capture = _Capture(model or "MODEL")
        adapter = get_adapter(agent, backend=capture)
    shot = Image.new("RGB", size, (240, 240, 240))
    w, h = size
    query = Query(instruction)
    if kind == "grounding":
        await adapter.act(shot, query)
    elif kind == "agent":
        earlier = Turn(shot, size, Action(ActionType.CLICK, Point(w / 4, h / 4)), "", "changed the page")
        await adapter.act(shot, Query(instruction, "agent", url="https://example.org/", turns=(earlier,)))
    elif kind == "zoomed":
        await adapter.act(shot.crop((0, 0, w // 2, h // 2)), query, zoomed=True)
    elif kind == "focal":
        await adapter.propose_point(shot, query, Avoid())
    elif kind == "judge":
        await adapter.judge(shot, query, Point(w / 2, h / 2))
    elif kind == "choose":
        options = [Option(1, Action(ActionType.CLICK, Point(w / 3, h / 3)), True)]
        options.append(Option(2, Action(ActionType.CLICK, Point(2 * w / 3, h / 3)), True))
        await adapter.choose(shot, query, options)
    else:
        await adapter.propose_box(shot, query, None)
    return [_abbreviate(b) for b in capture.bodies]


def main(argv: list[str] | None = None) -> int:
    if argv and argv[0] in ("serve-command", "parse"):
        _family_as_model(argv, served_families() if argv[0] == "serve-command" else families())
    args = build_parser().parse_args(argv)
    if args.command == "serve-command":
        print(
            serve_command(
                args.agent,
                args.model,
                args.local_media_path,
                data_parallel=args.data_parallel_size,
                nodes=args.nodes,
            )
        )
        return 0
    if args.command == "show-prompt":
        bodies = asyncio.run(
            show_prompt(
                args.agent,
                args.kind,
                args.size,
                args.instruction,
                args.model,
                args.request_format,
                args.image_detail,
            )
        )
        print(json.dumps(bodies[0] if len(bodies) == 1 else bodies, indent=2, ensure_ascii=False))
        return 0
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    adapter = get_adapter(args.agent)
    w, h = args.size
    action = adapter.parse_action(text, w, h)
    if action is None:
        print(f"regionfocus parse: no action {args.agent}'s reader accepts in: {text!r}", file=sys.stderr)
        return NO_ACTION
    out = {
        "agent": args.agent,
        "size": [w, h],
        "model_input_size": list(adapter.input_size((w, h))),
        "action": _rounded(action.to_dict()),
    }
    print(json.dumps(out))
    return 0


# `parse`'s exit code for a text with no action: the harnesses' "nothing was measured".
NO_ACTION = 3


def _rounded(value):
    """Pixels to 1/1000 px: a frame conversion's float noise (576.0000000000001) is not data."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def _family_as_model(argv: list[str], family_names) -> None:
    """``--model FAMILY`` with no --agent, as older versions of `parse` and `serve-command` took it:
    one line naming the new flag (``--model`` names the served model in every command)."""
    if any(a == "--agent" or a.startswith("--agent=") for a in argv):
        return
    for i, a in enumerate(argv):
        value = argv[i + 1] if a == "--model" and i + 1 < len(argv) else None
        value = a.partition("=")[2] if a.startswith("--model=") else value
        if value in family_names:
            raise ValueError(
                f"--model {value}: the family is --agent now (--agent {value}); --model names the served "
                "model (serve-command: the checkpoint to serve)"
            )


def parse_command(argv: list[str]) -> int:
    """parse a model answer into an action in original-screenshot pixels"""
    return run_command("regionfocus parse", lambda: main(["parse", *argv]))


def serve_command_command(argv: list[str]) -> int:
    """print the recommended `vllm serve` line for a model family"""
    return run_command("regionfocus serve-command", lambda: main(["serve-command", *argv]))


def show_prompt_command(argv: list[str]) -> int:
    """print exactly the request a model family is sent (templates, pre-fill)"""
    return run_command("regionfocus show-prompt", lambda: main(["show-prompt", *argv]))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
