"""Linear attention, written out twice: as attention and as an RNN (Katharopoulos et al. 2020,
"Transformers are RNNs").

Softmax attention weighs key j for query i by exp(q_i·k_j); linear attention replaces the
exponential with a product of feature maps, φ(q_i)·φ(k_j), φ(x) = elu(x) + 1 (positive, so the
weights stay positive and a row can be normalised). Because the weight splits into a part of
the query and a part of the key, the sum over keys can be carried forward one step at a time:

    parallel   z_i = Σ_{j≤i} φ(q_i)·φ(k_j) v_j / Σ_{j≤i} φ(q_i)·φ(k_j)     (a [pos, pos] pattern)
    recurrent  S_t = S_{t−1} + φ(k_t)ᵀ v_t,  n_t = n_{t−1} + φ(k_t),
               z_t = φ(q_t) S_t / (φ(q_t)·n_t)                             (a fixed-size state)

The two are the same numbers in a different order; the lessons draw the pattern of the first
beside the state of the second. Written out, not fused: the parallel form is explicit matrix
products and a mask, the recurrent form a Python loop over time. There is no softmax here
(models/nets/attention.py stays the only one).

Shapes follow TransformerLens: q, k `[head, pos, d_head]`, v `[head, pos, d_head]` (v may
have a width of its own, d_v). Every function computes in its input's dtype (float32 or
float64).

`LinearAttentionLayer` is one layer of it with its own projections, for gradient flow and
training: built from (config, seed) with a private generator, frozen unless `requires_grad`,
nothing stored on the module during a forward pass. `run_with_cache` returns a fresh dict of
numpy arrays (docs/DESIGN.md, Glossary, "Linear attention and retention").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models.nets.attention import subsequent_mask

Cache = dict[str, np.ndarray]
MODES = ("parallel", "recurrent")
_DTYPES = (torch.float32, torch.float64)


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1: x + 1 for x ≥ 0, e^x below, so positive, up to rounding: computed
    as expm1(x) + 1 it rounds to 0 from about x = −17 in float32 (−37 in float64), where a
    whole row of zero weights would divide 0 by 0. Projections of inputs of unit scale stay
    far above that."""
    return F.elu(x) + 1


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, batch: bool = False) -> None:
    """ValueError unless q, k are `[head, pos, d_head]` alike and v `[head, pos, d_v]`, all of
    one float dtype (float32 or float64), with at least one position. `batch` allows one
    leading batch dimension too. Shared with models/nets/retention.py."""
    ranks = (3, 4) if batch else (3,)
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor) or x.ndim not in ranks:
            raise ValueError(f"{name} must be a tensor [head, pos, d_head]")
        if x.dtype not in _DTYPES or x.dtype != q.dtype:
            raise ValueError("q, k and v must share one dtype, float32 or float64")
    if q.shape != k.shape:
        raise ValueError(f"q and k must have one shape, got {tuple(q.shape)}, {tuple(k.shape)}")
    if v.shape[:-1] != q.shape[:-1]:
        raise ValueError("v must have q's heads and positions")
    if min(q.shape) < 1 or v.shape[-1] < 1:
        raise ValueError("every size must be positive")


def _parallel(q, k, v) -> tuple[torch.Tensor, torch.Tensor]:
    """The parallel form over any leading dimensions `[..., pos, d]`."""
    scores = feature_map(q) @ feature_map(k).transpose(-1, -2)
    n_pos = q.shape[-2]
    # Exact zeros above the diagonal: a later key adds nothing to an earlier row's sum.
    scores = scores.masked_fill(~subsequent_mask(n_pos, n_pos).to(q.device), 0.0)
    pattern = scores / scores.sum(dim=-1, keepdim=True)
    return pattern, pattern @ v


def _recurrent(q, k, v) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The recurrent form over any leading dimensions `[..., pos, d]`; the states come back
    with the step first: `[pos, ..., d_head, d_v]` and `[pos, ..., d_head]`."""
    phi_q, phi_k = feature_map(q), feature_map(k)
    lead = q.shape[:-2]
    state = q.new_zeros(*lead, q.shape[-1], v.shape[-1])
    norm = q.new_zeros(*lead, q.shape[-1])
    zs, states, norms = [], [], []
    for t in range(q.shape[-2]):
        # S_t = S_{t−1} + φ(k_t)ᵀ v_t: the outer product of one key and its value.
        state = state + phi_k[..., t, :, None] * v[..., t, None, :]
        norm = norm + phi_k[..., t, :]
        numerator = (phi_q[..., t, None, :] @ state)[..., 0, :]
        denominator = (phi_q[..., t, :] * norm).sum(dim=-1, keepdim=True)
        zs.append(numerator / denominator)
        states.append(state)
        norms.append(norm)
    return torch.stack(zs, dim=-2), torch.stack(states), torch.stack(norms)


def linear_attention_parallel(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(pattern, z): pattern `[head, q_pos, k_pos]` = φ(q_i)·φ(k_j) / Σ_{j'≤i} φ(q_i)·φ(k_j')
    for j ≤ i and exactly 0 above the diagonal (rows sum to 1); z = pattern @ v
    `[head, pos, d_v]`. The pattern is the weights the recurrent form uses without ever
    forming them."""
    check_qkv(q, k, v)
    return _parallel(q, k, v)


def linear_attention_recurrent(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(z, S, n) by a loop over t: z `[head, pos, d_v]`, every step's state
    S_t = S_{t−1} + φ(k_t)ᵀ v_t `[pos, head, d_head, d_v]` and normaliser
    n_t = n_{t−1} + φ(k_t) `[pos, head, d_head]`; z_t = φ(q_t) S_t / (φ(q_t)·n_t)."""
    check_qkv(q, k, v)
    return _recurrent(q, k, v)


def state_numbers(d_head: int, n_heads: int) -> int:
    """The floats one layer carries from step to step, whatever the length read:
    S (d_head × d_head) and n (d_head) per head. A KV cache grows by 2·d_head per head
    and token instead."""
    if d_head < 1 or n_heads < 1:
        raise ValueError("d_head and n_heads must be positive")
    return n_heads * (d_head * d_head + d_head)


# --- one layer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinearAttentionConfig:
    d_model: int = 64
    n_heads: int = 4
    d_head: int = 16

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "d_head"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _normal(generator: torch.Generator, std: float, *shape: int) -> nn.Parameter:
    return nn.Parameter(torch.randn(*shape, generator=generator) * std)


def _record(cache: Cache | None, name: str, value: torch.Tensor) -> None:
    if cache is not None:
        cache[name] = value.detach().to(torch.float32).cpu().numpy().copy()


class LinearAttentionLayer(nn.Module):
    """One multi-head linear-attention layer, X `[pos, d_model]` (or `[batch, pos, d_model]`)
    to out of the same shape: q, k, v = X W_Q, X W_K, X W_V per head, z by either form,
    out = Σ_heads z W_O. No biases. Weights drawn as the lessons' Transformer draws its
    attention's (W_Q, W_K, W_V std 1/√d_model, W_O std 1/√(n_heads·d_head)); in float32,
    used in the input's dtype."""

    def __init__(self, cfg: LinearAttentionConfig, seed: int = 0, requires_grad: bool = False):
        super().__init__()
        self.cfg = cfg
        self.seed = seed
        generator = torch.Generator().manual_seed(seed)
        h, d, e = cfg.n_heads, cfg.d_model, cfg.d_head
        std = 1 / math.sqrt(d)
        self.W_Q = _normal(generator, std, h, d, e)
        self.W_K = _normal(generator, std, h, d, e)
        self.W_V = _normal(generator, std, h, d, e)
        self.W_O = _normal(generator, 1 / math.sqrt(h * e), h, e, d)
        self.requires_grad_(requires_grad)
        self.train(requires_grad)

    def _input(self, X, batched: bool) -> torch.Tensor:
        ranks = (2, 3) if batched else (2,)
        if not isinstance(X, torch.Tensor) or X.ndim not in ranks:
            raise ValueError("X must be a tensor [pos, d_model] (or [batch, pos, d_model])")
        if X.shape[-1] != self.cfg.d_model or X.shape[-2] < 1:
            raise ValueError(f"X must have d_model = {self.cfg.d_model} columns and a row")
        if X.dtype not in _DTYPES:
            raise ValueError("X must be float32 or float64")
        return X

    def _run(self, X: torch.Tensor, mode: str, cache: Cache | None) -> torch.Tensor:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        # A batch only without a cache: traces are of one sequence.
        X = self._input(X, batched=cache is None)
        dtype = X.dtype
        # `...` is an optional batch dimension.
        q = torch.einsum("...pd,hde->...hpe", X, self.W_Q.to(dtype))
        k = torch.einsum("...pd,hde->...hpe", X, self.W_K.to(dtype))
        v = torch.einsum("...pd,hde->...hpe", X, self.W_V.to(dtype))
        if mode == "parallel":
            pattern, z = _parallel(q, k, v)
            extra = {"hook_pattern": pattern}
        else:
            z, states, norms = _recurrent(q, k, v)
            extra = {"la_state": states, "la_norm": norms}
        result = torch.einsum("...hpe,hed->...pd", z, self.W_O.to(dtype))
        for name, value in (
            ("hook_q", q),
            ("hook_k", k),
            ("hook_v", v),
            *extra.items(),
            ("hook_z", z),
            ("hook_result", result),
        ):
            _record(cache, name, value)
        return result

    def forward(self, X: torch.Tensor, mode: str = "parallel") -> torch.Tensor:
        """out `[..., pos, d_model]`; `mode` "parallel" (the pattern) or "recurrent" (the
        loop): the same numbers up to rounding."""
        return self._run(X, mode, None)

    def run_with_cache(self, X: torch.Tensor, mode: str = "parallel") -> tuple[torch.Tensor, Cache]:
        """(out, trace) for one sequence X `[pos, d_model]`: `hook_q`, `hook_k`, `hook_v`,
        `hook_z`, `hook_result`, plus `hook_pattern` (parallel) or `la_state` and `la_norm`
        (recurrent)."""
        cache: Cache = {}
        with torch.no_grad():
            out = self._run(X, mode, cache)
        return out, cache
