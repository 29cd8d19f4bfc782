"""Gradient flow through the selective SSM and linear attention (models/analysis/
recurrence_flow.py), held to central finite differences in float64, to a selective scan
written out here, and to the recurrent lesson's gradient flow for the loss's definition."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from models.analysis import gradient_flow as gf
from models.analysis import recurrence_flow as rf
from models.nets.linear_attention import LinearAttentionConfig, LinearAttentionLayer
from models.nets.recurrent import Recurrent, RecurrentConfig, readout
from models.nets.selective_ssm import SelectiveSSM, SSMConfig

SMALL_SSM = dict(d_model=6, d_inner=5, d_state=3)


def _float64(layer: torch.nn.Module) -> torch.nn.Module:
    """A float64 copy of `layer`, still frozen: the shared one is never touched."""
    return copy.deepcopy(layer).double()


def _inputs(n_pos: int, d: int, seed: int = 0, dtype=torch.float64) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n_pos, d, generator=generator, dtype=dtype)


def _written_out_ssm(layer: SelectiveSSM, X: torch.Tensor, scale: float) -> torch.Tensor:
    """The S6 layer with Δ × scale as its equations read, one channel and state at a time
    in plain loops (no scan function, no selection function of the module under test)."""
    W_in = layer.W_in.detach().double()
    b = layer.b_delta.detach().double()
    A = -torch.exp(layer.A_log.detach().double())
    D = layer.D.detach().double()
    u = X @ W_in
    n_pos, n_inner = u.shape
    n_state = A.shape[1]
    if layer.cfg.selective:
        delta = torch.log1p(torch.exp(u @ layer.W_delta.detach().double() + b))
        B = u @ layer.W_B.detach().double()
        C = u @ layer.W_C.detach().double()
    else:
        delta = torch.log1p(torch.exp(b)).repeat(n_pos, 1)
        B = layer.B_fixed.detach().double().repeat(n_pos, 1)
        C = layer.C_fixed.detach().double().repeat(n_pos, 1)
    delta = delta * scale
    h = [[torch.zeros((), dtype=X.dtype) for _ in range(n_state)] for _ in range(n_inner)]
    ys = []
    for t in range(n_pos):
        y_t = []
        for c in range(n_inner):
            total = D[c] * u[t, c]
            for s in range(n_state):
                h[c][s] = (
                    torch.exp(delta[t, c] * A[c, s]) * h[c][s] + delta[t, c] * u[t, c] * B[t, s]
                )
                total = total + h[c][s] * C[t, s]
            y_t.append(total)
        ys.append(torch.stack(y_t))
    return torch.stack(ys) @ layer.W_out.detach().double()


def _central_differences(function, X: torch.Tensor, eps: float = 1e-6) -> np.ndarray:
    """∂function/∂X by central differences, one entry at a time (float64)."""
    grad = np.zeros(tuple(X.shape))
    for index in np.ndindex(*X.shape):
        up, down = X.clone(), X.clone()
        up[index] += eps
        down[index] -= eps
        grad[index] = (float(function(up)) - float(function(down))) / (2 * eps)
    return grad


@pytest.mark.parametrize("selective", [True, False])
def test_ssm_forward_at_scale_one_is_the_layers_own_forward(selective):
    layer = SelectiveSSM(SSMConfig(d_model=64, selective=selective), seed=0)
    X = _inputs(7, 64, dtype=torch.float32)
    ours = rf.ssm_forward(layer, X)
    _, trace = layer.run_with_cache(X, mode="sequential")
    for name, value in trace.items():
        np.testing.assert_allclose(ours[name].numpy(), value, rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("selective", [True, False])
def test_ssm_forward_with_delta_scaled_matches_the_equations_written_out(selective):
    layer = _float64(SelectiveSSM(SSMConfig(**SMALL_SSM, selective=selective), seed=3))
    X = _inputs(5, SMALL_SSM["d_model"], seed=1)
    for scale in (0.1, 0.5, 3.0, 10.0):
        ours = rf.ssm_forward(layer, X, delta_scale=scale)["ssm_out"]
        expected = _written_out_ssm(layer, X, scale)
        np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-12, atol=1e-14)


def test_ssm_trace_kept_fraction_and_state_norm_are_what_their_names_say():
    layer = SelectiveSSM(SSMConfig(d_model=64), seed=0)
    X = _inputs(6, 64, dtype=torch.float32)
    trace = rf.ssm_trace(layer, X, delta_scale=2.0)
    A = -np.exp(layer.A_log.detach().numpy().astype(np.float64))
    delta = trace["ssm_delta"].astype(np.float64)
    kept = np.exp(delta[:, :, None] * A[None]).mean(axis=2)
    np.testing.assert_allclose(trace["ssm_decay"], kept, rtol=1e-5)
    norms = [np.linalg.norm(trace["ssm_h"][t].astype(np.float64)) for t in range(6)]  # Frobenius
    np.testing.assert_allclose(rf.state_norms(trace["ssm_h"]), norms, rtol=1e-12)
    # Twice the step sizes of the layer's own, and the state keeps less at every entry.
    _, own = layer.run_with_cache(X)
    np.testing.assert_allclose(trace["ssm_delta"], 2 * own["ssm_delta"], rtol=1e-6)
    assert (trace["ssm_decay"] < own["ssm_decay"]).all()


@pytest.mark.parametrize("selective", [True, False])
@pytest.mark.parametrize("scale", [1.0, 4.0])
def test_ssm_gradient_matches_central_finite_differences(selective, scale):
    layer = _float64(SelectiveSSM(SSMConfig(**SMALL_SSM, selective=selective), seed=2))
    X = _inputs(5, SMALL_SSM["d_model"], seed=4)
    tau = 3
    u = readout(SMALL_SSM["d_model"]).double()
    result = rf.ssm_gradient_flow(layer, X, tau, delta_scale=scale)
    expected = _central_differences(lambda x: _written_out_ssm(layer, x, scale)[tau] @ u, X)
    np.testing.assert_allclose(result["grad_X_rows"], expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(result["grad_X"], np.linalg.norm(expected, axis=1), rtol=1e-6)
    assert result["loss"] == pytest.approx(float(_written_out_ssm(layer, X, scale)[tau] @ u))
    # Nothing after the loss step reaches it: the layer is causal.
    assert (result["grad_X"][tau + 1 :] == 0).all()


def test_ssm_gradient_of_the_lessons_layer_matches_directional_differences():
    layer = _float64(SelectiveSSM(SSMConfig(d_model=64), seed=0))
    X = _inputs(9, 64, seed=5)
    tau, u = 8, readout(64).double()
    grad = rf.ssm_gradient_flow(layer, X, tau)["grad_X_rows"]
    generator = torch.Generator().manual_seed(6)
    for _ in range(4):
        direction = torch.randn(X.shape, generator=generator, dtype=torch.float64)
        eps = 1e-6

        def loss(x):
            return float(layer(x, mode="sequential")[tau] @ u)

        numeric = (loss(X + eps * direction) - loss(X - eps * direction)) / (2 * eps)
        assert float((grad * direction.numpy()).sum()) == pytest.approx(numeric, rel=1e-6)


def test_kept_until_is_the_product_of_the_kept_fractions_after_each_step():
    rng = np.random.default_rng(0)
    delta = rng.uniform(0.001, 0.5, size=(6, 4))
    A = -rng.uniform(0.5, 8.0, size=(4, 3))
    tau = 4
    kept = rf.kept_until(delta, A, tau)
    for t in range(tau + 1):
        product = np.ones((4, 3))
        for s in range(t + 1, tau + 1):
            product = product * np.exp(delta[s][:, None] * A)
        assert kept[t] == pytest.approx(product.mean(), rel=1e-12)
    assert kept[tau] == 1.0


def test_ssm_kept_until_is_measured_on_the_layers_own_step_sizes_scaled():
    layer = SelectiveSSM(SSMConfig(d_model=64), seed=0)
    X = _inputs(8, 64, dtype=torch.float32)
    kept = rf.ssm_kept_until(layer, X, 7, delta_scale=3.0)
    _, own = layer.run_with_cache(X)
    A = -np.exp(layer.A_log.detach().numpy().astype(np.float64))
    later = 3.0 * own["ssm_delta"][1:].astype(np.float64).sum(axis=0)
    assert kept.shape == (8,) and kept[-1] == 1.0
    assert kept[0] == pytest.approx(np.exp(later[:, None] * A).mean(), rel=1e-5)


@pytest.mark.parametrize("mode", ["parallel", "recurrent"])
def test_linear_attention_gradient_matches_central_finite_differences(mode):
    cfg = LinearAttentionConfig(d_model=6, n_heads=2, d_head=3)
    layer = _float64(LinearAttentionLayer(cfg, seed=1))
    X = _inputs(5, 6, seed=2)
    tau, u = 4, readout(6).double()
    result = rf.linear_attention_gradient_flow(layer, X, tau, mode=mode)
    expected = _central_differences(lambda x: layer(x, mode=mode)[tau] @ u, X)
    np.testing.assert_allclose(result["grad_X_rows"], expected, rtol=1e-6, atol=1e-9)
    assert result["loss"] == pytest.approx(float(layer(X)[tau] @ u))


def test_linear_attention_gradient_reaches_every_earlier_token():
    layer = LinearAttentionLayer(LinearAttentionConfig(), seed=0)
    X = _inputs(12, 64, dtype=torch.float32)
    grad = rf.linear_attention_gradient_flow(layer, X, 8)["grad_X"]
    assert (grad[:9] > 0).all() and (grad[9:] == 0).all()


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_the_loss_is_the_recurrent_lessons_loss(cell):
    """`output_gradient_flow` on a recurrent model's hidden states gives
    recurrent_gradient_flow's numbers: the same u, the same L = u · H_τ."""
    model = Recurrent(RecurrentConfig(cell=cell, num_inputs=64, num_hiddens=64))
    X = _inputs(10, 64, seed=7, dtype=torch.float32)
    tau = 7
    ours = rf.output_gradient_flow(lambda x: model(x)["H"], X, tau)
    for method in ("autograd", "closed_form"):
        theirs = gf.recurrent_gradient_flow(model, X, tau, method=method)
        assert ours["loss"] == pytest.approx(theirs["loss"], rel=1e-5, abs=1e-7)
        np.testing.assert_allclose(ours["grad_X"], theirs["grad_X"], rtol=1e-4, atol=1e-9)
    # float64 on both sides: equal to rounding.
    X64, model64 = X.double(), _float64(model)
    ours64 = rf.output_gradient_flow(lambda x: model64(x)["H"], X64, tau, u=readout(64).double())
    reference = gf.recurrent_gradient_flow(model, X, tau, method="autograd")
    np.testing.assert_allclose(ours64["grad_X"], reference["grad_X"], rtol=1e-4, atol=1e-9)


def test_layers_and_inputs_are_left_as_they_were():
    layer = SelectiveSSM(SSMConfig(d_model=64), seed=0)
    before = {name: value.clone() for name, value in layer.state_dict().items()}
    attributes = set(vars(layer))
    X = _inputs(5, 64, dtype=torch.float32)
    X_before = X.clone()
    rf.ssm_gradient_flow(layer, X, 4, delta_scale=5.0)
    assert not X.requires_grad and torch.equal(X, X_before)
    assert all(p.grad is None and not p.requires_grad for p in layer.parameters())
    assert all(torch.equal(value, before[name]) for name, value in layer.state_dict().items())
    assert not layer.training and set(vars(layer)) == attributes


def test_trainable_layers_and_bad_arguments_are_refused():
    trainable = SelectiveSSM(SSMConfig(**SMALL_SSM), seed=0, requires_grad=True)
    X = _inputs(4, SMALL_SSM["d_model"], dtype=torch.float32)
    with pytest.raises(ValueError, match="frozen"):
        rf.ssm_gradient_flow(trainable, X, 3)
    with pytest.raises(ValueError, match="frozen"):
        rf.linear_attention_gradient_flow(
            LinearAttentionLayer(
                LinearAttentionConfig(d_model=6, n_heads=1, d_head=2), requires_grad=True
            ),
            X,
            3,
        )
    frozen = SelectiveSSM(SSMConfig(**SMALL_SSM), seed=0)
    for scale in (0.05, 11.0, float("nan")):
        with pytest.raises(ValueError, match="delta_scale"):
            rf.ssm_forward(frozen, X, delta_scale=scale)
    with pytest.raises(ValueError, match="loss step"):
        rf.ssm_gradient_flow(frozen, X, 4)
