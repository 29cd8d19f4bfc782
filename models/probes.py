"""What a trained Transformer's heads do, measured on held-out induction sequences.

For a sequence `r_0 … r_{n−1} r_0 … r_{n−1}`, the token at position q of the repeat
(q ≥ n) occurred before at q − n. A *previous-token head* puts its weight on q − 1; an
*induction head* on q − n + 1, the token that followed the previous occurrence (the one
to predict). Scores are mean attention weights over the repeat's positions and sequences.
"""

from __future__ import annotations

import numpy as np
import torch

from models.task_models import SequenceModel
from models.tasks import Induction

N_SEQUENCES = 64


def head_scores(
    model: SequenceModel, task: Induction, n: int = N_SEQUENCES
) -> dict[str, np.ndarray]:
    """`induction` and `previous_token` scores, each `[layer, head]`."""
    if model.spec.kind != "transformer":
        raise ValueError("head scores need a Transformer")
    inputs = task.held_out(n).inputs
    half = task.half
    queries = np.arange(half, 2 * half)
    shape = (model.spec.n_layers, model.spec.n_heads)
    induction, previous = np.zeros(shape), np.zeros(shape)
    for tokens in inputs:
        _, cache = model.core.run_with_cache(tokens)
        for layer in range(shape[0]):
            pattern = cache[f"blocks.{layer}.attn.hook_pattern"]
            induction[layer] += pattern[:, queries, queries - half + 1].mean(axis=1)
            previous[layer] += pattern[:, queries, queries - 1].mean(axis=1)
    return {"induction": induction / len(inputs), "previous_token": previous / len(inputs)}


def induction_score(model: SequenceModel, task: Induction) -> float:
    """The best induction head's score."""
    return float(head_scores(model, task)["induction"].max())


MAX_SCORED_CHARS = 64


def char_surprisal(model: SequenceModel, text: str, vocab: tuple[str, ...]) -> np.ndarray:
    """−log₂ P(c_i | c_<i) for i = 1 … len(text) − 1 under a character model; NaN where
    c_i is not in the model's alphabet. An unknown character read as context becomes a space."""
    index = {c: i for i, c in enumerate(vocab)}
    fallback = index.get(" ", 0)
    ids = torch.tensor([[index.get(c, fallback) for c in text]])
    with torch.no_grad():
        log_probs = torch.log_softmax(model(ids)[0, :-1], dim=-1)
    targets = ids[0, 1:]
    bits = -log_probs[torch.arange(len(targets)), targets].numpy().astype(np.float64) / np.log(2)
    bits[[c not in index for c in text[1:]]] = np.nan
    return bits


def ngram_surprisal(model, text: str) -> np.ndarray:
    """The same for an n-gram model (models.ngram.WittenBell)."""
    known = set(model.alphabet)
    bits = [
        -np.log2(model.probability(text[i], text[max(0, i - model.n + 1) : i]))
        if text[i] in known
        else np.nan
        for i in range(1, len(text))
    ]
    return np.asarray(bits, dtype=np.float64)
