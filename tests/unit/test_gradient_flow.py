"""Gradient flow through time, checked against independent computations."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from models.analysis import gradient_flow as gf
from models.nets import recurrent
from models.nets.recurrent import GATES, Recurrent, RecurrentConfig, readout
from models.nets.transformer import Transformer, TransformerConfig

F32_MAX = float(np.finfo(np.float32).max)


def _model(cell="rnn", n_in=4, n_h=3, seed=0, **kw) -> Recurrent:
    return Recurrent(RecurrentConfig(cell=cell, num_inputs=n_in, num_hiddens=n_h, **kw), seed)


@pytest.mark.parametrize("radius", [0.5, 0.9, 1.0, 1.1, 1.5])
def test_linear_orthogonal_rnn_gradient_falls_exactly_as_r_to_the_k(radius):
    model = _model(n_in=8, n_h=64, activation="linear", init="orthogonal", radius=radius)
    tau = 100
    flow = gf.recurrent_gradient_flow(model, gf.synthetic_inputs(tau + 1, 8), tau)
    theory = gf.linear_orthogonal_theory(radius, tau)  # theory[t] = r^(τ−t)
    relative = np.abs(flow["grad_H"][: tau + 1] / theory - 1)
    assert relative.max() < 1e-4, relative.max()


@pytest.mark.parametrize(
    ("cell", "kw"),
    [
        ("rnn", dict(activation="tanh")),
        ("rnn", dict(activation="relu", radius=1.3)),
        ("lstm", dict(forget_bias=0.5)),
        ("gru", {}),
    ],
)
@pytest.mark.parametrize("method", ["closed_form", "autograd"])
def test_grad_H_and_grad_X_agree_with_finite_differences(cell, kw, method):
    model = _model(cell, **kw)
    X = torch.randn(6, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    tau, u = 4, readout(3).double()
    flow = gf.recurrent_gradient_flow(model, X, tau, method=method)

    def loss(X_, probe):
        return float(model(X_, probe)["H"][tau] @ u)

    eps = 1e-6
    probe = torch.zeros(6, 3, dtype=torch.float64)
    fd_H, fd_X = np.zeros((6, 3)), np.zeros((6, 4))
    for t in range(6):
        for i in range(3):
            d = probe.clone()
            d[t, i] = eps
            fd_H[t, i] = (loss(X, probe + d) - loss(X, probe - d)) / (2 * eps)
        for i in range(4):
            d = torch.zeros_like(X)
            d[t, i] = eps
            fd_X[t, i] = (loss(X + d, probe) - loss(X - d, probe)) / (2 * eps)
    np.testing.assert_allclose(flow["grad_H"], np.linalg.norm(fd_H, axis=1), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(flow["grad_X"], np.linalg.norm(fd_X, axis=1), rtol=1e-4, atol=1e-6)
    assert np.all(flow["grad_H"][tau + 1 :] == 0)  # steps after the loss cannot affect it


@pytest.mark.parametrize(
    ("cell", "kw"),
    [
        ("rnn", dict(activation="tanh", radius=1.3)),
        ("rnn", dict(activation="relu", init="orthogonal", radius=1.1)),
        ("rnn", dict(activation="linear", radius=0.9)),
        ("lstm", dict(forget_bias=2.0, radius=1.4)),
        ("gru", dict(radius=1.2)),
    ],
)
def test_written_out_bptt_equals_autograd_on_every_step(cell, kw):
    model = _model(cell, n_in=8, n_h=24, **kw)
    X = gf.synthetic_inputs(60, 8, seed=4)
    fast = gf.recurrent_gradient_flow(model, X, 50)
    reference = gf.recurrent_gradient_flow(model, X, 50, method="autograd")
    for key in ("grad_H_units", "grad_X_rows"):
        scale = np.abs(reference[key]).max()
        np.testing.assert_allclose(fast[key], reference[key], rtol=1e-4, atol=1e-6 * scale)
    # The closed form reads its own (numpy) forward pass: the same states and gates as
    # torch's, up to float32 rounding.
    for key in GATES[cell] + ("H", "C"):
        if key in reference:
            np.testing.assert_allclose(fast[key], reference[key], rtol=1e-5, atol=1e-6)
    assert fast["loss"] == pytest.approx(reference["loss"], rel=1e-5)


@pytest.mark.parametrize(
    ("cell", "kw"),
    [
        ("rnn", dict(activation="tanh", radius=1.2)),
        ("rnn", dict(activation="relu", radius=1.2)),
        ("rnn", dict(activation="linear", init="orthogonal")),
        ("lstm", dict(forget_bias=0.3)),
        ("gru", {}),
    ],
)
def test_step_jacobian_norms_agree_with_autograd_jacobian_and_svd(cell, kw):
    model = _model(cell, **kw)
    X = torch.randn(7, 4, generator=torch.Generator().manual_seed(2))
    norms = gf.step_jacobian_norms(model, X)
    with torch.no_grad():
        trace = model(X.double())
    n = 3
    for t in range(7):
        H_prev = trace["H"][t - 1] if t else torch.zeros(n, dtype=torch.float64)
        if cell == "lstm":
            C_prev = trace["C"][t - 1] if t else torch.zeros(n, dtype=torch.float64)

            def step(state, t=t):
                out = model(X[t : t + 1].double(), state=(state[:n], state[n:]))
                return torch.cat([out["H"][0], out["C"][0]])

            J = torch.autograd.functional.jacobian(step, torch.cat([H_prev, C_prev]))
        else:

            def step(H, t=t):
                return model(X[t : t + 1].double(), state=(H, torch.zeros_like(H)))["H"][0]

            J = torch.autograd.functional.jacobian(step, H_prev)
        expected = float(torch.linalg.svdvals(J)[0])
        assert norms[t] == pytest.approx(expected, rel=1e-5, abs=1e-7), (t, norms[t], expected)


def test_jacobian_spectra_are_sampled_only_beyond_the_budget():
    assert len(gf.jacobian_steps(512, 64)) == 512
    few = gf.jacobian_steps(512, 512)
    assert 16 <= len(few) < 512 and few[0] == 0 and few[-1] == 511
    model = _model(n_in=4, n_h=8)
    X = gf.synthetic_inputs(40, 4)
    steps = np.array([0, 13, 39])
    np.testing.assert_allclose(
        gf.step_jacobian_norms(model, X, steps), gf.step_jacobian_norms(model, X)[steps], rtol=1e-9
    )


def _float64_forward_overflow(model: Recurrent, X: torch.Tensor) -> int | None:
    """An independent float64 ReLU RNN: the first step a value passes float32's largest."""
    W_xh, W_hh, b_h = (w.double().numpy() for w in model.weights("H"))
    H = np.zeros(W_hh.shape[0])
    for t, x in enumerate(X.double().numpy()):
        H = np.maximum(x @ W_xh + H @ W_hh + b_h, 0.0)
        if np.abs(H).max() > F32_MAX:
            return t
    return None


def _float64_backward_overflow(model: Recurrent, tau: int) -> int | None:
    """An independent float64 backward pass of a linear RNN from L = u·H_τ."""
    W_hh = model.weights("H")[1].double().numpy()
    g = readout(model.cfg.num_hiddens).double().numpy()
    for t in range(tau, -1, -1):
        if np.abs(g).max() > F32_MAX:
            return t
        g = g @ W_hh.T
    return None


def test_relu_overflow_is_reported_at_the_step_float64_predicts():
    model = _model(n_in=16, n_h=32, activation="relu", init="identity", radius=1.5)
    X = gf.synthetic_inputs(512, 16)
    flow = gf.recurrent_gradient_flow(model, X, 511)
    expected = _float64_forward_overflow(model, X)
    assert expected is not None and 100 < expected < 511
    assert flow["overflow_forward"] == expected
    assert np.isfinite(flow["H"][:expected]).all() and not np.isfinite(flow["H"][expected]).all()
    # A step whose state overflowed has no spectrum: NaN (left out of charts), never a fake 0.
    norms = gf.step_jacobian_norms(model, X)
    assert np.isfinite(norms[:expected]).all() and np.isnan(norms[expected + 1 :]).all()


def test_after_a_forward_overflow_bptt_still_equals_autograd():
    model = _model(n_in=16, n_h=32, activation="relu", init="identity", radius=1.5)
    X = gf.synthetic_inputs(512, 16)
    fast = gf.recurrent_gradient_flow(model, X, 511)
    reference = gf.recurrent_gradient_flow(model, X, 511, method="autograd")
    assert fast["overflow_forward"] == reference["overflow_forward"] is not None
    assert fast["overflow_backward"] == reference["overflow_backward"] is not None
    np.testing.assert_allclose(fast["grad_H"], reference["grad_H"], rtol=1e-5)


def test_backward_overflow_is_reported_at_the_step_float64_predicts():
    model = _model(n_in=16, n_h=32, activation="linear", init="identity", radius=1.5)
    X = gf.synthetic_inputs(301, 16) * 1e-30  # tiny inputs: the forward pass stays finite
    flow = gf.recurrent_gradient_flow(model, X, 300)
    expected = _float64_backward_overflow(model, 300)
    assert flow["overflow_forward"] is None
    assert expected is not None and flow["overflow_backward"] == expected


# tanh with r ≤ 1: every state in (−1, 1) and every step Jacobian of norm ≤ 1. Linear with
# r·Q, r = 1: the gradient keeps norm 1 and the state grows at most linearly.
@pytest.mark.parametrize(
    ("cell", "kw"),
    [
        ("rnn", dict(activation="tanh", radius=1.0)),
        ("rnn", dict(activation="linear", init="orthogonal", radius=1.0)),
    ],
)
def test_settings_that_cannot_overflow_report_nothing(cell, kw):
    model = _model(cell, n_in=16, n_h=32, **kw)
    flow = gf.recurrent_gradient_flow(model, gf.synthetic_inputs(512, 16), 511)
    assert flow["overflow_forward"] is None and flow["overflow_backward"] is None
    assert np.isfinite(flow["grad_H"]).all() and np.isfinite(flow["grad_X"]).all()


def test_transformer_runs_from_embeddings_exactly_as_from_tokens():
    cfg = TransformerConfig(d_model=16, n_heads=2, d_head=8, n_layers=2, n_ctx=12, d_vocab=50)
    for positional in ("sinusoidal", "learned", "rope", "alibi", "none"):
        model = Transformer(cfg.__class__(**{**cfg.__dict__, "positional": positional}), seed=1)
        tokens = [3, 14, 15, 9, 26, 5]
        with torch.no_grad():
            from_tokens = model(tokens)
            from_embeddings = gf.transformer_from_embeddings(model, model.W_E[tokens])
        assert torch.equal(from_tokens, from_embeddings)


@pytest.mark.parametrize("method", ["closed_form", "autograd"])
def test_transformer_gradient_matches_finite_differences(method):
    cfg = TransformerConfig(d_model=16, n_heads=2, d_head=8, n_layers=1, n_ctx=12, d_vocab=50)
    model = Transformer(cfg, seed=0)
    X = torch.randn(5, 16, generator=torch.Generator().manual_seed(0))
    flow = gf.transformer_gradient_flow(model, X, 3, method=method)
    u = readout(16).double()
    model64 = Transformer(cfg, seed=0).double()

    def loss(X_):
        with torch.no_grad():
            return float(gf.transformer_from_embeddings(model64, X_)[3] @ u)

    eps, X64 = 1e-6, X.double()
    fd = np.zeros((5, 16))
    for t in range(5):
        for i in range(16):
            d = torch.zeros_like(X64)
            d[t, i] = eps
            fd[t, i] = (loss(X64 + d) - loss(X64 - d)) / (2 * eps)
    np.testing.assert_allclose(flow["grad_X"], np.linalg.norm(fd, axis=1), rtol=1e-3, atol=1e-6)


def _snapshot(module: torch.nn.Module):
    return [(p.detach().clone(), p.requires_grad, p.grad) for p in module.parameters()]


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(causal=True),
        dict(positional="learned"),
        dict(positional="none", causal=True),
        dict(n_layers=3, d_mlp=40),
    ],
)
def test_written_out_transformer_backward_equals_autograd(kw):
    cfg = TransformerConfig(
        **{**dict(d_model=16, n_heads=2, d_head=8, n_layers=2, n_ctx=40, d_vocab=50), **kw}
    )
    model = Transformer(cfg, seed=3)
    X = torch.randn(30, 16, generator=torch.Generator().manual_seed(1)) * 2
    for tau in (0, 17, 29):
        fast = gf.transformer_gradient_flow(model, X, tau, method="closed_form")
        reference = gf.transformer_gradient_flow(model, X, tau, method="autograd")
        scale = np.abs(reference["grad_X_rows"]).max()
        np.testing.assert_allclose(
            fast["grad_X_rows"], reference["grad_X_rows"], rtol=1e-4, atol=1e-5 * scale
        )
        assert fast["loss"] == pytest.approx(reference["loss"], rel=1e-5, abs=1e-6)
        if cfg.causal:  # a causal output at τ reads nothing after τ
            assert np.all(fast["grad_X"][tau + 1 :] == 0)


@pytest.mark.parametrize("positional", ["rope", "alibi"])
def test_positions_not_added_to_the_input_take_autograd(positional):
    cfg = TransformerConfig(d_model=16, n_heads=2, d_head=8, n_layers=2, n_ctx=20, d_vocab=50)
    model = Transformer(cfg.__class__(**{**cfg.__dict__, "positional": positional}), seed=0)
    X = torch.randn(9, 16, generator=torch.Generator().manual_seed(2))
    with pytest.raises(ValueError):
        gf.transformer_gradient_flow(model, X, 4, method="closed_form")
    auto = gf.transformer_gradient_flow(model, X, 4)
    reference = gf.transformer_gradient_flow(model, X, 4, method="autograd")
    np.testing.assert_array_equal(auto["grad_X_rows"], reference["grad_X_rows"])


def test_long_sequences_take_autograd_and_short_ones_the_closed_form():
    model = Transformer(TransformerConfig(d_vocab=50), seed=0)
    d = model.cfg.d_model
    longest = gf.WRITTEN_OUT_PRODUCT // (d * model.cfg.d_mlp)
    for n_steps, method in ((longest, "closed_form"), (longest + 1, "autograd")):
        X = gf.synthetic_inputs(n_steps, d)
        auto = gf.transformer_gradient_flow(model, X, n_steps - 1)
        chosen = gf.transformer_gradient_flow(model, X, n_steps - 1, method=method)
        np.testing.assert_array_equal(auto["grad_X_rows"], chosen["grad_X_rows"])


def test_many_threads_at_once_leave_shared_models_untouched_and_agree_with_a_serial_run():
    models = {c: _model(c, n_in=16, n_h=32) for c in ("rnn", "lstm", "gru")}
    cfg = TransformerConfig(d_model=16, n_heads=2, d_head=8, n_layers=2, n_ctx=64, d_vocab=50)
    transformer = Transformer(cfg, seed=0)
    before = {name: _snapshot(m) for name, m in {**models, "tf": transformer}.items()}
    jobs = [(cell, seed) for seed in range(6) for cell in ("rnn", "lstm", "gru", "tf")]

    def run(job):
        cell, seed = job
        X = gf.synthetic_inputs(40 + seed, 16, seed)
        if cell == "tf":
            return gf.transformer_gradient_flow(transformer, X, 30)["grad_X"]
        flow = gf.recurrent_gradient_flow(models[cell], X, 30)
        norms = gf.step_jacobian_norms(models[cell], X)
        return np.concatenate([flow["grad_H"], flow["grad_X"], norms])

    # The serial reference runs on a worker thread too: torch's intra-op thread count is
    # per thread (OpenMP), and an earlier test may have changed the main thread's, which
    # changes the order of float sums, not whether the callers share anything.
    with ThreadPoolExecutor(max_workers=1) as one:
        serial = list(one.map(run, jobs))
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(run, jobs * 2))
    for got, expected in zip(parallel, serial * 2, strict=True):
        np.testing.assert_array_equal(got, expected)
    for name, module in {**models, "tf": transformer}.items():
        assert not module.training
        for (value, requires_grad, grad), p in zip(before[name], module.parameters(), strict=True):
            assert torch.equal(value, p) and not requires_grad and not p.requires_grad
            assert grad is None and p.grad is None


def test_a_model_with_trainable_parameters_is_refused():
    cfg = TransformerConfig(d_model=16, n_heads=2, d_head=8, n_layers=1, n_ctx=12, d_vocab=50)
    with pytest.raises(ValueError):
        gf.transformer_gradient_flow(Transformer(cfg, requires_grad=True), torch.zeros(3, 16), 1)


def test_clipping_rescales_everything_and_keeps_the_early_share():
    rows = np.random.default_rng(0).normal(size=(20, 4)) * np.geomspace(1e-3, 1e3, 20)[:, None]
    summary = gf.clip_summary(rows, 19, threshold=1.0)
    assert summary["total"] == pytest.approx(np.linalg.norm(rows), rel=1e-5)
    assert summary["norm_clipped"] == pytest.approx(1.0, rel=1e-4)
    assert summary["early_share_clipped"] == pytest.approx(summary["early_share"], rel=1e-5)
    assert summary["n_early"] == 5
    expected = (rows[:5] ** 2).sum() / (rows**2).sum()
    assert summary["early_share"] == pytest.approx(expected, rel=1e-5)
    small = gf.clip_summary(rows * 1e-9, 19, threshold=1.0)  # below the threshold: unchanged
    assert small["norm_clipped"] == pytest.approx(small["norm"], rel=1e-6)


def test_clipping_cannot_repair_an_overflowed_gradient():
    rows = np.ones((8, 3), dtype=np.float32)
    rows[2, 1] = np.inf
    summary = gf.clip_summary(rows, 7, threshold=1.0)
    assert not np.isfinite(summary["total"]) and not np.isfinite(summary["norm_clipped"])


def test_settings_are_kept_within_limits_with_a_note():
    settings, notes = gf.clean_settings(length=10_000, num_hiddens=9999, radius=7, clip=-1)
    assert settings.length == gf.MAX_T and settings.num_hiddens == 256
    assert settings.radius == 1.5 and settings.clip > 0
    assert {n.code for n in notes} == {"recurrent_length_capped", "recurrent_hidden_capped"}
    garbage, notes = gf.clean_settings(
        length="abc", radius="nan", activation="<b>", init=None, forget_bias="inf", source=3
    )
    assert garbage == gf.FlowSettings() and not notes
    assert gf.loss_step(10, 3) == 6 and gf.loss_step(10, 50) == 0


def test_a_visitor_s_radius_has_one_source_inside_what_a_config_accepts():
    """The slider (components/ui/parts/recurrent/controls.py reads gf.RADIUS_RANGE), a
    link's clamp and the server's clamp are one range, the recurrent model's; its config
    accepts more."""
    assert gf.RADIUS_RANGE is recurrent.RADIUS_RANGE
    lo, hi = gf.RADIUS_RANGE
    assert 0 <= lo < 1 < hi <= recurrent.MAX_RADIUS
    for asked, kept in ((0.0, lo), (lo, lo), (1.0, 1.0), (hi, hi), (recurrent.MAX_RADIUS, hi)):
        assert gf.clean_settings(radius=asked)[0].radius == kept
    for radius in (lo, hi, recurrent.MAX_RADIUS):
        assert RecurrentConfig(radius=radius).radius == radius
    with pytest.raises(ValueError):
        RecurrentConfig(radius=recurrent.MAX_RADIUS * 1.01)


@pytest.mark.parametrize(
    ("cell", "n_h", "kw"),
    [("rnn", 16, {}), ("rnn", 16, dict(activation="relu")), ("lstm", 8, {}), ("gru", 16, {})],
)
def test_spectra_from_the_flows_own_pass_are_step_jacobian_norms(cell, n_h, kw):
    """The lesson takes the step Jacobian spectra from the gradient flow's forward pass:
    the very numbers a separate pass gives, at the steps `jacobian_steps` picks."""
    model = _model(cell, n_in=6, n_h=n_h, radius=1.2, **kw)
    X = gf.synthetic_inputs(40, 6, seed=3)
    flow = gf.recurrent_gradient_flow(model, X, 30, spectra=True)
    steps = gf.jacobian_steps(40, n_h * (2 if cell == "lstm" else 1))
    np.testing.assert_array_equal(flow["jacobian_steps"], steps)
    np.testing.assert_array_equal(flow["jacobian_norms"], gf.step_jacobian_norms(model, X, steps))
    # Sampled steps, beyond the budget, come from the same pass too.
    few = gf.jacobian_steps(40, n_h, budget=20 * n_h**3)
    trace = {name: torch.from_numpy(v) for name, v in model.forward_numpy(X.numpy()).items()}
    np.testing.assert_array_equal(
        gf.trace_jacobian_norms(model, trace, few), gf.step_jacobian_norms(model, X, few)
    )
    # and, up to float32 rounding, from torch's forward pass
    with torch.no_grad():
        np.testing.assert_allclose(
            gf.trace_jacobian_norms(model, model(X), few), flow["jacobian_norms"][few], rtol=1e-5
        )
    plain = gf.recurrent_gradient_flow(model, X, 30)
    for name, value in plain.items():
        np.testing.assert_array_equal(flow[name], value)


def test_a_linear_rnns_gradient_does_not_depend_on_its_inputs():
    """Why the lesson measures its linear orthogonal RNN on zero inputs of the sentence's
    length: ∂L/∂H_t = u·W_hhᵀ^(τ−t) reads no input, so any inputs give the same numbers."""
    model = _model(n_in=8, n_h=32, activation="linear", init="orthogonal", radius=1.1)
    sentence_like = gf.synthetic_inputs(25, 8, seed=7) * 3.0
    np.testing.assert_array_equal(
        gf.recurrent_gradient_flow(model, sentence_like, 20)["grad_H"],
        gf.input_free_grad_H(model, 25, 20),
    )


def test_the_lessons_inputs_are_the_token_vectors_or_a_synthetic_sequence():
    model = Transformer(TransformerConfig(d_vocab=11, d_model=8, n_heads=2, d_mlp=16))
    X = gf.lesson_inputs(model, (3, 0, 3, 10), 4)
    assert torch.equal(X, model.W_E[[3, 0, 3, 10]]) and not X.requires_grad
    assert torch.equal(gf.lesson_inputs(model, None, 6), gf.synthetic_inputs(6, 8))
