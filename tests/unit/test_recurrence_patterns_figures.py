"""Figures and numbers of "Attention without softmax" (components/recurrence/patterns.py):
the token grids as sent, and the measures against loops written here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import cells  # a grid panel's values as sent

from components.grid import PALETTE_B64, WEIGHT_TICKS, palette_b64
from components.palette import DIVERGING_COLORSCALE
from components.recurrence.patterns import (
    causal_cells,
    mean_max_weight,
    negative_share,
    pattern_grid,
    pattern_height,
    row_sums,
    uniform_entropy_bits,
)

TOKENS = ["the", "<i>cat</i>", "sat"]


def _causal_weights(rng, n: int) -> np.ndarray:
    pattern = np.tril(rng.random((n, n)))
    return (pattern / pattern.sum(axis=1, keepdims=True)).astype(np.float32)


def test_weights_are_drawn_queries_down_keys_across_on_the_attention_colours(rng):
    pattern = _causal_weights(rng, 3)
    spec = pattern_grid(pattern, TOKENS, title="softmax", query_title="q", key_title="k")
    [panel] = spec["panels"]
    np.testing.assert_array_equal(cells(panel), pattern)
    assert (panel["zmin"], panel["zmax"]) == (0.0, 1.0)
    assert spec["palette"] == PALETTE_B64 and "palette" not in panel
    assert panel["colorbar"]["ticks"] == WEIGHT_TICKS
    assert spec["title"] == "softmax"
    assert panel["columns"] == ["0:the", "1:<i>cat</i>", "2:sat"]  # canvas text, as typed
    assert [label for _, label in panel["y"]["ticks"]] == panel["columns"]
    assert (panel["y"]["title"], panel["x"]["title"]) == ("q", "k")


def test_signed_weights_get_a_diverging_scale_as_wide_as_their_largest_size():
    pattern = np.array([[2.0, 0, 0], [-3.5, 1.0, 0], [0.5, -0.25, 0.1]], dtype=np.float32)
    [panel] = pattern_grid(pattern, TOKENS, signed=True, value_title="w")["panels"]
    np.testing.assert_array_equal(cells(panel), pattern)
    assert (panel["zmin"], panel["zmax"]) == (-3.5, 3.5)
    assert panel["palette"] == palette_b64(DIVERGING_COLORSCALE)
    ticks = [value for value, _ in panel["colorbar"]["ticks"]]
    assert ticks == pytest.approx([-3.5, -1.75, 0.0, 1.75, 3.5])
    assert panel["colorbar"]["title"] == panel["hover"]["name"] == "w"
    zero = pattern_grid(np.zeros((3, 3)), TOKENS, signed=True)["panels"][0]
    assert (zero["zmin"], zero["zmax"]) == (-1.0, 1.0)


def test_pattern_height_grows_with_the_tokens_between_bounds():
    assert pattern_height(1) == 340
    assert pattern_height(30) == 15 * 30 + 170
    assert pattern_height(400) == 720


def test_row_sums_and_negative_share_count_only_what_each_query_sees():
    pattern = np.array([[1.0, 9.0, 9.0], [-2.0, 0.5, -9.0], [0.25, -0.5, 3.0]])
    np.testing.assert_allclose(row_sums(np.tril(pattern)), [1.0, -1.5, 2.75])
    # Seen cells (j ≤ i): 1, −2, 0.5, 0.25, −0.5, 3 → two of six below zero; the −9 above
    # the diagonal is a key that query 1 does not see.
    assert negative_share(pattern) == pytest.approx(2 / 6)
    seen = [pattern[i, j] for i in range(3) for j in range(i + 1)]
    assert negative_share(pattern) == pytest.approx(np.mean(np.array(seen) < 0))
    assert causal_cells(3).sum() == 6


def test_mean_max_weight_is_one_for_a_diagonal_and_the_harmonic_mean_for_flat_rows():
    n = 5
    assert mean_max_weight(np.eye(n)) == 1.0
    flat = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    assert mean_max_weight(flat) == pytest.approx(sum(1 / (i + 1) for i in range(n)) / n)


def test_uniform_entropy_is_the_mean_of_log2_of_the_keys_each_query_sees():
    n = 7
    expected = sum(math.log2(i + 1) for i in range(n)) / n
    assert uniform_entropy_bits(n) == pytest.approx(expected)
    assert uniform_entropy_bits(1) == 0.0
