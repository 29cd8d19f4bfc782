"""Step Jacobians of the RNN, LSTM and GRU in closed form, and their spectral norms.

`J_t = ∂state_t/∂state_{t−1}`, the matrix backpropagation through time multiplies at every
step (models/analysis/recurrent_backward.py); for the LSTM the state is the pair (H, C).
`‖J_t‖₂` is its largest singular value, computed exactly from a forward trace.
"""

from __future__ import annotations

import numpy as np
import torch

from models.nets.recurrent import Recurrent


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
