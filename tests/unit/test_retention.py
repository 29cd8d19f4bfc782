"""Retention (models/nets/retention.py): its parallel, recurrent and chunkwise forms held to
each other and to sums written here, RetNet's decays, and exact causality."""

from __future__ import annotations

import pytest
import torch

from models.nets.retention import (
    decay_mask,
    default_gammas,
    retention_chunkwise,
    retention_parallel,
    retention_recurrent,
)

GAMMAS = torch.tensor([0.5, 0.9, 0.99, 1.0], dtype=torch.float64)


def _qkv(n_heads=4, n_pos=13, d_head=5, d_v=None, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n_heads, n_pos, d_head, generator=g, dtype=dtype)
    k = torch.randn(n_heads, n_pos, d_head, generator=g, dtype=dtype)
    v = torch.randn(n_heads, n_pos, d_v or d_head, generator=g, dtype=dtype)
    return q, k, v


# --- the decays -------------------------------------------------------------------------------


def test_the_default_gammas_are_retnet_s_one_minus_two_to_the_minus_five_minus_h():
    # RetNet: decay = log(1 − 2^(−5 − arange(heads))), γ = its exponential.
    four = torch.tensor([1 - 1 / 32, 1 - 1 / 64, 1 - 1 / 128, 1 - 1 / 256], dtype=torch.float64)
    assert torch.equal(default_gammas(4), four)
    eight = torch.tensor([1 - 2.0 ** -(5 + h) for h in range(8)], dtype=torch.float64)
    assert torch.equal(default_gammas(8), eight)
    assert torch.equal(default_gammas(8)[:4], four)
    with pytest.raises(ValueError):
        default_gammas(0)


def test_the_decay_mask_is_gamma_to_the_distance_on_and_below_the_diagonal():
    D = decay_mask(7, GAMMAS)
    assert D.shape == (4, 7, 7) and D.dtype == torch.float64
    expected = torch.zeros(4, 7, 7, dtype=torch.float64)
    for h, gamma in enumerate(GAMMAS.tolist()):
        for n in range(7):
            for m in range(7):
                expected[h, n, m] = gamma ** (n - m) if n >= m else 0.0
    torch.testing.assert_close(D, expected, rtol=1e-14, atol=0)
    assert bool((D[:, torch.ones(7, 7, dtype=torch.bool).triu(1)] == 0).all())
    assert bool((torch.diagonal(D, dim1=-2, dim2=-1) == 1).all())


def test_the_decay_mask_keeps_a_float32_dtype_and_takes_a_list():
    assert decay_mask(3, GAMMAS.float()).dtype == torch.float32
    torch.testing.assert_close(decay_mask(3, [0.5, 0.9]), decay_mask(3, GAMMAS[:2]))


# --- the three forms --------------------------------------------------------------------------


@pytest.mark.parametrize("n_pos", [1, 2, 13])
def test_the_parallel_and_recurrent_forms_give_the_same_outputs(n_pos):
    q, k, v = _qkv(n_pos=n_pos, d_v=3, seed=n_pos)
    pattern, z_parallel = retention_parallel(q, k, v, GAMMAS)
    z_recurrent, states = retention_recurrent(q, k, v, GAMMAS)
    assert pattern.shape == (4, n_pos, n_pos) and states.shape == (n_pos, 4, 5, 3)
    assert z_parallel.shape == z_recurrent.shape == (4, n_pos, 3)
    assert float((z_parallel - z_recurrent).abs().max()) <= 1e-6


@pytest.mark.parametrize("chunk", [1, 4, 5, 13, 20])
def test_the_chunkwise_form_gives_the_parallel_outputs_whether_the_chunk_divides_or_not(chunk):
    q, k, v = _qkv(n_pos=13, d_v=6, seed=1)
    _, z_parallel = retention_parallel(q, k, v, GAMMAS)
    z_recurrent, _ = retention_recurrent(q, k, v, GAMMAS)
    z_chunkwise = retention_chunkwise(q, k, v, GAMMAS, chunk)
    assert z_chunkwise.shape == (4, 13, 6)
    assert float((z_chunkwise - z_parallel).abs().max()) <= 1e-6
    assert float((z_chunkwise - z_recurrent).abs().max()) <= 1e-6


def test_every_form_matches_a_direct_decayed_sum():
    q, k, v = _qkv(n_pos=9, d_v=2, seed=2)
    expected = torch.zeros(4, 9, 2, dtype=torch.float64)
    for h, gamma in enumerate(GAMMAS.tolist()):
        for n in range(9):
            for m in range(n + 1):
                expected[h, n] += float(q[h, n] @ k[h, m]) * gamma ** (n - m) * v[h, m]
    _, z_parallel = retention_parallel(q, k, v, GAMMAS)
    z_recurrent, _ = retention_recurrent(q, k, v, GAMMAS)
    for z in (z_parallel, z_recurrent, retention_chunkwise(q, k, v, GAMMAS, 4)):
        torch.testing.assert_close(z, expected, rtol=0, atol=1e-12)


def test_the_recurrent_state_is_the_decayed_sum_of_key_value_products():
    q, k, v = _qkv(n_pos=6, seed=3)
    _, states = retention_recurrent(q, k, v, GAMMAS)
    gamma = float(GAMMAS[1])
    for n in range(6):
        S = sum(gamma ** (n - m) * torch.outer(k[1, m], v[1, m]) for m in range(n + 1))
        torch.testing.assert_close(states[n, 1], S, rtol=0, atol=1e-12)


def test_with_gamma_one_retention_is_unnormalised_linear_attention_without_a_feature_map():
    q, k, v = _qkv(n_pos=10, seed=4)
    ones = torch.ones(4, dtype=torch.float64)
    causal = torch.ones(10, 10, dtype=torch.bool).tril()
    scores = torch.einsum("hid,hjd->hij", q, k) * causal
    expected = torch.einsum("hij,hjd->hid", scores, v)
    pattern, z = retention_parallel(q, k, v, ones)
    torch.testing.assert_close(pattern, scores, rtol=0, atol=1e-12)
    torch.testing.assert_close(z, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(retention_recurrent(q, k, v, ones)[0], expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(retention_chunkwise(q, k, v, ones, 3), expected, rtol=0, atol=1e-12)


def test_the_pattern_is_neither_normalised_nor_positive():
    q, k, v = _qkv(n_pos=8, seed=5)
    pattern, _ = retention_parallel(q, k, v, GAMMAS)
    lower = torch.ones(8, 8, dtype=torch.bool).tril()
    assert bool((pattern[:, lower] < 0).any())
    assert not torch.allclose(pattern.sum(-1), torch.ones(4, 8, dtype=torch.float64))


def test_float32_inputs_are_computed_in_float32():
    q, k, v = _qkv(dtype=torch.float32)
    pattern, z = retention_parallel(q, k, v, GAMMAS)
    z_recurrent, states = retention_recurrent(q, k, v, GAMMAS)
    z_chunkwise = retention_chunkwise(q, k, v, GAMMAS, 5)
    assert {t.dtype for t in (pattern, z, z_recurrent, states, z_chunkwise)} == {torch.float32}
    torch.testing.assert_close(z_chunkwise, z, rtol=0, atol=1e-4)


# --- causality --------------------------------------------------------------------------------


def _every_form(q, k, v):
    pattern, z_parallel = retention_parallel(q, k, v, GAMMAS)
    z_recurrent, states = retention_recurrent(q, k, v, GAMMAS)
    chunked = [retention_chunkwise(q, k, v, GAMMAS, c) for c in (1, 4, 5, 20)]
    return [pattern, z_parallel, z_recurrent, *chunked], states


@pytest.mark.parametrize("position", [12, 6])
def test_a_later_token_changes_no_earlier_output_in_any_form(position):
    q, k, v = _qkv(n_pos=13, seed=6)
    changed = []
    g = torch.Generator().manual_seed(7)
    for x in (q, k, v):
        x = x.clone()
        x[:, position] = torch.randn(x[:, position].shape, generator=g, dtype=x.dtype) * 5
        changed.append(x)
    outputs, states = _every_form(q, k, v)
    outputs2, states2 = _every_form(*changed)
    for before, after in zip(outputs, outputs2, strict=True):
        assert torch.equal(before[:, :position], after[:, :position])
        assert not torch.equal(before[:, position], after[:, position])
    assert torch.equal(states[:position], states2[:position])


# --- input checks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "gammas",
    [
        [0.5, 0.9, 0.0, 0.9],
        [0.5, 0.9, 1.01, 0.9],
        [0.5, -0.1, 0.9, 0.9],
        [0.5, float("nan"), 0.9, 0.9],
        [0.5, 0.9, 0.9],  # three gammas for four heads
        [[0.5, 0.9, 0.9, 0.9]],  # not one γ per head
    ],
)
def test_gammas_outside_zero_to_one_or_of_the_wrong_shape_raise_value_error(gammas):
    q, k, v = _qkv(n_pos=5)
    for form in (retention_parallel, retention_recurrent):
        with pytest.raises(ValueError):
            form(q, k, v, gammas)
    with pytest.raises(ValueError):
        retention_chunkwise(q, k, v, gammas, 2)
    if len(gammas) == 4 and not isinstance(gammas[0], list):
        with pytest.raises(ValueError):
            decay_mask(5, gammas)


@pytest.mark.parametrize(
    "shapes",
    [
        ((4, 9, 5), (4, 8, 5), (4, 8, 5)),  # q and k of different lengths
        ((4, 9, 5), (4, 9, 5), (4, 9)),  # v without a width
        ((9, 5), (9, 5), (9, 5)),  # no head axis
        ((4, 0, 5), (4, 0, 5), (4, 0, 5)),  # no position
    ],
)
def test_wrong_shapes_raise_value_error(shapes):
    q, k, v = (torch.randn(*s, dtype=torch.float64) for s in shapes)
    for form in (retention_parallel, retention_recurrent):
        with pytest.raises(ValueError):
            form(q, k, v, GAMMAS)
    with pytest.raises(ValueError):
        retention_chunkwise(q, k, v, GAMMAS, 2)


@pytest.mark.parametrize("chunk", [0, -3, 2.0, True])
def test_a_chunk_that_is_not_a_positive_integer_raises_value_error(chunk):
    q, k, v = _qkv(n_pos=5)
    with pytest.raises(ValueError):
        retention_chunkwise(q, k, v, GAMMAS, chunk)


def test_a_decay_mask_needs_a_positive_length():
    with pytest.raises(ValueError):
        decay_mask(0, GAMMAS)
