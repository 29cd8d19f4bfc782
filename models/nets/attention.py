"""Attention, written out once: softmax(QKᵀ/√d_k + bias, masked)·V.

Every model in models/ that attends computes its weights here: the lessons' Transformer
(models/nets/transformer.py), the BERT pass (models/nets/bert_forward.py), the KV-cache
step, the positional read-out, the RNN with attention on top and the √d_k study
(models/analysis/scaling.py). Written out, not fused: PyTorch's fused kernel never
materialises the weights the lessons draw. tests/unit/test_attention.py holds it equal to
that kernel and fails if another module under models/ computes a softmax over a product of
queries and keys itself (the numpy backward pass of models/analysis/transformer_backward.py
keeps a twin, for its measured cost, held equal to this one).
"""

from __future__ import annotations

import math

import torch


def subsequent_mask(n_query: int, n_key: int) -> torch.Tensor:
    """True where query i may see key j (j ≤ i), as in the Annotated Transformer."""
    return torch.ones(n_query, n_key, dtype=torch.bool).tril()


def attention_pattern(
    q: torch.Tensor,
    k: torch.Tensor,
    causal: bool = False,
    bias: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores, pattern) of softmax(QKᵀ/√d_k + bias, masked). Shapes `[..., pos, d_k]`.

    `mask` is boolean `[query_pos, key_pos]`, True where a query may see a key (PyTorch's
    convention for boolean attention masks); it combines with `causal`. A query that may
    see no key at all gets zero weights (softmax of an all −inf row would be NaN), as
    PyTorch's fused attention gives.

    `scale`, when given, multiplies QKᵀ in place of the division by √d_k: transformers'
    BERT multiplies by d_head^−0.5, and x·(1/√d) can differ from x/√d in the last bit
    (tests/unit/test_bert_forward.py holds that pass bit for bit to transformers').

    `scores` are after scale, bias and mask (−inf where masked).
    """
    scores = q @ k.transpose(-1, -2)
    scores = scores / math.sqrt(q.shape[-1]) if scale is None else scores * scale
    if bias is not None:
        scores = scores + bias
    allowed = mask.to(q.device) if mask is not None else None
    if causal:
        tril = subsequent_mask(q.shape[-2], k.shape[-2]).to(q.device)
        allowed = tril if allowed is None else allowed & tril
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    pattern = torch.softmax(scores, dim=-1)
    if allowed is not None:
        sees_nothing = ~allowed.any(dim=-1, keepdim=True)
        if bool(sees_nothing.any()):
            pattern = pattern.masked_fill(sees_nothing, 0.0)
    return scores, pattern


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = False,
    bias: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """softmax(QKᵀ/√d_k + bias, masked)·V, written out: (scores, pattern, z).

    The arguments are `attention_pattern`'s, plus the values `v [..., key_pos, d_v]`;
    `z = pattern·V` is `[..., query_pos, d_v]`."""
    scores, pattern = attention_pattern(q, k, causal, bias, mask, scale)
    return scores, pattern, pattern @ v
