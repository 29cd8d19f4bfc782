"""What every training task has: a batch, a loss and a score, held-out data set apart.

Every task makes batches from a `torch.Generator`, so a seed fixes the data. Held-out data
never appears in training: how each task sets it apart is in its own module
(models/training/synthetic_tasks.py, models/training/text_tasks.py); the registry of tasks
is models/training/tasks.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

IGNORE = -100  # targets that are not scored
HELD_OUT_BUCKETS = 10  # one bucket in ten is held out
HELD_OUT_SEED = 999_983
RECURRENT = ("rnn", "lstm", "gru")


@dataclass(frozen=True)
class Batch:
    inputs: torch.Tensor  # [B, T] token ids, or [B, T, features]
    targets: torch.Tensor  # [B, T] ids (IGNORE where not scored), or [B] values
    decoder_inputs: torch.Tensor | None = None  # seq2seq: the target shifted right


@dataclass(frozen=True)
class Task:
    """What every task has; subclasses make the batches."""

    name: str = field(init=False, default="")
    metric: str = field(init=False, default="accuracy")  # "accuracy" (higher) or "mse" (lower)
    models: tuple[str, ...] = field(init=False, default=(*RECURRENT, "transformer"))

    @property
    def vocab(self) -> tuple[str, ...]:
        raise NotImplementedError

    @property
    def n_in(self) -> int:
        return len(self.vocab)

    @property
    def n_out(self) -> int:
        return len(self.vocab)

    @property
    def features(self) -> bool:
        return False

    @property
    def n_ctx(self) -> int:
        raise NotImplementedError

    def key(self) -> str:
        """A short name for files: copy-lag20, adding-T50, induction, …"""
        return self.name

    def config(self) -> dict:
        raw = {k: v for k, v in self.__dict__.items() if k not in ("name", "metric", "models")}
        return {"name": self.name, **raw}

    def make(self, generator: torch.Generator, size: int, held_out: bool) -> Batch:
        raise NotImplementedError

    def batch(self, generator: torch.Generator, size: int) -> Batch:
        return self.make(generator, size, held_out=False)

    def held_out(self, size: int = 512) -> Batch:
        return self.make(torch.Generator().manual_seed(HELD_OUT_SEED), size, held_out=True)

    def loss(self, outputs: torch.Tensor, batch: Batch) -> torch.Tensor:
        return F.cross_entropy(
            outputs.reshape(-1, outputs.shape[-1]), batch.targets.reshape(-1), ignore_index=IGNORE
        )

    def score(self, outputs: torch.Tensor, batch: Batch) -> float:
        """Per-token accuracy on the scored positions."""
        scored = batch.targets != IGNORE
        right = (outputs.argmax(dim=-1) == batch.targets) & scored
        return float(right.sum()) / max(1, int(scored.sum()))

    def chance_loss(self) -> float:
        return math.log(self.n_out)
