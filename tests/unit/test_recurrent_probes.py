"""The recurrent tour's probes, fed the lines a part offers, against numbers computed here
apart: torch autograd through a tiny RNN written out in this file, the closed form r^k of a
linear orthogonal RNN, and torch's own clip_grad_norm_."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components.tours.probes import Choice, Live, Number, run_probe
from components.tours.probes import recurrent as rp


def _orthogonal(n: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(n, n, generator=generator, dtype=torch.float64))
    return q


def _bptt_norms(W: torch.Tensor, X: torch.Tensor, activation) -> tuple[np.ndarray, np.ndarray]:
    """‖∂L/∂H_t‖ and ‖∂L/∂X_t‖ for every t of H_t = act(X_t + W H_{t−1}), L = u · H_τ at the
    last step, by torch autograd; as the lesson's charts draw them, indexed by k = τ − t."""
    n = W.shape[0]
    X = X.clone().requires_grad_(True)
    u = torch.ones(n, dtype=torch.float64) / np.sqrt(n)
    h = torch.zeros(n, dtype=torch.float64)
    states = []
    for x in X:
        h = activation(x + W @ h)
        h.retain_grad()
        states.append(h)
    (u @ states[-1]).backward()
    grad_H = np.array([float(s.grad.norm()) for s in states])
    grad_X = X.grad.norm(dim=1).numpy()
    return grad_H[::-1], grad_X[::-1]


def _linear(x):
    return x


def _theory_live(W, X, activation, control_r: float, r: float) -> Live:
    network, _ = _bptt_norms(W, X, activation)
    k = np.arange(len(network))
    return Live(
        {
            "recurrent.theory": {
                "k": k,
                "r": r,
                "control_r": control_r,
                "trained": False,
                "formula": r**k,
                "measured": None,
                "network": network,
            }
        }
    )


def test_the_linear_rnn_keeps_r_to_the_k_and_the_number_question_accepts_it():
    r, n, steps = 0.9, 6, 15
    W = r * _orthogonal(n, seed=1)
    measured, _ = _bptt_norms(W, torch.zeros(steps, n, dtype=torch.float64), _linear)
    live = Live({"recurrent.theory": {"k": np.arange(steps), "measured": measured}})
    answer = run_probe("recurrent.linear_after", live, {"k": 10})
    assert isinstance(answer, Number)
    assert answer.value == pytest.approx(r**10, rel=1e-9)
    assert answer.accepts(0.9**10) and not answer.accepts(0.9**5) and not answer.accepts(0.9)
    # A sentence shorter than k: the farthest step it has, and k quoted as that distance.
    short = Live({"recurrent.theory": {"k": np.arange(4), "measured": measured[:4]}})
    assert run_probe("recurrent.linear_after", short, {"k": 10}).value == pytest.approx(r**3)
    assert run_probe("recurrent.k", short, {"k": 10}) == 3


def test_the_theory_line_quotes_follow_the_lines_they_are_read_from():
    r = 1.25
    W = r * _orthogonal(5, seed=2)
    live = _theory_live(W, torch.zeros(12, 5, dtype=torch.float64), _linear, r, r)
    assert run_probe("recurrent.theory_after", live, {"k": 7}) == pytest.approx(r**7)
    assert run_probe("recurrent.network_after", live, {"k": 7}) == pytest.approx(r**7)
    assert run_probe("recurrent.r", live) == r
    assert rp.growth_per_step(r ** np.arange(12.0)) == pytest.approx(r)


def test_the_task_is_done_only_with_r_above_the_bar_and_a_line_that_grows():
    n, steps = 6, 14
    Q = _orthogonal(n, seed=3)
    zeros = torch.zeros(steps, n, dtype=torch.float64)
    # Done: r = 1.2 on the linear orthogonal RNN, whose gradient grows 1.2× a step back.
    assert run_probe("recurrent.grows", _theory_live(1.2 * Q, zeros, _linear, 1.2, 1.2))
    # Not done: the control left where the step set it (r = 1: the line stays flat).
    assert not run_probe("recurrent.grows", _theory_live(Q, zeros, _linear, 1.0, 1.0))
    # Not done: r raised to 1.5, but on a tanh RNN that its inputs saturate, where every
    # step's slope is near 0 and the gradient vanishes however large r is.
    generator = torch.Generator().manual_seed(4)
    loud = 10.0 * torch.randn(steps, n, generator=generator, dtype=torch.float64)
    saturated = _theory_live(1.5 * Q, loud, torch.tanh, 1.5, 1.5)
    assert saturated.need("recurrent.theory")["network"][-1] < 1e-3  # it did vanish
    assert not run_probe("recurrent.grows", saturated)
    # Not done: a growing line with the control at the bar, not above it.
    assert not run_probe("recurrent.grows", _theory_live(1.2 * Q, zeros, _linear, 1.1, 1.2))


def test_an_overflowed_tail_is_left_out_and_the_finite_part_still_grows():
    line = np.array([1.0, 3.0, 9.0, 27.0, np.inf, np.nan])
    live = Live({"recurrent.theory": {"control_r": 1.5, "network": line}})
    assert run_probe("recurrent.grows", live)
    assert rp.growth_per_step(line) == pytest.approx(3.0)


def test_first_versus_loss_reads_the_distance_chart_lines():
    n, steps = 5, 9
    generator = torch.Generator().manual_seed(5)
    X = torch.randn(steps, n, generator=generator, dtype=torch.float64)
    norms = {}
    for name, r in (("shrinking", 0.5), ("growing", 1.6)):
        _, norms[name] = _bptt_norms(r * _orthogonal(n, seed=6), X, _linear)
    live = Live({"recurrent.distance": {"k": np.arange(steps), "norms": norms}})
    assert run_probe("recurrent.first_vs_loss", live, {"model": "shrinking"}) == Choice(
        right=rp.SMALLER
    )
    assert run_probe("recurrent.first_vs_loss", live, {"model": "growing"}) == Choice(
        right=rp.LARGER
    )
    # X_t enters H_t unweighted and linearly: ∂L/∂X_t = ∂L/∂H_t, so the ratio is r^τ exactly.
    ratio = run_probe("recurrent.reaching", live, {"model": "shrinking"})
    assert ratio == pytest.approx(0.5 ** (steps - 1), rel=1e-9)
    overflowed = {"norms": {"RNN": np.array([1.0, 1e30, np.inf])}}
    assert run_probe("recurrent.first_vs_loss", Live({"recurrent.distance": overflowed})) == (
        Choice(right=rp.LARGER)
    )


def test_clipping_keeps_the_early_share_as_torch_clips_it():
    generator = torch.Generator().manual_seed(7)
    per_step = torch.randn(20, 4, generator=generator) * torch.logspace(-3, 1, 20)[:, None]
    grad = torch.nn.Parameter(torch.zeros_like(per_step))
    grad.grad = per_step.clone()
    torch.nn.utils.clip_grad_norm_([grad], max_norm=0.1)

    def share(g):
        squares = (g**2).sum(dim=1)
        return float(squares[:3].sum() / squares.sum())

    shares = {"without": share(per_step), "with": share(grad.grad)}
    live = Live({"recurrent.clipping": {"clip": 0.1, "shares": shares}})
    assert run_probe("recurrent.clip_share", live) == Choice(right=rp.SHARE_SAME)
    assert run_probe("recurrent.clip", live) == 0.1
    changed = {"without": 0.2, "with": 0.4}
    live = Live({"recurrent.clipping": {"clip": 0.1, "shares": changed}})
    assert run_probe("recurrent.clip_share", live) == Choice(right=rp.SHARE_LARGER)


def test_the_gate_quotes_count_what_the_forget_gates_hold():
    forget = np.full((30, 4), 0.5)
    forget[5:20, 1] = 0.95  # unit 1 stays open through the whole wait
    forget[5:19, 2] = 0.95  # unit 2 closes at its last step
    forget[0, 3] = np.nan  # an overflowed value is left out of the mean
    gates = {"forget": forget, "bias": 1.0, "wait": (5, 20), "level": 0.9}
    live = Live({"recurrent.gates": gates})
    assert run_probe("recurrent.latched", live) == 1
    finite = forget[np.isfinite(forget)]
    assert run_probe("recurrent.forget_mean", live) == pytest.approx(finite.sum() / finite.size)
    assert run_probe("recurrent.units", live) == 4
    constructed = Live({"recurrent.gates": gates | {"wait": None}})
    assert run_probe("recurrent.latched", constructed) == 0


def test_the_reading_quotes_name_the_tokens_of_the_sentence():
    tokens = ["the", "cat", "sat"]
    live = Live({"recurrent.reading": {"tokens": tokens, "n_steps": 3, "tau": 2}})
    assert run_probe("recurrent.n_tokens", live) == 3 and run_probe("recurrent.tau", live) == 2
    assert run_probe("recurrent.token", live, {"which": "first"}) == "the"
    assert run_probe("recurrent.token", live, {"which": "loss"}) == "sat"
