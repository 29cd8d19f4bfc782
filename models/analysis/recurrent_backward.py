"""Backpropagation through time for the RNN, LSTM and GRU, written out in numpy.

models/analysis/gradient_flow.py's closed form (`recurrent_gradient_flow(method=
"closed_form")`): from a float32 forward trace (`Recurrent.forward_numpy`) and a readout u
of the state at the loss step τ, `bptt` gives ∂L/∂H_t and ∂L/∂X_t for every step.
tests/unit/test_gradient_flow.py holds it equal to torch.autograd and to finite differences.
"""

from __future__ import annotations

import numpy as np

from models.nets.recurrent import Recurrent, one_core_matmul


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
