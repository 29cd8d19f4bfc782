"""Attention masks, and one head's attention computed step by step under each of them.

A mask is boolean `[query_pos, key_pos]`, True where the query may see the key (PyTorch's
convention). Added to the scores it becomes 0 where True and −inf where False, so softmax
gives those keys a weight of exactly 0. A large finite negative number (−1e9) would too, in
float32, wherever a row keeps a visible key; the two differ on a row with none: −inf makes
it 0/0 = NaN (which the model replaces by zero weights), −1e9 a uniform row.

Kinds:
- none: every token sees every token (a BERT-style encoder);
- causal: token i sees tokens 0 … i (a GPT-style decoder);
- padding: a batch of two sentences, the shorter filled with [PAD] up to the longer; no query
  sees a [PAD] key, and a [PAD] query sees nothing at all (its row is fully masked);
- prefix: the first `prefix` tokens see each other both ways, the rest causally (prefix-LM);
- window: token i sees tokens j with |i − j| ≤ w (a Longformer-style sliding window);
- cross: encoder–decoder attention, `[target_pos, source_pos]`, every source token visible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from models.nets.transformer import EncoderDecoder, Transformer

KINDS = ("none", "causal", "padding", "prefix", "window", "cross")
# The steps of one head's attention, in order, with TransformerLens names where one exists.
STEPS = (
    "x_query",
    "hook_q",
    "hook_k",
    "hook_v",
    "qk",
    "scaled",
    "mask",
    "hook_attn_scores",
    "hook_pattern",
    "hook_z",
)


def allowed_mask(
    kind: str,
    n_query: int,
    n_key: int | None = None,
    *,
    length: int | None = None,
    prefix: int = 1,
    window: int = 1,
) -> np.ndarray:
    """The boolean mask of `kind` (see the module doc); `length` is the real (unpadded)
    length for "padding", `prefix` the prefix-LM's bidirectional part, `window` the window's
    reach on each side."""
    n_key = n_query if n_key is None else n_key
    if kind != "cross" and n_key != n_query:
        raise ValueError(f"a {kind!r} mask is square, got {n_query} × {n_key}")
    q = np.arange(n_query)[:, None]
    k = np.arange(n_key)[None, :]
    if kind in ("none", "cross"):
        return np.ones((n_query, n_key), dtype=bool)
    if kind == "causal":
        return k <= q
    if kind == "padding":
        real = n_key if length is None else length
        return (k < real) & (q < real)
    if kind == "prefix":
        return (k <= q) | (k < prefix)
    if kind == "window":
        return np.abs(q - k) <= window
    raise ValueError(f"unknown mask kind {kind!r}; one of {KINDS}")


def additive(allowed: np.ndarray) -> np.ndarray:
    """The mask as it is added to the scores: 0 where allowed, −inf where not."""
    return np.where(allowed, 0.0, -np.inf).astype(np.float32)


def pad_batch(first: list[int], second: list[int], pad_id: int) -> tuple[np.ndarray, list[int]]:
    """Two sentences as one `[2, n]` batch, the shorter filled with `pad_id`; their lengths."""
    n = max(len(first), len(second))
    batch = np.full((2, n), pad_id, dtype=np.int64)
    batch[0, : len(first)] = first
    batch[1, : len(second)] = second
    return batch, [len(first), len(second)]


def padded_row(lengths: list[int]) -> int:
    """Which row of a two-sentence batch to show: the one that got padding (else the first)."""
    return 1 if lengths[1] < lengths[0] else 0


def head_steps(cache: dict, name: str, head: int, x_query: np.ndarray) -> dict[str, np.ndarray]:
    """One head's attention from a model's trace, step by step (names in STEPS).

    `name` is the attention's trace prefix ("blocks.0.attn"); `x_query` the input its
    queries were made from. QKᵀ and QKᵀ/√d_k are recomputed from the traced Q and K; the
    mask is read back from the traced scores (−inf exactly where the model masked).
    """
    q = cache[f"{name}.hook_q"][head]
    k = cache[f"{name}.hook_k"][head]
    scores = cache[f"{name}.hook_attn_scores"][head]
    qk = q @ k.T
    allowed = np.isfinite(scores)
    return {
        "x_query": x_query,
        "hook_q": q,
        "hook_k": k,
        "hook_v": cache[f"{name}.hook_v"][head],
        "qk": qk,
        "scaled": qk / np.float32(math.sqrt(q.shape[-1])),
        "mask": additive(allowed),
        "hook_attn_scores": scores,
        "hook_pattern": cache[f"{name}.hook_pattern"][head],
        "hook_z": cache[f"{name}.hook_z"][head],
    }


# The finite stand-in for −∞ that attention code often adds instead.
LARGE_NEGATIVE = -1e9


def masked_row_softmax(n_keys: int, fill: float) -> np.ndarray:
    """Softmax in float32 of a query row whose every key is masked with `fill`: what a fully
    masked row would get without this module's rule of zero weights for it."""
    row = torch.full((n_keys,), fill, dtype=torch.float32)
    return torch.softmax(row, dim=0).numpy()


def fully_masked_rows(allowed: np.ndarray) -> np.ndarray:
    """Indices of the queries that may see no key at all."""
    return np.flatnonzero(~allowed.any(axis=-1))


def run_masked(model: Transformer, ids: list[int], allowed: np.ndarray) -> tuple[np.ndarray, dict]:
    """The encoder on `ids` with `allowed` in every block: (output `[pos, d_model]`, trace)."""
    out, cache = model.run_with_cache(ids, mask=torch.from_numpy(allowed))
    return out.numpy(), cache


def run_cross(
    model: EncoderDecoder, source: list[int], target: list[int]
) -> tuple[np.ndarray, dict]:
    """The encoder–decoder: (decoder output `[target_pos, d_model]`, both traces, prefixed)."""
    out, cache = model.run_with_cache(source, target)
    return out.numpy(), cache


def fused_difference(steps: dict[str, np.ndarray], allowed: np.ndarray) -> float:
    """max |z − PyTorch's fused attention on the same Q, K, V and boolean mask|: an
    independent check of the written-out steps (the fused kernel shows no weights)."""
    q, k, v = (torch.tensor(steps[n]) for n in ("hook_q", "hook_k", "hook_v"))
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(allowed))
    return float(np.abs(fused.numpy() - steps["hook_z"]).max())


def leakage(
    model: Transformer, ids: list[int], position: int, new_id: int, allowed: np.ndarray
) -> np.ndarray:
    """Change token `position` to `new_id`: max |Δ output| at every position, with `allowed`
    in every block. Under a causal mask every entry before `position` is exactly 0."""
    return leakages(model, ids, position, new_id, [allowed])[0]


def leakages(
    model: Transformer,
    ids: list[int],
    position: int,
    new_id: int,
    alloweds: Sequence[np.ndarray],
) -> list[np.ndarray]:
    """`leakage` under each mask of `alloweds`, from two runs in all: the sentence under
    every mask at once (one row of a batch per mask), then the edited sentence the same
    way. Row b of both runs is computed by the same kernels on the same shapes, so an
    output that does not depend on the edit comes out bit-identical, which the exact zeros
    rest on (one run holding both sentences would give no such guarantee)."""
    if not 0 <= position < len(ids):
        raise ValueError(f"position {position} is outside the sentence")
    edited = list(ids)
    edited[position] = new_id
    # [mask, 1 (every head), query, key]; no trace is recorded.
    mask = torch.from_numpy(np.stack([np.asarray(a, dtype=bool) for a in alloweds]))[:, None]
    with torch.no_grad():
        before, after = (
            model(torch.tensor([tokens] * len(alloweds)), mask=mask).numpy()
            for tokens in (ids, edited)
        )
    return list(np.abs(after - before).max(axis=-1))
