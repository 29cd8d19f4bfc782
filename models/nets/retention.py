"""Retention, written out three ways (Sun et al. 2023, "Retentive Network").

Retention is causal linear attention without the feature map and without the normaliser,
whose weights fade with distance: query n weighs key m ≤ n by (q_n·k_m) γ^(n−m), one decay γ
per head. Three orders of the same sum:

    parallel    z = ((q kᵀ) ⊙ D) v,  D_nm = γ^(n−m) for n ≥ m, else 0        ([pos, pos])
    recurrent   S_n = γ S_{n−1} + k_nᵀ v_n,  z_n = q_n S_n                  (a loop over n)
    chunkwise   within a chunk the parallel form, across chunks the carried state

With γ = 1 nothing fades and retention is unnormalised causal linear attention with the
identity feature map (models/nets/linear_attention.py adds φ and the normaliser).

Left out on purpose, so the three forms show only the decay: RetNet's rotation of q and k
(xPos, a relative position it applies before the product), its scaling of k by d_head^−½,
the normalisations of its implementation (of D's rows and of the retention scores), the
GroupNorm over heads and the swish gate. There is no softmax here (models/nets/attention.py
stays the only one). Loops are Python loops, products explicit: no fused kernels.

Shapes follow TransformerLens: q, k `[head, pos, d_head]`, v `[head, pos, d_head]` (v may
have a width of its own, d_v); `gammas` `[head]`, each in (0, 1]. Every function computes in
q's dtype (float32 or float64).
"""

from __future__ import annotations

import torch

from models.nets.linear_attention import check_qkv


def default_gammas(n_heads: int) -> torch.Tensor:
    """RetNet's decays, γ_h = 1 − 2^(−5−h) for h = 0 … n_heads − 1 (float64): from 31/32,
    a memory of about 32 tokens, each head remembering twice as long as the one before."""
    if not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    return 1 - 2.0 ** (-5 - torch.arange(n_heads, dtype=torch.float64))


def _gammas(gammas, n_heads: int | None, dtype: torch.dtype) -> torch.Tensor:
    """`gammas` as a `[head]` tensor of `dtype`, after checking every γ is in (0, 1]."""
    g = torch.as_tensor(gammas, dtype=torch.float64)
    if g.ndim != 1 or len(g) < 1:
        raise ValueError("gammas must be one γ per head, a 1-D tensor [head]")
    if n_heads is not None and len(g) != n_heads:
        raise ValueError(f"{len(g)} gammas for {n_heads} heads")
    # Written so that NaN fails too.
    if not bool(((g > 0) & (g <= 1)).all()):
        raise ValueError("every γ must be in (0, 1]")
    return g.to(dtype)


def _decay_mask(n_pos: int, g: torch.Tensor) -> torch.Tensor:
    distance = torch.arange(n_pos)[:, None] - torch.arange(n_pos)[None, :]
    later = distance >= 0
    powers = g[:, None, None] ** distance.clamp(min=0).to(g.dtype)
    return powers.masked_fill(~later, 0.0)


def decay_mask(n_pos: int, gammas) -> torch.Tensor:
    """D `[head, pos, pos]`: D[h, n, m] = γ_h^(n−m) for n ≥ m, else exactly 0 (in gammas'
    dtype when it is a float tensor of float32 or float64, else float64)."""
    if not isinstance(n_pos, int) or n_pos < 1:
        raise ValueError(f"n_pos must be a positive integer, got {n_pos!r}")
    keep = isinstance(gammas, torch.Tensor) and gammas.dtype in (torch.float32, torch.float64)
    return _decay_mask(n_pos, _gammas(gammas, None, gammas.dtype if keep else torch.float64))


def _checked(q, k, v, gammas) -> torch.Tensor:
    check_qkv(q, k, v)
    return _gammas(gammas, q.shape[0], q.dtype)


def retention_parallel(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, gammas
) -> tuple[torch.Tensor, torch.Tensor]:
    """(pattern, z): pattern = (q kᵀ) ⊙ D `[head, q_pos, k_pos]` (no softmax, no
    normalisation: rows need not sum to 1, entries may be negative), z = pattern @ v."""
    g = _checked(q, k, v, gammas)
    pattern = (q @ k.transpose(-1, -2)) * _decay_mask(q.shape[-2], g)
    return pattern, pattern @ v


def retention_recurrent(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, gammas
) -> tuple[torch.Tensor, torch.Tensor]:
    """(z, S) by a loop over n: S_n = γ S_{n−1} + k_nᵀ v_n, z_n = q_n S_n; z
    `[head, pos, d_v]`, S every step's state `[pos, head, d_head, d_v]`."""
    g = _checked(q, k, v, gammas)[:, None, None]
    state = q.new_zeros(q.shape[0], q.shape[-1], v.shape[-1])
    zs, states = [], []
    for n in range(q.shape[-2]):
        state = g * state + k[:, n, :, None] * v[:, n, None, :]
        zs.append((q[:, n, None, :] @ state)[:, 0, :])
        states.append(state)
    return torch.stack(zs, dim=-2), torch.stack(states)


def retention_chunkwise(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, gammas, chunk: int
) -> torch.Tensor:
    """z `[head, pos, d_v]` by RetNet's chunkwise form, chunks of `chunk` positions (the last
    one shorter when `chunk` does not divide the length, one chunk when it exceeds it).

    For a chunk of b positions starting at s, with R the state carried in
    (R = Σ_{m<s} γ^(s−1−m) k_mᵀ v_m):
        inner  ((q kᵀ) ⊙ D) v          within the chunk, D of size b
        cross  γ^(i+1) q_i R            for the chunk's i-th query (i from 0)
        R ←    γ^b R + Σ_j γ^(b−1−j) k_jᵀ v_j
    """
    g = _checked(q, k, v, gammas)
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    state = q.new_zeros(q.shape[0], q.shape[-1], v.shape[-1])
    pieces = []
    for start in range(0, q.shape[-2], chunk):
        qc, kc, vc = (x[:, start : start + chunk] for x in (q, k, v))
        b = qc.shape[-2]
        steps = torch.arange(b, dtype=q.dtype)
        inner = ((qc @ kc.transpose(-1, -2)) * _decay_mask(b, g)) @ vc
        into = g[:, None] ** (steps + 1)  # [head, b]: how much of R reaches query i
        cross = (qc @ state) * into[:, :, None]
        pieces.append(inner + cross)
        left = g[:, None] ** (b - 1 - steps)  # [head, b]: how much of key j is left at the end
        state = g[:, None, None] ** b * state + kc.transpose(-1, -2) @ (vc * left[:, :, None])
    return torch.cat(pieces, dim=-2)
