"""Gradient flow through the layers of "Recurrence returns": the selective SSM and linear
attention, measured with the loss the recurrent lesson uses for its models.

The loss is models/analysis/gradient_flow.py's: `L = u · output_τ`, a fixed random unit
readout `u` (models.nets.recurrent.readout) of the layer's output vector at the loss step τ.
For every step t this measures `grad_X[t] = ‖∂L/∂X_t‖`, the gradient that reaches the input
vector of step t, so the new layers' curves sit on one chart with the RNN's, the LSTM's, the
GRU's and the Transformer's.

Shared layers stay untouched: gradients come from `torch.autograd.grad` with respect to a copy
of X made in the call, never parameters; no hooks, no `.backward()`, nothing stored on a module.

The SSM is also run here with its step sizes Δ multiplied by a factor (`ssm_forward`), an
argument of the layer's call (SelectiveSSM.trace_tensors): a shared module is never changed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from models.nets.linear_attention import LinearAttentionLayer
from models.nets.recurrent import readout
from models.nets.selective_ssm import SelectiveSSM

# How far the Δ factor may go: beyond ×10 nearly every state is emptied at every step
# (exp(Δ A) ≈ 0 for Δ ≈ 1), below ×0.1 the state hardly moves over a sentence.
DELTA_SCALE_RANGE = (0.1, 10.0)


def _frozen_check(layer: torch.nn.Module) -> None:
    if any(p.requires_grad for p in layer.parameters()):
        raise ValueError("gradient flow runs only on frozen layers (requires_grad=False)")


def _check_scale(delta_scale: float) -> float:
    low, high = DELTA_SCALE_RANGE
    scale = float(delta_scale)
    if not low <= scale <= high:
        raise ValueError(f"delta_scale must be in [{low}, {high}], got {delta_scale!r}")
    return scale


def output_gradient_flow(
    forward: Callable[[torch.Tensor], torch.Tensor],
    X: torch.Tensor,
    tau: int,
    u: torch.Tensor | None = None,
) -> dict:
    """`grad_X [T]` = ‖∂L/∂X_t‖, `grad_X_rows [T, d]` = ∂L/∂X_t, `loss` and `tau`, for
    L = u · forward(X)[τ] (`forward`: `[T, d_in] → [T, d_out]`, a function of X alone).

    Computed in X's dtype; `u` defaults to the recurrent lesson's readout of d_out."""
    if X.ndim != 2 or X.shape[0] < 1:
        raise ValueError("X must be [T ≥ 1, d]")
    if not 0 <= tau < X.shape[0]:
        raise ValueError(f"the loss step must be in [0, {X.shape[0]})")
    X = X.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        out = forward(X)
        u = (readout(out.shape[-1]) if u is None else u).to(out.dtype)
        loss = out[tau] @ u
        (grad,) = torch.autograd.grad(loss, (X,))
    grad = grad.numpy()
    return {
        "grad_X": np.linalg.norm(grad.astype(np.float64), axis=1),
        "grad_X_rows": grad,
        "loss": float(loss.detach()),
        "tau": tau,
    }


# --- the selective SSM, its Δ scaled ------------------------------------------------------


def ssm_forward(layer: SelectiveSSM, X: torch.Tensor, delta_scale: float = 1.0) -> dict:
    """The layer on `X [pos, d_model]` by its loop over time, with every Δ_t multiplied by
    `delta_scale` (within DELTA_SCALE_RANGE), in X's dtype: a fresh dict of tensors under the
    layer's trace names (`ssm_delta` the scaled Δ), differentiable in X."""
    return layer.trace_tensors(X, "sequential", _checked_scale(layer, X, delta_scale))


def _checked_scale(layer: SelectiveSSM, X: torch.Tensor, delta_scale: float) -> float:
    if X.ndim != 2 or X.shape[-1] != layer.cfg.d_model:
        raise ValueError(f"X must be [pos, {layer.cfg.d_model}]")
    return _check_scale(delta_scale)


def ssm_trace(layer: SelectiveSSM, X: torch.Tensor, delta_scale: float = 1.0) -> dict:
    """`ssm_forward` without gradients, as fresh float32 numpy arrays (the layer's trace
    names, docs/DESIGN.md, Glossary, "Selective state space")."""
    scale = _checked_scale(layer, X, delta_scale)
    return layer.run_with_cache(X, "sequential", delta_scale=scale)[1]


def state_norms(h: np.ndarray) -> np.ndarray:
    """‖h_t‖ `[pos]` of states `h [pos, d_inner, d_state]` (over channels and states)."""
    h = np.asarray(h, dtype=np.float64)
    return np.sqrt((h.reshape(h.shape[0], -1) ** 2).sum(axis=1))


def kept_until(delta: np.ndarray, A: np.ndarray, tau: int) -> np.ndarray:
    """`[tau + 1]`: for every step t ≤ τ, the mean over channels and states of
    ∏_{s=t+1}^{τ} exp(Δ_s A), the share of the state at t still in h_τ (1 at t = τ). The
    product is summed in the exponent, exp(A Σ Δ_s), so it underflows only where it is 0."""
    delta = np.asarray(delta, dtype=np.float64)[: tau + 1]
    later = np.cumsum(delta[::-1], axis=0)[::-1] - delta  # Σ_{s=t+1}^{τ} Δ_s, [tau+1, d_inner]
    return np.exp(later[:, :, None] * np.asarray(A, dtype=np.float64)[None]).mean(axis=(1, 2))


def ssm_kept_until(
    layer: SelectiveSSM, X: torch.Tensor, tau: int, delta_scale: float = 1.0
) -> np.ndarray:
    """`kept_until` of the layer's own Δ × `delta_scale` on X: how much of the state at each
    step t ≤ τ is still in h_τ, `[tau + 1]`."""
    delta = ssm_trace(layer, X, delta_scale)["ssm_delta"]
    return kept_until(delta, layer.state_matrix(torch.float64).numpy(), tau)


def ssm_gradient_flow(
    layer: SelectiveSSM,
    X: torch.Tensor,
    tau: int,
    u: torch.Tensor | None = None,
    delta_scale: float = 1.0,
) -> dict:
    """‖∂L/∂X_t‖ for the SSM layer, L = u · out_τ, with Δ multiplied by `delta_scale`."""
    _frozen_check(layer)
    _check_scale(delta_scale)
    return output_gradient_flow(lambda x: ssm_forward(layer, x, delta_scale)["ssm_out"], X, tau, u)


# --- linear attention ----------------------------------------------------------------------


def linear_attention_gradient_flow(
    layer: LinearAttentionLayer,
    X: torch.Tensor,
    tau: int,
    u: torch.Tensor | None = None,
    mode: str = "parallel",
) -> dict:
    """‖∂L/∂X_t‖ for the linear-attention layer, L = u · out_τ, by either of its forms."""
    _frozen_check(layer)
    return output_gradient_flow(lambda x: layer(x, mode=mode), X, tau, u)
