"""Trained weights as a model source for the recurrent lesson.

A source is a set of four checkpoints trained together on the copy task, one per model
the lesson compares (RNN, LSTM, GRU, Transformer): the shipped set (`copy-lag20`) or a
visitor's own run that trained all four. The lesson feeds each trained model the task's
first held-out sequence through that model's own input layer, so its gates and gradients
are those of the task it learned.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from models.task_models import SequenceModel
from models.tasks import Copy, task_from_config

SHIPPED_SOURCE = "copy-lag20"
KINDS = ("rnn", "lstm", "gru", "transformer")
_SAVED = re.compile(r"(?P<prefix>\d{6}-copy-lag\d+)-(?P<kind>rnn|lstm|gru|transformer)")


def complete_runs(names: list[str]) -> list[str]:
    """Prefixes of saved copy-task runs (`<time>-copy-lag<k>`) that have all four models."""
    kinds: dict[str, set[str]] = {}
    for name in names:
        match = _SAVED.fullmatch(name)
        if match:
            kinds.setdefault(match["prefix"], set()).add(match["kind"])
    return sorted((p for p, k in kinds.items() if k == set(KINDS)), reverse=True)


def stem(directory: Path, source: str, kind: str) -> Path:
    return directory / f"{source}-{kind}"


def example(task_config: dict) -> tuple[list[str], torch.Tensor]:
    """The task's first held-out sequence: its token labels and ids `[T]`."""
    task = task_from_config(task_config)
    if not isinstance(task, Copy):
        raise ValueError("trained sources come from the copy task")
    ids = task.held_out(1).inputs[0]
    return [task.vocab[i] for i in ids.tolist()], ids


def inputs_for(model: SequenceModel, ids: torch.Tensor) -> torch.Tensor:
    """What the trained core reads at each step, `[T, d_model]`: its own input layer's output
    (for the Transformer, its token embedding W_E)."""
    with torch.no_grad():
        if model.spec.is_recurrent:
            return model.embed(ids).detach()
        return model.core.W_E[ids].detach()
