"""What linear attention, retention and a selective state space cost, beside softmax
attention's KV cache: the state each carries from token to token, its time per token on
this server, and the steps training must run one after another.

A recurrence carries a state of fixed size (linear attention: S = Σ φ(k)ᵀ v and the
normaliser n = Σ φ(k) per head; retention: S per head; the SSM: h per channel and state
dimension), where softmax attention keeps every key and value it has seen (its KV cache,
2 · L · n_heads · d_head floats a layer). Generating one more token costs a recurrence one
update of that state, where the parallel form recomputes the whole prefix. Training reads
the whole sequence at once: the parallel form is one batch of matrix products, an
associative scan ⌈log2 T⌉ levels (Blelloch 1990; Mamba, Gu & Dao 2023), the chunkwise form
one step per chunk (RetNet, Sun et al. 2023), the plain recurrence T steps.

The step functions below are the recurrences of models/nets, one token at a time, with the
state passed in and returned: what a generating model runs per token
(tests/unit/test_recurrence_cost.py holds them to the models' own recurrent forms).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

from models.nets.linear_attention import feature_map, linear_attention_parallel
from models.nets.retention import default_gammas, retention_parallel
from models.nets.selective_ssm import SSMConfig, selective_scan_parallel
from models.serving.timing import THREADS, single_thread

LENGTHS = tuple(2**i for i in range(13))  # 1 … 4096
LONG_LENGTH = 512
REPEATS = 21
MODELS = ("linear_attention", "retention", "ssm")


def lengths_with(n: int) -> np.ndarray:
    """LENGTHS with `n` among them (a chart's line then passes through the visitor's L)."""
    return np.array(sorted({*LENGTHS, int(n)}), dtype=np.int64)


# --- the state carried between tokens -------------------------------------------------------


def state_floats(
    lengths: Sequence[int], n_heads: int, d_head: int, d_inner: int, d_state: int
) -> dict[str, np.ndarray]:
    """Floats one layer carries from a token to the next, per length L (int64)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    constant = np.ones_like(lengths)
    return {
        "linear_attention": n_heads * (d_head**2 + d_head) * constant,
        "retention": n_heads * d_head**2 * constant,
        "ssm": d_inner * d_state * constant,
        "kv_cache": 2 * lengths * n_heads * d_head,
    }


def measured_state_floats(
    la_state: torch.Tensor,
    la_norm: torch.Tensor,
    retention_state: torch.Tensor,
    ssm_state: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
) -> dict[str, int]:
    """The floats of the actual tensors a run carries after its last token: every step's
    states `[pos, …]` in, the last step's sizes out; the KV cache is all the keys and
    values `[head, pos, d_head]`."""
    return {
        "linear_attention": la_state[-1].numel() + la_norm[-1].numel(),
        "retention": retention_state[-1].numel(),
        "ssm": ssm_state[-1].numel(),
        "kv_cache": keys.numel() + values.numel(),
    }


# --- the steps training runs one after another ----------------------------------------------


def sequential_steps(lengths: Sequence[int], chunk: int) -> dict[str, np.ndarray]:
    """Per length T: the recurrence's T steps, the parallel form's 1, the associative
    scan's ⌈log2 T⌉ levels and the chunkwise form's ⌈T / chunk⌉ chunks (int64)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return {
        "recurrent": lengths.copy(),
        "parallel": np.ones_like(lengths),
        "scan": np.array([(int(n) - 1).bit_length() for n in lengths], dtype=np.int64),
        "chunkwise": -(-lengths // int(chunk)),
    }


def decay_reach(gamma: float, level: float = 0.01) -> float:
    """How many tokens back a decay γ keeps a weight above `level`: γ^k = level at
    k = log(level) / log(γ); infinite for γ ≥ 1 (no decay)."""
    if gamma >= 1.0:
        return math.inf
    return math.log(level) / math.log(gamma)


# --- one token at a time ---------------------------------------------------------------------


def linear_attention_step(S, n, q_t, k_t, v_t):
    """Token t of linear attention from the state of tokens < t: (z_t, S_t, n_t), with
    S_t = S + φ(k_t)ᵀ v_t `[head, d_head, d_head]`, n_t = n + φ(k_t) `[head, d_head]`,
    z_t = φ(q_t) S_t / (φ(q_t) · n_t)."""
    phi_q, phi_k = feature_map(q_t), feature_map(k_t)
    S = S + phi_k[:, :, None] * v_t[:, None, :]
    n = n + phi_k
    z = torch.einsum("hd,hde->he", phi_q, S) / (phi_q * n).sum(-1, keepdim=True)
    return z, S, n


def retention_step(S, q_t, k_t, v_t, gammas):
    """Token t of retention: S_t = γ S + k_tᵀ v_t per head, z_t = q_t S_t: (z_t, S_t)."""
    S = gammas[:, None, None] * S + k_t[:, :, None] * v_t[:, None, :]
    return torch.einsum("hd,hde->he", q_t, S), S


def ssm_step(h, u_t, delta_t, A, B_t, C_t, D):
    """Token t of the selective scan: h_t = exp(Δ_t A) ⊙ h + (Δ_t u_t) B_t,
    y_t = h_t C_t + D ⊙ u_t: (y_t, h_t), h `[d_inner, d_state]`."""
    h = torch.exp(delta_t[:, None] * A) * h + (delta_t * u_t)[:, None] * B_t[None, :]
    return h @ C_t + D * u_t, h


# --- timing -----------------------------------------------------------------------------------


def median_seconds(
    calls: Sequence[Callable[[], object]],
    repeats: int = REPEATS,
    clock: Callable[[], float] = time.perf_counter,
) -> np.ndarray:
    """The median time in seconds of each call over `repeats` runs after one to warm up.

    A call's runs come back to back, as a model generating text runs its step token after
    token: run between the parallel form's large products, a small step found its data
    pushed out of the processor's caches and took several times as long (185 µs instead
    of 29 at 512 tokens). The median passes over the runs a burst of other work spoils."""
    times = np.empty((repeats, len(calls)))
    with single_thread():
        for i, call in enumerate(calls):
            call()
            for r in range(repeats):
                start = clock()
                call()
                times[r, i] = clock() - start
    return np.median(times, axis=0)


def timing_inputs(
    length: int, n_heads: int, d_head: int, ssm: SSMConfig, seed: int = 0
) -> dict[str, torch.Tensor]:
    """Random float32 inputs of the lesson's sizes for `length` tokens: the time of these
    forms depends on the sizes, not on the numbers."""
    g = torch.Generator().manual_seed(seed)

    def normal(*shape):
        return torch.randn(*shape, generator=g)

    width = math.log(ssm.dt_max) - math.log(ssm.dt_min)
    log_dt = math.log(ssm.dt_min) + width * torch.rand(length, ssm.d_inner, generator=g)
    return dict(
        q=normal(n_heads, length, d_head) / math.sqrt(d_head),
        k=normal(n_heads, length, d_head) / math.sqrt(d_head),
        v=normal(n_heads, length, d_head),
        gammas=default_gammas(n_heads).to(torch.float32),
        u=normal(length, ssm.d_inner),
        delta=torch.exp(log_dt),
        A=-torch.arange(1, ssm.d_state + 1, dtype=torch.float32).repeat(ssm.d_inner, 1),
        B=normal(length, ssm.d_state),
        C=normal(length, ssm.d_state),
        D=torch.ones(ssm.d_inner),
    )


def _carried_states(x: dict[str, torch.Tensor], upto: int) -> dict[str, torch.Tensor]:
    """Every model's state after the tokens before `upto`, built by their steps."""
    n_heads, _, d_head = x["q"].shape
    S_la = torch.zeros(n_heads, d_head, d_head)
    n_la = torch.zeros(n_heads, d_head)
    S_ret = torch.zeros(n_heads, d_head, d_head)
    h = torch.zeros_like(x["A"])
    for i in range(upto):
        q_i, k_i, v_i = x["q"][:, i], x["k"][:, i], x["v"][:, i]
        _, S_la, n_la = linear_attention_step(S_la, n_la, q_i, k_i, v_i)
        _, S_ret = retention_step(S_ret, q_i, k_i, v_i, x["gammas"])
        _, h = ssm_step(h, x["u"][i], x["delta"][i], x["A"], x["B"][i], x["C"][i], x["D"])
    return dict(S_la=S_la, n_la=n_la, S_ret=S_ret, h=h)


def per_token_calls(x: dict[str, torch.Tensor]) -> dict[str, Callable[[], object]]:
    """For each model, the work of the last token of `x`: one step from the carried state
    (`<model>_step`), or the parallel form recomputed over the whole prefix
    (`<model>_parallel`). The SSM's input projections, the same work per token either way,
    are left out: what is timed is the sequence mixing."""
    last = x["q"].shape[1] - 1
    state = _carried_states(x, last)
    q, k, v = x["q"], x["k"], x["v"]
    q_t, k_t, v_t = q[:, last], k[:, last], v[:, last]
    ssm_args = (x["u"], x["delta"], x["A"], x["B"], x["C"], x["D"])
    return {
        "linear_attention_step": lambda: linear_attention_step(
            state["S_la"], state["n_la"], q_t, k_t, v_t
        ),
        "linear_attention_parallel": lambda: linear_attention_parallel(q, k, v),
        "retention_step": lambda: retention_step(state["S_ret"], q_t, k_t, v_t, x["gammas"]),
        "retention_parallel": lambda: retention_parallel(q, k, v, x["gammas"]),
        "ssm_step": lambda: ssm_step(
            state["h"],
            x["u"][last],
            x["delta"][last],
            x["A"],
            x["B"][last],
            x["C"][last],
            x["D"],
        ),
        "ssm_parallel": lambda: selective_scan_parallel(*ssm_args),
    }


def per_token_times(
    length: int,
    n_heads: int = 4,
    d_head: int = 16,
    ssm: SSMConfig | None = None,
    repeats: int = REPEATS,
    seed: int = 0,
) -> dict[str, float]:
    """The median seconds of each `per_token_calls` entry at `length` tokens (`<name>_s`),
    with `length`, `repeats` and the torch threads timed with."""
    x = timing_inputs(length, n_heads, d_head, ssm or SSMConfig(), seed)
    with torch.no_grad():
        calls = per_token_calls(x)
        seconds = median_seconds(list(calls.values()), repeats)
    times = {f"{name}_s": float(s) for name, s in zip(calls, seconds, strict=True)}
    return times | dict(length=length, repeats=repeats, threads=THREADS)
