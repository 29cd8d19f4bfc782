"""What a trained Transformer's heads do, measured on held-out induction sequences.

In an induction sequence a segment comes twice; a token q of the second copy occurred
before at some position j (a different j and distance in every sequence). An *induction
head* attends from q to j + 1, the token that followed the previous occurrence (the one to
predict); a *previous-token head* attends from every position to the one just before it.
Together they are the two-step circuit: the previous-token head writes "t came before me"
into each position, and the induction head, in a later layer, finds the position whose
predecessor is the current token. Scores are mean attention weights, per head, averaged
over held-out sequences.
"""

from __future__ import annotations

import numpy as np
import torch

from models.nets.task_models import SequenceModel
from models.training.synthetic_tasks import Induction
from models.training.task_base import IGNORE

N_SEQUENCES = 64


def previous_occurrence(tokens: np.ndarray) -> np.ndarray:
    """For each position, the last earlier position holding the same token, or −1."""
    n = len(tokens)
    same = (tokens[:, None] == tokens[None, :]) & np.tri(n, k=-1, dtype=bool)
    last = n - 1 - np.argmax(same[:, ::-1], axis=1)
    return np.where(same.any(axis=1), last, -1)


def previous_token_weight(patterns: np.ndarray) -> np.ndarray:
    """`[..., query, key]` attention → `[...]`: the mean weight from every position after
    the first to the one just before it."""
    later = np.arange(1, patterns.shape[-1])
    return patterns[..., later, later - 1].mean(axis=-1)


def attention_patterns(model: SequenceModel, tokens: torch.Tensor) -> np.ndarray:
    """`[layer, head, query, key]`: a Transformer's attention on one sequence."""
    _, cache = model.core.run_with_cache(tokens)
    return np.stack([cache[f"blocks.{i}.attn.hook_pattern"] for i in range(model.spec.n_layers)])


def pattern_scores(
    patterns: np.ndarray, tokens: np.ndarray, scored: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(induction, previous-token) scores `[layer, head]` of one sequence's attention
    `patterns [layer, head, query, key]`: the mean weight from each scored query to the
    token after its previous occurrence, and from every position after the first to the
    one before it."""
    queries = np.flatnonzero(scored)
    sources = previous_occurrence(tokens)[queries] + 1
    if (sources < 1).any():
        raise ValueError("every scored token must have occurred before")
    induction = patterns[:, :, queries, sources].mean(axis=-1)
    return induction, previous_token_weight(patterns)


def head_scores(
    model: SequenceModel, task: Induction, n: int = N_SEQUENCES
) -> dict[str, np.ndarray]:
    """`induction` and `previous_token` scores, each `[layer, head]`."""
    if model.spec.kind != "transformer":
        raise ValueError("head scores need a Transformer")
    batch = task.held_out(n)
    shape = (model.spec.n_layers, model.spec.n_heads)
    induction, previous = np.zeros(shape), np.zeros(shape)
    for tokens, targets in zip(batch.inputs, batch.targets, strict=True):
        patterns = attention_patterns(model, tokens)
        one = pattern_scores(patterns, tokens.numpy(), (targets != IGNORE).numpy())
        induction += one[0]
        previous += one[1]
    return {
        "induction": induction / len(batch.inputs),
        "previous_token": previous / len(batch.inputs),
    }


def circuit(scores: dict[str, np.ndarray]) -> dict[str, tuple[int, int, float]]:
    """The best induction head, and the best previous-token head in the layers before it
    (the only ones it can read): `(layer, head, score)` each; a previous-token head of
    score 0 at layer −1 when the induction head is in the first layer."""
    induction = scores["induction"]
    layer, head = np.unravel_index(int(np.argmax(induction)), induction.shape)
    best = {"induction": (int(layer), int(head), float(induction[layer, head]))}
    earlier = scores["previous_token"][:layer]
    if earlier.size == 0:
        best["previous_token"] = (-1, -1, 0.0)
    else:
        p_layer, p_head = np.unravel_index(int(np.argmax(earlier)), earlier.shape)
        best["previous_token"] = (int(p_layer), int(p_head), float(earlier[p_layer, p_head]))
    return best


def circuit_scores(model: SequenceModel, task: Induction) -> dict[str, float]:
    """`induction_score`: the best induction head's score; `previous_token_score`: the best
    previous-token head's score in the layers before that head."""
    best = circuit(head_scores(model, task))
    return {f"{name}_score": value[2] for name, value in best.items()}


def induction_score(model: SequenceModel, task: Induction) -> float:
    """The best induction head's score."""
    return circuit_scores(model, task)["induction_score"]


MAX_SCORED_CHARS = 64


def char_surprisal(model: SequenceModel, text: str, vocab: tuple[str, ...]) -> np.ndarray:
    """−log₂ P(c_i | c_<i) for i = 1 … len(text) − 1 under a character model; NaN where
    c_i is not in the model's alphabet. An unknown character read as context becomes a space."""
    index = {c: i for i, c in enumerate(vocab)}
    fallback = index.get(" ", 0)
    ids = torch.tensor([[index.get(c, fallback) for c in text]])
    log_probs = torch.log_softmax(model.predict(ids)[0, :-1], dim=-1)
    targets = ids[0, 1:]
    bits = -log_probs[torch.arange(len(targets)), targets].numpy().astype(np.float64) / np.log(2)
    bits[[c not in index for c in text[1:]]] = np.nan
    return bits


def ngram_surprisal(model, text: str) -> np.ndarray:
    """The same for an n-gram model (models.analysis.ngram.WittenBell)."""
    known = set(model.alphabet)
    bits = [
        -np.log2(model.probability(text[i], text[max(0, i - model.n + 1) : i]))
        if text[i] in known
        else np.nan
        for i in range(1, len(text))
    ]
    return np.asarray(bits, dtype=np.float64)
