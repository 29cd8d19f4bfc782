"""Probes of this lesson: what its tour steps quote, ask and check, from its parts' offers.

The offers (components/ui/parts/training/):
- "training.sparsity" (ngram.py): `orders` (n), `held_out` and `sentence`, the share of the
  held-out text's and of the visitor's sentence's n-grams the training text never contains,
  one per n; `chars`, the sentence as read.
- "training.perplexity" (ngram.py): `orders`, `ngram` (held-out perplexity per n) and
  `neural` (model label → held-out perplexity).
- "training.next" (ngram.py): `after`, the character chosen; `chars` and `probs`, the bigram
  model's likeliest next characters, most likely first, as the chart draws them; `sentence`,
  the sentence's characters the model knows, once each, in order.
- "training.lag" (lag.py): `lags`, `models` (labels) and `accuracy [model, lag]`.
- "training.heads" (heads.py): `induction` and `previous_token` scores `[layer, head]`.
- "training.surprisal" (yours.py): `bits` (model label → bits per character), `ngram` (the
  n-gram's label among them), `chars` (the characters read).
"""

from __future__ import annotations

import numpy as np

from components.tours.probes import Choice, Live, probe
from components.training import char_label

# How many options a question built from the visitor's sentence offers at most.
MAX_OPTIONS = 4


def _order_index(orders, n: int) -> int:
    orders = [int(order) for order in orders]
    if int(n) not in orders:
        raise ValueError(f"no n-gram order {n}: the orders are {orders}")
    return orders.index(int(n))


# --- the n-gram baseline on the visitor's sentence --------------------------------------


@probe("training.n_chars", reads=("training.sparsity",))
def n_chars(live: Live) -> int:
    """How many characters of the sentence the n-gram part read."""
    return len(live.need("training.sparsity")["chars"])


# What a quote shows where the run has no number (a sentence shorter than n, say).
NO_NUMBER = "–"


def _unseen_share(live: Live, n: int, text: str) -> float:
    sparsity = live.need("training.sparsity")
    if text not in ("sentence", "held_out"):
        raise ValueError(f"text is 'sentence' or 'held_out', not {text!r}")
    return float(sparsity[text][_order_index(sparsity["orders"], n)])


@probe("training.unseen", reads=("training.sparsity",))
def unseen(live: Live, n: int = 4, text: str = "sentence") -> float | str:
    """The share of the n-grams of the sentence (or of the held-out text) never seen in
    training, as the unseen n-grams chart draws it; "–" for a sentence shorter than n."""
    share = _unseen_share(live, n, text)
    return share if np.isfinite(share) else NO_NUMBER


@probe("training.all_seen", reads=("training.sparsity",))
def all_seen(live: Live, n: int = 4) -> bool:
    """Done when the sentence has n-grams and the training text contains every one."""
    share = _unseen_share(live, n, "sentence")
    return bool(np.isfinite(share) and share == 0.0)


@probe("training.best_ngram", reads=("training.perplexity",))
def best_ngram(live: Live) -> int:
    """The n of the n-gram model with the lowest held-out perplexity."""
    table = live.need("training.perplexity")
    return int(np.asarray(table["orders"])[int(np.argmin(table["ngram"]))])


@probe("training.best_ngram_perplexity", reads=("training.perplexity",))
def best_ngram_perplexity(live: Live) -> float:
    return float(np.min(live.need("training.perplexity")["ngram"]))


# --- the bigram's next character ---------------------------------------------------------


@probe("training.after", reads=("training.next",))
def after(live: Live) -> str:
    """The character the bigram chart reads after, as an option shows it."""
    return char_label(live.need("training.next")["after"])


@probe("training.bigram_next", reads=("training.next",))
def bigram_next(live: Live) -> Choice:
    """Which character the bigram model finds likeliest after the chosen one: its top
    character among others of the visitor's sentence, in character order."""
    offered = live.need("training.next")
    best = offered["chars"][0]
    others = [c for c in offered["sentence"] if c != best][: MAX_OPTIONS - 1]
    if not others:  # a sentence of one character: the model's next guesses stand in
        others = list(offered["chars"][1:MAX_OPTIONS])
    options = sorted({best, *others})
    return Choice(
        right=options.index(best),
        options=tuple(char_label(c) for c in options),
    )


@probe("training.bigram_top_probability", reads=("training.next",))
def bigram_top_probability(live: Live) -> float:
    """The probability the bigram model gives its likeliest next character."""
    return float(live.need("training.next")["probs"][0])


# --- copying across a lag ----------------------------------------------------------------


def _lag_index(table, lag: int) -> int:
    lags = [int(value) for value in table["lags"]]
    if int(lag) not in lags:
        raise ValueError(f"no lag {lag} in the table: {lags}")
    return lags.index(int(lag))


@probe("training.best_at_lag", reads=("training.lag",))
def best_at_lag(live: Live, lag: int = 40) -> Choice:
    """The model with the highest held-out accuracy at `lag`, among the models drawn."""
    table = live.need("training.lag")
    column = np.asarray(table["accuracy"], dtype=np.float64)[:, _lag_index(table, lag)]
    return Choice(right=int(np.argmax(column)), options=tuple(table["models"]))


@probe("training.accuracy_at", reads=("training.lag",))
def accuracy_at(live: Live, model: str = "RNN", lag: int = 40) -> float:
    table = live.need("training.lag")
    row = list(table["models"]).index(model)
    return float(np.asarray(table["accuracy"])[row, _lag_index(table, lag)])


# --- the induction heads -----------------------------------------------------------------


def _best(scores) -> tuple[int, int, float]:
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=-np.inf)
    layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return int(layer), int(head), float(scores[layer, head])


@probe("training.induction_layer", reads=("training.heads",))
def induction_layer(live: Live) -> Choice:
    """The layer of the head with the highest induction score; one option per layer."""
    scores = np.asarray(live.need("training.heads")["induction"])
    return Choice(right=_best(scores)[0], options=tuple(str(layer) for layer in range(len(scores))))


@probe("training.head_score", reads=("training.heads",))
def head_score(live: Live, score: str = "induction") -> float:
    """The highest score of that kind ("induction" or "previous_token") of any head."""
    return _best(live.need("training.heads")[score])[2]


@probe("training.head_layer", reads=("training.heads",))
def head_layer(live: Live, score: str = "previous_token") -> int:
    """The layer of the head with the highest score of that kind."""
    return _best(live.need("training.heads")[score])[0]


# --- the visitor's sentence through the trained language models -------------------------


def _mean_bits(bits) -> float:
    bits = np.asarray(bits, dtype=np.float64)
    return float(np.nanmean(bits)) if np.isfinite(bits).any() else float("nan")


@probe("training.mean_bits", reads=("training.surprisal",))
def mean_bits(live: Live, model: str = "LSTM") -> float | str:
    """Mean surprisal in bits per character of the sentence under `model` ("ngram" for the
    n-gram baseline), over the characters the model can score, as the chart draws it; "–"
    when it can score none."""
    offered = live.need("training.surprisal")
    name = offered["ngram"] if model == "ngram" else model
    mean = _mean_bits(offered["bits"][name])
    return mean if np.isfinite(mean) else NO_NUMBER


@probe("training.least_surprised", reads=("training.surprisal",))
def least_surprised(live: Live) -> str:
    """The model with the fewest bits per character on the sentence."""
    bits = live.need("training.surprisal")["bits"]
    means = {name: _mean_bits(values) for name, values in bits.items()}
    finite = {name: value for name, value in means.items() if np.isfinite(value)}
    return min(finite, key=finite.get) if finite else "–"
