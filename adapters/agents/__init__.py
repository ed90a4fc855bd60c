"""Agents that need no VLM of their own, or wrap a text-only LLM: the OCR grounder, the
accessibility-tree agent, the screen-to-text ReAct agent. Their prompts are text files in
``prompts/``."""

from functools import cache
from importlib import resources


@cache
def agent_prompt(name: str) -> str:
    """The prompt ``adapters/agents/prompts/<name>``, exactly as written ({} fields for format)."""
    return resources.files(__name__).joinpath("prompts", name).read_text(encoding="utf-8")
