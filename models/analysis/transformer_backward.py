"""The Transformer's gradient with respect to its input vectors, written out.

`transformer_from_embeddings` runs models/nets/transformer.py's Transformer from input vectors
in place of its token table, the function whose gradient the recurrent lesson compares with
the recurrent models'. `transformer_backward` is that function's forward and backward pass
written out in numpy (models/analysis/gradient_flow.py's closed form for the Transformer);
tests/unit/test_gradient_flow.py holds it equal to torch.autograd and to finite differences.
"""

from __future__ import annotations

import math

import numpy as np
import torch


def transformer_from_embeddings(model, X: torch.Tensor) -> torch.Tensor:
    """The Transformer's output `[pos, d_model]` from input vectors `X [pos, d_model]` in place of
    `W_E[tokens]`: the same computation as `model(tokens)` when `X = W_E[tokens]`, stateless."""
    if model.cfg.cross_attention:
        raise ValueError("only an encoder or a plain decoder runs from embeddings")
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] != model.cfg.d_model:
        raise ValueError(f"X must be [pos ≥ 1, {model.cfg.d_model}]")
    pos = model.pos_embed(X.shape[0])
    x = X + pos if pos is not None else X
    for layer, block in enumerate(model.blocks):
        x = block(x, None, None, layer)
    return model.ln_final(x)


# Positions the written-out backward pass knows: added to the input, so ∂L/∂(X + P) = ∂L/∂X.
# (RoPE rotates queries and keys, ALiBi biases scores: those go through autograd.)
ADDED_POSITIONS = ("sinusoidal", "learned", "none")
# numpy's BLAS (OpenBLAS) splits a product over every core from about 2^20 multiply-adds (the
# MLP's, pos × d_model × d_mlp, at 64 steps of the lesson's Transformer), its idle threads then
# spinning. Below this bound (48 steps there) the closed form runs; above it autograd, on
# torch's one thread.
WRITTEN_OUT_PRODUCT = 48 * 64 * 256


def transformer_backward(model, X: np.ndarray, tau: int, u: np.ndarray) -> tuple[np.ndarray, float]:
    """`(∂L/∂X [pos, d_model], L)` for L = u · output_τ of `transformer_from_embeddings`, the
    forward and backward passes written out in numpy float32.

    Why not autograd: every torch call lets go of the GIL and must take it back, and on a
    busy server the other threads hold it meanwhile; a hundred small calls cost far more
    than their arithmetic. numpy keeps the GIL for arrays this small.

    Pre-LayerNorm blocks (models/nets/transformer.py): x ← x + attn(ln1(x)); x ← x + mlp(ln2(x));
    output ln_final(x). Row convention, heads batched along the first axis.
    """
    cfg = model.cfg
    if cfg.cross_attention or cfg.positional not in ADDED_POSITIONS:
        raise ValueError("written out for encoders and plain decoders with added positions")
    pos = model.pos_embed(X.shape[0])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x = X + pos.numpy() if pos is not None else X
        saved = []
        for block in model.blocks:
            n1, norm1 = _layer_norm(x, block.ln1)
            attn, heads = _attention(block.attn, n1, cfg.causal)
            x = x + attn
            n2, norm2 = _layer_norm(x, block.ln2)
            a = n2 @ block.mlp.W_in.numpy() + block.mlp.b_in.numpy()
            gelu, slope = _gelu(a)
            x = x + gelu @ block.mlp.W_out.numpy() + block.mlp.b_out.numpy()
            saved.append((norm1, heads, norm2, slope))
        out, norm_final = _layer_norm(x, model.ln_final)
        loss = float(out[tau] @ u)
        d_out = np.zeros_like(out)
        d_out[tau] = u
        dx = _layer_norm_back(d_out, norm_final, model.ln_final)
        for block, (norm1, heads, norm2, slope) in zip(
            reversed(model.blocks), reversed(saved), strict=True
        ):
            d_a = (dx @ _T(block.mlp.W_out.numpy())) * slope
            dx = dx + _layer_norm_back(d_a @ _T(block.mlp.W_in.numpy()), norm2, block.ln2)
            dx = dx + _layer_norm_back(_attention_back(block.attn, heads, dx), norm1, block.ln1)
    return dx, loss


def _T(a: np.ndarray) -> np.ndarray:
    """`a` with its last two axes swapped, laid out afresh. numpy hands a transposed view to
    BLAS as it is, and OpenBLAS splits such products over every core from about 32 steps
    on, its idle threads then spinning; the same product of contiguous arrays stays on one."""
    return np.ascontiguousarray(a.swapaxes(-1, -2))


def _layer_norm(x: np.ndarray, ln: torch.nn.LayerNorm):
    """`ln(x)` and what its backward pass reads: the normalized x and 1/σ per row."""
    centred = x - x.mean(-1, keepdims=True)
    inv_std = 1 / np.sqrt((centred**2).mean(-1, keepdims=True) + np.float32(ln.eps))
    normalized = centred * inv_std
    return normalized * ln.weight.numpy() + ln.bias.numpy(), (normalized, inv_std)


def _layer_norm_back(dy: np.ndarray, norm, ln: torch.nn.LayerNorm) -> np.ndarray:
    normalized, inv_std = norm
    g = dy * ln.weight.numpy()
    mean_g = g.mean(-1, keepdims=True)
    return inv_std * (g - mean_g - normalized * (g * normalized).mean(-1, keepdims=True))


def _gelu(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact GELU a·Φ(a) (torch's default) and its slope Φ(a) + a·φ(a); erf from torch
    (numpy has none)."""
    cdf = 0.5 * (1 + torch.erf(torch.from_numpy(a * np.float32(1 / math.sqrt(2)))).numpy())
    density = np.exp(-0.5 * a**2) * np.float32(1 / math.sqrt(2 * math.pi))
    return a * cdf, cdf + a * density


def _attention(attn, x: np.ndarray, causal: bool):
    """Multi-head self-attention of `x [pos, d_model]` as models/nets/transformer.py computes it;
    returns the output and the heads' (q, k, v, pattern) `[head, pos, ·]`.

    The one place besides models/nets/attention.py that computes attention weights, kept in
    numpy for what the torch one costs here (tests/unit/test_attention.py holds the two equal).
    Measured per layer of the lesson's Transformer (d_model 64, 4 heads of 16), on the same
    q, k, v (torch.from_numpy in and out), one torch thread, 2 shared cores, two runs of
    40 × 10 calls each: fastest alone, this 42–66 µs at 8–20 positions and 96–120 µs at 48,
    the one attention 70–130 µs and 94–159 µs (~10 torch calls, a causal mask made per call);
    median beside a busy Python thread, this 62–143 µs (but 1.5–2.1 ms causal at 48), the
    one attention 113–132 µs for the encoder at 8–20 positions and 1.1–2.3 ms in 7 of the
    other 8 cases: each of its torch calls hands the GIL to the other thread and waits to
    take it back. The whole backward pass (0.8–3 ms) was too noisy there to show more.
    """
    q = x @ attn.W_Q.numpy() + attn.b_Q.numpy()[:, None]
    k = x @ attn.W_K.numpy() + attn.b_K.numpy()[:, None]
    v = x @ attn.W_V.numpy() + attn.b_V.numpy()[:, None]
    scores = q @ _T(k) / np.float32(math.sqrt(q.shape[-1]))
    if causal:
        n = x.shape[0]
        scores = np.where(np.tri(n, dtype=bool), scores, np.float32(-np.inf))
    pattern = np.exp(scores - scores.max(-1, keepdims=True))
    pattern /= pattern.sum(-1, keepdims=True)
    return (pattern @ v @ attn.W_O.numpy()).sum(0) + attn.b_O.numpy(), (q, k, v, pattern)


def _attention_back(attn, heads, d_out: np.ndarray) -> np.ndarray:
    """∂L/∂x of `_attention` from ∂L/∂output. A masked score has pattern 0: no gradient."""
    q, k, v, pattern = heads
    d_z = d_out @ _T(attn.W_O.numpy())  # [head, pos, d_head]
    d_pattern = d_z @ _T(v)
    d_v = _T(pattern) @ d_z
    d_scores = pattern * (d_pattern - (d_pattern * pattern).sum(-1, keepdims=True))
    d_scores /= np.float32(math.sqrt(q.shape[-1]))
    d_q, d_k = d_scores @ k, _T(d_scores) @ q
    d_x = d_q @ _T(attn.W_Q.numpy()) + d_k @ _T(attn.W_K.numpy())
    return (d_x + d_v @ _T(attn.W_V.numpy())).sum(0)
