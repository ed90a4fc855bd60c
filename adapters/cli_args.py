"""Agent flags shared by the harness commands, and how they become a GroundingModel."""

from __future__ import annotations

import argparse

from regionfocus.adapters.backends.base import MAX_REPLY_BYTES
from regionfocus.adapters.model_check import add_preflight_argument
from regionfocus.kit.flags import non_negative, positive, whole
from regionfocus.model import GroundingModel


def _facts(agent: str):
    """The registry's facts of ``agent`` (adapters/registry.py), or None for an unknown name
    (get_adapter then names the known ones)."""
    from regionfocus.adapters.registry import facts

    try:
        return facts(agent)
    except ValueError:
        return None


def runs_locally(agent: str) -> bool:
    """Runs in this process on the CPU and needs no server."""
    f = _facts(agent)
    return f is not None and f.runs_locally


def reads_pixels(agent: str) -> bool:
    """False for an agent that reads no pixels (it cannot see stars): RegionFocus's history and
    aggregation go in text for it."""
    f = _facts(agent)
    return f is None or f.reads_pixels


def add_agent_arguments(parser: argparse.ArgumentParser, default_agent: str = "ocr") -> None:
    from regionfocus.adapters.registry import agent_names

    g = parser.add_argument_group("agent")
    g.add_argument(
        "--agent",
        type=_agent,
        default=default_agent,
        help=f"model family: {', '.join(agent_names())} or a registered name (default: {default_agent}; ocr and "
        "a11y are offline stand-ins, not models: fixed rules over OCR lines or the page's accessibility tree "
        "(a11y: browsing only), on the CPU with no GPU and no weights, for trying the pipeline and for tests; "
        "their numbers are not a model's; screen-text is a "
        "text-only LLM over --base-url/--model reading the screenshot through OCR, and forces "
        "--history text and --aggregation text since it cannot see stars)",
    )
    _server_arguments(g)
    _request_arguments(g)
    _local_arguments(g)
    add_preflight_argument(g)  # every harness checks its model before the first sample


def _local_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--attention-layer",
        type=whole(0),
        default=None,
        metavar="N",
        help="--backend hf: the decoder layer MVP's attention pass reads (default 20, as MVP's UI-TARS-1.5 "
        "and GTA1 scripts; its Qwen3-VL scripts use 24 for 8B, 48 for 32B)",
    )


def _server_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--base-url",
        action="append",
        dest="base_urls",
        metavar="URL",
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1; repeat to spread load over several servers",
    )
    g.add_argument("--model", help="model name on the server (HTTP) or a local folder (--backend hf)")
    g.add_argument(
        "--backend",
        choices=("http", "hf"),
        default="http",
        help="http: OpenAI-compatible server (vLLM, SGLang, hosted); hf: in-process transformers",
    )
    g.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="environment variable holding the API key (never logged; default: the provider's own for "
        "claude, gemini and openai, ANTHROPIC_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY, OPENAI_API_KEY; "
        "OPENAI_API_KEY for a server)",
    )
    g.add_argument(
        "--timeout",
        type=positive,
        default=120.0,
        metavar="S",
        help="per-request timeout in seconds (default 120)",
    )
    g.add_argument(
        "--max-reply-bytes",
        type=_reply_bytes,
        default=MAX_REPLY_BYTES,
        metavar="N",
        help=f"most bytes a reply may hold after decompression; a larger one is a failed call "
        f"(default {MAX_REPLY_BYTES}, {MAX_REPLY_BYTES // 2**20} MiB)",
    )
    g.add_argument(
        "--max-in-flight",
        type=whole(1),
        default=None,
        metavar="N",
        help="requests in flight per server (default: --concurrency x 6)",
    )
    g.add_argument(
        "--temperature",
        type=non_negative,
        default=0.0,
        help="sampling temperature, sent explicitly (default 0, greedy)",
    )


def _request_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--image-format",
        choices=("png", "jpeg", "webp"),
        default="png",
        help="how screenshots travel over HTTP (default png: lossless; jpeg costs ~1/5 the client CPU, "
        "see BENCHMARKS.md)",
    )
    g.add_argument(
        "--image-quality", type=whole(1, 100), default=95, metavar="Q", help="jpeg/webp quality (default 95)"
    )
    g.add_argument(
        "--request-format",
        choices=("prompt", "computer-use"),
        default="prompt",
        help="claude, gemini, openai: the plain grounding prompt (default) or the provider's computer-use "
        "tool, for models that have one (adapters/families/prompts/hosted/models.json)",
    )
    g.add_argument(
        "--image-detail",
        choices=("high", "low", "original"),
        default=None,
        metavar="LEVEL",
        help="openai: the input_image detail level, which sets the size the model sees (default high; "
        "original for GPT-5.4 and later)",
    )
    g.add_argument(
        "--ocr-budget",
        type=whole(1),
        default=None,
        metavar="PIXELS",
        help="ocr agent: pixels it sees of a full screenshot (default about 1 megapixel)",
    )
    _hosted_arguments(g)


def _hosted_arguments(g: argparse._ArgumentGroup) -> None:
    """claude, gemini, openai: what each request asks of the model, and how long a busy server
    may make it wait."""
    g.add_argument(
        "--max-tokens",
        type=whole(1),
        default=None,
        metavar="N",
        help="claude, gemini, openai: the output budget of each request, thinking included (default: the "
        "model's, from adapters/families/prompts/hosted/models.json; a reply cut at it fails at once)",
    )
    g.add_argument(
        "--reasoning-effort",
        default=None,
        metavar="WORD",
        help="claude, gemini, openai: the model's reasoning or thinking setting in its provider's words "
        "(OpenAI effort none/low/medium/high/xhigh; Claude effort low/medium/high/max or off; Gemini 3 "
        "thinking level low/high; Gemini 2.5 a thinking budget in tokens); default: the model's",
    )
    g.add_argument(
        "--model-rule",
        default=None,
        metavar="MODEL",
        help="claude, gemini, openai: apply the rule (image size, tool, budget, reasoning) of this known "
        "model id, for a new id no rule names (default: the rule that names --model)",
    )
    g.add_argument(
        "--max-retry-wait",
        type=non_negative,
        default=None,
        metavar="S",
        help="the longest wait a busy server may ask for (Retry-After, RetryInfo) before the call fails "
        "instead (default 120)",
    )


def _agent(name: str) -> str:
    """A registered agent name; any other is bad input naming the known ones (before a data
    set is read or a server asked)."""
    from regionfocus.adapters.registry import facts

    try:
        facts(name)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name


def _reply_bytes(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of bytes >= 1, got {value!r}")
    return n


def text_only_config(agent: str, config):
    """``config`` (a RegionFocusConfig) with history and aggregation in text when ``agent``
    reads no pixels; unchanged otherwise."""
    from dataclasses import replace

    if not reads_pixels(agent):
        return replace(config, history="text", aggregation="text")
    return config


def build_model(args: argparse.Namespace, concurrency: int = 1, coat=None) -> GroundingModel:
    """The GroundingModel the flags describe. Raises ValueError with the flag to fix.
    ``coat``: a :class:`~regionfocus.adapters.reasoning.coat.CoatConfig` to carry Chain-of-Action-Thought (the
    screen-text agent's own support; any VLM agent wrapped by :class:`~regionfocus.adapters.reasoning.coat_model.CoatModel`)."""
    from regionfocus.adapters.build import build_grounder

    return build_grounder(
        args.agent,
        base_url=args.base_urls,
        model=args.model,
        backend=args.backend,
        api_key_env=args.api_key_env,
        timeout=args.timeout,
        temperature=args.temperature,
        max_in_flight=args.max_in_flight,
        max_reply_bytes=getattr(args, "max_reply_bytes", MAX_REPLY_BYTES),
        image_format=args.image_format,
        image_quality=args.image_quality,
        request_format=getattr(args, "request_format", "prompt"),
        image_detail=getattr(args, "image_detail", None),
        ocr_budget=args.ocr_budget,
        concurrency=concurrency,
        coat=coat,
        attention_layer=getattr(args, "attention_layer", None),
        **hosted_options(args),
    )


def hosted_options(args: argparse.Namespace) -> dict:
    """The hosted families' own settings the flags set (output budget, reasoning, model rule,
    longest wait), for a hosted --agent; nothing for any other."""
    named = {
        "max_tokens": ("--max-tokens", getattr(args, "max_tokens", None)),
        "reasoning": ("--reasoning-effort", getattr(args, "reasoning_effort", None)),
        "rule_model": ("--model-rule", getattr(args, "model_rule", None)),
        "max_wait": ("--max-retry-wait", getattr(args, "max_retry_wait", None)),
    }
    given = {k: v for k, (_, v) in named.items() if v is not None}
    f = _facts(args.agent)
    if f is None or not f.provider or args.backend == "hf":
        if given:
            flags = ", ".join(named[k][0] for k in given)
            raise ValueError(
                f"{flags}: for the hosted agents (claude, gemini, openai), not --agent {args.agent}"
            )
        return {}
    return given


def add_second_agent_arguments(parser: argparse.ArgumentParser) -> None:
    """--second-agent, --second-base-url, --second-model: a second model for a strategy that
    routes between two (the rest of the agent flags apply to both)."""
    g = parser.add_argument_group(
        "second model (for a strategy that routes between two, e.g. zoom-consistency)"
    )
    g.add_argument("--second-agent", metavar="F", help="the second model's family (names as --agent)")
    g.add_argument(
        "--second-base-url",
        action="append",
        dest="second_base_urls",
        metavar="URL",
        help="its OpenAI-compatible endpoint; repeat like --base-url. --api-key-env, --timeout, "
        "--max-in-flight, --temperature and --image-format apply to it as to the first",
    )
    g.add_argument("--second-model", metavar="NAME", help="model name on that server (default: --model)")


def build_second_model(args: argparse.Namespace, concurrency: int = 1) -> GroundingModel | None:
    """The model of --second-*, built like the first by :func:`build_model`; None without
    --second-agent. Raises ValueError naming the --second flag to fix."""
    if not args.second_agent:
        if args.second_base_urls or args.second_model:
            raise ValueError(
                "--second-base-url and --second-model need --second-agent (the second model's family)"
            )
        return None
    hosted = _facts(args.second_agent)
    # A hosted family has its provider's host by default: --second-base-url is optional for it.
    local = runs_locally(args.second_agent) or args.backend == "hf" or bool(hosted and hosted.provider)
    if not local and not args.second_base_urls:
        raise ValueError(f"--second-agent {args.second_agent} needs --second-base-url (its server)")
    second = {
        "agent": args.second_agent,
        "base_urls": args.second_base_urls,
        "model": args.second_model or args.model,
    }
    return build_model(argparse.Namespace(**{**vars(args), **second}), concurrency)


def request_identity(model: GroundingModel) -> dict:
    """What shapes every request the model is sent, beyond the flags a harness pins by name:
    the family, its resize rule (the pixels the model sees), the answer budget, and how images
    travel (format, lossy quality, data URL or local file). A run folder pins it, so a resume
    cannot mix PNG and JPEG samples or two pixel budgets. In-process agents with no backend
    carry only their family."""
    inner = getattr(model, "inner", None) or model  # CoatModel wraps the family's adapter
    out: dict = {"family": type(inner).__name__}
    resize = getattr(inner, "resize", None)
    if resize is not None:
        out["resize"] = resize.identity()  # every pass of it (UI-Venus 1.5 resizes twice)
    if getattr(inner, "max_tokens", None) is not None:
        out["max_tokens"] = inner.max_tokens
    facts = getattr(inner, "request_facts", None)  # a hosted family: provider, format, image rule
    if callable(facts):
        out.update(facts())
    backend = getattr(inner, "backend", None)
    encoder = getattr(backend, "encoder", None)
    if encoder is not None:
        out["image_format"] = encoder.image_format
        # Quality means nothing to a lossless format: a changed --image-quality beside PNG is
        # not a different experiment.
        out["image_quality"] = encoder.quality if encoder.image_format != "png" else None
        local = getattr(backend, "local", None)
        out["transport"] = "data-url" if local is None else f"local-{local.image_format}"
    return out


def add_reasoning_arguments(parser: argparse.ArgumentParser) -> None:
    """--reasoning and --coat-parts: Chain-of-Action-Thought around the agent (any harness
    whose agent works over steps)."""
    g = parser.add_argument_group("reasoning")
    g.add_argument(
        "--reasoning",
        choices=("none", "coat"),
        default="none",
        help="coat: Chain-of-Action-Thought (Android in the Zoo): each answer writes the screen "
        "description, the previous action's result, an action think and the next action's "
        "description before its action, and the history carries them instead of a bare list of "
        "actions; for screen-text and any VLM agent (default none)",
    )
    g.add_argument(
        "--coat-parts",
        metavar="PARTS",
        help="with --reasoning coat: the parts written and carried, a comma list of sd, par, at, ad "
        "(default all four; fewer for the paper's ablation)",
    )


def coat_from_args(args: argparse.Namespace):
    """The CoatConfig of --reasoning coat [--coat-parts], or None. Raises ValueError."""
    if args.reasoning != "coat":
        if args.coat_parts:
            raise ValueError("--coat-parts needs --reasoning coat")
        return None
    from regionfocus.adapters.reasoning.coat import CoatConfig

    try:
        return CoatConfig.parse(args.coat_parts or "all")
    except ValueError as e:
        raise ValueError(f"--coat-parts: {e}") from None
