"""A grounding model by family name, from Python: the one place a name and its settings become a
:class:`~regionfocus.model.GroundingModel` (the harnesses' flags reach it through
:func:`regionfocus.adapters.cli_args.build_model`, the plug-ins call it directly)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from regionfocus.adapters.backends.base import MAX_REPLY_BYTES
from regionfocus.model import GroundingModel

DEFAULT_TIMEOUT_S = 120.0


def build_grounder(
    agent: str,
    *,
    base_url: str | Sequence[str] | None = None,
    model: str | None = None,
    backend: str = "http",
    api_key_env: str | None = None,
    timeout: float | None = None,
    temperature: float | None = None,
    max_in_flight: int | None = None,
    max_reply_bytes: int = MAX_REPLY_BYTES,
    image_format: str = "png",
    image_quality: int = 95,
    request_format: str = "prompt",
    image_detail: str | None = None,
    ocr_budget: int | None = None,
    concurrency: int = 1,
    coat: Any = None,
    attention_layer: int | None = None,
    **options: Any,
) -> GroundingModel:
    """The grounding model ``agent`` names (a registered name: ``regionfocus describe`` lists
    them), built as the harnesses' ``--agent`` flags build it.

    ``base_url``: the OpenAI-compatible server(s) of a served family (several spread the load),
    or a hosted family's gateway (its provider's host by default). ``model``: the model name the
    server serves, the provider's model id, or a local folder with ``backend="hf"`` (in-process
    transformers). ``api_key_env``: the variable holding the key (never the key itself).
    ``temperature`` None: the family's own default. ``concurrency``: samples in flight, which
    sizes ``max_in_flight`` when it is not given. ``coat``: a
    :class:`~regionfocus.adapters.reasoning.coat.CoatConfig` (Chain-of-Action-Thought).
    ``attention_layer``: the decoder layer MVP's attention pass reads (``backend="hf"``; None:
    the backend's default, 20). Other
    ``options`` go to the family's constructor (``get_adapter``: e.g. ``max_pixels``) or, for a
    hosted family, to :func:`~regionfocus.adapters.families.hosted.build_hosted`.

    Raises ValueError naming the setting to fix (and the flag that sets it).
    """
    from regionfocus.adapters.registry import facts, get_adapter

    known = facts(agent)  # ValueError naming the known names
    urls = [base_url] if isinstance(base_url, str) else list(base_url or [])
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    sampling = {} if temperature is None else {"temperature": temperature}
    if backend not in ("http", "hf"):
        raise ValueError(f"backend must be 'http' or 'hf', got {backend!r}")
    if coat is not None and known.runs_locally:
        raise ValueError(f"--reasoning coat needs an LLM or VLM agent; --agent {agent} writes no text")

    if agent == "ocr":
        return get_adapter("ocr", **({"budget": ocr_budget} if ocr_budget else {}), **options)
    if known.runs_locally:
        return get_adapter(agent, **options)
    if known.provider and backend != "hf":
        return _with_coat(
            _hosted(
                agent,
                urls,
                model=model,
                api_key_env=api_key_env,
                timeout=timeout,
                max_in_flight=max_in_flight or max(4, concurrency * 2),
                image_format=image_format,
                image_quality=image_quality,
                request=request_format,
                detail=image_detail,
                **sampling,
                **options,
            ),
            coat,
        )
    chat = (
        _in_process(model, attention_layer)
        if backend == "hf"
        else _served(
            agent,
            urls,
            model,
            api_key_env=api_key_env,
            timeout=timeout,
            max_reply_bytes=max_reply_bytes,
            max_in_flight=max_in_flight or max(8, concurrency * 6),
            image_format=image_format,
            image_quality=image_quality,
        )
    )
    if agent == "screen-text":
        return get_adapter(agent, backend=chat, coat=coat, **sampling, **options)
    return _with_coat(get_adapter(agent, backend=chat, **sampling, **options), coat)


def _in_process(model: str | None, attention_layer: int | None):
    """In-process transformers over a local model folder (``backend="hf"``)."""
    if not model or not os.path.isdir(model):
        raise ValueError(
            f"--backend hf needs --model (model=) pointing at a local model folder, got {model!r}"
        )
    from regionfocus.adapters.backends.transformers_local import TransformersBackend

    return TransformersBackend(
        model, **({} if attention_layer is None else {"attention_layer": attention_layer})
    )


def _served(agent: str, urls: list[str], model: str | None, **settings: Any):
    """An OpenAI-compatible server (vLLM, SGLang) serving ``model`` at ``urls``."""
    if not urls:
        raise ValueError(
            f"--agent {agent} needs --base-url (base_url=): an OpenAI-compatible server, e.g. "
            f"`vllm serve`; `regionfocus serve-command --agent {agent}` prints how to start one"
        )
    if not model:
        raise ValueError("--model (model=) is required with --base-url: the model name the server serves")
    from regionfocus.adapters.backends.transport import named_key_problem

    named = settings.pop("api_key_env")
    problem = named_key_problem(named)
    if problem:
        raise ValueError(problem)
    settings["api_key_env"] = named or "OPENAI_API_KEY"
    from regionfocus.adapters.backends.openai_http import OpenAIBackend

    return OpenAIBackend(base_urls=urls, model=model, **settings)


def _hosted(agent: str, urls: list[str], **settings: Any) -> GroundingModel:
    """A hosted family (claude, gemini, openai) over its provider's SDK: one base URL at most
    (the provider's host by default)."""
    import inspect

    from regionfocus.adapters.families.hosted import build_hosted

    if len(urls) > 1:
        raise ValueError(
            f"--agent {agent} takes one --base-url (the provider's host or a gateway), got {len(urls)}"
        )
    unknown = sorted(set(settings) - set(inspect.signature(build_hosted).parameters))
    if unknown:
        raise ValueError(f"agent {agent} (hosted) takes no option {', '.join(unknown)}")
    return build_hosted(agent, base_url=urls[0] if urls else None, **settings)


def _with_coat(model: GroundingModel, coat: Any) -> GroundingModel:
    if coat is None:
        return model
    from regionfocus.adapters.reasoning.coat_model import CoatModel

    return CoatModel(model, coat)


async def aclose_model(model: Any) -> None:
    """Close what ``model`` holds open (its backend's HTTP clients), wherever it keeps it: the
    model itself, its backend, or the family adapter a wrapper (CoatModel) holds."""
    for holder in (model, getattr(model, "inner", None)):
        for obj in (holder, getattr(holder, "backend", None)):
            close = getattr(obj, "aclose", None)
            if callable(close):
                await close()
                return
