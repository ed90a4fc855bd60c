"""Agents that need no VLM of their own, or wrap a text-only LLM: the OCR grounder, the
accessibility-tree agent, the screen-to-text ReAct agent."""
