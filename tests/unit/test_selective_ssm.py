"""The selective state space layer: its two scans agree, its gradients are finite differences,
its time-invariant form is a convolution, it is causal, frozen and built exactly."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models.nets.selective_ssm import (
    MAX_POS,
    MODES,
    SelectiveSSM,
    SSMConfig,
    scan_levels,
    selective_scan_parallel,
    selective_scan_sequential,
)

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "DESIGN.md"
TINY = dict(d_model=4, d_inner=6, d_state=3, dt_min=0.05, dt_max=0.8)
LENGTHS = (1, 2, 3, 7, 64, 100)
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-10}
NAMES = ("ssm_u", "ssm_delta", "ssm_B", "ssm_C", "ssm_h", "ssm_y", "ssm_out", "ssm_decay")


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def scan_inputs(n_pos: int, dtype: torch.dtype, batch: tuple[int, ...] = (), seed: int = 0):
    """Random (u, delta, A, B, C, D): Δ positive, A negative, of one dtype."""
    g, d_inner, d_state = _generator(seed), 5, 4
    u = torch.randn(*batch, n_pos, d_inner, generator=g, dtype=torch.float64)
    delta = F.softplus(torch.randn(*batch, n_pos, d_inner, generator=g, dtype=torch.float64) - 1)
    A = -torch.exp(torch.randn(d_inner, d_state, generator=g, dtype=torch.float64))
    B = torch.randn(*batch, n_pos, d_state, generator=g, dtype=torch.float64)
    C = torch.randn(*batch, n_pos, d_state, generator=g, dtype=torch.float64)
    D = torch.randn(d_inner, generator=g, dtype=torch.float64)
    return tuple(t.to(dtype) for t in (u, delta, A, B, C, D))


def numpy_scan(u, delta, A, B, C, D):
    """One sequence's (y, h), element by element in float64 numpy, from h_{−1} = 0."""
    u, delta, A, B, C, D = (np.asarray(t, dtype=np.float64) for t in (u, delta, A, B, C, D))
    n_pos, d_inner = u.shape
    h = np.zeros((n_pos, d_inner, A.shape[1]))
    y = np.zeros((n_pos, d_inner))
    previous = np.zeros(A.shape)
    for t in range(n_pos):
        for n in range(d_inner):
            previous[n] = np.exp(delta[t, n] * A[n]) * previous[n] + delta[t, n] * u[t, n] * B[t]
            y[t, n] = previous[n] @ C[t] + D[n] * u[t, n]
        h[t] = previous
    return y, h


def tiny_layer(seed: int = 1, **kw) -> SelectiveSSM:
    return SelectiveSSM(SSMConfig(**{**TINY, **kw}), seed=seed)


def inputs(n_pos: int, batch: tuple[int, ...] = (), dtype=torch.float32, seed: int = 0):
    shape = (*batch, n_pos, TINY["d_model"])
    return torch.randn(*shape, generator=_generator(seed), dtype=torch.float64).to(dtype)


# --- the two scans --------------------------------------------------------------------------


@pytest.mark.parametrize("n_pos", [1, 2, 3, 7, 20])
def test_the_sequential_scan_equals_an_element_by_element_loop(n_pos):
    args = scan_inputs(n_pos, torch.float64)
    y, h = selective_scan_sequential(*args)
    y_ref, h_ref = numpy_scan(*args)
    assert np.abs(y.numpy() - y_ref).max() <= 1e-12
    assert np.abs(h.numpy() - h_ref).max() <= 1e-12


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize("n_pos", LENGTHS)
def test_the_parallel_scan_equals_the_sequential_loop(n_pos, batch, dtype):
    args = scan_inputs(n_pos, dtype, batch, seed=n_pos)
    y_seq, h_seq = selective_scan_sequential(*args)
    y_par, h_par = selective_scan_parallel(*args)
    assert y_par.dtype == dtype and y_par.shape == (*batch, n_pos, 5)
    assert h_par.shape == (*batch, n_pos, 5, 4)
    assert (y_par - y_seq).abs().max() <= TOLERANCE[dtype]
    assert (h_par - h_seq).abs().max() <= TOLERANCE[dtype]


def test_a_batched_scan_equals_each_sequence_scanned_alone():
    u, delta, A, B, C, D = scan_inputs(9, torch.float64, (2,))
    for scan in (selective_scan_sequential, selective_scan_parallel):
        y, h = scan(u, delta, A, B, C, D)
        for i in range(2):
            y_one, h_one = scan(u[i], delta[i], A, B[i], C[i], D)
            assert (y[i] - y_one).abs().max() <= 1e-12
            assert (h[i] - h_one).abs().max() <= 1e-12


def test_scan_levels_is_the_ceiling_of_log2():
    assert scan_levels(1) == 0
    for n in range(2, 5000):
        assert scan_levels(n) == math.ceil(math.log2(n))
    with pytest.raises(ValueError):
        scan_levels(0)


@pytest.mark.parametrize(
    "change",
    [
        lambda a: (a[0][:, :2], *a[1:]),  # u narrower than delta
        lambda a: (*a[:2], -a[2], *a[3:]),  # A positive: a state that grows
        lambda a: (a[0], -a[1], *a[2:]),  # negative step sizes
        lambda a: (a[0].float(), *a[1:]),  # mixed dtypes
        lambda a: (a[0] * float("nan"), *a[1:]),
    ],
)
def test_a_scan_refuses_inputs_that_do_not_fit(change):
    args = change(scan_inputs(4, torch.float64))
    for scan in (selective_scan_sequential, selective_scan_parallel):
        with pytest.raises(ValueError):
            scan(*args)


def test_a_scan_refuses_more_positions_than_the_bound():
    g = _generator(0)
    u = torch.randn(MAX_POS + 1, 1, generator=g)
    args = (u, u.abs(), -torch.ones(1, 1), u, u, torch.ones(1))
    with pytest.raises(ValueError, match="pos"):
        selective_scan_parallel(*args)


# --- the layer ------------------------------------------------------------------------------


@pytest.mark.parametrize("selective", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("n_pos", LENGTHS)
def test_the_layers_two_modes_give_the_same_output(n_pos, batch, dtype, selective):
    layer = tiny_layer(selective=selective)
    X = inputs(n_pos, batch, dtype, seed=n_pos)
    parallel, sequential = layer(X, mode="parallel"), layer(X, mode="sequential")
    assert parallel.dtype == dtype and parallel.shape == X.shape
    assert (parallel - sequential).abs().max() <= TOLERANCE[dtype]


def test_a_batch_through_the_layer_equals_each_sequence_alone():
    layer, X = tiny_layer(), inputs(8, (3,), torch.float64)
    out = layer(X)
    for i in range(3):
        assert (out[i] - layer(X[i])).abs().max() <= 1e-12


def central_differences(loss, tensor: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """∂loss/∂tensor entry by entry, (L(x + ε) − L(x − ε)) / 2ε, the tensor restored after."""
    grad = torch.zeros_like(tensor)
    flat, out = tensor.detach().view(-1), grad.view(-1)
    with torch.no_grad():
        for i in range(flat.numel()):
            original = flat[i].item()
            flat[i] = original + eps
            above = loss().item()
            flat[i] = original - eps
            below = loss().item()
            flat[i] = original
            out[i] = (above - below) / (2 * eps)
    return grad


@pytest.mark.parametrize("mode", MODES)
def test_gradients_for_the_input_and_w_delta_are_central_differences(mode):
    layer = SelectiveSSM(SSMConfig(**TINY), seed=2, requires_grad=True).double()
    X = inputs(6, dtype=torch.float64, seed=3).requires_grad_(True)
    readout = torch.randn(6, TINY["d_model"], generator=_generator(4), dtype=torch.float64)

    def loss() -> torch.Tensor:
        return (layer(X, mode=mode) * readout).sum()

    loss().backward()
    for tensor in (X, layer.W_delta):
        numeric = central_differences(loss, tensor)
        assert tensor.grad.abs().max() > 0
        assert (tensor.grad - numeric).abs().max() <= 1e-6 * tensor.grad.abs().max()


def lti_weights(layer: SelectiveSSM) -> dict[str, torch.Tensor]:
    """The time-invariant layer's numbers in float64, read from its parameters."""
    names = ("W_in", "b_delta", "A_log", "B_fixed", "C_fixed", "D", "W_out")
    w = {name: getattr(layer, name).detach().double() for name in names}
    w["delta"] = torch.log1p(torch.exp(w["b_delta"]))  # softplus, [d_inner]
    w["A_bar"] = torch.exp(w["delta"][:, None] * -torch.exp(w["A_log"]))  # [d_inner, d_state]
    w["B_bar"] = w["delta"][:, None] * w["B_fixed"][None, :]
    return w


def test_without_selection_the_layer_is_a_time_invariant_recurrence_and_a_convolution():
    layer = tiny_layer(selective=False)
    X = inputs(30, dtype=torch.float64, seed=5)
    w = lti_weights(layer)
    u = X @ w["W_in"]
    n_pos, d_inner = u.shape
    # h_t = diag(exp(ΔA)) h_{t−1} + Δ B u_t with constant Δ, B, C.
    h = torch.zeros(d_inner, TINY["d_state"], dtype=torch.float64)
    recurrence = torch.zeros(n_pos, d_inner, dtype=torch.float64)
    for t in range(n_pos):
        h = w["A_bar"] * h + w["B_bar"] * u[t][:, None]
        recurrence[t] = h @ w["C_fixed"] + w["D"] * u[t]
    # The same as a causal convolution of u with K_k = C (exp(ΔA))^k (Δ B), per channel.
    powers = w["A_bar"][None] ** torch.arange(n_pos, dtype=torch.float64)[:, None, None]
    kernel = (powers * w["B_bar"][None] * w["C_fixed"][None, None, :]).sum(-1)  # [k, d_inner]
    convolution = torch.stack(
        [sum(kernel[k] * u[t - k] for k in range(t + 1)) + w["D"] * u[t] for t in range(n_pos)]
    )
    assert (recurrence - convolution).abs().max() <= 1e-10
    assert kernel[1:].abs().max() > 1e-3  # the past reaches the output
    for mode in MODES:
        out = layer(X, mode=mode)
        assert (out - recurrence @ w["W_out"]).abs().max() <= 1e-10
        assert (out - convolution @ w["W_out"]).abs().max() <= 1e-10


def test_only_the_selective_layer_changes_its_step_size_along_the_sequence():
    X = inputs(10)
    _, selective = tiny_layer().run_with_cache(X)
    _, fixed = tiny_layer(selective=False).run_with_cache(X)
    for name in ("ssm_delta", "ssm_B", "ssm_C", "ssm_decay"):
        assert np.array_equal(fixed[name], np.broadcast_to(fixed[name][:1], fixed[name].shape))
        assert np.ptp(selective[name], axis=0).max() > 1e-3


@pytest.mark.parametrize("selective", [True, False])
@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("mode", MODES)
def test_changing_later_inputs_leaves_every_earlier_output_exactly_equal(mode, batch, selective):
    layer, X = tiny_layer(selective=selective), inputs(40, batch)
    for cut in (1, 17, 39):
        changed = X.clone()
        changed[..., cut:, :] = inputs(40 - cut, batch, seed=cut + 100)
        before, after = layer(X, mode=mode), layer(changed, mode=mode)
        assert torch.equal(before[..., :cut, :], after[..., :cut, :])
        assert not torch.equal(before[..., cut:, :], after[..., cut:, :])


# --- the trace ------------------------------------------------------------------------------


@pytest.mark.parametrize("selective", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_the_trace_holds_every_name_with_its_shape_and_the_layers_numbers(mode, selective):
    layer, X = tiny_layer(selective=selective), inputs(9)
    out, trace = layer.run_with_cache(X, mode=mode)
    p, n, s, m = 9, TINY["d_inner"], TINY["d_state"], TINY["d_model"]
    shapes = dict(
        ssm_u=(p, n),
        ssm_delta=(p, n),
        ssm_B=(p, s),
        ssm_C=(p, s),
        ssm_h=(p, n, s),
        ssm_y=(p, n),
        ssm_out=(p, m),
        ssm_decay=(p, n),
    )
    assert {name: value.shape for name, value in trace.items()} == shapes
    assert all(value.dtype == np.float32 for value in trace.values())
    assert torch.equal(torch.from_numpy(trace["ssm_out"]), out)
    decay = np.exp(trace["ssm_delta"][..., None] * -np.arange(1, s + 1)).mean(-1)
    assert np.abs(trace["ssm_decay"] - decay).max() <= 1e-6
    assert (trace["ssm_decay"] > 0).all() and (trace["ssm_decay"] <= 1).all()
    assert np.abs(trace["ssm_y"] @ layer.W_out.detach().numpy() - trace["ssm_out"]).max() < 1e-5


def test_a_batched_trace_puts_the_batch_axis_first():
    _, trace = tiny_layer().run_with_cache(inputs(5, (2,)))
    assert trace["ssm_h"].shape == (2, 5, TINY["d_inner"], TINY["d_state"])
    assert trace["ssm_decay"].shape == (2, 5, TINY["d_inner"])


def test_every_trace_is_fresh_arrays_the_caller_may_change():
    layer, X = tiny_layer(selective=False), inputs(6)
    _, first = layer.run_with_cache(X)
    kept = {name: value.copy() for name, value in first.items()}
    for value in first.values():
        value[...] = 7.0
    _, second = layer.run_with_cache(X)
    for name, value in second.items():
        assert np.array_equal(value, kept[name])
        assert value.flags.owndata and value.flags.writeable
        assert not np.shares_memory(value, first[name])
    assert not np.shares_memory(second["ssm_out"], layer.W_out.detach().numpy())


def test_the_glossary_lists_every_trace_name_with_its_shape():
    text = DESIGN.read_text(encoding="utf-8")
    section = text.split("\n### Selective state space\n", 1)[1].split("\n#", 1)[0]
    listed = dict(re.findall(r"^- `(ssm_\w+)` `\[([^\]]+)\]`", section, flags=re.M))
    symbols = dict(pos=9, **{k: TINY[k] for k in ("d_model", "d_inner", "d_state")})
    _, trace = tiny_layer().run_with_cache(inputs(9))
    assert set(listed) == set(trace) == set(NAMES)
    for name, shape in listed.items():
        assert trace[name].shape == tuple(symbols[d.strip()] for d in shape.split(","))


# --- building ------------------------------------------------------------------------------


def test_a_layer_is_frozen_unless_a_trainable_copy_is_asked_for():
    frozen = tiny_layer()
    assert not any(p.requires_grad for p in frozen.parameters()) and not frozen.training
    trainable = SelectiveSSM(SSMConfig(**TINY), seed=1, requires_grad=True)
    assert all(p.requires_grad for p in trainable.parameters()) and trainable.training
    trainable(inputs(5)).sum().backward()
    assert all(p.grad is not None and p.grad.abs().max() > 0 for p in trainable.parameters())


@pytest.mark.parametrize("selective", [True, False])
def test_one_config_and_seed_build_the_same_weights_and_other_seeds_others(selective):
    weights = [dict(tiny_layer(seed, selective=selective).named_parameters()) for seed in (3, 3, 4)]
    assert weights[0].keys() == weights[2].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    drawn = [k for k in weights[0] if k not in ("A_log", "D")]
    assert all(not torch.equal(weights[0][k], weights[2][k]) for k in drawn)


def test_the_weights_start_as_mamba_starts_them():
    cfg = SSMConfig(d_model=8, d_inner=1000, d_state=5, dt_min=0.002, dt_max=0.2)
    layer = SelectiveSSM(cfg, seed=0)
    A = layer.state_matrix(torch.float64)
    assert torch.allclose(A, -torch.arange(1.0, 6.0, dtype=torch.float64).expand(1000, 5))
    assert torch.equal(layer.D, torch.ones(1000))
    steps = F.softplus(layer.b_delta.double())
    assert steps.min() >= 0.002 * (1 - 1e-5) and steps.max() <= 0.2 * (1 + 1e-5)
    # log-uniform: the logs spread evenly, their mean halfway between log dt_min and log dt_max
    assert abs(steps.log().mean() - math.log(0.02)) < 0.2
    assert layer.W_delta.abs().max() <= (1 + 1e-6) / math.sqrt(1000)


def test_the_time_invariant_layer_shares_the_selective_layers_other_weights():
    selective, fixed = tiny_layer(seed=5), tiny_layer(seed=5, selective=False)
    for name in ("W_in", "b_delta", "A_log", "D", "W_out"):
        assert torch.equal(getattr(selective, name), getattr(fixed, name))
    assert not hasattr(fixed, "W_delta") and not hasattr(selective, "B_fixed")


@pytest.mark.parametrize(
    "X",
    [
        torch.zeros(MAX_POS + 1, TINY["d_model"]),
        torch.full((3, TINY["d_model"]), float("nan")),
        torch.tensor([[0.0, float("inf"), 0.0, 0.0]]),
        torch.zeros(3, TINY["d_model"] + 1),
        torch.zeros(1, 1, 3, TINY["d_model"]),
        torch.zeros(0, TINY["d_model"]),
        torch.zeros(3, TINY["d_model"], dtype=torch.int64),
    ],
)
def test_the_layer_refuses_inputs_it_cannot_read(X):
    for mode in MODES:
        with pytest.raises(ValueError):
            tiny_layer()(X, mode=mode)


def test_the_layer_refuses_an_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        tiny_layer()(inputs(3), mode="chunkwise")


@pytest.mark.parametrize(
    "kw",
    [
        dict(d_state=0),
        dict(d_inner=2.5),
        dict(d_model=True),
        dict(dt_min=0.2, dt_max=0.1),
        dict(dt_min=float("nan")),
        dict(dt_max=float("inf")),
        dict(dt_min=0.0),
        dict(selective="no"),
    ],
)
def test_a_config_refuses_sizes_and_steps_that_build_no_layer(kw):
    with pytest.raises(ValueError):
        SSMConfig(**kw)
