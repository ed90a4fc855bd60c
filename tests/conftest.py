"""Shared test configuration. Fixtures that need a browser or a model server live beside the
tests that use them and are session-scoped, so each slow resource starts once per run."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
from tests.vllm_support.fixture import tiny_trained_dir, vllm_server  # noqa: F401
