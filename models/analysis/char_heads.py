"""The previous-character head of a character language model, measured.

A previous-character head attends from every character to the one just before it: the
attention pattern's first sub-diagonal carries its weight. A head's score on a sequence is
the mean weight from each position after the first to the position before it; its score on
a set of sequences, the mean of those. A head that spread its weight evenly over the
characters before it would score about 2 / T on T characters.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch

from models.analysis.probes import attention_patterns, previous_token_weight
from models.nets.task_models import SequenceModel

N_WINDOWS = 32


def previous_weight(pattern: np.ndarray) -> np.ndarray:
    """`[..., query, key]` attention → `[...]`: the mean weight on the key just before."""
    if pattern.shape[-1] < 2:
        raise ValueError("a previous character needs at least two characters")
    return previous_token_weight(pattern)


def even_previous_weight(n: int) -> float:
    """The score of a causal head that spreads each query's weight evenly over the keys it
    may see, on `n` characters: query q gives 1 / (q + 1) to the one before it."""
    if n < 2:
        raise ValueError("a previous character needs at least two characters")
    return sum(1 / (q + 1) for q in range(1, n)) / (n - 1)


def patterns(model: SequenceModel, ids: torch.Tensor) -> np.ndarray:
    """`[layer, head, query, key]`: a Transformer's attention on one sequence of ids."""
    if model.spec.kind != "transformer":
        raise ValueError("head scores need a Transformer")
    return attention_patterns(model, ids).astype(np.float64)


def previous_char_scores(model: SequenceModel, sequences: Iterable[torch.Tensor]) -> np.ndarray:
    """`[layer, head]`: each head's previous-character score, averaged over `sequences`."""
    scores = [previous_weight(patterns(model, ids)) for ids in sequences if len(ids) >= 2]
    if not scores:
        raise ValueError("no sequence of two or more characters")
    return np.mean(scores, axis=0)


def held_out_windows(task, n: int = N_WINDOWS) -> list[torch.Tensor]:
    """The first `n` windows of the task's held-out text."""
    return list(task.held_out().inputs[:n])


def best_previous_char(model: SequenceModel, sequences: Iterable[torch.Tensor]) -> float:
    """The best head's previous-character score."""
    return float(previous_char_scores(model, sequences).max())


def held_out_previous_char(model: SequenceModel, task) -> float:
    """The best head's previous-character score on the task's first held-out windows."""
    return best_previous_char(model, held_out_windows(task))
