"""The n-gram baseline: sparsity as n grows, and a smoothed model that is a distribution."""

from __future__ import annotations

import math

import pytest

from models.analysis.ngram import WittenBell, ngrams, sparsity_table, unseen_share
from models.training.tasks import make_task


def test_unseen_share_counts_every_held_out_position():
    assert ngrams("abcd", 2) == ["ab", "bc", "cd"]
    assert unseen_share("abcabc", "abd", 1) == pytest.approx(1 / 3)  # d
    assert unseen_share("abcabc", "abd", 2) == pytest.approx(1 / 2)  # bd
    assert unseen_share("abcabc", "abcab", 3) == 0.0


def test_longer_ngrams_of_the_shipped_text_are_ever_more_often_unseen():
    train, held = make_task("lm").split()
    shares = sparsity_table(train, held, range(1, 8))
    values = [shares[n] for n in range(1, 8)]
    assert values == sorted(values)
    assert values[0] < 0.1 and values[-1] > 0.6


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("history", ["", "a", "ab", "zz", "bca"])
def test_witten_bell_is_a_distribution_over_the_alphabet(n, history):
    alphabet = tuple("abcdz")
    model = WittenBell("abcabcabd", n, alphabet)
    total = sum(model.probability(c, history) for c in alphabet)
    assert total == pytest.approx(1.0, abs=1e-12)


def test_unigram_witten_bell_matches_its_closed_form():
    alphabet = tuple("abcd")
    model = WittenBell("aaab", 1, alphabet)
    # (C(c) + T·1/V) / (N + T) with N = 4 characters, T = 2 distinct
    assert model.probability("a", "") == pytest.approx((3 + 2 / 4) / 6)
    assert model.probability("d", "") == pytest.approx((0 + 2 / 4) / 6)
    expected = math.exp(-(math.log((1 + 0.5) / 6) + math.log((3 + 0.5) / 6)) / 2)
    assert model.perplexity("aba") == pytest.approx(expected)


def test_a_longer_context_predicts_a_repetitive_text_better():
    text = "the cat sat on the mat. " * 20
    alphabet = tuple(sorted(set(text)))
    assert WittenBell(text, 3, alphabet).perplexity(text) < WittenBell(
        text, 1, alphabet
    ).perplexity(text)
