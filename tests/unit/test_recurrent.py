"""The written-out RNN, LSTM and GRU: equal to torch's own layers, frozen, built exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.nets.recurrent import (
    GATES,
    Recurrent,
    RecurrentConfig,
    hidden_matrix,
    one_core_matmul,
    readout,
    readout_array,
)

N_IN, N_H, T = 5, 7, 9


def _model(cell: str, **kw) -> Recurrent:
    """A tiny model with non-zero biases everywhere, so every term of every gate is exercised."""
    model = Recurrent(RecurrentConfig(cell=cell, num_inputs=N_IN, num_hiddens=N_H, **kw), seed=3)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("b_"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return model


def _inputs(n_steps: int = T, seed: int = 0) -> torch.Tensor:
    return torch.randn(n_steps, N_IN, generator=torch.Generator().manual_seed(seed))


def _w(model: Recurrent, gate: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return model.weights(gate)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_rnn_equals_torch_rnn_on_every_hidden_state(activation):
    model = _model("rnn", activation=activation)
    reference = torch.nn.RNN(N_IN, N_H, nonlinearity=activation)
    W_xh, W_hh, b_h = _w(model, "H")
    with torch.no_grad():
        reference.weight_ih_l0.copy_(W_xh.T)
        reference.weight_hh_l0.copy_(W_hh.T)
        reference.bias_ih_l0.copy_(b_h)
        reference.bias_hh_l0.zero_()
        expected, _ = reference(_inputs()[:, None])
        H = model(_inputs())["H"]
    assert (H - expected[:, 0]).abs().max() < 1e-5


def test_lstm_equals_torch_lstm_on_every_hidden_state_and_cell():
    model = _model("lstm", forget_bias=1.5)
    reference = torch.nn.LSTM(N_IN, N_H)
    order = ("I", "F", "C_tilde", "O")  # torch stacks i, f, g, o
    with torch.no_grad():
        reference.weight_ih_l0.copy_(torch.cat([_w(model, g)[0] for g in order], 1).T)
        reference.weight_hh_l0.copy_(torch.cat([_w(model, g)[1] for g in order], 1).T)
        reference.bias_ih_l0.copy_(torch.cat([_w(model, g)[2] for g in order]))
        reference.bias_hh_l0.zero_()
        expected, _ = reference(_inputs()[:, None])
        trace = model(_inputs())
        # torch returns only the last cell: run it step by step to compare every C_t.
        cells, state = [], None
        for x in _inputs()[:, None]:
            _, state = reference(x[None], state)
            cells.append(state[1][0, 0])
    assert (trace["H"] - expected[:, 0]).abs().max() < 1e-5
    assert (trace["C"] - torch.stack(cells)).abs().max() < 1e-5


def test_gru_equals_torch_gru_on_every_hidden_state():
    model = _model("gru")
    reference = torch.nn.GRU(N_IN, N_H)
    order = ("R", "Z", "H_tilde")  # torch stacks r, z, n
    with torch.no_grad():
        reference.weight_ih_l0.copy_(torch.cat([_w(model, g)[0] for g in order], 1).T)
        reference.weight_hh_l0.copy_(torch.cat([_w(model, g)[1] for g in order], 1).T)
        reference.bias_ih_l0.copy_(torch.cat([_w(model, g)[2] for g in order]))
        reference.bias_hh_l0.zero_()
        expected, _ = reference(_inputs()[:, None])
        H = model(_inputs())["H"]
    assert (H - expected[:, 0]).abs().max() < 1e-5


def test_linear_rnn_is_the_plain_recurrence():
    model = _model("rnn", activation="linear")
    W_xh, W_hh, b_h = (w.double() for w in _w(model, "H"))
    X = _inputs().double()
    H, expected = torch.zeros(N_H, dtype=torch.float64), []
    for x in X:
        H = x @ W_xh + H @ W_hh + b_h
        expected.append(H)
    assert torch.allclose(model(X)["H"], torch.stack(expected), atol=1e-12)


def test_every_gate_is_returned_for_every_step():
    for cell, names in (("lstm", {"H", "I", "F", "O", "C_tilde", "C"}), ("gru", {"H", "Z", "R"})):
        trace = _model(cell)(_inputs())
        assert names <= set(trace)
        assert all(v.shape == (T, N_H) for v in trace.values())
    lstm = _model("lstm")(_inputs())
    C_prev = torch.cat([torch.zeros(1, N_H), lstm["C"][:-1]])
    assert torch.allclose(lstm["C"], lstm["F"] * C_prev + lstm["I"] * lstm["C_tilde"], atol=1e-6)
    assert torch.allclose(lstm["H"], lstm["O"] * torch.tanh(lstm["C"]), atol=1e-6)
    assert set(GATES["gru"]) <= set(_model("gru")(_inputs()))


@pytest.mark.parametrize("init", ["random", "orthogonal", "identity"])
@pytest.mark.parametrize("radius", [0.5, 1.0, 1.37])
def test_hidden_matrix_has_the_largest_singular_value_asked_for(init, radius):
    W = hidden_matrix(torch.Generator().manual_seed(1), 32, init, radius)
    sigma = torch.linalg.svdvals(W.double())
    assert abs(float(sigma[0]) - radius) < 1e-6 * radius
    if init != "random":  # r·Q: every singular value is r
        assert float(sigma[-1]) == pytest.approx(radius, rel=1e-6)


def test_every_recurrent_matrix_of_every_cell_is_scaled():
    for cell in ("rnn", "lstm", "gru"):
        model = Recurrent(RecurrentConfig(cell=cell, num_inputs=4, num_hiddens=16, radius=0.8))
        for gate in GATES[cell]:
            assert float(torch.linalg.matrix_norm(model.weights(gate)[1], ord=2)) == pytest.approx(
                0.8, rel=1e-5
            )
        if cell == "lstm":
            assert torch.all(model.b_f == 1.0)


def test_models_are_frozen_and_reproducible_from_config_and_seed():
    cfg = RecurrentConfig(cell="lstm", num_inputs=4, num_hiddens=8)
    a, b, c = Recurrent(cfg, seed=1), Recurrent(cfg, seed=1), Recurrent(cfg, seed=2)
    assert not a.training
    assert all(not p.requires_grad and p.grad is None for p in a.parameters())
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.W_hi, c.W_hi)
    H, cache = a.run_with_cache(torch.randn(6, 4))
    assert isinstance(cache["H"], np.ndarray) and cache["C"].shape == (6, 8)
    assert not H.requires_grad


@pytest.mark.parametrize(
    "bad",
    [
        dict(cell="transformer"),
        dict(activation="sigmoid"),
        dict(init="xavier"),
        dict(num_hiddens=0),
        dict(num_hiddens=10_000),
        dict(radius=float("nan")),
        dict(radius=-1.0),
        dict(radius=1e9),
        dict(forget_bias=float("inf")),
    ],
)
def test_config_refuses_what_it_cannot_build(bad):
    with pytest.raises(ValueError):
        RecurrentConfig(**bad)


def test_wrong_input_shape_is_refused():
    model = _model("rnn")
    with pytest.raises(ValueError):
        model(torch.zeros(0, N_IN))
    with pytest.raises(ValueError):
        model(torch.zeros(3, N_IN + 1))


def test_readout_is_a_fixed_unit_vector(float32_atol):
    u = readout(64)
    # A float32 norm of 64 squares, summed in the order the CPU's vector width picks.
    unit = float32_atol(1.0, 64)
    assert float(u.norm()) == pytest.approx(1.0, abs=unit)
    assert torch.equal(u, readout(64))
    u.zero_()  # a caller's copy: changing it changes no later readout
    assert float(readout(64).norm()) == pytest.approx(1.0, abs=unit)
    array = readout_array(64)
    np.testing.assert_array_equal(array, readout(64).numpy())
    array[:] = 0
    np.testing.assert_array_equal(readout_array(64), readout(64).numpy())


@pytest.mark.parametrize(
    ("cell", "kw"),
    [
        ("rnn", dict(activation="tanh")),
        ("rnn", dict(activation="relu", radius=1.3)),
        ("rnn", dict(activation="linear", init="orthogonal")),
        ("lstm", dict(forget_bias=2.0)),
        ("gru", dict(radius=1.2)),
    ],
)
def test_the_numpy_pass_equals_forward_on_every_state_and_gate(cell, kw):
    model = _model(cell, **kw)
    X = _inputs(40, seed=2)
    with torch.no_grad():
        expected = model(X)
    fast = model.forward_numpy(X.numpy())
    assert set(fast) == set(expected)
    for name, value in expected.items():
        assert fast[name].dtype == np.float32 and fast[name].shape == value.shape
        np.testing.assert_allclose(fast[name], value.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_numpy_pass_overflows_where_forward_does():
    """inf and NaN go on through the steps as in torch: the same step overflows first, the
    same entries end up non-finite."""
    model = Recurrent(
        RecurrentConfig(
            cell="rnn",
            num_inputs=N_IN,
            num_hiddens=N_H,
            activation="relu",
            init="identity",
            radius=4.0,
        )
    )
    X = _inputs(200, seed=1) * 10
    with torch.no_grad():
        expected = model(X)["H"].numpy()
    fast = model.forward_numpy(X.numpy())["H"]
    assert not np.isfinite(expected).all()
    np.testing.assert_array_equal(np.isfinite(fast), np.isfinite(expected))
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(fast[finite], expected[finite], rtol=1e-4)
    for cell in ("lstm", "gru"):
        gated = _model(cell)
        X = _inputs(seed=4)
        X[3, 0] = float("nan")
        with torch.no_grad():
            reference = gated(X)
        for name, value in gated.forward_numpy(X.numpy()).items():
            np.testing.assert_array_equal(np.isnan(value), reference[name].isnan().numpy())


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_numpy_weights_are_the_stacked_weights_as_they_are_now(cell):
    model = _model(cell)
    for fast, stacked in zip(model.stacked_numpy(), model.stacked_weights(), strict=True):
        assert fast.dtype == np.float32
        np.testing.assert_array_equal(fast, stacked.numpy())
    # Read afresh each call: a weight changed in place shows at once.
    changed = {"rnn": "W_xh", "lstm": "b_f", "gru": "W_hz"}[cell]
    with torch.no_grad():
        getattr(model, changed).add_(1.0)
    for fast, stacked in zip(model.stacked_numpy(), model.stacked_weights(), strict=True):
        np.testing.assert_array_equal(fast, stacked.numpy())


@pytest.mark.parametrize("shape", [(20, 64, 256), (600, 64, 256), (3, 5, 7)])
def test_a_product_on_one_core_is_the_product(shape):
    m, k, n = shape
    g = torch.Generator().manual_seed(m)
    a, b = (torch.randn(*s, generator=g).numpy() for s in ((m, k), (n, k)))
    np.testing.assert_allclose(one_core_matmul(a, b.T), a @ b.T, rtol=1e-5, atol=1e-5)
    a[0, 0] = np.inf  # goes on as in torch
    assert not np.isfinite(one_core_matmul(a, b.T)[0]).all()


def test_the_numpy_pass_refuses_a_wrong_shape():
    model = _model("gru")
    for bad in (np.zeros((0, N_IN)), np.zeros((3, N_IN + 1)), np.zeros((2, 3, N_IN))):
        with pytest.raises(ValueError):
            model.forward_numpy(bad)
