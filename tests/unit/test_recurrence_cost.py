"""What the recurrences cost (models/analysis/recurrence_cost.py): state sizes against the
tensors the models really carry, step counts against closed forms and the scan's own level
count, the one-token steps against the models' recurrent and parallel forms, the timer
against a scripted clock."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from models.analysis import recurrence_cost as rc
from models.nets.linear_attention import (
    linear_attention_parallel,
    linear_attention_recurrent,
    state_numbers,
)
from models.nets.retention import default_gammas, retention_parallel, retention_recurrent
from models.nets.selective_ssm import (
    SSMConfig,
    scan_levels,
    selective_scan_parallel,
    selective_scan_sequential,
)

N_HEADS, D_HEAD = 4, 16


def _qkv(n_pos: int, dtype=torch.float64, seed: int = 3):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(N_HEADS, n_pos, D_HEAD, generator=g, dtype=dtype) for _ in range(3)]


def _ssm_inputs(n_pos: int, cfg: SSMConfig, dtype=torch.float64):
    x = rc.timing_inputs(n_pos, N_HEADS, D_HEAD, cfg, seed=5)
    return [x[name].to(dtype) for name in ("u", "delta", "A", "B", "C", "D")]


def test_state_sizes_follow_their_formulas_and_only_the_kv_cache_grows():
    lengths = [1, 7, 4096]
    floats = rc.state_floats(lengths, N_HEADS, D_HEAD, d_inner=64, d_state=16)
    assert list(floats["linear_attention"]) == [4 * (16 * 16 + 16)] * 3 == [1088] * 3
    assert list(floats["linear_attention"]) == [state_numbers(D_HEAD, N_HEADS)] * 3
    assert list(floats["retention"]) == [1024] * 3
    assert list(floats["ssm"]) == [64 * 16] * 3
    assert list(floats["kv_cache"]) == [2 * n * 4 * 16 for n in lengths]


@pytest.mark.parametrize("n_pos", [1, 9])
def test_the_state_tensors_a_run_carries_are_as_large_as_the_formulas_say(n_pos):
    q, k, v = _qkv(n_pos)
    cfg = SSMConfig()
    _, la_state, la_norm = linear_attention_recurrent(q, k, v)
    _, ret_state = retention_recurrent(q, k, v, default_gammas(N_HEADS))
    _, h = selective_scan_sequential(*_ssm_inputs(n_pos, cfg))
    measured = rc.measured_state_floats(la_state, la_norm, ret_state, h, k, v)
    expected = rc.state_floats([n_pos], N_HEADS, D_HEAD, cfg.d_inner, cfg.d_state)
    assert measured == {name: int(values[0]) for name, values in expected.items()}


def test_sequential_steps_are_t_one_the_scan_levels_and_the_chunks():
    lengths = [1, 2, 3, 4, 5, 17, 40, 512, 4096]
    steps = rc.sequential_steps(lengths, chunk=4)
    assert list(steps["recurrent"]) == lengths
    assert list(steps["parallel"]) == [1] * len(lengths)
    assert list(steps["scan"]) == [math.ceil(math.log2(n)) for n in lengths]
    assert list(steps["scan"]) == [scan_levels(n) for n in lengths]
    assert list(steps["chunkwise"]) == [math.ceil(n / 4) for n in lengths]
    assert list(rc.sequential_steps([40], chunk=16)["chunkwise"]) == [3]


def test_lengths_run_from_1_to_4096_and_take_the_visitors_in_order():
    assert list(rc.lengths_with(16)) == [2**i for i in range(13)]
    with_20 = list(rc.lengths_with(20))
    assert 20 in with_20 and with_20 == sorted(set(with_20)) and len(with_20) == 14


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.96875, 0.99609375])
def test_decay_reach_is_where_gamma_to_the_k_crosses_one_percent(gamma):
    k = rc.decay_reach(gamma)
    assert gamma ** math.ceil(k) < 0.01 <= gamma ** math.floor(k)
    first_below = next(n for n in range(1, 10_000) if gamma**n < 0.01)
    assert first_below == math.ceil(k)


def test_no_decay_reaches_forever():
    assert rc.decay_reach(1.0) == math.inf


def test_linear_attention_steps_give_the_recurrent_and_parallel_outputs():
    q, k, v = _qkv(11)
    S = torch.zeros(N_HEADS, D_HEAD, D_HEAD, dtype=q.dtype)
    n = torch.zeros(N_HEADS, D_HEAD, dtype=q.dtype)
    steps = []
    for i in range(q.shape[1]):
        z, S, n = rc.linear_attention_step(S, n, q[:, i], k[:, i], v[:, i])
        steps.append(z)
    recurrent, states, norms = linear_attention_recurrent(q, k, v)
    _, parallel = linear_attention_parallel(q, k, v)
    torch.testing.assert_close(torch.stack(steps, 1), recurrent, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(torch.stack(steps, 1), parallel, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(S, states[-1], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(n, norms[-1], rtol=1e-12, atol=1e-12)


def test_retention_steps_give_the_recurrent_and_parallel_outputs():
    q, k, v = _qkv(13)
    gammas = default_gammas(N_HEADS).to(q.dtype)
    S = torch.zeros(N_HEADS, D_HEAD, D_HEAD, dtype=q.dtype)
    steps = []
    for i in range(q.shape[1]):
        z, S = rc.retention_step(S, q[:, i], k[:, i], v[:, i], gammas)
        steps.append(z)
    recurrent, _ = retention_recurrent(q, k, v, gammas)
    _, parallel = retention_parallel(q, k, v, gammas)
    torch.testing.assert_close(torch.stack(steps, 1), recurrent, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(torch.stack(steps, 1), parallel, rtol=1e-10, atol=1e-10)


def test_ssm_steps_give_the_sequential_and_parallel_scans():
    cfg = SSMConfig()
    u, delta, A, B, C, D = _ssm_inputs(10, cfg)
    h = torch.zeros(cfg.d_inner, cfg.d_state, dtype=u.dtype)
    steps = []
    for i in range(u.shape[0]):
        y, h = rc.ssm_step(h, u[i], delta[i], A, B[i], C[i], D)
        steps.append(y)
    sequential, states = selective_scan_sequential(u, delta, A, B, C, D)
    parallel, _ = selective_scan_parallel(u, delta, A, B, C, D)
    torch.testing.assert_close(torch.stack(steps), sequential, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(torch.stack(steps), parallel, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(h, states[-1], rtol=1e-12, atol=1e-12)


def test_the_timed_work_is_the_last_tokens_output_both_ways():
    """A step from the carried state and the parallel form over the prefix give the same
    last output: what is timed is real work, not an empty call."""
    x = rc.timing_inputs(6, N_HEADS, D_HEAD, SSMConfig())
    with torch.no_grad():
        out = {name: call() for name, call in rc.per_token_calls(x).items()}
    torch.testing.assert_close(
        out["linear_attention_step"][0], out["linear_attention_parallel"][1][:, -1]
    )
    torch.testing.assert_close(
        out["retention_step"][0], out["retention_parallel"][1][:, -1], rtol=1e-4, atol=1e-4
    )
    torch.testing.assert_close(out["ssm_step"][0], out["ssm_parallel"][0][-1])


def test_timing_inputs_have_the_lessons_shapes_and_mambas_step_sizes():
    cfg = SSMConfig()
    x = rc.timing_inputs(5, N_HEADS, D_HEAD, cfg)
    assert x["q"].shape == x["k"].shape == x["v"].shape == (N_HEADS, 5, D_HEAD)
    assert x["u"].shape == x["delta"].shape == (5, cfg.d_inner)
    assert x["B"].shape == x["C"].shape == (5, cfg.d_state)
    assert x["A"].shape == (cfg.d_inner, cfg.d_state) and bool((x["A"] < 0).all())
    assert cfg.dt_min <= float(x["delta"].min()) and float(x["delta"].max()) <= cfg.dt_max
    np.testing.assert_allclose(x["gammas"].numpy(), 1 - 2.0 ** (-5 - np.arange(N_HEADS)))


def test_median_seconds_is_the_median_of_each_calls_runs():
    """With a scripted clock: call 0 takes 1, 5, 2 s, call 1 takes 3, 3, 9 s (each after a
    warm-up run that is not counted)."""
    clock = [0.0]
    durations = {0: iter([100.0, 1.0, 5.0, 2.0]), 1: iter([100.0, 3.0, 3.0, 9.0])}

    def call(i):
        clock[0] += next(durations[i])

    calls = [lambda: call(0), lambda: call(1)]
    medians = rc.median_seconds(calls, repeats=3, clock=lambda: clock[0])
    assert list(medians) == [2.0, 3.0]


def test_per_token_times_names_every_form_with_a_positive_time(one_torch_thread):
    times = rc.per_token_times(4, N_HEADS, D_HEAD, SSMConfig(), repeats=3)
    forms = {f"{model}_{form}_s" for model in rc.MODELS for form in ("step", "parallel")}
    assert forms <= times.keys()
    assert all(0 < times[name] < 10 for name in forms)
    assert (times["length"], times["repeats"]) == (4, 3)
