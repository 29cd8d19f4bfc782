"""Why attention divides by √d_k, measured on random vectors.

With q and k of d_k independent entries of mean 0 and variance 1, q·k is a sum of d_k
products of variance 1 each, so Var(q·k) = d_k: the scores spread as √d_k. Unscaled, a
softmax over such scores puts nearly all its weight on one key once d_k is large (and its
gradient vanishes there); divided by √d_k, the scores have variance 1 at every d_k.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from models.nets.attention import attention_pattern

D_KS = tuple(2**i for i in range(10))  # 1 … 512
# Samples of q·k per d_k. The sample variance of q·k has a relative standard error of
# √((κ − 1)/N), κ = 3 + 6/d_k its kurtosis (at most 9, at d_k = 1): 1.1 % here, so an
# estimate 5 % off would be more than four standard errors away.
N_SAMPLES = 65_536
_CHUNK = 8_192


def dot_product_variance(
    d_ks=D_KS, n_samples: int = N_SAMPLES, seed: int = 0
) -> dict[str, np.ndarray]:
    """The sample variance of q·k for unit-variance q, k, per d_k, and of q·k/√d_k.

    One draw of q and k with max(d_ks) entries serves every d_k: q·k over the first d_k
    entries is a running sum of the products (each d_k still sees independent entries).
    """
    generator = torch.Generator().manual_seed(seed)
    columns = torch.tensor(d_ks) - 1
    total = torch.zeros(len(d_ks), dtype=torch.float64)
    total_sq = torch.zeros(len(d_ks), dtype=torch.float64)
    for start in range(0, n_samples, _CHUNK):
        rows = min(_CHUNK, n_samples - start)
        q = torch.randn(rows, max(d_ks), generator=generator)
        k = torch.randn(rows, max(d_ks), generator=generator)
        # float32 running sums of ≤ 512 terms are exact to ~1e-6 relative, far below the
        # sampling error; the totals over all samples are kept in float64.
        dots = (q * k).cumsum(dim=1)[:, columns].to(torch.float64)
        total += dots.sum(dim=0)
        total_sq += (dots**2).sum(dim=0)
    mean = total / n_samples
    raw = ((total_sq - n_samples * mean**2) / (n_samples - 1)).numpy()
    d = np.asarray(d_ks, dtype=np.float64)
    return {"d_k": d, "variance": raw, "variance_scaled": raw / d}


def _entropy(weights: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each row; 0·log 0 counts as 0."""
    logs = torch.where(weights > 0, weights.log(), torch.zeros_like(weights))
    return -(weights * logs).sum(dim=-1)


def softmax_sharpness(
    d_ks=D_KS, n_keys: int = 16, n_queries: int = 1_024, seed: int = 0
) -> dict[str, np.ndarray]:
    """Mean entropy and mean largest weight of softmax(q·K) over `n_keys` random keys, with
    and without ÷√d_k, per d_k. A uniform softmax has entropy ln(n_keys)."""
    generator = torch.Generator().manual_seed(seed)
    out = {name: np.empty(len(d_ks)) for name in ("entropy", "entropy_scaled", "max", "max_scaled")}
    for i, d_k in enumerate(d_ks):
        # One query against its own n_keys keys: [n_queries, 1, d_k] against [n_queries,
        # n_keys, d_k], in float64 (the draws are float32, each value exactly).
        q = torch.randn(n_queries, 1, d_k, generator=generator).double()
        k = torch.randn(n_queries, n_keys, d_k, generator=generator).double()
        # The lessons' own attention: scale 1 leaves q·k as it is; None divides by √d_k.
        for suffix, scale in (("", 1.0), ("_scaled", None)):
            _, weights = attention_pattern(q, k, scale=scale)
            out[f"entropy{suffix}"][i] = float(_entropy(weights).mean())
            out[f"max{suffix}"][i] = float(weights.max(dim=-1).values.mean())
    out["d_k"] = np.asarray(d_ks, dtype=np.float64)
    out["uniform_entropy"] = np.full(len(d_ks), math.log(n_keys))
    return out
