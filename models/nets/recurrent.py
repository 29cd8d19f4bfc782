"""RNN, LSTM and GRU written out as a time loop, d2l-style, for looking inside.

Names follow d2l (docs/DESIGN.md, Glossary): input `X [T, num_inputs]`, hidden `H [T, num_hiddens]`,
row-vector convention `H_t = φ(X_t W_xh + H_{t−1} W_hh + b_h)`.

- RNN: φ is tanh, ReLU or the identity ("linear").
- LSTM: gates `I, F, O = σ(X_t W_x· + H_{t−1} W_h· + b_·)`, candidate
  `C_tilde = tanh(X_t W_xc + H_{t−1} W_hc + b_c)`, cell `C_t = F ⊙ C_{t−1} + I ⊙ C_tilde`,
  `H_t = O ⊙ tanh(C_t)`.
- GRU: `Z, R = σ(…)`, `H_tilde = tanh(X_t W_xh + b_h + R ⊙ (H_{t−1} W_hh))`,
  `H_t = Z ⊙ H_{t−1} + (1 − Z) ⊙ H_tilde`. The reset gate multiplies `H_{t−1} W_hh`, as in
  torch.nn.GRU and cuDNN (d2l's scratch GRU multiplies `H_{t−1}` before `W_hh`: both are GRUs).

A model is built from (config, seed) with a private generator; its weights are frozen
(`requires_grad=False`, eval mode) and never change. `forward` returns a fresh dict of every
step's hidden state and every gate; nothing is stored on the module, so one instance can
serve many threads. Every hidden-to-hidden matrix (`W_hh`; `W_hi, W_hf, W_ho, W_hc`;
`W_hz, W_hr, W_hh`) is built with its largest singular value set to `config.radius`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

CELLS = ("rnn", "lstm", "gru")
ACTIVATIONS = ("tanh", "relu", "linear")
INITS = ("random", "orthogonal", "identity")
MAX_HIDDENS = 256
# The largest singular value r of the hidden-to-hidden matrices, two bounds of two meanings:
# - RADIUS_RANGE is what a visitor may set, the one source of it: the recurrent lesson's
#   slider offers it, a link asking for more is clamped to it, and the server clamps the
#   settings it receives to it (models/analysis/gradient_flow.py clean_settings) before any
#   model is built from them. r = 1 sits in its middle: below, gradients fade; above, they grow.
# - MAX_RADIUS is what a config accepts, wider on purpose: it refuses values that make no
#   matrix worth building (NaN, negative, 1e9), while code outside the lesson builds radii the
#   lesson does not offer (tests/unit/test_recurrent.py overflows a ReLU RNN at r = 4).
RADIUS_RANGE = (0.5, 1.5)
MAX_RADIUS = 4.0

# Gate names per cell, in the order they are stacked for one matmul per step.
GATES = {"rnn": ("H",), "lstm": ("I", "F", "O", "C_tilde"), "gru": ("Z", "R", "H_tilde")}
# The letter each gate's weights carry: W_xi, W_hi, b_i for I, and so on.
_SUFFIX = {
    "H": "h",
    "I": "i",
    "F": "f",
    "O": "o",
    "C_tilde": "c",
    "Z": "z",
    "R": "r",
    "H_tilde": "h",
}


@dataclass(frozen=True)
class RecurrentConfig:
    cell: str = "rnn"
    num_inputs: int = 64
    num_hiddens: int = 64
    activation: str = "tanh"  # RNN only
    init: str = "random"  # how every hidden-to-hidden matrix starts, before scaling
    radius: float = 1.0  # the largest singular value of every hidden-to-hidden matrix
    forget_bias: float = 1.0  # LSTM only: b_f
    input_scale: float = 1.0  # entries of W_x· ~ N(0, input_scale² / num_inputs)

    def __post_init__(self) -> None:
        if self.cell not in CELLS:
            raise ValueError(f"cell must be one of {CELLS}, got {self.cell!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if not 1 <= self.num_hiddens <= MAX_HIDDENS or self.num_inputs < 1:
            raise ValueError(f"num_hiddens must be in [1, {MAX_HIDDENS}], num_inputs positive")
        for name in ("radius", "forget_bias", "input_scale"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite")
        if not 0.0 <= self.radius <= MAX_RADIUS:
            raise ValueError(f"radius must be in [0, {MAX_RADIUS}]")


def hidden_matrix(generator: torch.Generator, n: int, init: str, radius: float) -> torch.Tensor:
    """An `n × n` matrix whose largest singular value is exactly `radius` (up to float32)."""
    if init == "identity":
        base = torch.eye(n, dtype=torch.float64)
    else:
        gaussian = torch.randn(n, n, generator=generator, dtype=torch.float64)
        if init == "orthogonal":
            q, r = torch.linalg.qr(gaussian)
            base = q * torch.sign(torch.diagonal(r))[None, :]
        else:
            base = gaussian / torch.linalg.matrix_norm(gaussian, ord=2)
    return (radius * base).to(torch.float32)


def largest_singular_value(matrix: torch.Tensor) -> float:
    """‖matrix‖₂: the most it stretches any vector, from an exact SVD in float64."""
    return float(torch.linalg.svdvals(matrix.detach().to(torch.float64))[0])


def _frozen(value: torch.Tensor) -> nn.Parameter:
    return nn.Parameter(value, requires_grad=False)


class Recurrent(nn.Module):
    """One RNN, LSTM or GRU layer built from (config, seed); weights frozen."""

    def __init__(self, cfg: RecurrentConfig, seed: int = 0):
        super().__init__()
        self.cfg = cfg
        self.seed = seed
        generator = torch.Generator().manual_seed(seed)
        n_in, n_h = cfg.num_inputs, cfg.num_hiddens
        for gate in GATES[cfg.cell]:
            s = _SUFFIX[gate]
            w_x = torch.randn(n_in, n_h, generator=generator) * (cfg.input_scale / math.sqrt(n_in))
            bias = torch.full((n_h,), cfg.forget_bias if gate == "F" else 0.0)
            self.register_parameter(f"W_x{s}", _frozen(w_x))
            self.register_parameter(
                f"W_h{s}", _frozen(hidden_matrix(generator, n_h, cfg.init, cfg.radius))
            )
            self.register_parameter(f"b_{s}", _frozen(bias))
        self.requires_grad_(False)
        self.eval()

    def weights(self, gate: str, dtype: torch.dtype = torch.float32):
        """`(W_x·, W_h·, b_·)` of one gate in `dtype` (float32: the stored tensors themselves)."""
        s = _SUFFIX[gate]
        return tuple(getattr(self, f"{p}{s}").to(dtype) for p in ("W_x", "W_h", "b_"))

    def stacked_weights(self, dtype: torch.dtype = torch.float32):
        """`(W_x, W_h, b)` with every gate side by side, in the order of GATES[cell]."""
        gates = GATES[self.cfg.cell]
        parts = [self.weights(g, dtype) for g in gates]
        return tuple(torch.cat([p[i] for p in parts], dim=-1) for i in range(3))

    def trace_names(self) -> tuple[str, ...]:
        """The names of what `forward` returns for every step: H, every gate, and C (LSTM)."""
        cell = self.cfg.cell
        return ("H", *GATES[cell], "C") if cell == "lstm" else ("H", *GATES[cell])

    def stacked_numpy(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`stacked_weights()` as float32 numpy arrays, stacked by numpy from views of the
        parameters: no torch call, each of which lets go of the GIL and waits to take it
        back while a busy server's other threads hold it."""
        parts = [
            [getattr(self, f"{p}{_SUFFIX[g]}").detach().numpy() for p in ("W_x", "W_h", "b_")]
            for g in GATES[self.cfg.cell]
        ]
        return tuple(np.concatenate([part[i] for part in parts], axis=-1) for i in range(3))

    def forward(
        self,
        X: torch.Tensor,
        probe: torch.Tensor | None = None,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> dict[str, torch.Tensor]:
        """Run over `X [T, num_inputs]` (or a batch `[..., T, num_inputs]`, as training uses) from
        `state = (H, C)` before step 0 (default zeros; C is read by the LSTM only).

        Returns a fresh dict: `H [T, num_hiddens]` and every gate `[T, num_hiddens]`
        (LSTM: I, F, O, C_tilde, C; GRU: Z, R, H_tilde). `probe [T, num_hiddens]`, if given,
        is added to each H_t as it is made (zeros change nothing): the gradient of a loss with
        respect to the probe is ∂L/∂H_t for every t, in one backward pass.
        """
        if X.ndim < 2 or X.shape[-2] < 1 or X.shape[-1] != self.cfg.num_inputs:
            raise ValueError(f"X must be [T ≥ 1, {self.cfg.num_inputs}], got {tuple(X.shape)}")
        cell, n_h = self.cfg.cell, self.cfg.num_hiddens
        W_x, W_h, b = self.stacked_weights(X.dtype)
        # The input part of every step at once; only H_{t−1} W_h· is left to the loop.
        inputs = X @ W_x + b
        zeros = X.new_zeros((*X.shape[:-2], n_h))
        H, C = state if state is not None else (zeros, zeros)
        hidden: list[torch.Tensor] = []
        steps: dict[str, list[torch.Tensor]] = {name: [] for name in (*GATES[cell], "C")}
        for t in range(X.shape[-2]):
            x_t = inputs[..., t, :]
            if cell == "rnn":
                H = _activate(x_t + H @ W_h, self.cfg.activation)
            elif cell == "lstm":
                a = x_t + H @ W_h
                I, F, O = torch.sigmoid(a[..., : 3 * n_h]).split(n_h, dim=-1)  # noqa: E741
                C_tilde = torch.tanh(a[..., 3 * n_h :])
                C = F * C + I * C_tilde
                H = O * torch.tanh(C)
                for name, value in (("I", I), ("F", F), ("O", O), ("C_tilde", C_tilde)):
                    steps[name].append(value)
                steps["C"].append(C)
            else:
                # One matmul gives H_{t−1} W_hz, H_{t−1} W_hr and H_{t−1} W_hh at once.
                h = H @ W_h
                Z, R = torch.sigmoid(x_t[..., : 2 * n_h] + h[..., : 2 * n_h]).split(n_h, dim=-1)
                H_tilde = torch.tanh(x_t[..., 2 * n_h :] + R * h[..., 2 * n_h :])
                H = Z * H + (1 - Z) * H_tilde
                for name, value in (("Z", Z), ("R", R), ("H_tilde", H_tilde)):
                    steps[name].append(value)
            if probe is not None:
                H = H + probe[t]
            hidden.append(H)
        trace = {"H": torch.stack(hidden, dim=-2)}
        trace.update(
            {name: torch.stack(values, dim=-2) for name, values in steps.items() if values}
        )
        return trace

    def forward_numpy(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """`forward(X)` for one sequence `X [T, num_inputs]` from zero state, in numpy float32,
        without autograd: the same dict of fresh arrays (`H` and every gate), equal to
        `forward` up to float32 rounding (tests/unit/test_recurrent.py holds them together).

        For reading one sequence, as the gradient flow does on every keystroke: a step is a
        few operations on vectors of a hundred numbers, where torch's fixed cost per
        operation (~5 µs, a dozen operations a step) was most of the time. Overflow goes
        on as in torch: inf and NaN propagate, nothing raises.
        """
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] != self.cfg.num_inputs:
            raise ValueError(f"X must be [T ≥ 1, {self.cfg.num_inputs}], got {X.shape}")
        cell, n_h, n_steps = self.cfg.cell, self.cfg.num_hiddens, X.shape[0]
        W_x, W_h, b = self.stacked_numpy()
        # The input part of every step at once; the per-step products below are too small
        # for numpy's BLAS to split over several cores.
        products = one_core_matmul(X, W_x)
        trace = {name: np.empty((n_steps, n_h), dtype=np.float32) for name in self.trace_names()}
        H = C = np.zeros(n_h, dtype=np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            inputs = products + b
            for t in range(n_steps):
                if cell == "rnn":
                    H = _activate_numpy(inputs[t] + H @ W_h, self.cfg.activation)
                elif cell == "lstm":
                    a = inputs[t] + H @ W_h
                    gates = _sigmoid(a[: 3 * n_h])
                    I, F, O = gates[:n_h], gates[n_h : 2 * n_h], gates[2 * n_h :]  # noqa: E741
                    C_tilde = np.tanh(a[3 * n_h :])
                    C = F * C + I * C_tilde
                    H = O * np.tanh(C)
                    trace["I"][t], trace["F"][t], trace["O"][t] = I, F, O
                    trace["C_tilde"][t], trace["C"][t] = C_tilde, C
                else:
                    h = H @ W_h
                    gates = _sigmoid(inputs[t, : 2 * n_h] + h[: 2 * n_h])
                    Z, R = gates[:n_h], gates[n_h:]
                    H_tilde = np.tanh(inputs[t, 2 * n_h :] + R * h[2 * n_h :])
                    H = Z * H + (1 - Z) * H_tilde
                    trace["Z"][t], trace["R"][t], trace["H_tilde"][t] = Z, R, H_tilde
                trace["H"][t] = H
        return trace

    def run_with_cache(self, X: torch.Tensor) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
        """`H [T, num_hiddens]` and a fresh dict of float32 numpy arrays (no gradients)."""
        with torch.no_grad():
            trace = self.forward(X)
        return trace["H"], {
            k: v.detach().to(torch.float32).numpy().copy() for k, v in trace.items()
        }


def _activate(a: torch.Tensor, activation: str) -> torch.Tensor:
    if activation == "tanh":
        return torch.tanh(a)
    if activation == "relu":
        return torch.relu(a)
    return a


# numpy's BLAS (OpenBLAS) splits a product over every core from about 2^20 multiply-adds (and
# from fewer when an operand is a transposed view), its idle threads then spinning on cores
# other visitors need. Below this many multiply-adds numpy keeps it on one core.
ONE_CORE_PRODUCT = 2**19


def one_core_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a @ b` (2-D float32) on one core: numpy for small products (it keeps the GIL, which
    a torch call lets go of and must wait to take back on a busy server), torch (one
    thread, models/serving/runtime.py) for large ones. inf and NaN go on as in torch, unwarned."""
    if a.shape[0] * a.shape[1] * b.shape[1] < ONE_CORE_PRODUCT:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.ascontiguousarray(a) @ np.ascontiguousarray(b)
    return (torch.from_numpy(np.ascontiguousarray(a)) @ torch.from_numpy(b)).numpy()


def _activate_numpy(a: np.ndarray, activation: str) -> np.ndarray:
    if activation == "tanh":
        return np.tanh(a)
    if activation == "relu":
        return np.maximum(a, 0)  # NaN stays NaN, as torch.relu keeps it
    return a


def _sigmoid(a: np.ndarray) -> np.ndarray:
    """σ(a) = 1 / (1 + e^−a): 0 for a → −∞ (e^−a overflows to inf), NaN for NaN."""
    return 1 / (1 + np.exp(-a))


def readout(num_hiddens: int, seed: int = 0) -> torch.Tensor:
    """A fixed random unit vector u: the loss is L = u · H_τ (or u · output_τ). A fresh
    copy each call: the caller may change it."""
    return _readout(num_hiddens, seed).clone()


def readout_array(num_hiddens: int, seed: int = 0) -> np.ndarray:
    """`readout(num_hiddens, seed)` as a fresh numpy array, for the numpy passes."""
    return _readout(num_hiddens, seed).numpy().copy()


@functools.cache
def _readout(num_hiddens: int, seed: int) -> torch.Tensor:
    # Drawn once per size: every rerun of the lesson asks for it four times.
    generator = torch.Generator().manual_seed(10_000 + seed)
    u = torch.randn(num_hiddens, generator=generator, dtype=torch.float64)
    return (u / u.norm()).to(torch.float32)
