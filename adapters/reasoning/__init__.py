"""Reasoning around an agent: Chain-of-Action-Thought (the parts, their prompts, the wrapper)."""
