"""Attention statistics checked against closed forms and hand-built patterns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.analysis.attention_stats import (
    attention_rollout,
    entropy_bits,
    head_statistics,
    mean_distance,
    share_on_key,
    strongest_head_for_query,
    strongest_link,
)


def uniform(n: int) -> np.ndarray:
    return np.full((n, n), 1.0 / n)


def previous_token(n: int) -> np.ndarray:
    """Each query puts all weight on the token before it; the first one on itself."""
    pattern = np.zeros((n, n))
    pattern[0, 0] = 1.0
    pattern[np.arange(1, n), np.arange(n - 1)] = 1.0
    return pattern


# --- entropy -----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 128])
def test_uniform_attention_has_entropy_log2_n(n):
    assert entropy_bits(uniform(n)) == pytest.approx(math.log2(n), abs=1e-12)


@pytest.mark.parametrize("pattern", [np.eye(5), previous_token(5)], ids=["identity", "previous"])
def test_one_hot_attention_has_zero_entropy(pattern):
    assert entropy_bits(pattern) == 0.0


def test_entropy_is_the_mean_over_queries():
    # Row 0: one-hot (0 bits); row 1: two keys at 1/2 (1 bit); mean 0.5.
    pattern = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert entropy_bits(pattern) == pytest.approx(0.5)


def test_entropy_counts_nothing_for_zero_missing_or_negative_weights():
    row = np.array([[0.5, 0.0, np.nan, -0.25, 0.5]])
    assert entropy_bits(row) == pytest.approx(1.0, abs=1e-12)
    assert entropy_bits(row.astype(np.float32)) == pytest.approx(1.0, abs=1e-6)


def test_float32_statistics_match_a_float64_loop(make_patterns):
    patterns = make_patterns(2, 3, 17).astype(np.float32)
    stats = head_statistics(patterns)
    for layer in range(2):
        for head in range(3):
            p = patterns[layer, head].astype(np.float64)
            n = p.shape[0]
            distance = sum(p[q, k] * abs(q - k) for q in range(n) for k in range(n)) / n
            entropy = -sum(p[q, k] * math.log2(p[q, k]) for q in range(n) for k in range(n)) / n
            assert stats["distance"][layer, head] == pytest.approx(distance, rel=1e-5)
            assert stats["entropy"][layer, head] == pytest.approx(entropy, rel=1e-5)
    assert stats["distance"].dtype == np.float64


def test_entropy_reduces_the_last_two_axes():
    stack = np.stack([np.stack([uniform(4), np.eye(4)]), np.stack([np.eye(4), uniform(4)])])
    np.testing.assert_allclose(entropy_bits(stack), [[2.0, 0.0], [0.0, 2.0]], atol=1e-12)


# --- distance ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 4, 9])
def test_identity_has_mean_distance_zero(n):
    assert mean_distance(np.eye(n)) == 0.0


@pytest.mark.parametrize("n", [2, 5, 12])
def test_previous_token_has_mean_distance_n_minus_1_over_n(n):
    # n-1 queries look one token back, the first looks at itself.
    assert mean_distance(previous_token(n)) == pytest.approx((n - 1) / n)


@pytest.mark.parametrize("n", [2, 5, 12])
def test_uniform_has_mean_distance_n2_minus_1_over_3n(n):
    # mean over q of (1/n)·Σ_k |q−k| = (n² − 1) / (3n)
    assert mean_distance(uniform(n)) == pytest.approx((n * n - 1) / (3 * n))


def test_attending_to_first_token_averages_positions():
    n = 6
    pattern = np.zeros((n, n))
    pattern[:, 0] = 1.0
    assert mean_distance(pattern) == pytest.approx(np.mean(np.arange(n)))


# --- share on key ------------------------------------------------------------------------


def test_share_on_key_of_a_sink_and_of_uniform():
    n = 5
    sink = np.zeros((n, n))
    sink[:, 0] = 1.0
    assert share_on_key(sink, 0) == 1.0
    assert share_on_key(sink, n - 1) == 0.0
    assert share_on_key(uniform(n), 2) == pytest.approx(1 / n)


def test_share_on_key_is_the_column_mean():
    pattern = np.array([[0.2, 0.8, 0.0], [0.6, 0.1, 0.3], [1.0, 0.0, 0.0]])
    assert share_on_key(pattern, 0) == pytest.approx((0.2 + 0.6 + 1.0) / 3)
    assert share_on_key(pattern, -1) == pytest.approx(0.1)


# --- strongest link / head ---------------------------------------------------------------


def test_strongest_link_skips_the_diagonal_and_ignored_keys():
    pattern = np.array(
        [
            # key: 0     1     2     3
            [0.90, 0.02, 0.03, 0.05],
            [0.50, 0.30, 0.15, 0.05],  # 0.50 on key 0 (ignored), 0.30 on itself
            [0.40, 0.20, 0.35, 0.05],  # 0.20 on key 1: the winner
            [0.60, 0.05, 0.10, 0.25],  # 0.25 on itself (skipped)
        ]
    )
    assert strongest_link(pattern) == (3, 0, 0.60)
    assert strongest_link(pattern, ignore=(0,)) == (2, 1, pytest.approx(0.20))
    assert strongest_link(pattern, ignore=(0, 3)) == (2, 1, pytest.approx(0.20))
    assert strongest_link(pattern, ignore=(0, 1, 3)) == (1, 2, pytest.approx(0.15))


def test_strongest_link_returns_the_original_weight_for_float32():
    pattern = np.array([[0.1, 0.9], [0.7, 0.3]], dtype=np.float32)
    q, k, w = strongest_link(pattern)
    assert (q, k) == (0, 1)
    assert w == float(np.float32(0.9))


def test_strongest_link_is_none_when_every_key_is_ignored():
    # A [CLS] [SEP] sentence: both keys ignored, the diagonal skipped, nothing left.
    pattern = np.array([[0.9, 0.1], [0.2, 0.8]])
    assert strongest_link(pattern, ignore=(0, 1)) is None
    assert strongest_link(np.ones((1, 1))) is None


def test_strongest_head_for_query_finds_the_planted_weight(make_patterns):
    n_layers, n_heads, n, query = 3, 4, 6, 2
    patterns = make_patterns(n_layers, n_heads, n, alpha=5.0)  # flat rows, all < 0.5
    assert patterns.max() < 0.5
    # Planted: bigger weights on the query itself and on [CLS]/[SEP] (ignored), one real winner.
    patterns[0, 1, query, query] = 0.99
    patterns[1, 0, query, 0] = 0.98
    patterns[2, 3, query, n - 1] = 0.97
    patterns[2, 2, query, 4] = 0.9
    patterns[1, 3, 4, 1] = 0.95  # another query: not looked at
    layer, head, key, weight = strongest_head_for_query(patterns, query, ignore=(0, n - 1))
    assert (layer, head, key) == (2, 2, 4)
    assert weight == pytest.approx(0.9)
    # Without ignoring the specials, the [CLS] weight wins; the query itself never does.
    assert strongest_head_for_query(patterns, query)[:3] == (1, 0, 0)


def test_strongest_head_for_query_is_none_when_every_key_is_ignored(make_patterns):
    # A one-word sentence [CLS] w [SEP]: w's only other keys are the ignored specials.
    patterns = make_patterns(2, 3, 3)
    assert strongest_head_for_query(patterns, 1, ignore=(0, 2)) is None


# --- all heads at once -------------------------------------------------------------------


def _row_entropy_bits(row: np.ndarray) -> float:
    return -sum(float(p) * math.log2(float(p)) for p in row if p > 0)


def test_head_statistics_on_a_dirichlet_stack(make_patterns):
    n_layers, n_heads, n = 3, 5, 7
    patterns = make_patterns(n_layers, n_heads, n).astype(np.float64)
    np.testing.assert_allclose(patterns.sum(axis=-1), 1.0, atol=1e-6)
    stats = head_statistics(patterns)
    assert set(stats) == {"entropy", "distance", "cls", "sep"}
    for value in stats.values():
        assert value.shape == (n_layers, n_heads)
    # Per head, computed one row at a time in plain Python.
    for layer in range(n_layers):
        for head in range(n_heads):
            p = patterns[layer, head]
            entropy = np.mean([_row_entropy_bits(p[q]) for q in range(n)])
            distance = np.mean([sum(p[q, k] * abs(q - k) for k in range(n)) for q in range(n)])
            assert stats["entropy"][layer, head] == pytest.approx(entropy)
            assert stats["distance"][layer, head] == pytest.approx(distance)
            assert stats["cls"][layer, head] == pytest.approx(p[:, 0].mean())
            assert stats["sep"][layer, head] == pytest.approx(p[:, n - 1].mean())
    assert np.all(stats["entropy"] >= 0) and np.all(stats["entropy"] <= math.log2(n) + 1e-9)
    assert np.all(stats["distance"] >= 0) and np.all(stats["distance"] <= n - 1)
    assert np.all(stats["cls"] + stats["sep"] <= 1 + 1e-9)


def test_rollout_of_attention_to_oneself_is_the_identity():
    eye = np.broadcast_to(np.eye(5), (3, 4, 5, 5))
    np.testing.assert_allclose(attention_rollout(eye), np.broadcast_to(np.eye(5), (3, 5, 5)))


def test_rollout_of_one_layer_is_half_its_mean_pattern_plus_half_the_identity(make_patterns):
    patterns = make_patterns(1, 3, 6)
    expected = 0.5 * np.eye(6) + 0.5 * patterns[0].astype(np.float64).mean(0)
    np.testing.assert_allclose(attention_rollout(patterns)[0], expected, atol=1e-12)


def test_rollout_multiplies_later_layers_on_the_left(make_patterns):
    patterns = make_patterns(4, 2, 5)
    mixed = [0.5 * np.eye(5) + 0.5 * p.astype(np.float64).mean(0) for p in patterns]
    rollout = attention_rollout(patterns)
    np.testing.assert_allclose(rollout[-1], np.linalg.multi_dot(mixed[::-1]), atol=1e-12)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-12)


def test_rollout_of_causal_patterns_never_reaches_later_tokens(make_patterns):
    patterns = np.tril(make_patterns(3, 2, 6))
    patterns /= patterns.sum(-1, keepdims=True)
    rollout = attention_rollout(patterns)
    assert np.all(rollout[:, np.triu(np.ones((6, 6), dtype=bool), k=1)] == 0.0)
