"""Positional encodings: the paper's formulas, the rotation identity, RoPE, order blindness."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from models.analysis import positional as pe
from models.nets.transformer import Transformer, TransformerConfig, rope

D = 64
TABLE = pe.sinusoidal_table(512, D)
SMALL = TransformerConfig(d_model=32, n_heads=4, d_head=8, n_layers=2, n_ctx=64, d_vocab=100)
TOKENS = np.array([5, 17, 42, 8, 99, 23, 61, 3])
# The products an output of SMALL accumulates along its longest path: each layer's MLP
# sums d_mlp of them (float32_atol in conftest.py).
ACCUMULATED = SMALL.n_layers * SMALL.d_mlp


def test_sinusoidal_table_equals_the_papers_formula_in_float64():
    expected = np.empty((512, D))
    for pos in range(512):
        for i in range(D // 2):
            angle = pos / 10000 ** (2 * i / D)
            expected[pos, 2 * i] = math.sin(angle)
            expected[pos, 2 * i + 1] = math.cos(angle)
    assert np.abs(TABLE - expected).max() < 1e-6


def test_the_model_adds_that_same_table():
    model = Transformer(replace(SMALL, positional="sinusoidal"))
    _, cache = model.run_with_cache(TOKENS)
    expected = pe.sinusoidal_table(len(TOKENS), SMALL.d_model)
    assert np.abs(cache["hook_pos_embed"] - expected).max() < 1e-6


@settings(max_examples=200, deadline=None)
@given(pos=st.integers(0, 5000), k=st.integers(0, 5000))
def test_rotation_identity_holds_for_any_position_and_offset(pos, k):
    table = pe.sinusoidal_table(pos + k + 1, D)
    predicted = pe.rotation_matrix(k, D) @ table[pos]
    assert np.abs(table[pos + k] - predicted).max() < 1e-6


def test_rotation_identity_over_a_whole_table_and_naive_fit_fails():
    for k in (1, 5, 50, 200):
        assert pe.rotation_errors(TABLE, k).max() < 1e-6
        # One a·x + b per dimension cannot shift a sinusoid: errors of order 1.
        assert pe.per_dimension_fit_errors(TABLE, k).max() > 0.5
    assert pe.max_rotation_error(TABLE, range(0, 256)) < 1e-6


def test_rotation_matrix_is_orthogonal_and_independent_of_position():
    m = pe.rotation_matrix(7, D)
    np.testing.assert_allclose(m @ m.T, np.eye(D), atol=1e-12)
    np.testing.assert_allclose(pe.rotation_matrix(0, D), np.eye(D), atol=1e-12)


def test_sinusoidal_similarity_depends_on_offset_only_and_learned_does_not():
    sims = pe.similarity_by_offset(TABLE, [0, 16, 64, 256], 128)
    assert np.ptp(sims, axis=0).max() < 1e-9
    assert sims[0, 0] == pytest.approx(D / 2)
    learned = Transformer(replace(SMALL, positional="learned")).W_pos.numpy().astype(float)
    assert np.nanmax(np.ptp(pe.similarity_by_offset(learned, [0, 8, 16], 32), axis=0)) > 1.0


@settings(max_examples=100, deadline=None)
@given(
    m=st.integers(0, 2000),
    n=st.integers(0, 2000),
    shift=st.integers(-2000, 2000),
    seed=st.integers(0, 1000),
)
def test_rope_scores_are_invariant_to_a_common_shift(m, n, shift, seed):
    q, k = pe.rope_demo_vectors(16, seed)
    if min(m, n) + shift >= 0:
        assert pe.rope_shift_error(q, k, m, n, shift) < 1e-5


def test_rope_grid_is_constant_along_diagonals_and_the_model_rotates_the_same_way():
    q, k = pe.rope_demo_vectors(16)
    grid = pe.rope_scores(q, k, 24, start=300)
    for offset in range(-23, 24):
        diagonal = np.diagonal(grid, offset)
        assert np.ptp(diagonal) < 1e-5
    x = np.random.default_rng(0).standard_normal((3, 10, 16))
    ours = rope(torch.from_numpy(x), torch.arange(10)).numpy()
    assert np.abs(ours - pe.rope_rotate(x, np.arange(10))).max() < 1e-9
    # A pure rotation keeps lengths.
    np.testing.assert_allclose(np.linalg.norm(ours, axis=-1), np.linalg.norm(x, axis=-1))


def test_rope_decay_starts_at_one_and_falls_on_average():
    curve = pe.rope_decay(64, 512)
    assert curve[0] == pytest.approx(1.0)
    assert curve[200:].mean() < 0.5 * curve[:10].mean()


def _outputs(positional: str, tokens) -> np.ndarray:
    out, _ = Transformer(replace(SMALL, positional=positional), seed=4).run_with_cache(tokens)
    return out.numpy()


@pytest.mark.parametrize("order", ["reverse", "rotate", "shuffle"])
def test_without_positions_the_encoder_is_permutation_equivariant(order, float32_atol):
    perm = pe.permutation(len(TOKENS), order, seed=1)
    outputs = _outputs("none", TOKENS)
    effect = pe.order_effect(outputs, _outputs("none", TOKENS[perm]), perm)
    # Reordered tokens sum the same products in another order: rounding alone remains.
    noise = float32_atol(outputs, ACCUMULATED)
    assert effect["max_error"] < noise
    assert effect["pooled"] < noise * math.sqrt(SMALL.d_model)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope", "alibi"])
def test_with_an_encoding_reordering_changes_the_outputs(positional):
    perm = pe.permutation(len(TOKENS), "rotate")
    effect = pe.order_effect(_outputs(positional, TOKENS), _outputs(positional, TOKENS[perm]), perm)
    assert effect["max_error"] > 1e-2
    assert effect["per_token"].min() > 1e-3


def test_symmetric_alibi_cannot_tell_a_sentence_from_its_reverse(float32_atol):
    """Reversal keeps every |q − k|, the only thing the encoder's ALiBi bias sees."""
    perm = pe.permutation(len(TOKENS), "reverse")
    outputs = _outputs("alibi", TOKENS)
    effect = pe.order_effect(outputs, _outputs("alibi", TOKENS[perm]), perm)
    assert effect["max_error"] < float32_atol(outputs, ACCUMULATED)
    causal = Transformer(replace(SMALL, positional="alibi", causal=True), seed=4)
    a, _ = causal.run_with_cache(TOKENS)
    b, _ = causal.run_with_cache(TOKENS[perm])
    assert (b.numpy() - a.numpy()[perm]).__abs__().max() > 1e-2


def test_order_effect_maps_changes_back_to_the_original_tokens():
    outputs = np.arange(12.0).reshape(4, 3)
    perm = np.array([2, 0, 3, 1])
    reordered = outputs[perm].copy()
    reordered[0] += 1.0  # the token first in the new order is original token 2
    effect = pe.order_effect(outputs, reordered, perm)
    np.testing.assert_allclose(effect["per_token"], [0, 0, math.sqrt(3), 0])
    assert effect["max_error"] == 1.0


def test_extrapolation_profiles():
    learned = np.random.default_rng(0).standard_normal((16, 8))
    curve = pe.positional_score_by_distance("learned", 8, 40, learned=learned)
    assert np.isfinite(curve[:16]).all() and np.isnan(curve[16:]).all()
    for scheme in ("sinusoidal", "rope", "alibi", "none"):
        assert np.isfinite(pe.positional_score_by_distance(scheme, 16, 100)).all()
    assert pe.positional_score_by_distance("sinusoidal", 16, 5)[0] == pytest.approx(1.0)
    alibi = pe.positional_score_by_distance("alibi", 16, 10, n_heads=4)
    assert alibi[10] == pytest.approx(-10 * 2.0**-8)
    # Pair i turns once every 2π·10000^(2i/d) positions.
    assert pe.periods_within(64, 7) == 1
    assert pe.periods_within(64, 10**9) == 32
    assert pe.alibi_slopes(8)[0] == 0.5


def test_alibi_bias_is_symmetric_for_encoders_and_one_sided_for_decoders():
    enc = pe.alibi_bias(4, 5, 5, causal=False)
    np.testing.assert_array_equal(enc, np.swapaxes(enc, 1, 2))
    dec = pe.alibi_bias(2, 3, 3, causal=True)
    assert dec[0, 2, 0] == pytest.approx(-2 * 2.0**-4)


@pytest.mark.parametrize("k", [1, 5, 128])
def test_the_shared_rotation_fit_is_the_straightforward_computation(k):
    fit = pe.rotation_fit(k, D, 512)
    np.testing.assert_array_equal(fit["rotation"], pe.rotation_matrix(k, D))
    np.testing.assert_array_equal(fit["exact"], pe.rotation_errors(TABLE, k).max(axis=1))
    np.testing.assert_array_equal(fit["naive"], pe.per_dimension_fit_errors(TABLE, k).max(axis=1))
    assert fit["exact_max"] == fit["exact"].max() and fit["naive_max"] == fit["naive"].max()
    assert pe.rotation_fit(k, D, 512) is fit  # made once, shared by every visitor
    with pytest.raises(ValueError):  # so nobody can write into it
        fit["exact"][0] = 1.0


def test_the_shared_rotation_check_is_max_rotation_error():
    assert pe.rotation_check(16, 64) == pe.max_rotation_error(
        pe.sinusoidal_table(64, 16), range(0, 32)
    )


@pytest.mark.parametrize("positional", pe.SCHEMES)
@pytest.mark.parametrize("order", ["reverse", "rotate", "shuffle"])
def test_one_batched_pass_gives_each_orders_own_outputs(positional, order, float32_atol):
    """The lesson runs a sentence and its reordering as one batch of two: the same numbers
    as two separate passes, so the order effect it shows is the same too, up to the
    rounding of a batched kernel's other summation order."""
    model = Transformer(replace(SMALL, positional=positional), seed=4)
    perm = pe.permutation(len(TOKENS), order, seed=2)
    outputs, reordered = pe.outputs_in_both_orders(model, tuple(TOKENS), perm)
    one, other = _outputs(positional, TOKENS), _outputs(positional, TOKENS[perm])
    atol = float32_atol(one, ACCUMULATED)
    np.testing.assert_allclose(outputs, one, rtol=0, atol=atol)
    np.testing.assert_allclose(reordered, other, rtol=0, atol=atol)
    batched = pe.order_effect(outputs, reordered, perm)
    separate = pe.order_effect(one, other, perm)
    # A difference of two outputs, each off by up to atol; a norm over d_model of them.
    assert batched["max_error"] == pytest.approx(separate["max_error"], abs=2 * atol)
    np.testing.assert_allclose(
        batched["per_token"], separate["per_token"], atol=2 * atol * math.sqrt(SMALL.d_model)
    )


def test_order_effects_measures_each_model_on_the_lessons_permutation(float32_atol):
    models = {s: Transformer(replace(SMALL, positional=s), seed=4) for s in ("none", "rope")}
    effects = pe.order_effects(models, tuple(TOKENS), "shuffle", 3)
    perm = pe.permutation(len(TOKENS), "shuffle", 3)
    np.testing.assert_array_equal(effects["perm"], perm)
    for scheme in models:
        outputs = _outputs(scheme, TOKENS)
        atol = float32_atol(outputs, ACCUMULATED)
        expected = pe.order_effect(outputs, _outputs(scheme, TOKENS[perm]), perm)
        assert effects[scheme]["max_error"] == pytest.approx(expected["max_error"], abs=2 * atol)
    # Without positions the two orders differ by rounding alone; with RoPE by far more.
    noise = float32_atol(_outputs("none", TOKENS), ACCUMULATED)
    assert effects["none"]["max_error"] < noise < 1e-3 < effects["rope"]["max_error"]


class _Encoded:
    def __init__(self, ids):
        self.ids = ids


class _WordTokenizer:
    """One id per word, from a fixed list: enough to feed the small model."""

    WORDS = ("dog", "bites", "man")

    def encode(self, text):
        return _Encoded([self.WORDS.index(w) + 1 for w in text.split()])


def test_pair_distances_is_the_distance_of_the_mean_outputs(float32_atol):
    models = {s: Transformer(replace(SMALL, positional=s), seed=4) for s in ("none", "learned")}
    rows = pe.pair_distances(models, _WordTokenizer(), [("dog bites man", "man bites dog")])
    assert [row[:2] for row in rows] == [("dog bites man / man bites dog", s) for s in models]
    a, b = np.array([1, 2, 3]), np.array([3, 2, 1])
    for _, scheme, distance in rows:
        one, other = _outputs(scheme, a), _outputs(scheme, b)
        # A norm over d_model of differences of two outputs, each off by up to atol.
        noise = 2 * float32_atol(one, ACCUMULATED) * math.sqrt(SMALL.d_model)
        expected = np.linalg.norm(one.mean(0) - other.mean(0))
        assert distance == pytest.approx(float(expected), abs=noise)
    assert rows[0][2] < noise < 1e-3 < rows[1][2]  # a bag of words without positions
