"""Test infrastructure for the real vLLM (CPU) server: venv, model folder, server, fixture."""
