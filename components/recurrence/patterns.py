"""Figures of "Attention without softmax": one head's softmax pattern, the implicit pattern
of linear attention and retention's (q kᵀ) ⊙ D for the same queries and keys, and the decay
mask D, as token × token grid charts (components/grid.py `token_grid`), with the numbers
the part quotes under them.

Arrays and labels in, a grid spec or numbers out. Token labels are drawn as canvas text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from components.grid import palette_b64, position_labels, token_grid
from components.palette import DIVERGING_COLORSCALE


def pattern_height(n_tokens: int) -> int:
    """Two patterns to a row: 15 px a token, between 340 and 720 px."""
    return min(720, max(340, 15 * n_tokens + 170))


def _signed_ticks(limit: float) -> list:
    return [[float(v), f"{v:.2g}"] for v in np.linspace(-limit, limit, 5)]


def pattern_grid(
    pattern: np.ndarray,
    tokens: Sequence[str],
    *,
    title: str = "",
    query_title: str = "query",
    key_title: str = "key",
    value_title: str = "weight",
    signed: bool = False,
) -> dict:
    """One head's `[query, key]` weights, queries down and keys along the top. Weights in
    [0, 1] take the attention colours; `signed` ones (retention's, neither bounded nor
    positive) a diverging scale symmetric about zero, as wide as their largest |value|."""
    labels = position_labels(tokens)
    values = np.asarray(pattern, dtype=np.float32)
    spec = token_grid(
        values,
        labels,
        labels,
        row_title=query_title,
        column_title=key_title,
        value_title=value_title,
        height=pattern_height(len(labels)),
    )
    if signed:
        largest = float(np.abs(values).max()) if values.size else 0.0
        limit = largest if np.isfinite(largest) and largest > 0 else 1.0
        [panel] = spec["panels"]
        panel.update(
            zmin=-limit,
            zmax=limit,
            palette=palette_b64(DIVERGING_COLORSCALE),
            colorbar=dict(title=value_title, ticks=_signed_ticks(limit)),
        )
    return {**spec, "title": title} if title else spec


def causal_cells(n: int) -> np.ndarray:
    """True where query i may see key j (j ≤ i): the cells a causal pattern fills."""
    return np.tri(n, dtype=bool)


def row_sums(pattern: np.ndarray) -> np.ndarray:
    """Each query's total weight (float64)."""
    return np.asarray(pattern, dtype=np.float64).sum(axis=-1)


def negative_share(pattern: np.ndarray) -> float:
    """The share of the causal cells (j ≤ i) whose weight is below zero."""
    values = np.asarray(pattern, dtype=np.float64)
    seen = values[causal_cells(values.shape[-1])]
    return float((seen < 0).mean()) if seen.size else 0.0


def mean_max_weight(pattern: np.ndarray) -> float:
    """The mean over queries of each row's largest weight: 1 for a row on one key, 1/(i+1)
    for a flat row over i + 1 keys."""
    return float(np.asarray(pattern, dtype=np.float64).max(axis=-1).mean())


def uniform_entropy_bits(n: int) -> float:
    """The mean over a causal pattern's queries of the flattest row's entropy, log2(i + 1)."""
    return float(np.log2(np.arange(1, n + 1)).mean())
