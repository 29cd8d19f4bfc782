"""Linear attention (models/nets/linear_attention.py): its parallel and recurrent forms held to
each other and to a direct sum written here, exactly causal, and its one layer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models.nets.linear_attention import (
    LinearAttentionConfig,
    LinearAttentionLayer,
    feature_map,
    linear_attention_parallel,
    linear_attention_recurrent,
    state_numbers,
)

SMALL = LinearAttentionConfig(d_model=12, n_heads=3, d_head=4)


def _qkv(n_heads=3, n_pos=9, d_head=5, d_v=None, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n_heads, n_pos, d_head, generator=g, dtype=dtype)
    k = torch.randn(n_heads, n_pos, d_head, generator=g, dtype=dtype)
    v = torch.randn(n_heads, n_pos, d_v or d_head, generator=g, dtype=dtype)
    return q, k, v


def _X(n_pos=8, d_model=12, seed=1, dtype=torch.float64, batch=()):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*batch, n_pos, d_model, generator=g, dtype=dtype)


# --- the feature map --------------------------------------------------------------------------


def test_the_feature_map_is_elu_plus_one_and_positive():
    x = torch.linspace(-30, 30, 601, dtype=torch.float64)
    assert torch.equal(feature_map(x), F.elu(x) + 1)
    assert bool((feature_map(x) > 0).all())
    # Below 0 it is e^x, above it x + 1: closed forms, not elu again. (Computed as
    # expm1(x) + 1, it is e^x to within a rounding of 1, not of e^x.)
    torch.testing.assert_close(feature_map(x[x < 0]), torch.exp(x[x < 0]), rtol=0, atol=1e-15)
    torch.testing.assert_close(feature_map(x[x >= 0]), x[x >= 0] + 1, rtol=0, atol=0)


# --- the two forms ----------------------------------------------------------------------------


@pytest.mark.parametrize("n_pos", [1, 2, 7, 30])
def test_the_parallel_and_recurrent_forms_give_the_same_outputs(n_pos):
    q, k, v = _qkv(n_pos=n_pos, seed=n_pos)
    _, z_parallel = linear_attention_parallel(q, k, v)
    z_recurrent, _, _ = linear_attention_recurrent(q, k, v)
    assert z_parallel.shape == z_recurrent.shape == (3, n_pos, 5)
    assert float((z_parallel - z_recurrent).abs().max()) <= 1e-6


def test_the_pattern_rows_sum_to_one_and_are_exactly_zero_above_the_diagonal():
    q, k, v = _qkv(n_pos=11)
    pattern, _ = linear_attention_parallel(q, k, v)
    assert pattern.shape == (3, 11, 11)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(3, 11, dtype=torch.float64))
    above = torch.ones(11, 11, dtype=torch.bool).triu(1)
    assert bool((pattern[:, above] == 0).all())
    assert bool((pattern[:, ~above] > 0).all())


def test_both_forms_match_a_direct_sum_over_the_keys_each_query_sees():
    q, k, v = _qkv(n_pos=8, d_v=6, seed=4)
    pattern, z_parallel = linear_attention_parallel(q, k, v)
    z_recurrent, _, _ = linear_attention_recurrent(q, k, v)
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    expected = torch.zeros(3, 8, 6, dtype=torch.float64)
    weights = torch.zeros(3, 8, 8, dtype=torch.float64)
    for h in range(3):
        for i in range(8):
            similarities = [float(phi_q[h, i] @ phi_k[h, j]) for j in range(i + 1)]
            total = sum(similarities)
            for j, s in enumerate(similarities):
                weights[h, i, j] = s / total
                expected[h, i] += s * v[h, j] / total
    torch.testing.assert_close(pattern, weights, rtol=0, atol=1e-12)
    torch.testing.assert_close(z_parallel, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(z_recurrent, expected, rtol=0, atol=1e-12)


def test_the_recurrent_states_are_running_sums_of_key_value_products_and_keys():
    q, k, v = _qkv(n_pos=6, d_v=3, seed=5)
    _, states, norms = linear_attention_recurrent(q, k, v)
    assert states.shape == (6, 3, 5, 3) and norms.shape == (6, 3, 5)
    phi_k = F.elu(k) + 1
    for t in range(6):
        S = sum(torch.outer(phi_k[1, j], v[1, j]) for j in range(t + 1))
        n = sum(phi_k[1, j] for j in range(t + 1))
        torch.testing.assert_close(states[t, 1], S, rtol=0, atol=1e-12)
        torch.testing.assert_close(norms[t, 1], n, rtol=0, atol=1e-12)


def test_float32_inputs_are_computed_in_float32():
    q, k, v = _qkv(dtype=torch.float32)
    pattern, z = linear_attention_parallel(q, k, v)
    z_recurrent, states, norms = linear_attention_recurrent(q, k, v)
    assert {t.dtype for t in (pattern, z, z_recurrent, states, norms)} == {torch.float32}
    torch.testing.assert_close(z, z_recurrent, rtol=0, atol=1e-5)


def test_the_state_is_d_head_squared_plus_d_head_floats_per_head():
    assert state_numbers(16, 4) == 4 * (16 * 16 + 16)
    q, k, v = _qkv(n_heads=2, d_head=3)
    _, states, norms = linear_attention_recurrent(q, k, v)
    assert states[-1].numel() + norms[-1].numel() == state_numbers(3, 2)
    with pytest.raises(ValueError):
        state_numbers(0, 4)


# --- causality --------------------------------------------------------------------------------


def _changed_at(tensors, position, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for x in tensors:
        x = x.clone()
        x[:, position] = torch.randn(x[:, position].shape, generator=g, dtype=x.dtype) * 5
        out.append(x)
    return out


@pytest.mark.parametrize("position", [9, 4])
def test_a_later_token_changes_no_earlier_output_in_either_form(position):
    q, k, v = _qkv(n_pos=10, seed=6)
    q2, k2, v2 = _changed_at((q, k, v), position, seed=7)
    pattern, z = linear_attention_parallel(q, k, v)
    pattern2, z2 = linear_attention_parallel(q2, k2, v2)
    assert torch.equal(z[:, :position], z2[:, :position])
    assert torch.equal(pattern[:, :position], pattern2[:, :position])
    assert not torch.equal(z[:, position], z2[:, position])
    z, states, norms = linear_attention_recurrent(q, k, v)
    z2, states2, norms2 = linear_attention_recurrent(q2, k2, v2)
    assert torch.equal(z[:, :position], z2[:, :position])
    assert torch.equal(states[:position], states2[:position])
    assert torch.equal(norms[:position], norms2[:position])


# --- input checks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 9, 5), (3, 8, 5), (3, 8, 5)),  # q and k of different lengths
        ((3, 9, 5), (3, 9, 4), (3, 9, 5)),  # q and k of different widths
        ((3, 9, 5), (3, 9, 5), (2, 9, 5)),  # v with other heads
        ((3, 9, 5), (3, 9, 5), (3, 8, 5)),  # v with other positions
        ((9, 5), (9, 5), (9, 5)),  # no head axis
        ((3, 0, 5), (3, 0, 5), (3, 0, 5)),  # no position
    ],
)
def test_wrong_shapes_raise_value_error(shapes):
    q, k, v = (torch.randn(*s, dtype=torch.float64) for s in shapes)
    for form in (linear_attention_parallel, linear_attention_recurrent):
        with pytest.raises(ValueError):
            form(q, k, v)


def test_integer_or_mixed_dtypes_raise_value_error():
    q, k, v = _qkv()
    for form in (linear_attention_parallel, linear_attention_recurrent):
        with pytest.raises(ValueError):
            form(q.float(), k, v)
        with pytest.raises(ValueError):
            form(q.long(), k.long(), v.long())


# --- the layer --------------------------------------------------------------------------------


def test_the_layer_s_parallel_and_recurrent_modes_agree_with_and_without_a_batch():
    layer = LinearAttentionLayer(SMALL, seed=2)
    for X in (_X(), _X(batch=(3,))):
        parallel = layer(X, mode="parallel")
        recurrent = layer(X, mode="recurrent")
        assert parallel.shape == X.shape and parallel.dtype == torch.float64
        assert float((parallel - recurrent).abs().max()) <= 1e-6
    batch = _X(batch=(3,))
    torch.testing.assert_close(layer(batch)[1], layer(batch[1]), rtol=0, atol=1e-12)


def test_the_layer_is_the_functions_on_its_projections():
    layer = LinearAttentionLayer(SMALL, seed=3)
    X = _X()
    W = {name: getattr(layer, name).detach().double() for name in ("W_Q", "W_K", "W_V", "W_O")}
    q, k, v = (torch.stack([X @ W[name][h] for h in range(3)]) for name in ("W_Q", "W_K", "W_V"))
    _, z = linear_attention_parallel(q, k, v)
    expected = sum(z[h] @ W["W_O"][h] for h in range(3))
    torch.testing.assert_close(layer(X), expected, rtol=0, atol=1e-12)


def test_the_layer_s_weights_have_the_transformer_s_shapes_and_scales():
    cfg = LinearAttentionConfig()
    layer = LinearAttentionLayer(cfg, seed=0)
    for name in ("W_Q", "W_K", "W_V"):
        weight = getattr(layer, name)
        assert weight.shape == (4, 64, 16)
        assert abs(float(weight.std()) - 64**-0.5) < 0.1 * 64**-0.5
    assert layer.W_O.shape == (4, 16, 64)
    assert abs(float(layer.W_O.std()) - 64**-0.5) < 0.1 * 64**-0.5


def test_the_layer_is_built_from_its_seed():
    a, b = LinearAttentionLayer(SMALL, seed=5), LinearAttentionLayer(SMALL, seed=5)
    other = LinearAttentionLayer(SMALL, seed=6)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.W_Q, other.W_Q)


def test_a_frozen_layer_has_no_parameter_that_needs_a_gradient():
    layer = LinearAttentionLayer(SMALL)
    assert not any(p.requires_grad for p in layer.parameters())
    assert not layer.training
    trainable = LinearAttentionLayer(SMALL, requires_grad=True)
    assert all(p.requires_grad for p in trainable.parameters())
    trainable(_X(dtype=torch.float32), mode="recurrent").pow(2).sum().backward()
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in trainable.parameters())


@pytest.mark.parametrize("mode", ["parallel", "recurrent"])
@pytest.mark.parametrize("row", [7, 3])
def test_a_later_row_of_X_changes_no_earlier_output_of_the_layer(mode, row):
    layer = LinearAttentionLayer(SMALL, seed=4)
    X = _X()
    changed = X.clone()
    changed[row:] = changed[row:] * -3 + 1
    out, out_changed = layer(X, mode=mode), layer(changed, mode=mode)
    assert torch.equal(out[:row], out_changed[:row])
    assert not torch.equal(out[row], out_changed[row])


def test_the_traces_have_the_names_and_shapes_of_each_mode():
    layer = LinearAttentionLayer(SMALL, seed=1)
    X = _X(n_pos=6, dtype=torch.float32)
    out, parallel = layer.run_with_cache(X, mode="parallel")
    _, recurrent = layer.run_with_cache(X, mode="recurrent")
    common = dict(hook_q=(3, 6, 4), hook_k=(3, 6, 4), hook_v=(3, 6, 4), hook_z=(3, 6, 4))
    common["hook_result"] = (6, 12)
    assert {k: v.shape for k, v in parallel.items()} == common | {"hook_pattern": (3, 6, 6)}
    assert {k: v.shape for k, v in recurrent.items()} == common | {
        "la_state": (6, 3, 4, 4),
        "la_norm": (6, 3, 4),
    }
    assert all(isinstance(v, np.ndarray) for v in (*parallel.values(), *recurrent.values()))
    np.testing.assert_array_equal(parallel["hook_result"], out.numpy())
    np.testing.assert_allclose(recurrent["hook_z"], parallel["hook_z"], rtol=0, atol=1e-5)


def test_the_trace_is_fresh_arrays_a_caller_may_change():
    layer = LinearAttentionLayer(SMALL, seed=1)
    X = _X(dtype=torch.float32)
    _, first = layer.run_with_cache(X, mode="recurrent")
    kept = {name: value.copy() for name, value in first.items()}
    for value in first.values():
        value[...] = 123.0
    _, second = layer.run_with_cache(X, mode="recurrent")
    for name, value in kept.items():
        np.testing.assert_array_equal(second[name], value)
    assert not np.shares_memory(second["hook_q"], first["hook_q"])


@pytest.mark.parametrize(
    "X",
    [
        torch.zeros(5, 11),  # d_model is 12
        torch.zeros(0, 12),  # no row
        torch.zeros(12),  # no position axis
        torch.zeros(2, 2, 5, 12),  # two batch axes
        torch.zeros(5, 12, dtype=torch.long),
    ],
)
def test_the_layer_refuses_inputs_of_the_wrong_shape_or_dtype(X):
    layer = LinearAttentionLayer(SMALL)
    with pytest.raises(ValueError):
        layer(X)


def test_a_trace_is_of_one_sequence_and_modes_are_named():
    layer = LinearAttentionLayer(SMALL)
    with pytest.raises(ValueError):
        layer.run_with_cache(_X(batch=(2,)))
    with pytest.raises(ValueError):
        layer(_X(), mode="chunkwise")


@pytest.mark.parametrize("sizes", [dict(d_model=0), dict(n_heads=-1), dict(d_head=2.5)])
def test_the_config_refuses_sizes_that_are_not_positive_integers(sizes):
    with pytest.raises(ValueError):
        LinearAttentionConfig(**sizes)
