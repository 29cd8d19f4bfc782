"""Gradient flow through time: how much of a loss at step τ reaches each earlier step.

The loss is the same for every model: `L = u · H_τ`, a fixed random unit readout `u`
(models.nets.recurrent.readout) of the hidden state at the loss step τ (for the Transformer, of
its output vector at position τ). For every step t this measures

- `grad_H[t] = ‖∂L/∂H_t‖` (recurrent models), per unit in `grad_H_units [T, num_hiddens]`;
- `grad_X[t] = ‖∂L/∂X_t‖`, the gradient that reaches the input vector of step t;
- the step Jacobian norm `‖∂H_t/∂H_{t−1}‖` (largest singular value), in closed form per step.
  For the LSTM the state is the pair (H, C), so its step Jacobian is
  ∂(H_t, C_t)/∂(H_{t−1}, C_{t−1}), the matrix backpropagation actually multiplies.

Shared models stay untouched: gradients come from `torch.autograd.grad` with respect to
tensors made per call (the input X and a zero probe added to every H_t), never parameters;
no hooks, no `.backward()`, no `.train()`, nothing stored on a module. Everything runs in
float32 as the models do; an overflow is reported by the first step it reached, never hidden.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from models.nets.recurrent import (
    ACTIVATIONS,
    INITS,
    MAX_HIDDENS,
    Recurrent,
    one_core_matmul,
    readout,
    readout_array,
)
from models.text import Note

MAX_T = 512
HIDDEN_SIZES = (8, 16, 32, 64, 128, 256)
CLIP_THRESHOLDS = (0.01, 0.1, 1.0, 10.0, 100.0)
RADIUS_RANGE = (0.5, 1.5)
FORGET_RANGE = (0.0, 5.0)
SOURCES = ("sentence", "synthetic")
# The share of the steps before the loss called "early" in the clipping view.
EARLY_FRACTION = 0.25


# --- the visitor's settings, checked on the server ------------------------------------------


@dataclass(frozen=True)
class FlowSettings:
    source: str = "sentence"
    length: int = 64  # synthetic sequences only; a sentence has its own length
    before_end: int = 0  # the loss sits this many steps before the last step
    radius: float = 1.0
    activation: str = "tanh"
    init: str = "random"
    forget_bias: float = 1.0
    num_hiddens: int = 64
    clip: float = 0.1


def _number(value, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


def clean_settings(**raw) -> tuple[FlowSettings, list[Note]]:
    """Settings within the lesson's limits, with a note for every value changed."""
    default = FlowSettings()
    notes: list[Note] = []
    length = int(_number(raw.get("length", default.length), default.length))
    if length > MAX_T:
        notes.append(Note("recurrent_length_capped", {"cap": MAX_T, "asked": length}))
    length = min(max(length, 1), MAX_T)
    lo, hi = RADIUS_RANGE
    radius = min(max(_number(raw.get("radius", default.radius), default.radius), lo), hi)
    flo, fhi = FORGET_RANGE
    forget = _number(raw.get("forget_bias", default.forget_bias), default.forget_bias)
    hidden = int(_number(raw.get("num_hiddens", default.num_hiddens), default.num_hiddens))
    if hidden > MAX_HIDDENS:
        notes.append(Note("recurrent_hidden_capped", {"cap": MAX_HIDDENS, "asked": hidden}))
    clip = _number(raw.get("clip", default.clip), default.clip)
    settings = FlowSettings(
        source=raw.get("source") if raw.get("source") in SOURCES else default.source,
        length=length,
        before_end=min(max(int(_number(raw.get("before_end", 0), 0)), 0), MAX_T - 1),
        radius=radius,
        activation=raw.get("activation")
        if raw.get("activation") in ACTIVATIONS
        else default.activation,
        init=raw.get("init") if raw.get("init") in INITS else default.init,
        forget_bias=min(max(forget, flo), fhi),
        num_hiddens=min(max(hidden, 1), MAX_HIDDENS),
        clip=clip if clip > 0 else default.clip,
    )
    return settings, notes


def loss_step(n_steps: int, before_end: int) -> int:
    """τ: `before_end` steps before the last one, never before step 0."""
    return max(n_steps - 1 - before_end, 0)


def synthetic_inputs(n_steps: int, num_inputs: int, seed: int = 0) -> torch.Tensor:
    """A random sequence `X [T, num_inputs]`, entries N(0, 1) like the token vectors."""
    generator = torch.Generator().manual_seed(20_000 + seed)
    return torch.randn(n_steps, num_inputs, generator=generator)


def lesson_inputs(transformer, ids: tuple[int, ...] | None, n_steps: int) -> torch.Tensor:
    """What the lesson's constructed weights read: the Transformer's token vectors
    `W_E[ids]` for a sentence, or a synthetic sequence of `n_steps` when `ids` is None."""
    if ids is None:
        return synthetic_inputs(n_steps, transformer.cfg.d_model)
    return torch.from_numpy(transformer.W_E.detach().numpy()[np.asarray(ids, dtype=np.int64)])


# --- gradients ---------------------------------------------------------------------------------


def first_nonfinite(values: np.ndarray) -> int | None:
    """The first step (row) holding a NaN or inf, counting forward in time."""
    rows = ~np.isfinite(values.reshape(values.shape[0], -1)).all(axis=1)
    return int(np.argmax(rows)) if rows.any() else None


def last_nonfinite(values: np.ndarray, upto: int) -> int | None:
    """The first step at or before `upto` holding a NaN or inf, counting back from `upto`:
    where a backward pass from step `upto` first overflowed."""
    rows = ~np.isfinite(values[: upto + 1].reshape(upto + 1, -1)).all(axis=1)
    return int(np.flatnonzero(rows)[-1]) if rows.any() else None


def _float32(value: torch.Tensor) -> torch.Tensor:
    """`value` as float32 outside any graph: itself when it is already, without a torch call
    (each lets go of the GIL, and on a busy server waits to take it back)."""
    if value.dtype == torch.float32 and not value.requires_grad:
        return value
    return value.detach().to(torch.float32)


def _frozen_check(model: torch.nn.Module) -> None:
    if any(p.requires_grad for p in model.parameters()):
        raise ValueError("gradient flow runs only on frozen models (requires_grad=False)")


def recurrent_gradient_flow(
    model: Recurrent,
    X: torch.Tensor,
    tau: int,
    u: torch.Tensor | None = None,
    method: str = "closed_form",
    spectra: bool = False,
) -> dict:
    """∂L/∂H_t and ∂L/∂X_t for every t, with L = u · H_τ; every gate; where it overflowed.

    With `spectra`, also the step Jacobian norms from the same forward pass:
    `jacobian_steps` (the steps `jacobian_steps()` picks) and `jacobian_norms` at them,
    exactly `step_jacobian_norms(model, X, jacobian_steps)`.

    `method="closed_form"` runs backpropagation through time written out (`bptt`), a few
    vector operations per step; `"autograd"` asks torch.autograd.grad for the same numbers
    through a zero probe added to every H_t (slower: autograd records every step). The tests
    hold the two equal and both equal to finite differences.

    Returns numpy arrays (float32 as computed, non-finite values left as they are) and
    `overflow_forward` (first step whose state is not finite) and `overflow_backward` (the
    first step, counting back from τ, whose gradient is not finite), each None if none.
    """
    _frozen_check(model)
    n_steps = X.shape[0]
    if not 0 <= tau < n_steps:
        raise ValueError(f"the loss step must be in [0, {n_steps})")
    X = _float32(X)
    if method == "autograd":
        u = _float32(readout(model.cfg.num_hiddens) if u is None else u)
        X = X.clone().requires_grad_(True)
        probe = torch.zeros(n_steps, model.cfg.num_hiddens, requires_grad=True)
        with torch.enable_grad():
            trace = model(X, probe)
            loss = trace["H"][tau] @ u
            grad_X, grad_H = torch.autograd.grad(loss, (X, probe))
        loss = float(loss.detach())
        trace = {name: value.detach() for name, value in trace.items()}
        out = {name: value.numpy().copy() for name, value in trace.items()}
        grad_X, grad_H = grad_X.numpy(), grad_H.numpy()
    elif method == "closed_form":
        out = model.forward_numpy(X.numpy())  # fresh arrays, nothing else holds them
        trace = None  # tensors of the same arrays, made only if the spectra need them
        u = readout_array(model.cfg.num_hiddens) if u is None else _float32(u).numpy()
        loss = float(out["H"][tau] @ u)
        grad_H, grad_X = bptt(model, out, tau, u)
    else:
        raise ValueError("method must be 'closed_form' or 'autograd'")
    if spectra:
        state_size = model.cfg.num_hiddens * (2 if model.cfg.cell == "lstm" else 1)
        out["jacobian_steps"] = jacobian_steps(n_steps, state_size)
        if trace is None:
            trace = {name: torch.from_numpy(out[name]) for name in model.trace_names()}
        out["jacobian_norms"] = trace_jacobian_norms(model, trace, out["jacobian_steps"])
    with np.errstate(over="ignore", invalid="ignore"):
        out["grad_H"] = np.linalg.norm(grad_H.astype(np.float64), axis=1)
        out["grad_X"] = np.linalg.norm(grad_X.astype(np.float64), axis=1)
    out["grad_H_units"] = np.abs(grad_H)
    out["grad_X_rows"] = grad_X
    out["loss"] = loss
    out["tau"] = tau
    state = np.concatenate([out["H"], out["C"]], axis=1) if "C" in out else out["H"]
    out["overflow_forward"] = first_nonfinite(state)
    out["overflow_backward"] = last_nonfinite(grad_H, tau)
    return out


def bptt(
    model: Recurrent, trace: dict[str, np.ndarray], tau: int, u: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Backpropagation through time, written out: `(∂L/∂H [T, n], ∂L/∂X [T, d])` for L = u·H_τ,
    from a float32 forward trace (`model.forward_numpy(X)`).

    Everything that does not depend on the gradient (gate slopes, tanh of the cell) is computed
    for all steps at once; the loop carries only the adjoint g_t = ∂L/∂H_t (and, for the LSTM,
    c_t = ∂L/∂C_t) one step back at a time. Row convention, as in the forward pass. All in
    numpy: each step is a few operations on vectors of a hundred numbers, where torch's fixed
    cost per operation (~5 µs) was most of the time.
    """
    cfg = model.cfg
    H = trace["H"]
    n_steps, n = H.shape
    W_x, W_h, _ = model.stacked_numpy()
    W_hT = np.ascontiguousarray(W_h.T)
    grad_H = np.zeros((n_steps, n), dtype=H.dtype)
    # d[t]: the gradient with respect to the pre-activations whose input part is X_t W_x·.
    d = np.zeros((n_steps, W_x.shape[1]), dtype=H.dtype)
    g = np.array(u, dtype=H.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if cfg.cell == "rnn":
            _rnn_adjoints(cfg.activation, H, W_hT, g, tau, grad_H, d)
        elif cfg.cell == "lstm":
            _lstm_adjoints(trace, W_hT, g, tau, grad_H, d)
        else:
            _gru_adjoints(trace, W_h, W_hT, g, tau, grad_H, d)
    return grad_H, one_core_matmul(d, W_x.T)


def _rnn_adjoints(activation, H, W_hT, g, tau, grad_H, d) -> None:
    if activation == "tanh":
        slope = 1 - H**2
    elif activation == "relu":
        # As torch's relu backward (grad unless H ≤ 0): a NaN state passes the gradient on.
        slope = (~(H <= 0)).astype(H.dtype)
    else:
        slope = np.ones_like(H)
    for t in range(tau, -1, -1):
        grad_H[t] = g
        d[t] = g * slope[t]
        g = d[t] @ W_hT


def _previous(values: np.ndarray) -> np.ndarray:
    """Every step's value one step earlier: `[0, values[0], …, values[T−2]]`."""
    return np.concatenate([np.zeros_like(values[:1]), values[:-1]])


def _lstm_adjoints(trace, W_hT, g, tau, grad_H, d) -> None:
    I, F, O, C_tilde, C = (trace[k] for k in ("I", "F", "O", "C_tilde", "C"))  # noqa: E741
    tanh_C = np.tanh(C)
    k_C = O * (1 - tanh_C**2)  # ∂H_t/∂C_t
    # ∂C_t/∂a for a_i, a_f, a_c, and ∂H_t/∂a_o, in the stacked order I, F, O, C_tilde.
    K = np.concatenate(
        [
            C_tilde * I * (1 - I),
            _previous(C) * F * (1 - F),
            tanh_C * O * (1 - O),
            I * (1 - C_tilde**2),
        ],
        axis=1,
    )
    c = np.zeros_like(g)
    for t in range(tau, -1, -1):
        grad_H[t] = g
        dC = c + g * k_C[t]
        d[t] = np.concatenate([dC, dC, g, dC]) * K[t]
        g = d[t] @ W_hT
        c = dC * F[t]


def _gru_adjoints(trace, W_h, W_hT, g, tau, grad_H, d) -> None:
    Z, R, H_tilde = trace["Z"], trace["R"], trace["H_tilde"]
    n = Z.shape[1]
    H_prev = _previous(trace["H"])
    h_h = one_core_matmul(H_prev, W_h[:, 2 * n :])  # H_{t−1} W_hh, which R multiplies
    k_Z = (H_prev - H_tilde) * Z * (1 - Z)
    k_H = (1 - Z) * (1 - H_tilde**2)
    k_R = h_h * R * (1 - R)
    for t in range(tau, -1, -1):
        grad_H[t] = g
        a_z, a_h = g * k_Z[t], g * k_H[t]
        a_r = a_h * k_R[t]
        d[t] = np.concatenate([a_z, a_r, a_h])
        g = g * Z[t] + np.concatenate([a_z, a_r, a_h * R[t]]) @ W_hT


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


def transformer_gradient_flow(
    model, X: torch.Tensor, tau: int, u: torch.Tensor | None = None, method: str = "auto"
):
    """‖∂L/∂X_t‖ for the Transformer, L = u · output_τ.

    `method="closed_form"` runs the forward pass and its backward pass written out in numpy
    (`transformer_backward`); `"autograd"` asks torch.autograd.grad through a tensor made for
    this call. `"auto"` takes the closed form where it applies (position added to the input,
    products below WRITTEN_OUT_PRODUCT) and autograd otherwise. The tests hold the two equal and
    both equal to finite differences.
    """
    _frozen_check(model)
    if not 0 <= tau < X.shape[0]:
        raise ValueError(f"the loss step must be in [0, {X.shape[0]})")
    if method not in ("auto", "closed_form", "autograd"):
        raise ValueError("method must be 'auto', 'closed_form' or 'autograd'")
    X = _float32(X)
    if method == "auto":
        cfg = model.cfg
        small = X.shape[0] * cfg.d_model * cfg.d_mlp <= WRITTEN_OUT_PRODUCT
        method = "closed_form" if small and cfg.positional in ADDED_POSITIONS else "autograd"
    if method == "closed_form":
        u = readout_array(model.cfg.d_model) if u is None else _float32(u).numpy()
        grad_X, loss = transformer_backward(model, X.numpy(), tau, u)
    else:
        u = _float32(readout(model.cfg.d_model) if u is None else u)
        X = X.clone().requires_grad_(True)
        with torch.enable_grad():
            loss = transformer_from_embeddings(model, X)[tau] @ u
            (grad_X,) = torch.autograd.grad(loss, (X,))
        grad_X, loss = grad_X.numpy(), float(loss.detach())
    return {
        "grad_X": np.linalg.norm(grad_X.astype(np.float64), axis=1),
        "grad_X_rows": grad_X,
        "loss": loss,
        "tau": tau,
    }


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
    returns the output and the heads' (q, k, v, pattern) `[head, pos, ·]`."""
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


# --- step Jacobians in closed form -------------------------------------------------------------


def _rows_times(v: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """diag(v_t) · M for every step: `v [T, n]`, `M [n, m]` → `[T, n, m]`."""
    return v[:, :, None] * M[None]


def step_jacobians(
    model: Recurrent, trace: dict[str, torch.Tensor], steps: slice | torch.Tensor | None = None
) -> torch.Tensor:
    """`J_t = ∂state_t/∂state_{t−1}` `[T, n, n]` from a forward trace (tensors), for `steps`
    (a slice or a tensor of step indices). Column convention:
    `J[t, i, j] = ∂state_t[i] / ∂state_{t−1}[j]`. RNN and GRU state is H; LSTM state is (H, C)
    stacked, so its J is `2n × 2n`. H_{−1} = C_{−1} = 0."""
    steps = slice(None) if steps is None else steps
    cfg = model.cfg
    dtype = trace["H"].dtype
    H = trace["H"]
    H_prev = torch.cat([H.new_zeros(1, H.shape[1]), H[:-1]])[steps]
    H = H[steps]
    if cfg.cell == "rnn":
        _, W_hh, _ = model.weights("H", dtype)
        if cfg.activation == "tanh":
            slope = 1 - H**2
        elif cfg.activation == "relu":
            # A state that overflowed has no slope: keep it non-finite, not 0.
            slope = torch.where(torch.isfinite(H), (H > 0).to(dtype), torch.nan)
        else:
            slope = torch.ones_like(H)
        return _rows_times(slope, W_hh.T)
    if cfg.cell == "lstm":
        W = {g: model.weights(g, dtype)[1].T for g in ("I", "F", "O", "C_tilde")}
        I, F, O = trace["I"][steps], trace["F"][steps], trace["O"][steps]  # noqa: E741
        C_tilde, C = trace["C_tilde"][steps], trace["C"]
        C_prev = torch.cat([C.new_zeros(1, C.shape[1]), C[:-1]])[steps]
        C = C[steps]
        dI = _rows_times(I * (1 - I), W["I"])
        dF = _rows_times(F * (1 - F), W["F"])
        dO = _rows_times(O * (1 - O), W["O"])
        dC_tilde = _rows_times(1 - C_tilde**2, W["C_tilde"])
        dC_dH = C_prev[:, :, None] * dF + C_tilde[:, :, None] * dI + I[:, :, None] * dC_tilde
        dC_dC = torch.diag_embed(F)
        k = O * (1 - torch.tanh(C) ** 2)
        dH_dH = torch.tanh(C)[:, :, None] * dO + k[:, :, None] * dC_dH
        dH_dC = torch.diag_embed(k * F)
        return torch.cat([torch.cat([dH_dH, dH_dC], 2), torch.cat([dC_dH, dC_dC], 2)], 1)
    W_hz = model.weights("Z", dtype)[1]
    W_hr = model.weights("R", dtype)[1]
    W_hh = model.weights("H_tilde", dtype)[1]
    Z, R, H_tilde = trace["Z"][steps], trace["R"][steps], trace["H_tilde"][steps]
    dZ = _rows_times(Z * (1 - Z), W_hz.T)
    dR = _rows_times(R * (1 - R), W_hr.T)
    dn = (H_prev @ W_hh)[:, :, None] * dR + _rows_times(R, W_hh.T)
    return (
        torch.diag_embed(Z)
        + (H_prev - H_tilde)[:, :, None] * dZ
        + ((1 - Z) * (1 - H_tilde**2))[:, :, None] * dn
    )


# Exact spectra cost about n³ per step: beyond this budget they are computed at evenly
# spaced steps only (about 0.5 s on two cores), and the page says at how many.
JACOBIAN_BUDGET = 1.5e8


def jacobian_steps(n_steps: int, state_size: int, budget: float = JACOBIAN_BUDGET) -> np.ndarray:
    """The steps whose Jacobian spectrum is computed: all of them, or evenly spaced ones
    (at least 16, always the first and the last) when all would exceed the budget."""
    count = max(16, int(budget // state_size**3))
    if count >= n_steps:
        return np.arange(n_steps)
    return np.unique(np.round(np.linspace(0, n_steps - 1, count)).astype(int))


def step_jacobian_norms(
    model: Recurrent, X: torch.Tensor, steps: np.ndarray | None = None, chunk: int = 32
) -> np.ndarray:
    """`‖∂state_t/∂state_{t−1}‖₂` (largest singular value) at `steps` (default: all).

    Exact: σ_max = √λ_max(JᵀJ), a symmetric eigenproblem solved in float64 for each J built in
    closed form. NaN where the state already overflowed (no spectrum of a non-finite matrix).
    """
    # The same forward pass as recurrent_gradient_flow's, so its spectra are these numbers.
    trace = model.forward_numpy(X.detach().to(torch.float32).numpy())
    trace = {name: torch.from_numpy(value) for name, value in trace.items()}
    return trace_jacobian_norms(model, trace, steps, chunk)


def trace_jacobian_norms(
    model: Recurrent,
    trace: dict[str, torch.Tensor],
    steps: np.ndarray | None = None,
    chunk: int = 32,
) -> np.ndarray:
    """`step_jacobian_norms` from a forward trace already made (tensors, as `model(X)`
    returns them): the gradient flow reuses its own pass instead of running a second."""
    steps = np.arange(trace["H"].shape[0]) if steps is None else np.asarray(steps)
    norms = np.full(len(steps), np.nan)
    for start in range(0, len(steps), chunk):
        index = torch.from_numpy(steps[start : start + chunk])
        J = step_jacobians(model, trace, index).to(torch.float64)
        finite = torch.isfinite(J).flatten(1).all(dim=1)
        if finite.any():
            J = J[finite]
            top = torch.linalg.eigvalsh(J.mT @ J)[:, -1].clamp_min(0).sqrt().numpy()
            norms[start : start + len(index)][finite.numpy()] = top
    return norms


# --- theory and clipping -----------------------------------------------------------------------


def input_free_grad_H(model: Recurrent, n_steps: int, tau: int) -> np.ndarray:
    """‖∂L/∂H_t‖ measured on zero inputs of `n_steps`: for a linear RNN it reads no input
    (∂L/∂H_t = u·W_hhᵀ^(τ−t)), so these are its numbers for any sequence of that length."""
    X = torch.zeros(n_steps, model.cfg.num_inputs)
    return recurrent_gradient_flow(model, X, tau)["grad_H"]


def linear_orthogonal_theory(radius: float, tau: int) -> np.ndarray:
    """For a linear RNN with W_hh = r·Q (Q orthogonal) and ‖u‖ = 1: ‖∂L/∂H_t‖ = r^(τ−t)."""
    return float(radius) ** (tau - np.arange(tau + 1, dtype=np.float64))


def clip_summary(grad_rows: np.ndarray, tau: int, threshold: float) -> dict:
    """Clip the gradient `[T, d]` (every step's ∂L/∂X_t together) with torch's own
    clip_grad_norm_ on a fresh tensor, and say how much of it the early steps hold.

    "Early" is the first quarter of the steps up to the loss (at least one step). Shares are of
    the squared norm, so the shares of all steps add up to 1. Clipping multiplies every step by
    the same factor: the total falls to the threshold, the shares stay exactly where they were.
    """
    grads = torch.from_numpy(np.ascontiguousarray(grad_rows[: tau + 1], dtype=np.float32))
    holder = torch.zeros_like(grads, requires_grad=True)
    holder.grad = grads.clone()
    total = float(torch.nn.utils.clip_grad_norm_([holder], max_norm=threshold))
    clipped = holder.grad.numpy().astype(np.float64)
    n_early = max(1, int((tau + 1) * EARLY_FRACTION))
    result = {"total": total, "n_early": n_early, "threshold": float(threshold)}
    for name, rows in (("", grads.numpy().astype(np.float64)), ("_clipped", clipped)):
        with np.errstate(over="ignore", invalid="ignore"):
            per_step = (rows**2).sum(axis=1)
            whole = float(per_step.sum())
            share = float(per_step[:n_early].sum() / whole) if whole > 0 else float("nan")
        result["per_step" + name] = np.sqrt(per_step)
        result["norm" + name] = math.sqrt(whole) if math.isfinite(whole) else whole
        result["early_share" + name] = share
    return result
