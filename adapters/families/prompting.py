"""What a family's request is made of: the prompt templates (adapters/families/prompts/), a
request as messages plus pre-fill, and the frame a request's points are in."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from string import Template
from typing import Any

from PIL import Image

from regionfocus.adapters.backends.base import Message

# An image :meth:`VlmAdapter.annotate` made stands for a screenshot of another size: the size of
# that screenshot travels in the image's ``info`` (PIL keeps it on copies), and every point of
# a request about the image is in the screenshot's pixels.
GIVEN_SIZE_KEY = "regionfocus.given_size"


def given_size(image: Image.Image) -> tuple[int, int]:
    """(W, H) of the frame a request's points are in: the screenshot an annotated model-size
    image stands for, or the image's own size."""
    g = image.info.get(GIVEN_SIZE_KEY)
    return (int(g[0]), int(g[1])) if g else image.size


@dataclass
class Prompt:
    """A request as messages, and the assistant pre-fill the answer continues (may be empty)."""

    messages: list[Message]
    prefill: str = ""


# ------------------------------------------------------------------ prompt templates
@lru_cache(maxsize=64)
def load_prompt(name: str) -> Template:
    """The template ``adapters/families/prompts/<name>`` (``$var`` placeholders, string.Template)."""
    text = (
        resources.files("regionfocus.adapters.families").joinpath("prompts", name).read_text(encoding="utf-8")
    )
    return Template(text)


def render(name: str, **values: Any) -> str:
    """Fill a template; a missing placeholder raises KeyError naming it (a bug, not input)."""
    return load_prompt(name).substitute({k: str(v) for k, v in values.items()})
