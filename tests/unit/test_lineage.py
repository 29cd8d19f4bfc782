"""The measurements behind the home page's table, each checked against a closed form or
an independent computation on small inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from models.analysis import lineage as lg

D = 8


def test_every_architecture_builds_and_maps_l_by_d_to_l_by_d():
    X = torch.randn(5, D)
    for name in lg.ARCHITECTURES:
        assert lg.build(name, D)(X).shape == (5, D), name
    with pytest.raises(ValueError):
        lg.build("mamba", D)


# --- dependency depth ------------------------------------------------------------------


def test_depth_of_a_chain_of_known_length_is_counted_exactly():
    # tanh(tanh(X·2)) on the last row: select, mul, tanh, tanh, then sum (the count starts at
    # the scalar the walk begins from).
    def three_ops(X):
        return torch.tanh(torch.tanh(X * 2.0))

    assert lg.dependency_depth(three_ops, 4, D) == 5


@pytest.mark.parametrize("name", ["rnn", "lstm", "rnn_attention"])
def test_recurrent_depth_grows_by_the_same_amount_per_step(name):
    model = lg.build(name, D)
    d8, d16, d32 = (lg.dependency_depth(model, n, D) for n in (8, 16, 32))
    assert d16 > d8
    assert d32 - d16 == 2 * (d16 - d8)  # a fixed number of operations per time step


@pytest.mark.parametrize("name", ["ngram", "encoder", "decoder"])
def test_window_and_transformer_depth_does_not_grow_with_length(name):
    model = lg.build(name, D)
    assert lg.dependency_depth(model, 8, D) == lg.dependency_depth(model, 64, D)


# --- gradient reach -------------------------------------------------------------------------


def test_a_window_of_three_never_reaches_a_token_four_steps_back():
    model = lg.build("ngram", D)
    assert lg.first_token_reach(model, 4, D) == 0.0
    assert lg.first_token_reach(model, 3, D) > 0.0


def test_first_token_reach_matches_a_finite_difference():
    model = lg.build("lstm", D)
    length = 6
    X = lg.synthetic_inputs(length, D).double()
    u = lg.readout(D).double()

    def loss(first_row: torch.Tensor) -> float:
        Y = model(torch.cat([first_row[None], X[1:]]).float())
        return float(Y[-1].double() @ u)

    # Central differences of the loss along each coordinate of X_0 give ∂L/∂X_0.
    eps = 1e-3
    grad0 = np.array(
        [
            (loss(X[0] + eps * e) - loss(X[0] - eps * e)) / (2 * eps)
            for e in torch.eye(D, dtype=torch.float64)
        ]
    )
    Xf = X.float().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(model(Xf)[-1] @ lg.readout(D), (Xf,))
    np.testing.assert_allclose(grad0, grad[0].double().numpy(), rtol=2e-2, atol=1e-5)
    expected = np.linalg.norm(grad0) / float(grad[-1].double().norm())
    assert lg.first_token_reach(model, length, D) == pytest.approx(expected, rel=2e-2)


def test_only_models_that_read_the_whole_sentence_see_later_tokens():
    seen = {name: lg.sees_later_tokens(lg.build(name, D), 6, D) for name in lg.ARCHITECTURES}
    assert seen["ngram"] == seen["rnn"] == seen["lstm"] == seen["decoder"] == 0.0
    assert seen["encoder"] > 0 and seen["rnn_attention"] > 0


# --- memory and time --------------------------------------------------------------------------


def test_saved_bytes_of_one_tanh_is_its_output():
    # tanh keeps its output for the backward pass: L × d float32 numbers.
    assert lg.saved_bytes(torch.tanh, 10, D) == 10 * D * 4


def test_recurrent_memory_grows_linearly_and_attention_faster():
    rnn, encoder = lg.build("rnn", D), lg.build("encoder", D)
    r = [lg.saved_bytes(rnn, n, D) for n in (8, 16, 32)]
    e = [lg.saved_bytes(encoder, n, D) for n in (8, 16, 32)]
    assert r[2] - r[1] == 2 * (r[1] - r[0])
    # An L × L attention pattern per head: the increments themselves grow.
    assert e[2] - e[1] > 2 * (e[1] - e[0])


def test_forward_time_is_a_positive_finite_number():
    seconds = lg.forward_seconds(lg.build("rnn", D), 8, D, repeats=2)
    assert 0 < seconds < math.inf


def test_measure_fills_every_field_for_each_length():
    m = lg.measure("decoder", lengths=(4, 8), d=D)
    assert m.architecture == "decoder"
    assert len(m.depth) == len(m.seconds) == len(m.memory) == 2
    assert m.sees_later == 0.0 and m.reach > 0


# --- what a zero in the table means -------------------------------------------------------


def _cell(measured, column: str) -> str:
    from components.i18n import using_language
    from components.lineage import cells

    with using_language("en"):
        return cells(measured)[column]


def test_the_rnn_reach_cell_names_float32_underflow_not_independence():
    measured = lg.measure("rnn")
    cell = _cell(measured, "reach")
    assert "below float32's smallest number" in cell and "cannot depend" not in cell, cell
    # The dependence is there: float64 measures it, below what float32 can hold.
    assert measured.reach == 0.0
    assert 0 < measured.reach_float64 < np.finfo(np.float32).smallest_subnormal
    assert f"{measured.reach_float64:.3g}" in cell


def _changes(architecture: str, changed: int, read: int) -> bool:
    """Whether output `read` changes at all when input `changed` is replaced by another."""
    model = lg.build(architecture)
    X = lg.synthetic_inputs(max(lg.LENGTHS), lg.WIDTH)
    other = X.clone()
    other[changed] = -100 * X[changed] + 7
    with torch.no_grad():
        return not torch.equal(model(X)[read], model(other)[read])


def test_cannot_depend_is_said_only_where_the_output_cannot_change_with_that_token():
    ngram, decoder = lg.measure("ngram"), lg.measure("decoder")
    # The n-gram's last output reads only the last three tokens; the causal decoder's first
    # output reads only the first: no value of the other token can change them.
    assert not _changes("ngram", changed=0, read=-1)
    assert not _changes("decoder", changed=-1, read=0)
    assert _cell(ngram, "reach") == "0 (cannot depend)"
    assert _cell(decoder, "sees_later") == "no: 0 (cannot depend)"
    assert (
        _changes("decoder", changed=0, read=-1) and _cell(decoder, "reach") != "0 (cannot depend)"
    )
