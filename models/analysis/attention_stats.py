"""Numbers that summarise attention patterns. numpy only.

Patterns are `[..., query_pos, key_pos]` with rows that sum to 1; every function
reduces the last two axes, so one call handles a head, a layer or the whole model.
"""

from __future__ import annotations

import numpy as np


def entropy_bits(pattern: np.ndarray) -> np.ndarray:
    """Mean over queries of the Shannon entropy of each attention row, in bits.

    The logarithm is taken only where a weight is positive (0 · log 0 counts as 0): at
    128 tokens the 72 heads are 1.2 million weights, many of them 0, on every keystroke
    (8 → 4 ms)."""
    p = np.clip(pattern, 0.0, 1.0)
    positive = p > 0
    terms = np.zeros_like(p)
    np.log2(p, out=terms, where=positive)
    np.multiply(p, terms, out=terms, where=positive)
    return -terms.sum(axis=-1).mean(axis=-1)


def mean_distance(pattern: np.ndarray) -> np.ndarray:
    """Mean over queries of the expected |query_pos − key_pos|, in tokens (float64).

    One contraction in the pattern's own float type, not an integer-by-float product
    that makes a float64 copy of every weight (at 128 tokens 2.8 → 0.4 ms)."""
    n = pattern.shape[-1]
    pos = np.arange(n, dtype=pattern.dtype)
    distance = np.abs(pos[:, None] - pos[None, :])
    per_query = np.einsum("...qk,qk->...q", pattern, distance)
    return per_query.mean(axis=-1).astype(np.float64)


def share_on_key(pattern: np.ndarray, key_pos: int) -> np.ndarray:
    """Mean over queries of the weight placed on one key position."""
    return pattern[..., key_pos].mean(axis=-1)


def strongest_link(
    pattern: np.ndarray, ignore: tuple[int, ...] = ()
) -> tuple[int, int, float] | None:
    """(query, key, weight) of the largest weight in a 2-D pattern, skipping some keys
    and each token's weight on itself; None when nothing is left to compare."""
    masked = pattern.astype(np.float64, copy=True)
    for key in ignore:
        masked[:, key] = -1.0
    np.fill_diagonal(masked, -1.0)
    if masked.max() < 0:
        return None
    q, k = np.unravel_index(int(np.argmax(masked)), masked.shape)
    return int(q), int(k), float(pattern[q, k])


def head_statistics(patterns: np.ndarray) -> dict[str, np.ndarray]:
    """Per-head `[layer, head]` summaries of a BERT-style pattern stack.

    [CLS] is the first position and [SEP] the last, as the tokenizer places them.
    """
    return {
        "entropy": entropy_bits(patterns),
        "distance": mean_distance(patterns),
        "cls": share_on_key(patterns, 0),
        "sep": share_on_key(patterns, patterns.shape[-1] - 1),
    }


def sink_positions(n_tokens: int, causal: bool) -> tuple[int, ...]:
    """The keys counted as attention sinks: an encoder's first and last token ([CLS] and
    [SEP] as the tokenizer places them, the two share columns of `head_statistics`), a
    decoder's first token (the only one every query sees). An [UNK] is not among them:
    it stands for a piece of the sentence."""
    return (0,) if causal or n_tokens < 2 else (0, n_tokens - 1)


def sink_heads(patterns: np.ndarray, sinks: tuple[int, ...]) -> np.ndarray:
    """`[layer, head]`: whether a head puts more than half of its weight, averaged over
    the queries, on the `sinks` keys together."""
    return patterns[..., list(sinks)].sum(axis=-1).mean(axis=-1) > 0.5


def strongest_head_for_query(
    patterns: np.ndarray, query_pos: int, ignore: tuple[int, ...] = ()
) -> tuple[int, int, int, float] | None:
    """(layer, head, key, weight) of the largest weight one query gives another token,
    skipping some keys; None when nothing is left to compare."""
    rows = patterns[:, :, query_pos, :].astype(np.float64, copy=True)
    for key in (*ignore, query_pos):
        rows[..., key] = -1.0
    if rows.max() < 0:
        return None
    layer, head, key = np.unravel_index(int(np.argmax(rows)), rows.shape)
    return int(layer), int(head), int(key), float(patterns[layer, head, query_pos, key])


def attention_rollout(patterns: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020) through each layer: `[layer, query, key]`.

    Each layer's heads are averaged, the residual connection is modelled as attending to
    oneself (`residual·I + (1 − residual)·A`), and the layers are multiplied in order:
    row q of the result at layer l says how token q's position at the output of layer l
    would mix the input tokens if every layer only ever mixed its inputs linearly by
    these weights. It ignores the values, W_O, the MLPs and the norms, so it is a rough
    picture of information flow, not an explanation of a prediction.
    """
    n = patterns.shape[-1]
    eye = np.eye(n)
    rollout = eye
    stages = []
    for layer_patterns in patterns.astype(np.float64):
        mixed = residual * eye + (1.0 - residual) * layer_patterns.mean(axis=0)
        mixed /= mixed.sum(axis=-1, keepdims=True)
        rollout = mixed @ rollout
        stages.append(rollout)
    return np.stack(stages)
