"""The harness commands' check of their models before anything else runs (issue 37, item 7).

A mistyped ``--base-url`` used to run a minute of failing calls before the run ended with exit 3;
a missing provider key ran every sample, five failed calls each, and left error records to
retry. Every harness command now calls :func:`check_models` on the models it built from its
flags, right after building them: before the data is read (a Hub download, a Chromium render)
and before its run folder is opened, so a model that cannot answer writes no record. A dead
server, a refused key, an unknown model and a missing key end the command with exit 2 and one
line naming the cause (:func:`regionfocus.adapters.preflight.preflight`: one cheap request per
backend, within seconds).

``--no-preflight`` skips the request, for a gateway that serves chat completions but no model
list or lookup; a missing key is still named, since reading the variable costs nothing.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from regionfocus.adapters.preflight import PreflightFailed, backend_of, preflight


def add_preflight_argument(group: Any) -> None:
    """``--no-preflight`` (an argparse parser or group)."""
    group.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the model check before the first sample (one request: GET /models of an "
        "OpenAI-compatible server, or the provider's model lookup), for a gateway that offers "
        "neither; a missing API key is named all the same",
    )


def check_keys(*models: Any) -> None:
    """The API key each model's backend will read, named when its variable is unset (ValueError)."""
    for model in models:
        read = getattr(backend_of(model), "api_key", None)
        if callable(read):
            read()


async def _check(models: list[Any]) -> None:
    await asyncio.gather(*(preflight(m) for m in models))


def check_models(args: argparse.Namespace, *models: Any) -> None:
    """Check ``models`` (None entries skipped) before the first sample: their keys, then, unless
    ``args.no_preflight``, their servers and names. Raises ValueError with one line naming the
    cause, which the harness command turns into exit 2."""
    models = [m for m in models if m is not None]
    check_keys(*models)  # its own one line: no flag skips it
    if not models or getattr(args, "no_preflight", False):
        return
    try:
        asyncio.run(_check(models))
    except PreflightFailed as e:
        raise ValueError(
            f"{e} (checked before the first sample, nothing was run; --no-preflight skips this request)"
        ) from None
