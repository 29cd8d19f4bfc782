"""The training lab's cached runs: the shipped induction model's heads, the n-gram
baseline on the visitor's sentence (its unseen n-grams, the bigram's next character) and
the trained language models on the visitor's sentence."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.training import top_next
from components.ui.runs.shared import load_checkpoint
from models.training.tasks import make_task
from models.training.train import CHECKPOINT_DIR, checkpoint_name

INDUCTION_TASK = make_task("induction")
LM_TASK = make_task("lm")
BEST_NGRAM = 4


@st.cache_data(show_spinner=False)
def induction_heads() -> tuple[dict, float]:
    """The shipped model's head scores and its recorded held-out accuracy on the repeat."""
    from models.analysis.probes import head_scores

    stem = str(CHECKPOINT_DIR / checkpoint_name(INDUCTION_TASK, "transformer"))
    loaded = load_checkpoint(stem)
    return head_scores(loaded.model, INDUCTION_TASK), loaded.metrics["accuracy"]


@st.cache_resource(show_spinner=False)
def ngram_model(n: int = BEST_NGRAM):
    """The Witten–Bell n-gram model of the training text (the 4-gram by default)."""
    from models.analysis.ngram import WittenBell

    return WittenBell(LM_TASK.split()[0], n, LM_TASK.vocab)


@st.cache_data(max_entries=64, show_spinner=False)
def sentence_unseen(text: str, orders: tuple[int, ...]) -> np.ndarray:
    """For each n of `orders`, the share of the n-grams of `text` the training text never
    contains (NaN where `text` is shorter than n): the measure the baseline table gives
    for the held-out text, on the visitor's sentence."""
    from models.analysis.ngram import unseen_share

    train = LM_TASK.split()[0]
    return np.asarray([unseen_share(train, text, n) for n in orders], dtype=np.float64)


@st.cache_data(max_entries=256, show_spinner=False)
def bigram_next(char: str, k: int = 5) -> tuple[tuple[str, ...], np.ndarray]:
    """The bigram model's `k` most likely characters after `char`, and their probabilities."""
    return top_next(ngram_model(2), char, k)


@st.cache_data(max_entries=64, show_spinner=False)
def surprisal(text: str) -> dict[str, np.ndarray]:
    from models.analysis.probes import char_surprisal, ngram_surprisal

    out = {"ngram": ngram_surprisal(ngram_model(), text)}
    for kind in ("lstm", "transformer"):
        stem = str(CHECKPOINT_DIR / checkpoint_name(LM_TASK, kind))
        out[kind] = char_surprisal(load_checkpoint(stem).model, text, LM_TASK.vocab)
    return out
