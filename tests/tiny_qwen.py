"""Build a tiny, randomly initialised Qwen2.5-VL model folder, offline, for tests.

``build_tiny_qwen25vl(out_dir)`` writes a folder that ``from_pretrained`` (transformers) loads and
that vLLM's CPU backend can serve: a byte-level BPE tokenizer trained here on a short built-in text
plus the Qwen special tokens and a ChatML chat template, a Qwen2-VL image processor with small
pixel limits, and a 2-layer config with random weights. Its output is random text: the
malformed-output test for every parser downstream.

Sizes are chosen for vLLM's CPU attention, which supports head sizes 32, 64, 80, ... but not 16
(see docs/ARCHITECTURE.md §10): text hidden 128 with 4 query heads and 2 KV heads gives head_dim 32, and the
multimodal rope sections [4, 6, 6] sum to head_dim / 2 as Qwen2.5-VL's M-RoPE requires.

Deterministic: the same call writes the same tokenizer and weights. Cached: a folder holding a
complete build (marker file written last) is reused as is.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

# Bump when the recipe changes, so stale cached folders are rebuilt.
RECIPE_VERSION = 2
_MARKER = ".tiny_qwen25vl_complete.json"

# Qwen's special tokens, in their official order (Qwen2.5-VL tokenizer_config.json). The ids differ
# from the real model's (ours follow a small trained vocabulary); names and roles are the same.
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
# Added but not "special" in Qwen's tokenizer, so decoding keeps them in the text.
PLAIN_ADDED_TOKENS = ("<tool_call>", "</tool_call>")

# Qwen's pre-tokenisation split (letters, single digits, punctuation runs, newlines, spaces).
_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
    r"""\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# ChatML as Qwen2-VL formats it: a default system turn, images as
# <|vision_start|><|image_pad|><|vision_end|> placeholders the processor expands per image.
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] != 'system' -%}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string -%}"
    "{{ message['content'] }}"
    "{%- else -%}"
    "{%- for part in message['content'] -%}"
    "{%- if part['type'] in ('image', 'image_url') -%}"
    "{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- elif part['type'] == 'video' -%}"
    "{{ '<|vision_start|><|video_pad|><|vision_end|>' }}"
    "{%- elif part['type'] == 'text' -%}"
    "{{ part['text'] }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{ '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{%- endif -%}"
)

# Training text for the BPE: GUI-agent vocabulary, digits, JSON and action syntax, so the random
# model's output mixes plausible fragments of every answer format with junk.
_CORPUS = """\
You are a GUI agent. You are given a task and a screenshot. Output the next action.
Thought: I should click the Submit button at the bottom of the form.
Action: click(start_box='(512,384)')
Action: left_double(start_box='<|box_start|>(100,200)<|box_end|>')
Action: type(content='hello world\\n')  Action: hotkey(key='ctrl c')  Action: scroll(direction='down')
Action: drag(start_box='(10,20)', end_box='(30,40)')  Action: wait()  Action: finished(content='done')
<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [640, 360]}}</tool_call>
{"action": "type", "text": "search query"} {"action": "key", "keys": ["ctrl", "a"]} terminate success
<point>123 456</point> <box>10 20 30 40</box> [0.25, 0.75] (x1, y1, x2, y2)
Is the star on the target? Answer YES or NO. Verdict: yes. Verdict: no. Verdict: unknown. Choice: 3
Open the File menu, select Save As, enter the name, press Enter. Settings, Search, Home, Profile,
Cancel, OK, Apply, Close, Next, Back, Login, Sign in, Username, Password, Download, Upload, Edit.
The quick brown fox jumps over the lazy dog. 0 1 2 3 4 5 6 7 8 9 10 100 1000 1920 1080 2560 1440.
"""


def complete(out: Path, marker: str = _MARKER, recipe: object = RECIPE_VERSION) -> bool:
    """Whether ``out`` holds a whole build of ``recipe`` (its marker, written last, names it)."""
    try:
        meta = json.loads((out / marker).read_text())
    except (OSError, ValueError):
        return False
    return meta.get("recipe") == recipe and all((out / name).exists() for name in meta.get("files", []))


def _train_tokenizer(work: Path, vocab_size: int, corpus: str = _CORPUS):
    """A byte-level BPE in Qwen's layout, trained on ``corpus``, with the Qwen special tokens
    appended after it."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

    bpe = Tokenizer(models.BPE(unk_token=None, continuing_subword_prefix="", end_of_word_suffix=""))
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    bpe.train_from_iterator([corpus] * 4, trainer=trainer)
    model_json = json.loads(bpe.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model_json["merges"]]

    tok = Qwen2Tokenizer(
        vocab=dict(model_json["vocab"]),
        merges=merges,
        unk_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        errors="replace",
        model_max_length=32768,
    )
    tok.add_special_tokens({"additional_special_tokens": list(SPECIAL_TOKENS)})
    tok.add_tokens(list(PLAIN_ADDED_TOKENS), special_tokens=False)
    tok.chat_template = CHAT_TEMPLATE
    return tok


# The processor's pixel limits: 4 .. 256 cells of 28 px.
MIN_PIXELS, MAX_PIXELS = 4 * 28 * 28, 256 * 28 * 28


def tiny_processor(tokenizer):
    """A Qwen2.5-VL processor over ``tokenizer``: 14-px patches merged 2x2, small pixel limits."""
    from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    sizes = dict(
        min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=14, temporal_patch_size=2, merge_size=2
    )
    return Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(**sizes),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(**sizes),
        chat_template=CHAT_TEMPLATE,
    )


def tiny_config(
    tokenizer,
    *,
    initializer_range: float = 0.3,
    rope_theta: float = 1000000.0,
    layers: int = 2,
    intermediate_size: int = 256,
    full_attention_blocks: tuple[int, ...] = (1,),
):
    """The tiny Qwen2.5-VL config for ``tokenizer`` (sizes in the module docstring)."""
    from transformers import Qwen2_5_VLConfig

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS + PLAIN_ADDED_TOKENS}
    return Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "initializer_range": initializer_range,
            "hidden_size": 128,
            "intermediate_size": intermediate_size,
            "num_hidden_layers": layers,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 4096,
            "max_window_layers": layers,
            "rope_scaling": {"type": "mrope", "mrope_section": [4, 6, 6], "rope_theta": rope_theta},
            "bos_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={
            "depth": 2,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_heads": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "window_size": 112,
            "fullatt_block_indexes": list(full_attention_blocks),
            "out_hidden_size": 128,
            "tokens_per_second": 2,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )


def set_generation_config(model, tokenizer) -> None:
    """Greedy, ending at ``<|im_end|>`` (or ``<|endoftext|>``): the generation_config.json a
    server reads for its stop tokens."""
    pad, end = tokenizer.convert_tokens_to_ids("<|endoftext|>"), tokenizer.convert_tokens_to_ids("<|im_end|>")
    model.generation_config.bos_token_id = pad
    model.generation_config.eos_token_id = [end, pad]
    model.generation_config.pad_token_id = pad
    model.generation_config.do_sample = False


def save_folder(work: Path, model, processor, marker: str, meta: dict) -> list[str]:
    """Write ``model`` and ``processor`` into ``work``, readable by everyone, with the marker
    file ``marker`` (``meta`` plus the file list) last. Returns the file names."""
    model.save_pretrained(work)
    processor.save_pretrained(work)
    # Loaders older than transformers 5 (and some servers) read the image processor from the
    # legacy per-processor file with min/max_pixels spelled out; write it too.
    legacy = processor.image_processor.to_dict()
    legacy.update(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
    (work / "preprocessor_config.json").write_text(json.dumps(legacy, indent=2, sort_keys=True))
    for path in [work, *work.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    files = sorted(p.name for p in work.iterdir())
    (work / marker).write_text(json.dumps({**meta, "files": files}))
    return files


def move_into_place(work: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    os.replace(work, out)


def build_tiny_qwen25vl(out_dir: str | os.PathLike[str], *, seed: int = 0) -> Path:
    """Write (or reuse) a tiny random Qwen2.5-VL folder at ``out_dir`` and return its path.

    Loadable with ``AutoProcessor.from_pretrained`` and
    ``AutoModelForImageTextToText.from_pretrained``; servable by vLLM CPU with
    ``--max-model-len 4096 --dtype float32``. Images: 14-px patches merged 2x2 (factor 28),
    processor pixel limits 4·28² .. 256·28² (the in-process backend bypasses them for images
    already at a multiple of 28).
    """
    out = Path(out_dir)
    if complete(out):
        return out

    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    out.parent.mkdir(parents=True, exist_ok=True)
    # Build next to the target and move into place, so a crash never leaves a half folder that
    # looks complete and two builders never interleave files.
    work = Path(tempfile.mkdtemp(prefix=".tiny_qwen_", dir=out.parent))
    try:
        tokenizer = _train_tokenizer(work, vocab_size=1024)
        processor = tiny_processor(tokenizer)
        # Wide random weights: greedy decoding then wanders over the whole vocabulary (JSON
        # fragments, action words, special tokens, broken UTF-8) instead of repeating one token,
        # which makes a harsher malformed-output test.
        config = tiny_config(tokenizer, initializer_range=0.3)
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration(config).eval()
        set_generation_config(model, tokenizer)
        save_folder(work, model, processor, _MARKER, {"recipe": RECIPE_VERSION, "seed": seed})
        move_into_place(work, out)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return out
