"""Positional encodings as plain numpy (float64), and the facts the lesson measures on them
(torch only to run a model on a sentence in two orders).

The Transformer (models/nets/transformer.py) uses these same functions for its tables, so the
lesson measures the very numbers the model adds or rotates with.

Conventions: a table is `[position, dimension]`. Sinusoidal (Vaswani et al. 2017, §3.5):
PE[pos, 2i] = sin(pos·ω_i), PE[pos, 2i+1] = cos(pos·ω_i), ω_i = base^(−2i/d_model).
RoPE (Su et al. 2021) rotates each pair (x_2i, x_2i+1) of a query or key by the angle
pos·θ_i, θ_i = base^(−2i/d_head). ALiBi (Press et al. 2022) adds −m_h·|q − k| to the
scores of head h, m_h = 2^(−8(h+1)/n_heads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import torch

SCHEMES = ("sinusoidal", "learned", "rope", "alibi", "none")
BASE = 10000.0


def frequencies(d: int, base: float = BASE) -> np.ndarray:
    """ω_i = base^(−2i/d) for i = 0 … d/2 − 1 (radians per position)."""
    if d % 2:
        raise ValueError(f"the dimension must be even, got {d}")
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def sinusoidal_table(n_pos: int, d_model: int, base: float = BASE) -> np.ndarray:
    angles = np.arange(n_pos, dtype=np.float64)[:, None] * frequencies(d_model, base)[None, :]
    table = np.empty((n_pos, d_model), dtype=np.float64)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def rotation_matrix(k: int, d_model: int, base: float = BASE) -> np.ndarray:
    """M_k with PE(pos + k) = M_k · PE(pos) for every pos: one 2×2 rotation per pair.

    sin(ω(p+k)) = cos(ωk)·sin(ωp) + sin(ωk)·cos(ωp)
    cos(ω(p+k)) = −sin(ωk)·sin(ωp) + cos(ωk)·cos(ωp)
    """
    m = np.zeros((d_model, d_model), dtype=np.float64)
    for i, w in enumerate(frequencies(d_model, base)):
        c, s = np.cos(w * k), np.sin(w * k)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return m


def rotation_errors(table: np.ndarray, k: int, base: float = BASE) -> np.ndarray:
    """|PE(pos + k) − M_k·PE(pos)| for every pos with pos + k in the table: `[pos, dim]`."""
    n, d = table.shape
    if not 0 <= k < n:
        raise ValueError(f"offset {k} must be in [0, {n})")
    shifted = table[: n - k] @ rotation_matrix(k, d, base).T
    return np.abs(table[k:] - shifted)


def per_dimension_fit_errors(table: np.ndarray, k: int) -> np.ndarray:
    """The naive alternative: each dimension on its own, PE(pos+k)_j ≈ a_j·PE(pos)_j + b_j.

    Least squares per dimension over all positions; returns the absolute residuals
    `[pos, dim]`. It cannot work: the shift mixes each sine with its cosine partner.
    """
    n, d = table.shape
    x, y = table[: n - k], table[k:]
    errors = np.empty_like(y)
    for j in range(d):
        design = np.stack([x[:, j], np.ones(n - k)], axis=1)
        coef, *_ = np.linalg.lstsq(design, y[:, j], rcond=None)
        errors[:, j] = np.abs(y[:, j] - design @ coef)
    return errors


def similarity_by_offset(table: np.ndarray, refs: list[int], max_offset: int) -> np.ndarray:
    """PE(ref)·PE(ref + k) for k = 0 … max_offset, one row per reference position.

    NaN where ref + k falls outside the table.
    """
    n = table.shape[0]
    out = np.full((len(refs), max_offset + 1), np.nan)
    for row, ref in enumerate(refs):
        stop = min(n, ref + max_offset + 1)
        out[row, : stop - ref] = table[ref:stop] @ table[ref]
    return out


def rope_rotate(x: np.ndarray, positions: np.ndarray, base: float = BASE) -> np.ndarray:
    """Rotate each pair of `x[..., pos, d]` by pos·θ_i (the RoPE of one head)."""
    d = x.shape[-1]
    angles = np.asarray(positions, dtype=np.float64)[:, None] * frequencies(d, base)[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(np.broadcast_shapes(x.shape, (len(angles), d)), dtype=np.float64)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def rope_scores(q: np.ndarray, k: np.ndarray, n_pos: int, start: int = 0) -> np.ndarray:
    """`[m, n]` = RoPE(q, start + m)·RoPE(k, start + n) for one query and one key vector."""
    positions = np.arange(start, start + n_pos)
    qs = rope_rotate(np.broadcast_to(q, (n_pos, q.size)), positions)
    ks = rope_rotate(np.broadcast_to(k, (n_pos, k.size)), positions)
    return qs @ ks.T


def rope_demo_vectors(d_head: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A query and a key with standard normal entries (what content gives before RoPE)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(d_head), rng.standard_normal(d_head)


@lru_cache(maxsize=64)
def rotation_fit(k: int, d_model: int, n_pos: int, base: float = BASE) -> dict:
    """What the lesson draws of the shift by `k` over an `[n_pos, d_model]` sinusoidal table:
    the matrix M_k, and per position the largest error of the exact rotation (`exact`) and
    of the per-dimension fit (`naive`), with their overall maxima.

    It reads no sentence: made once per (k, size) and shared, so its arrays are read-only.
    """
    table = sinusoidal_table(n_pos, d_model, base)
    exact = rotation_errors(table, k, base).max(axis=1)
    naive = per_dimension_fit_errors(table, k).max(axis=1)
    fit = {"rotation": rotation_matrix(k, d_model, base), "exact": exact, "naive": naive}
    for array in fit.values():
        array.setflags(write=False)
    return fit | {"exact_max": float(exact.max()), "naive_max": float(naive.max())}


def max_rotation_error(table: np.ndarray, offsets) -> float:
    """The largest |PE(pos + k) − M_k·PE(pos)| over every pos and every k in `offsets`."""
    return max(float(rotation_errors(table, int(k)).max()) for k in offsets)


@lru_cache(maxsize=4)
def rotation_check(d_model: int, n_pos: int) -> float:
    """`max_rotation_error` of an `[n_pos, d_model]` sinusoidal table over every offset up to
    half its length: a fact of the formula, computed once per size."""
    return max_rotation_error(sinusoidal_table(n_pos, d_model), range(0, n_pos // 2))


def rope_shift_error(q: np.ndarray, k: np.ndarray, m: int, n: int, shift: int) -> float:
    """|score(m + s, n + s) − score(m, n)|: zero if only m − n matters."""

    def score(a: int, b: int) -> float:
        qa = rope_rotate(q[None, :], np.array([a]))[0]
        kb = rope_rotate(k[None, :], np.array([b]))[0]
        return float(qa @ kb)

    return abs(score(m + shift, n + shift) - score(m, n))


def rope_decay(d_head: int, max_distance: int, base: float = BASE) -> np.ndarray:
    """Score of a vector with itself at distance r, relative to r = 0, averaged over vectors.

    For q = k with independent random pairs, E[RoPE(q, m)·RoPE(q, m + r)] / E[|q|²] is the
    mean over pairs of cos(r·θ_i): computed exactly, no sampling.
    """
    r = np.arange(max_distance + 1, dtype=np.float64)
    return np.cos(r[:, None] * frequencies(d_head, base)[None, :]).mean(axis=1)


def alibi_slopes(n_heads: int) -> np.ndarray:
    return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)


def alibi_bias(n_heads: int, n_query: int, n_key: int, causal: bool) -> np.ndarray:
    """`[head, q, k]` = −m_h·distance. Causal models see only k ≤ q (distance q − k);
    a bidirectional encoder uses |q − k| (the symmetric variant)."""
    q = np.arange(n_query)[:, None]
    k = np.arange(n_key)[None, :]
    distance = (q - k) if causal else np.abs(q - k)
    return -alibi_slopes(n_heads)[:, None, None] * distance[None].astype(np.float64)


def periods_within(d: int, length: int, base: float = BASE) -> int:
    """How many frequency pairs complete a full turn (2π/ω_i ≤ length) within `length`
    positions: the other pairs show angles past `length` that never occurred before it."""
    return int(np.sum(2 * np.pi / frequencies(d, base) <= length))


def positional_score_by_distance(
    scheme: str,
    d: int,
    max_distance: int,
    learned: np.ndarray | None = None,
    n_heads: int = 8,
) -> np.ndarray:
    """What equal content at distance r scores from position alone, r = 0 … max_distance.

    sinusoidal: PE(0)·PE(r) / (d/2); rope: mean cos(rθ_i); alibi: the bias −m·r of the
    gentlest of `n_heads` heads (m = 2^(−8)); learned: W_pos[0]·W_pos[r] / |W_pos[0]|², NaN past its
    last row; none: 0. Each is 1 at r = 0 except ALiBi and none (0).
    """
    r = np.arange(max_distance + 1)
    if scheme == "sinusoidal":
        table = sinusoidal_table(max_distance + 1, d)
        return table @ table[0] / (d / 2)
    if scheme == "rope":
        return rope_decay(d, max_distance)
    if scheme == "alibi":
        return -alibi_slopes(n_heads)[-1] * r.astype(np.float64)
    if scheme == "none":
        return np.zeros(max_distance + 1)
    if scheme == "learned":
        if learned is None:
            raise ValueError("the learned scheme needs its table")
        out = np.full(max_distance + 1, np.nan)
        rows = min(len(learned), max_distance + 1)
        out[:rows] = learned[:rows] @ learned[0] / float(learned[0] @ learned[0])
        return out
    raise ValueError(f"unknown scheme {scheme!r}")


def permutation(n: int, order: str, seed: int = 0) -> np.ndarray:
    """Indices that reorder n tokens: "reverse", "rotate" (last token first) or "shuffle"."""
    if order == "reverse":
        return np.arange(n)[::-1].copy()
    if order == "rotate":
        return np.roll(np.arange(n), 1)
    if order == "shuffle":
        return np.random.default_rng(seed).permutation(n)
    raise ValueError(f"unknown order {order!r}")


def outputs_in_both_orders(model, ids, perm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A Transformer's outputs `[pos, d_model]` on `ids` and on `ids[perm]`, from one pass
    over the two as a batch (the model runs a leading batch dimension as separate sequences).
    """
    tokens = torch.as_tensor(np.asarray(ids), dtype=torch.long)
    with torch.no_grad():
        both = model(torch.stack([tokens, tokens[torch.as_tensor(perm)]])).numpy()
    return both[0], both[1]


def order_effect(outputs: np.ndarray, outputs_reordered: np.ndarray, perm: np.ndarray) -> dict:
    """Compare a model's outputs on tokens and on tokens[perm].

    A model that cannot see order gives outputs_reordered == outputs[perm]: the same
    vectors, moved. `per_token[i]` is ‖change‖ of original token i's output vector;
    `max_error` the largest entry of |outputs_reordered − outputs[perm]|; `pooled` the
    distance between the two sentences' mean output vectors (what a classifier might read).
    """
    moved = outputs[perm]
    diff = outputs_reordered - moved
    per_token = np.empty(len(perm))
    per_token[perm] = np.linalg.norm(diff, axis=1)
    return {
        "max_error": float(np.abs(diff).max()),
        "per_token": per_token,
        "pooled": float(np.linalg.norm(outputs.mean(axis=0) - outputs_reordered.mean(axis=0))),
        "scale": float(np.linalg.norm(outputs, axis=1).mean()),
    }


def order_effects(models: Mapping[str, Any], ids: Sequence[int], order: str, seed: int) -> dict:
    """`order_effect` of each model (scheme → Transformer) on `ids` and on `ids` reordered
    by `permutation(len(ids), order, seed)`, under the scheme's name; "perm": the order."""
    perm = permutation(len(ids), order, seed)
    effects = {}
    for scheme, model in models.items():
        outputs, reordered = outputs_in_both_orders(model, ids, perm)
        effects[scheme] = order_effect(outputs, reordered, perm)
    return effects | {"perm": perm}


def pair_distances(
    models: Mapping[str, Any], tokenizer, pairs: Sequence[tuple[str, str]]
) -> list[tuple[str, str, float]]:
    """(pair, scheme, distance between the two sentences' mean output vectors) for each
    pair of sentences and each model (scheme → Transformer)."""
    rows = []
    for first, second in pairs:
        a, b = tokenizer.encode(first).ids, tokenizer.encode(second).ids
        for scheme, model in models.items():
            out_a, _ = model.run_with_cache(list(a))
            out_b, _ = model.run_with_cache(list(b))
            pooled = np.linalg.norm(out_a.numpy().mean(axis=0) - out_b.numpy().mean(axis=0))
            rows.append((f"{first} / {second}", scheme, float(pooled)))
    return rows
