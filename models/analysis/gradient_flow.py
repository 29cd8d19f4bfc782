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

This module holds the visitor's settings and the two measured runs; the parts they call live
beside it, and every name stays importable from here:
- models/analysis/recurrent_backward.py: backpropagation through time written out (`bptt`);
- models/analysis/transformer_backward.py: the Transformer from input vectors and its
  backward pass written out (`transformer_from_embeddings`, `transformer_backward`);
- models/analysis/step_jacobians.py: step Jacobians in closed form and their norms;
- models/analysis/gradient_clipping.py: clipping by norm (`clip_summary`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from models.analysis.gradient_clipping import EARLY_FRACTION, clip_summary
from models.analysis.recurrent_backward import bptt
from models.analysis.step_jacobians import (
    JACOBIAN_BUDGET,
    jacobian_steps,
    step_jacobian_norms,
    step_jacobians,
    trace_jacobian_norms,
)
from models.analysis.transformer_backward import (
    ADDED_POSITIONS,
    WRITTEN_OUT_PRODUCT,
    transformer_backward,
    transformer_from_embeddings,
)
from models.nets.recurrent import (
    ACTIVATIONS,
    INITS,
    MAX_HIDDENS,
    RADIUS_RANGE,
    Recurrent,
    readout,
    readout_array,
)
from models.text import Note

# The lesson's public names, those of the parts beside this module included (pages,
# components and tests read them as gf.<name>). RADIUS_RANGE is models/nets/recurrent.py's.
__all__ = [
    "ADDED_POSITIONS",
    "CLIP_THRESHOLDS",
    "EARLY_FRACTION",
    "FORGET_RANGE",
    "HIDDEN_SIZES",
    "JACOBIAN_BUDGET",
    "MAX_T",
    "RADIUS_RANGE",
    "SOURCES",
    "WRITTEN_OUT_PRODUCT",
    "FlowSettings",
    "bptt",
    "clean_settings",
    "clip_summary",
    "first_nonfinite",
    "input_free_grad_H",
    "jacobian_steps",
    "last_nonfinite",
    "lesson_inputs",
    "linear_orthogonal_theory",
    "loss_step",
    "recurrent_gradient_flow",
    "step_jacobian_norms",
    "step_jacobians",
    "synthetic_inputs",
    "trace_jacobian_norms",
    "transformer_backward",
    "transformer_from_embeddings",
    "transformer_gradient_flow",
]

MAX_T = 512
HIDDEN_SIZES = (8, 16, 32, 64, 128, 256)
CLIP_THRESHOLDS = (0.01, 0.1, 1.0, 10.0, 100.0)
FORGET_RANGE = (0.0, 5.0)
SOURCES = ("sentence", "synthetic")


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


# --- the linear RNN, measured and in theory ---------------------------------------------------


def input_free_grad_H(model: Recurrent, n_steps: int, tau: int) -> np.ndarray:
    """‖∂L/∂H_t‖ measured on zero inputs of `n_steps`: for a linear RNN it reads no input
    (∂L/∂H_t = u·W_hhᵀ^(τ−t)), so these are its numbers for any sequence of that length."""
    X = torch.zeros(n_steps, model.cfg.num_inputs)
    return recurrent_gradient_flow(model, X, tau)["grad_H"]


def linear_orthogonal_theory(radius: float, tau: int) -> np.ndarray:
    """For a linear RNN with W_hh = r·Q (Q orthogonal) and ‖u‖ = 1: ‖∂L/∂H_t‖ = r^(τ−t)."""
    return float(radius) ** (tau - np.arange(tau + 1, dtype=np.float64))
