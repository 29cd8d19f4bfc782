"""The synthetic tasks: copy, selective copy, reverse, adding and induction, on random symbols.

Held-out data is split from the space of sequences by a hash of their content: a tenth is
held out (the adding task, of continuous values, uses a different random stream).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from models.training.task_base import HELD_OUT_BUCKETS, IGNORE, RECURRENT, Batch, Task


def _bucket(symbols: torch.Tensor, n_symbols: int) -> torch.Tensor:
    """A hash of each row's content, in [0, HELD_OUT_BUCKETS)."""
    weights = torch.tensor([pow(n_symbols + 7, i, 1_000_003) for i in range(symbols.shape[1])])
    return (symbols * weights).sum(dim=1) % 1_000_003 % HELD_OUT_BUCKETS


def _split_rows(
    draw,
    generator: torch.Generator,
    size: int,
    n_symbols: int,
    held_out: bool,
    key_width: int | None = None,
) -> torch.Tensor:
    """`size` rows from `draw(generator, n)`, all in the held-out bucket or all outside it;
    the bucket is a hash of each row's first `key_width` columns (all by default)."""
    rows: list[torch.Tensor] = []
    while sum(len(r) for r in rows) < size:
        candidates = draw(generator, 2 * size)
        in_bucket = _bucket(candidates[:, :key_width], n_symbols) == 0
        rows.append(candidates[in_bucket if held_out else ~in_bucket])
    return torch.cat(rows)[:size]


def _symbols(n: int) -> tuple[str, ...]:
    return tuple(chr(ord("A") + i) for i in range(n))


BLANK, RECALL = "·", "?"
MIXER_STACKS = ("ssm", "linear")  # the kinds of models/nets/mixer_stacks.py


@dataclass(frozen=True)
class Copy(Task):
    lag: int = 20
    length: int = 5
    n_symbols: int = 8

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", "copy")
        if not self.length <= self.lag <= 200:
            raise ValueError(f"the lag must be in [{self.length}, 200]")

    @property
    def vocab(self):
        return (*_symbols(self.n_symbols), BLANK, RECALL)

    @property
    def n_ctx(self) -> int:
        return self.lag + self.length

    def key(self) -> str:
        return f"copy-lag{self.lag}"

    def make(self, generator, size, held_out):
        def draw(g, n):
            return torch.randint(self.n_symbols, (n, self.length), generator=g)

        symbols = _split_rows(draw, generator, size, self.n_symbols, held_out)
        blank, recall = self.n_symbols, self.n_symbols + 1
        inputs = torch.full((size, self.n_ctx), blank)
        inputs[:, : self.length] = symbols
        inputs[:, self.lag :] = recall
        targets = torch.full((size, self.n_ctx), IGNORE)
        targets[:, self.lag :] = symbols  # step t writes the symbol of step t − lag
        return Batch(inputs, targets)


@dataclass(frozen=True)
class SelectiveCopy(Task):
    """Selective copying (Gu & Dao 2023, "Mamba", section 3.1): `n_copy` random symbols at
    random places among `length` blanks, then `n_copy` recall markers; at the k-th marker,
    write the k-th symbol. The symbols' places change from sequence to sequence, so the
    spacing of the copy task's fixed lag is gone: a model must decide by content (symbol or
    blank) what to keep. A time-invariant recurrence decays every input alike; an input-
    dependent gate (an LSTM's, Mamba's step size) can skip the blanks. Scored on the
    markers only; chance is 1 / n_symbols.

    Held out by the symbols copied: no held-out sequence of symbols is ever trained on,
    wherever it is placed."""

    length: int = 32
    n_copy: int = 4
    n_symbols: int = 8

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", "selective_copy")
        object.__setattr__(self, "models", (*RECURRENT, "transformer", *MIXER_STACKS))
        if not 1 <= self.n_copy <= self.length <= 1000:
            raise ValueError("need 1 ≤ n_copy ≤ length ≤ 1000")
        if self.n_symbols < 2:
            raise ValueError("need at least 2 symbols")

    @property
    def vocab(self):
        return (*_symbols(self.n_symbols), BLANK, RECALL)

    @property
    def n_ctx(self) -> int:
        return self.length + self.n_copy

    def key(self) -> str:
        return f"selective_copy-L{self.length}"

    def _draw(self, generator: torch.Generator, rows: int) -> torch.Tensor:
        """Everything random about `rows` sequences, one row each from one draw (sequence i
        is the same however many are drawn): the symbols, then where they go (the first
        `n_copy` places of a random order of the `length`, in increasing order)."""
        u = torch.rand(rows, self.n_copy + self.length, generator=generator)
        symbols = (u[:, : self.n_copy] * self.n_symbols).long().clamp(max=self.n_symbols - 1)
        places = u[:, self.n_copy :].argsort(dim=1)[:, : self.n_copy].sort(dim=1).values
        return torch.cat([symbols, places], dim=1)

    def make(self, generator, size, held_out):
        drawn = _split_rows(self._draw, generator, size, self.n_symbols, held_out, self.n_copy)
        symbols, places = drawn.split([self.n_copy, self.n_copy], dim=1)
        blank, recall = self.n_symbols, self.n_symbols + 1
        inputs = torch.full((size, self.n_ctx), blank)
        inputs.scatter_(1, places, symbols)
        inputs[:, self.length :] = recall
        targets = torch.full((size, self.n_ctx), IGNORE)
        targets[:, self.length :] = symbols  # the k-th marker writes the k-th symbol
        return Batch(inputs, targets)


@dataclass(frozen=True)
class Reverse(Task):
    length: int = 8
    n_symbols: int = 8

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", "reverse")

    @property
    def vocab(self):
        return (*_symbols(self.n_symbols), RECALL)

    @property
    def n_ctx(self) -> int:
        return 2 * self.length

    def make(self, generator, size, held_out):
        def draw(g, n):
            return torch.randint(self.n_symbols, (n, self.length), generator=g)

        symbols = _split_rows(draw, generator, size, self.n_symbols, held_out)
        inputs = torch.full((size, self.n_ctx), self.n_symbols)
        inputs[:, : self.length] = symbols
        targets = torch.full((size, self.n_ctx), IGNORE)
        targets[:, self.length :] = symbols.flip(1)
        return Batch(inputs, targets)


@dataclass(frozen=True)
class Adding(Task):
    T: int = 50

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", "adding")
        object.__setattr__(self, "metric", "mse")
        object.__setattr__(self, "models", RECURRENT)
        if self.T < 4:
            raise ValueError("T must be at least 4")

    @property
    def vocab(self):
        return ("value", "marker")

    @property
    def n_out(self) -> int:
        return 1

    @property
    def features(self) -> bool:
        return True

    @property
    def n_ctx(self) -> int:
        return self.T

    def key(self) -> str:
        return f"adding-T{self.T}"

    def make(self, generator, size, held_out):
        # Values are continuous: held-out data is simply a different random stream.
        values = torch.rand(size, self.T, generator=generator)
        half = self.T // 2
        first = torch.randint(half, (size,), generator=generator)
        second = half + torch.randint(self.T - half, (size,), generator=generator)
        markers = torch.zeros(size, self.T)
        rows = torch.arange(size)
        markers[rows, first] = 1.0
        markers[rows, second] = 1.0
        targets = values[rows, first] + values[rows, second]
        return Batch(torch.stack([values, markers], dim=-1), targets)

    def loss(self, outputs, batch):
        return F.mse_loss(outputs[:, -1, 0], batch.targets)

    def score(self, outputs, batch) -> float:
        return float(self.loss(outputs, batch))

    def chance_loss(self) -> float:
        return 1 / 6  # the variance of a sum of two U(0, 1): what predicting 1 scores


@dataclass(frozen=True)
class Induction(Task):
    """A segment of distinct random tokens seen twice, among filler tokens, in `length`
    positions. Each sequence draws its own segment length (`min_repeat` … `max_repeat`),
    where the first copy starts and how far the second copy follows it: neither the
    position nor the distance of the previous occurrence is ever the same, so only
    finding it by content (attention to the token after it) predicts the repeat.
    Filler comes from the symbols the segment does not use, so every repeated token
    occurred exactly once before."""

    length: int = 32
    min_repeat: int = 4
    max_repeat: int = 12
    n_symbols: int = 32

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", "induction")
        object.__setattr__(self, "models", ("transformer", *RECURRENT, *MIXER_STACKS))
        if not 2 <= self.min_repeat <= self.max_repeat < self.n_symbols:
            raise ValueError("need 2 ≤ min_repeat ≤ max_repeat < n_symbols")
        if 2 * self.max_repeat > self.length:
            raise ValueError("two copies of the longest segment must fit: 2·max_repeat ≤ length")

    @property
    def vocab(self):
        return tuple(f"t{i}" for i in range(self.n_symbols))

    @property
    def n_ctx(self) -> int:
        return self.length

    def _draw(self, generator: torch.Generator, rows: int) -> torch.Tensor:
        """Everything random about `rows` sequences, one row each, so that sequence i is the
        same however many are drawn: a random order of all symbols (the segment is its
        start, filler comes from the rest), the segment's length, two cuts that place the
        copies among the filler, and each position's filler pick."""
        s = self.n_symbols
        u = torch.rand(rows, s + 3 + self.length, generator=generator)
        order = u[:, :s].argsort(dim=1)
        n = self.min_repeat + (u[:, s] * (self.max_repeat - self.min_repeat + 1)).long()
        spare = self.length - 2 * n  # filler positions: before, between and after the copies
        cuts = (u[:, s + 1 : s + 3] * (spare[:, None] + 1)).long()
        picks = (u[:, s + 3 :] * (s - n[:, None])).long()
        return torch.cat([order, n[:, None], cuts, picks], dim=1)

    def make(self, generator, size, held_out):
        s = self.n_symbols
        # Held out by the segment's first `min_repeat` symbols, which every segment has.
        drawn = _split_rows(self._draw, generator, size, s, held_out, self.min_repeat)
        order, n, cuts, picks = drawn.split([s, 1, 2, self.length], dim=1)
        first = cuts.min(dim=1, keepdim=True).values  # filler before the first copy
        second = cuts.max(dim=1, keepdim=True).values + n  # the gap is max − min
        inputs = order.gather(1, n + picks)  # filler: symbols after the segment's
        pos = torch.arange(self.length)[None, :]
        for start in (first, second):
            inside = (pos >= start) & (pos < start + n)
            segment = order.gather(1, (pos - start).clamp(0, s - 1))
            inputs = torch.where(inside, segment, inputs)
        # In the second copy, the next token is known: it followed this one before.
        scored = (pos >= second) & (pos < second + n - 1)
        follower = order.gather(1, (pos - second + 1).clamp(0, s - 1))
        targets = torch.where(scored, follower, torch.full_like(inputs, IGNORE))
        return Batch(inputs, targets)
