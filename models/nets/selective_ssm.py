"""A selective state space layer (Gu & Dao 2023, "Mamba"), written out for looking inside.

This is Mamba's S6 layer alone: the input projection, the selective scan and the output
projection. Mamba's block also has a short causal convolution and a SiLU on the scan's input,
and a second, gating branch (`y ⊙ SiLU(z)`); both are left out here, so that what the lesson
shows is the recurrence itself.

Per channel n of `u = X W_in [pos, d_inner]` the layer carries a state `h [d_inner, d_state]`:

    Δ_t = softplus(u_t W_Δ + b_Δ)                        the step size, chosen by the input
    B_t = u_t W_B,  C_t = u_t W_C                        what enters the state, what is read
    h_t = exp(Δ_t A) ⊙ h_{t−1} + (Δ_t u_t)[:, None] · B_t[None, :]
    y_t = h_t C_t + D ⊙ u_t,   out = y W_out

A = −exp(A_log) with A_log = log(1..d_state) for every channel (S4D-real, as Mamba); A is
discretised by zero-order hold (exp(Δ A)) and B by Euler (Δ B), Mamba's simplification.
`SSMConfig(selective=False)` makes Δ, B and C constants (learned, not functions of the input):
the layer is then a linear time-invariant recurrence, S4D-style, equal to a convolution.

The recurrence runs two ways with the same numbers: `selective_scan_sequential`, a Python loop
over time, and `selective_scan_parallel`, a Hillis–Steele associative scan (⌈log2 T⌉ levels,
each combining every position with the one 2^level places before it). Neither divides by a
cumulative product of decays, which underflows to 0 in a few dozen steps.

A layer is built from (config, seed) with a private generator; its weights are frozen
(`requires_grad=False`, eval mode) unless a trainable copy is asked for. Nothing is stored on
the module during a forward pass, so one instance can serve many threads; `run_with_cache`
returns a fresh dict of numpy arrays (docs/DESIGN.md, Glossary, "Selective state space").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

MODES = ("parallel", "sequential")
# The longest input a layer or scan accepts: the parallel scan holds a few tensors of
# pos · d_inner · d_state numbers per level, 4096 · 64 · 16 floats (16 MB in float32) each.
MAX_POS = 4096
MAX_WIDTH = 1024  # d_model and d_inner
MAX_STATE = 256
# Δ's range at initialisation. Below the floor the state barely moves in a lesson's length
# (Mamba clamps its draws at 1e-4 too); above the ceiling exp(Δ A) is 0 for nearly every state.
DT_FLOOR, DT_CEILING = 1e-4, 10.0


@dataclass(frozen=True)
class SSMConfig:
    d_model: int = 64
    d_inner: int = 64
    d_state: int = 16
    dt_min: float = 0.001
    dt_max: float = 0.1
    selective: bool = True  # False: Δ, B and C are constants, the layer is time-invariant

    def __post_init__(self) -> None:
        for name, bound in (("d_model", MAX_WIDTH), ("d_inner", MAX_WIDTH), ("d_state", MAX_STATE)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= bound:
                raise ValueError(f"{name} must be a whole number in [1, {bound}], got {value!r}")
        if not isinstance(self.selective, bool):
            raise ValueError(f"selective must be True or False, got {self.selective!r}")
        for name in ("dt_min", "dt_max"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite")
        if not DT_FLOOR <= self.dt_min <= self.dt_max <= DT_CEILING:
            raise ValueError(f"need {DT_FLOOR} ≤ dt_min ≤ dt_max ≤ {DT_CEILING}")


def scan_levels(n_pos: int) -> int:
    """⌈log2 n_pos⌉: the levels of a Hillis–Steele scan over n_pos positions (1 → 0)."""
    if not isinstance(n_pos, int) or n_pos < 1:
        raise ValueError(f"n_pos must be a positive whole number, got {n_pos!r}")
    return (n_pos - 1).bit_length()


def _check_scan_inputs(u, delta, A, B, C, D) -> None:
    if u.ndim < 2 or not u.is_floating_point():
        raise ValueError(f"u must be a float [..., pos, d_inner], got {tuple(u.shape)}")
    *lead, n_pos, d_inner = u.shape
    d_state = A.shape[-1] if A.ndim == 2 else -1
    wanted = {
        "delta": (delta, (*lead, n_pos, d_inner)),
        "A": (A, (d_inner, d_state)),
        "B": (B, (*lead, n_pos, d_state)),
        "C": (C, (*lead, n_pos, d_state)),
        "D": (D, (d_inner,)),
    }
    for name, (value, shape) in wanted.items():
        if tuple(value.shape) != shape or value.dtype != u.dtype:
            raise ValueError(
                f"{name} must be {u.dtype} {list(shape)}, got {value.dtype} {list(value.shape)}"
            )
    if not 1 <= n_pos <= MAX_POS:
        raise ValueError(f"pos must be in [1, {MAX_POS}], got {n_pos}")
    if not all(bool(torch.isfinite(t).all()) for t in (u, delta, A, B, C, D)):
        raise ValueError("the scan's inputs must be finite")
    if bool((A >= 0).any()) or bool((delta < 0).any()):
        raise ValueError("A must be negative and delta non-negative (a state that decays)")


def _discretize(u, delta, A, B) -> tuple[torch.Tensor, torch.Tensor]:
    """The pairs (a_t, b_t) of h_t = a_t ⊙ h_{t−1} + b_t, each `[..., pos, d_inner, d_state]`:
    a_t = exp(Δ_t A) (zero-order hold), b_t = (Δ_t u_t) B_t (Euler, as Mamba)."""
    decay = torch.exp(delta[..., None] * A)
    drive = (delta * u)[..., None] * B[..., None, :]
    return decay, drive


def _read_out(h, C, D, u) -> torch.Tensor:
    """y_t = h_t C_t + D ⊙ u_t for every position at once."""
    return torch.einsum("...tns,...ts->...tn", h, C) + D * u


def _recur_sequential(decay: torch.Tensor, drive: torch.Tensor) -> torch.Tensor:
    """Every h_t, one step after another from h_{−1} = 0."""
    h = torch.zeros_like(drive[..., 0, :, :])
    states = []
    for t in range(drive.shape[-3]):
        h = decay[..., t, :, :] * h + drive[..., t, :, :]
        states.append(h)
    return torch.stack(states, dim=-3)


def _recur_parallel(decay: torch.Tensor, drive: torch.Tensor) -> torch.Tensor:
    """Every h_t by Hillis–Steele doubling. After level k, position t holds the composition of
    the steps max(0, t − 2^(k+1) + 1) … t, with (a1, b1)∘(a2, b2) = (a1·a2, a2·b1 + b2) (the
    earlier step first); after ⌈log2 T⌉ levels that is every step from 0, and b is h_t."""
    a, b = decay, drive
    levels = scan_levels(drive.shape[-3])
    for level in range(levels):
        d = 1 << level
        # The first d positions already hold everything before them; every later one takes in
        # the pair d places back. New tensors, not writes in place: autograd needs the old ones.
        later = torch.addcmul(b[..., d:, :, :], a[..., d:, :, :], b[..., :-d, :, :])
        b = torch.cat((b[..., :d, :, :], later), dim=-3)
        if level + 1 < levels:  # the last level's products of decays would go unread
            a = torch.cat((a[..., :d, :, :], a[..., :-d, :, :] * a[..., d:, :, :]), dim=-3)
    return b


def _scan(u, delta, A, B, C, D, recur) -> tuple[torch.Tensor, torch.Tensor]:
    h = recur(*_discretize(u, delta, A, B))
    return _read_out(h, C, D, u), h


def selective_scan_sequential(u, delta, A, B, C, D) -> tuple[torch.Tensor, torch.Tensor]:
    """`(y [..., pos, d_inner], h [..., pos, d_inner, d_state])` by a loop over time.

    u, delta `[..., pos, d_inner]`, A `[d_inner, d_state]` (negative), B, C `[..., pos, d_state]`,
    D `[d_inner]`, all of one float dtype, which the scan computes in."""
    _check_scan_inputs(u, delta, A, B, C, D)
    return _scan(u, delta, A, B, C, D, _recur_sequential)


def selective_scan_parallel(u, delta, A, B, C, D) -> tuple[torch.Tensor, torch.Tensor]:
    """`selective_scan_sequential`'s numbers (up to rounding) by an associative scan of
    `scan_levels(pos)` levels, each one vectorised step over every position."""
    _check_scan_inputs(u, delta, A, B, C, D)
    return _scan(u, delta, A, B, C, D, _recur_parallel)


_RECUR = {"parallel": _recur_parallel, "sequential": _recur_sequential}


def _weight(value: torch.Tensor) -> nn.Parameter:
    return nn.Parameter(value.to(torch.float32))


def initial_steps(generator: torch.Generator, cfg: SSMConfig) -> torch.Tensor:
    """b_Δ `[d_inner]` as Mamba draws it: softplus(b_Δ) log-uniform in [dt_min, dt_max]."""
    low, high = math.log(cfg.dt_min), math.log(cfg.dt_max)
    dt = torch.exp(
        low + (high - low) * torch.rand(cfg.d_inner, generator=generator, dtype=torch.float64)
    )
    return dt + torch.log(-torch.expm1(-dt))  # softplus⁻¹(dt), without overflow for small dt


class SelectiveSSM(nn.Module):
    """One S6 layer `[..., pos, d_model] → [..., pos, d_model]` built from (config, seed);
    frozen unless `requires_grad`.

    Weights: W_in `[d_model, d_inner]`, W_Δ (`W_delta`) `[d_inner, d_inner]`, b_Δ (`b_delta`)
    `[d_inner]`, W_B, W_C `[d_inner, d_state]`, A_log `[d_inner, d_state]`, D `[d_inner]`, W_out
    `[d_inner, d_model]`; with `selective=False`, B_fixed and C_fixed `[d_state]` in place of
    W_Δ, W_B and W_C (the other weights are the same numbers for one seed either way)."""

    def __init__(self, cfg: SSMConfig, seed: int = 0, requires_grad: bool = False):
        super().__init__()
        self.cfg = cfg
        self.seed = seed
        generator = torch.Generator().manual_seed(seed)
        n_model, n_inner, n_state = cfg.d_model, cfg.d_inner, cfg.d_state

        def normal(*shape: int, fan_in: int) -> torch.Tensor:
            return torch.randn(*shape, generator=generator) / math.sqrt(fan_in)

        self.W_in = _weight(normal(n_model, n_inner, fan_in=n_model))
        # Mamba's dt_proj: uniform in ±1/√fan_in, its bias set by the step sizes drawn.
        bound = 1 / math.sqrt(n_inner)
        W_delta = (2 * torch.rand(n_inner, n_inner, generator=generator) - 1) * bound
        self.b_delta = _weight(initial_steps(generator, cfg))
        W_B = normal(n_inner, n_state, fan_in=n_inner)
        W_C = normal(n_inner, n_state, fan_in=n_inner)
        self.W_out = _weight(normal(n_inner, n_model, fan_in=n_inner))
        states = torch.arange(1, n_state + 1, dtype=torch.float64)
        self.A_log = _weight(torch.log(states).repeat(n_inner, 1))
        self.D = _weight(torch.ones(n_inner))
        if cfg.selective:
            self.W_delta, self.W_B, self.W_C = _weight(W_delta), _weight(W_B), _weight(W_C)
        else:
            # Drawn after the rest, so the weights both kinds share are the same numbers.
            self.B_fixed = _weight(torch.randn(n_state, generator=generator))
            self.C_fixed = _weight(torch.randn(n_state, generator=generator))
        self.requires_grad_(requires_grad)
        self.train(requires_grad)

    def state_matrix(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """A = −exp(A_log) `[d_inner, d_state]`, negative: every state decays."""
        return -torch.exp(self.A_log.to(dtype))

    def _check_input(self, X: torch.Tensor, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not isinstance(X, torch.Tensor) or not X.is_floating_point():
            raise ValueError("X must be a float tensor")
        if X.ndim not in (2, 3) or X.shape[-1] != self.cfg.d_model:
            raise ValueError(
                f"X must be [pos, {self.cfg.d_model}] or [batch, pos, {self.cfg.d_model}], "
                f"got {tuple(X.shape)}"
            )
        if not 1 <= X.shape[-2] <= MAX_POS:
            raise ValueError(f"pos must be in [1, {MAX_POS}], got {X.shape[-2]}")
        if not bool(torch.isfinite(X).all()):
            raise ValueError("X must be finite")

    def _selection(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(Δ, B, C) for every position: functions of u, or constants when not selective."""
        dtype, lead = u.dtype, u.shape[:-1]
        b_delta = self.b_delta.to(dtype)
        if self.cfg.selective:
            delta = F.softplus(u @ self.W_delta.to(dtype) + b_delta)
            return delta, u @ self.W_B.to(dtype), u @ self.W_C.to(dtype)
        n_state = self.cfg.d_state
        delta = F.softplus(b_delta).expand(u.shape)
        B = self.B_fixed.to(dtype).expand(*lead, n_state)
        return delta, B, self.C_fixed.to(dtype).expand(*lead, n_state)

    def trace_tensors(
        self, X: torch.Tensor, mode: str = "sequential", delta_scale: float = 1.0
    ) -> dict[str, torch.Tensor]:
        """The trace's tensors in X's dtype, differentiable in X (`run_with_cache`'s names).
        `delta_scale` multiplies every step size Δ_t after the selection, as an argument of
        this call: the shared layer is never changed to get another Δ."""
        self._check_input(X, mode)
        if not (math.isfinite(delta_scale) and delta_scale > 0):
            raise ValueError(f"delta_scale must be a positive number, got {delta_scale!r}")
        dtype = X.dtype
        u = X @ self.W_in.to(dtype)
        delta, B, C = self._selection(u)
        if delta_scale != 1.0:
            delta = delta * delta_scale
        A = self.state_matrix(dtype)
        decay, drive = _discretize(u, delta, A, B)
        h = _RECUR[mode](decay, drive)
        y = _read_out(h, C, self.D.to(dtype), u)
        return {
            "ssm_u": u,
            "ssm_delta": delta,
            "ssm_B": B,
            "ssm_C": C,
            "ssm_h": h,
            "ssm_y": y,
            "ssm_out": y @ self.W_out.to(dtype),
            "ssm_decay": decay.mean(dim=-1),
        }

    def forward(self, X: torch.Tensor, mode: str = "parallel") -> torch.Tensor:
        """`out [..., pos, d_model]` for `X [pos, d_model]` or `[batch, pos, d_model]`, in X's
        dtype, by the parallel scan or the loop over time."""
        return self.trace_tensors(X, mode)["ssm_out"]

    def run_with_cache(
        self, X: torch.Tensor, mode: str = "sequential", delta_scale: float = 1.0
    ) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
        """`out` and a fresh dict of float32 numpy arrays (no gradients): `ssm_u`, `ssm_delta`,
        `ssm_B`, `ssm_C`, `ssm_h`, `ssm_y`, `ssm_out`, `ssm_decay` (X's batch axis first, if
        any), every Δ multiplied by `delta_scale` (`trace_tensors`)."""
        with torch.no_grad():
            trace = self.trace_tensors(X, mode, delta_scale)
        return trace["ssm_out"], {
            name: value.to(torch.float32).numpy().copy() for name, value in trace.items()
        }
