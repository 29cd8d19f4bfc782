"""The tour of "Recurrence returns": its probes, fed offers made from tiny runs of the lesson's
models, against numbers computed here apart: the sizes of the tensors a run carries, loops
over a pattern's rows, the first k at which γ^k is below the level, torch autograd through
an RNN written out in this file."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from components.tours.probes import Choice, Live, Number, run_probe
from components.tours.probes import recurrence as rp
from models.nets.linear_attention import linear_attention_parallel, linear_attention_recurrent
from models.nets.retention import retention_parallel, retention_recurrent
from models.nets.selective_ssm import SelectiveSSM, SSMConfig, scan_levels

N_HEADS, D_HEAD, N_POS = 2, 4, 7
TOKENS = ("the", "cat", "sat", "on", "a", "warm", "mat")


def _qkv(n_pos: int = N_POS, seed: int = 0) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(seed)
    return tuple(
        torch.randn(N_HEADS, n_pos, D_HEAD, generator=generator, dtype=torch.float64)
        for _ in range(3)
    )


# --- the same output, two ways ------------------------------------------------------------


def test_the_differences_quoted_are_the_largest_gaps_between_the_two_forms():
    q, k, v = _qkv()
    gammas = torch.tensor([0.9, 0.5], dtype=torch.float64)
    _, la_parallel = linear_attention_parallel(q, k, v)
    la_recurrent, _, _ = linear_attention_recurrent(q, k, v)
    _, ret_parallel = retention_parallel(q, k, v, gammas)
    ret_recurrent, _ = retention_recurrent(q, k, v, gammas)
    gaps = {
        "la": (la_parallel - la_recurrent).abs().max().item(),
        "ret": (ret_parallel - ret_recurrent).abs().max().item(),
    }
    live = Live({rp.TWO_WAYS: {"n": N_POS, "differences": gaps, "chunk": 4}})
    # A loop over every head, token and dimension finds the same largest gap.
    by_hand = max(
        abs(float(ret_parallel[h, t, d] - ret_recurrent[h, t, d]))
        for h in range(N_HEADS)
        for t in range(N_POS)
        for d in range(D_HEAD)
    )
    assert run_probe("recurrence.difference", live, {"form": "ret"}) == by_hand
    assert run_probe("recurrence.difference", live, {"form": "la"}) < 1e-12
    assert run_probe("recurrence.n_tokens", live) == N_POS
    assert run_probe("recurrence.chunk", live) == 4


def _state_offer(n: int, lengths: list[int]) -> dict:
    """The floats each model carries against the lengths, counted from the tensors a run of
    each length carries after its last token (the KV cache: all its keys and values)."""
    floats: dict[str, list[int]] = {m: [] for m in ("linear_attention", "retention", "kv_cache")}
    gammas = torch.tensor([0.9, 0.5], dtype=torch.float64)
    for length in lengths:
        q, k, v = _qkv(length)
        _, S, z_norm = linear_attention_recurrent(q, k, v)
        _, R = retention_recurrent(q, k, v, gammas)
        floats["linear_attention"].append(S[-1].numel() + z_norm[-1].numel())
        floats["retention"].append(R[-1].numel())
        floats["kv_cache"].append(k.numel() + v.numel())
    arrays = {model: np.array(values) for model, values in floats.items()}
    return {"n": n, "lengths": np.array(lengths), "floats": arrays}


def test_the_kv_cache_outgrows_the_state_by_two_l_over_d_head():
    lengths = [1, 2, 5, 8, 64]
    live = Live({rp.STATE: _state_offer(5, lengths)})
    answer = run_probe("recurrence.kv_over_state", live, {"model": "retention", "at": "longest"})
    assert isinstance(answer, Number)
    # KV cache 2 · L · n_heads · d_head against retention's n_heads · d_head²: 2L / d_head.
    assert answer.value == pytest.approx(2 * 64 / D_HEAD)
    assert answer.accepts(2 * 64 / D_HEAD) and not answer.accepts(64 / D_HEAD)
    at_sentence = run_probe("recurrence.kv_over_state", live, {"at": "sentence"})
    assert at_sentence.value == pytest.approx(2 * 5 / D_HEAD)
    assert run_probe("recurrence.length", live, {"at": "longest"}) == 64
    assert run_probe("recurrence.length", live, {"at": "sentence"}) == 5
    assert run_probe("recurrence.state_floats", live, {"model": "kv_cache", "at": 8}) == (
        2 * 8 * N_HEADS * D_HEAD
    )
    # The state does not grow: the same floats at every length.
    for at in lengths:
        assert run_probe("recurrence.state_floats", live, {"model": "retention", "at": at}) == (
            N_HEADS * D_HEAD**2
        )
        assert run_probe(
            "recurrence.state_floats", live, {"model": "linear_attention", "at": at}
        ) == N_HEADS * (D_HEAD**2 + D_HEAD)
    with pytest.raises(ValueError, match="no length 3"):
        run_probe("recurrence.state_floats", live, {"at": 3})


def test_training_steps_and_token_times_are_read_at_the_lengths_drawn():
    lengths = np.array([1, 2, 4, 13, 4096])
    steps = {
        "recurrent": lengths,
        "parallel": np.ones_like(lengths),
        "scan": np.array([scan_levels(int(n)) for n in lengths]),
        "chunkwise": np.array([math.ceil(n / 4) for n in lengths]),
    }
    times = {
        13: {"linear_attention_step_s": 1e-5},
        512: {"linear_attention_step_s": 2.5e-5, "linear_attention_parallel_s": 4e-4},
    }
    live = Live(
        {
            rp.STEPS: {"n": 13, "lengths": lengths, "steps": steps},
            rp.TWO_WAYS: {"times": times},
        }
    )
    assert run_probe("recurrence.steps_in_a_row", live, {"form": "recurrent"}) == 13
    assert run_probe("recurrence.steps_in_a_row", live, {"form": "scan"}) == 4  # 2^4 ≥ 13
    assert run_probe("recurrence.steps_in_a_row", live, {"form": "chunkwise"}) == 4
    assert run_probe("recurrence.steps_in_a_row", live, {"form": "scan", "at": "longest"}) == 12
    assert run_probe("recurrence.timed_length", live) == 512
    assert run_probe("recurrence.token_time", live) == pytest.approx(25.0)
    assert run_probe("recurrence.token_time", live, {"form": "parallel"}) == pytest.approx(400.0)


# --- attention without softmax ----------------------------------------------------------------


def _patterns_offer(gamma: float, head: int = 1) -> dict:
    q, k, v = _qkv()
    linear, _ = linear_attention_parallel(q, k, v)
    gammas = torch.full((N_HEADS,), gamma, dtype=torch.float64)
    retention, _ = retention_parallel(q, k, v, gammas)
    return {
        "head": head,
        "gamma": gamma,
        "tokens": TOKENS,
        "linear": linear[head].numpy(),
        "retention": retention[head].numpy(),
    }


def test_retention_rows_do_not_sum_to_one_and_linear_attention_rows_do():
    offer = _patterns_offer(0.96875)
    live = Live({rp.PATTERNS: offer})
    sums = [sum(offer["retention"][i, j] for j in range(i + 1)) for i in range(N_POS)]
    assert run_probe("recurrence.sums_to_one", live, {"pattern": "retention"}) == Choice(rp.NO)
    assert run_probe("recurrence.sums_to_one", live, {"pattern": "linear"}) == Choice(rp.YES)
    assert run_probe("recurrence.row_sum", live, {"which": "low"}) == pytest.approx(min(sums))
    assert run_probe("recurrence.row_sum", live, {"which": "high"}) == pytest.approx(max(sums))
    seen = [offer["retention"][i, j] for i in range(N_POS) for j in range(i + 1)]
    negative = sum(w < 0 for w in seen) / len(seen)
    assert 0 < negative < 1
    assert run_probe("recurrence.negative_share", live) == pytest.approx(negative)
    assert run_probe("recurrence.negative_share", live, {"pattern": "linear"}) == 0.0
    assert run_probe("recurrence.head", live) == "H1"


def test_a_pattern_whose_rows_all_sum_to_one_is_answered_yes():
    rows = np.tril(np.ones((5, 5))) / np.arange(1, 6)[:, None]
    live = Live({rp.PATTERNS: {"retention": rows}})
    assert run_probe("recurrence.sums_to_one", live) == Choice(rp.YES)
    rows[3, 0] += 0.01
    assert run_probe("recurrence.sums_to_one", live) == Choice(rp.NO)


@pytest.mark.parametrize("gamma", [0.5, 0.625, 0.9, 0.96875])
def test_the_reach_is_where_gamma_to_the_k_falls_below_the_level(gamma):
    live = Live({rp.PATTERNS: {"gamma": gamma}})
    reach = run_probe("recurrence.reach", live, {"level": 0.01})
    first_below = next(k for k in range(1, 10_000) if gamma**k < 0.01)
    assert first_below - 1 < reach <= first_below
    assert run_probe("recurrence.gamma", live) == gamma


def test_nothing_decays_at_gamma_one():
    assert math.isinf(run_probe("recurrence.reach", Live({rp.PATTERNS: {"gamma": 1.0}})))


def test_the_decay_task_is_done_only_when_ten_tokens_back_keep_under_one_percent():
    bar = 0.01**0.1  # γ^10 = 0.01
    for gamma, done in ((0.5, True), (bar - 1e-4, True), (bar + 1e-4, False), (0.96875, False)):
        live = Live({rp.PATTERNS: {"gamma": gamma}})
        assert run_probe("recurrence.decays_within", live, {"k": 10, "level": 0.01}) is done
        # The same verdict from retention itself: with q = k = 1, the weight of a key 10
        # tokens back is the decay alone.
        ones = torch.ones(1, 11, 1, dtype=torch.float64)
        decay = torch.tensor([gamma], dtype=torch.float64)
        pattern, _ = retention_parallel(ones, ones, ones, decay)
        assert (float(pattern[0, 10, 0]) < 0.01) is done, gamma


# --- the selective state ---------------------------------------------------------------------


def _selective_offer(seed: int = 1) -> tuple[dict, np.ndarray]:
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(N_POS, 8, generator=generator)
    kept = {}
    for name, selective in (("selective", True), ("lti", False)):
        layer = SelectiveSSM(SSMConfig(d_model=8, d_inner=6, d_state=3, selective=selective))
        _, trace = layer.run_with_cache(X, mode="sequential")
        kept[name] = {"kept": trace["ssm_decay"], "delta": trace["ssm_delta"]}
    A = SelectiveSSM(SSMConfig(d_model=8, d_inner=6, d_state=3)).state_matrix(torch.float64)
    return {"scale": 1.0, "tokens": TOKENS, **kept}, A.numpy()


def test_the_kept_fraction_is_exp_delta_a_and_moves_only_with_selection():
    offer, A = _selective_offer()
    live = Live({rp.SELECTIVE: offer})
    delta = offer["selective"]["delta"].astype(np.float64)
    # exp(Δ_t A) averaged over the state, token by token and channel by channel.
    by_hand = np.array(
        [[np.mean(np.exp(delta[t, c] * A[c])) for c in range(A.shape[0])] for t in range(N_POS)]
    )
    np.testing.assert_allclose(offer["selective"]["kept"], by_hand, rtol=1e-5)
    means = by_hand.mean(axis=1)
    assert run_probe("recurrence.kept_mean", live) == pytest.approx(by_hand.mean(), rel=1e-5)
    assert run_probe("recurrence.kept_spread", live) == pytest.approx(np.ptp(means), rel=1e-4)
    assert run_probe("recurrence.kept_spread", live) > 0
    assert run_probe("recurrence.kept_spread", live, {"layer": "lti"}) == 0.0
    least = min(range(N_POS), key=lambda t: means[t])
    assert run_probe("recurrence.kept_extreme", live) == TOKENS[least]
    assert run_probe("recurrence.kept_at_extreme", live) == pytest.approx(means[least], rel=1e-5)
    most = max(range(N_POS), key=lambda t: means[t])
    assert run_probe("recurrence.kept_extreme", live, {"which": "most"}) == TOKENS[most]
    assert run_probe("recurrence.delta_scale", live) == 1.0


# --- gradient flow through time ----------------------------------------------------------------


def _rnn_grad_X(r: float, X: torch.Tensor) -> np.ndarray:
    """‖∂L/∂X_t‖ of a linear RNN H_t = X_t + r Q H_{t−1} (Q orthogonal), L = u · H_τ, by
    torch autograd, against k = τ − t: r^k exactly."""
    n = X.shape[1]
    generator = torch.Generator().manual_seed(7)
    Q, _ = torch.linalg.qr(torch.randn(n, n, generator=generator, dtype=torch.float64))
    X = X.clone().requires_grad_(True)
    h = torch.zeros(n, dtype=torch.float64)
    for x in X:
        h = x + r * Q @ h
    (torch.ones(n, dtype=torch.float64) / math.sqrt(n) @ h).backward()
    return X.grad.norm(dim=1).numpy()[::-1]


def _mean_grad_X(X: torch.Tensor) -> np.ndarray:
    """‖∂L/∂X_t‖ of a layer whose last output is the mean of all inputs: 1/T for every t."""
    X = X.clone().requires_grad_(True)
    (torch.ones(X.shape[1], dtype=torch.float64) @ X.mean(dim=0)).backward()
    return X.grad.norm(dim=1).numpy()[::-1]


def test_the_weakest_gradient_is_the_smallest_ratio_of_first_token_to_loss_token():
    X = torch.randn(9, 4, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    norms = {"RNN": _rnn_grad_X(0.5, X), "GRU": _rnn_grad_X(0.9, X), "mean": _mean_grad_X(X)}
    names = {"RNN": "RNN", "GRU": "GRU", "mean": "Averaging layer"}
    live = Live({rp.FLOW: {"tau": 8, "norms": norms, "names": names, "kept": [0.25, 1.0]}})
    assert run_probe("recurrence.reaching", live, {"model": "RNN"}) == pytest.approx(0.5**8)
    assert run_probe("recurrence.reaching", live, {"model": "GRU"}) == pytest.approx(0.9**8)
    assert run_probe("recurrence.reaching", live, {"model": "mean"}) == pytest.approx(1.0)
    answer = run_probe("recurrence.weakest", live)
    assert answer == Choice(right=0, options=("RNN", "GRU", "Averaging layer"))
    assert run_probe("recurrence.flow_tau", live) == 8
    assert run_probe("recurrence.ssm_kept_first", live) == 0.25
    # A line with no gradient at the loss token has no ratio: it is passed over.
    norms["dead"] = np.zeros(9)
    names["dead"] = "dead"
    norms["RNN"] = _rnn_grad_X(0.95, X)
    assert run_probe("recurrence.weakest", live).right == list(norms).index("GRU")
