"""A character n-gram baseline for the language-modelling task, and the sparsity behind it.

Counting n-grams is the oldest language model. Its weakness, as the source articles put
it: the longer the n, the more of the n-grams in new text were never seen in training, so
their counts say nothing. `unseen_share` measures that; `WittenBell` is a smoothed n-gram
model (each order falls back on the one below, down to a uniform distribution over the
characters) whose perplexity stands beside the neural models'.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict


def ngrams(text: str, n: int) -> list[str]:
    return [text[i : i + n] for i in range(len(text) - n + 1)]


def unseen_share(train: str, held_out: str, n: int) -> float:
    """The share of the n-grams in `held_out` (every position) that `train` never contains."""
    seen = set(ngrams(train, n))
    grams = ngrams(held_out, n)
    if not grams:
        return float("nan")
    return sum(g not in seen for g in grams) / len(grams)


class WittenBell:
    """P(c | h) = (C(h c) + T(h)·P(c | h′)) / (C(h) + T(h)), h′ the history shortened by one,
    T(h) the number of different characters seen after h; uniform over `alphabet` at the
    bottom. A history never seen falls back to h′ entirely. Sums to 1 over the alphabet."""

    def __init__(self, train: str, n: int, alphabet: tuple[str, ...]):
        if n < 1:
            raise ValueError("n must be at least 1")
        self.n = n
        self.alphabet = alphabet
        self.counts: dict[str, Counter] = defaultdict(Counter)
        for order in range(n):  # histories of length 0 … n−1
            for i in range(order, len(train)):
                self.counts[train[i - order : i]][train[i]] += 1
        self.totals = {h: sum(c.values()) for h, c in self.counts.items()}

    def probability(self, char: str, history: str) -> float:
        history = history[len(history) - (self.n - 1) :] if self.n > 1 else ""
        p = 1 / len(self.alphabet)
        for start in range(len(history), -1, -1):  # the empty history first, then longer
            h = history[start:]
            follows = self.counts.get(h)
            if follows is None:
                continue
            types = len(follows)
            p = (follows[char] + types * p) / (self.totals[h] + types)
        return p

    def perplexity(self, text: str) -> float:
        """exp of the mean negative log-probability of each character after the first,
        each seen with the characters before it in `text`."""
        logs = [
            math.log(self.probability(text[i], text[max(0, i - self.n + 1) : i]))
            for i in range(1, len(text))
        ]
        return math.exp(-sum(logs) / len(logs))


def sparsity_table(train: str, held_out: str, orders) -> dict[int, float]:
    return {n: unseen_share(train, held_out, n) for n in orders}


def perplexity_table(
    train: str, held_out: str, alphabet: tuple[str, ...], orders
) -> dict[int, float]:
    return {n: WittenBell(train, n, alphabet).perplexity(held_out) for n in orders}
