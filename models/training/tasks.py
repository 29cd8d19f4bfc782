"""The training lab's tasks: data made on the fly, a loss and a score for each.

Every task makes batches from a `torch.Generator`, so a seed fixes the data. Held-out data
never appears in training: the synthetic tasks split the space of sequences by a hash of
their content (a tenth is held out), the language model holds out the end of its text, and
the number task holds out a fixed tenth of the numbers.

- `copy`: remember `length` symbols and write each one exactly `lag` steps after it came.
- `reverse`: read `length` symbols, then write them backwards.
- `adding`: T steps of (value, marker); at the end, the sum of the two marked values.
- `induction`: a segment of random tokens, then the same segment again, at positions and
  distances that change from sequence to sequence, among filler; predict each next token
  of the repeat (possible only by finding the previous occurrence: an induction head).
- `lm`: the next character of a bilingual English and Chinese text (assets/text/).
- `numbers`: an encoder–decoder turns English number words into Chinese numerals
  ("three hundred forty two" → 三百四十二).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import torch
import torch.nn.functional as F

TEXT_FILE = Path(__file__).resolve().parent.parent.parent / "assets" / "text" / "bilingual.txt"
IGNORE = -100  # targets that are not scored
HELD_OUT_BUCKETS = 10  # one bucket in ten is held out
HELD_OUT_SEED = 999_983
RECURRENT = ("rnn", "lstm", "gru")


@dataclass(frozen=True)
class Batch:
    inputs: torch.Tensor  # [B, T] token ids, or [B, T, features]
    targets: torch.Tensor  # [B, T] ids (IGNORE where not scored), or [B] values
    decoder_inputs: torch.Tensor | None = None  # seq2seq: the target shifted right


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


def _symbols(n: int) -> tuple[str, ...]:
    return tuple(chr(ord("A") + i) for i in range(n))


BLANK, RECALL = "·", "?"


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
        object.__setattr__(self, "models", ("transformer", *RECURRENT))
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


@cache
def bilingual_text() -> str:
    return TEXT_FILE.read_text(encoding="utf-8")


@cache
def _characters() -> tuple[str, ...]:
    return tuple(sorted(set(bilingual_text())))


@cache
def _character_index() -> dict[str, int]:
    return {c: i for i, c in enumerate(_characters())}


TRAIN_SHARE = 0.9


def text_split() -> tuple[str, str]:
    """(training text, held-out text): the held-out part is the text's last tenth."""
    text = bilingual_text()
    cut = int(len(text) * TRAIN_SHARE)
    return text[:cut], text[cut:]


@cache
def _split_ids(held_out: bool) -> torch.Tensor:
    index = _character_index()
    return torch.tensor([index[c] for c in text_split()[1 if held_out else 0]])


@dataclass(frozen=True)
class CharLM(Task):
    context: int = 64

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", "lm")

    @property
    def vocab(self):
        return _characters()

    @property
    def n_ctx(self) -> int:
        return self.context

    def ids(self, text: str) -> torch.Tensor:
        index = _character_index()
        return torch.tensor([index[c] for c in text])

    def split(self) -> tuple[str, str]:
        return text_split()

    def make(self, generator, size, held_out):
        ids = _split_ids(held_out)
        if held_out:
            # Every position of the held-out text, in consecutive windows.
            n = (len(ids) - 1) // self.context
            starts = torch.arange(n) * self.context
        else:
            starts = torch.randint(len(ids) - self.context - 1, (size,), generator=generator)
        window = starts[:, None] + torch.arange(self.context + 1)[None, :]
        chunk = ids[window]
        return Batch(chunk[:, :-1], chunk[:, 1:])


# --- numbers: English words to Chinese numerals ---------------------------------------

ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
ONES += "fifteen sixteen seventeen eighteen nineteen"
EN_ONES = tuple(ONES.split())
EN_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
ZH_DIGITS = "零一二三四五六七八九"
PAD, BOS, EOS = "[PAD]", "[BOS]", "[EOS]"
MAX_NUMBER = 999


def english_number(n: int) -> list[str]:
    if not 0 <= n <= MAX_NUMBER:
        raise ValueError(f"n must be in [0, {MAX_NUMBER}]")
    words = []
    hundreds, rest = divmod(n, 100)
    if hundreds:
        words += [EN_ONES[hundreds], "hundred"]
    if rest >= 20:
        words.append(EN_TENS[rest // 10])
        if rest % 10:
            words.append(EN_ONES[rest % 10])
    elif rest or not hundreds:
        words.append(EN_ONES[rest])
    return words


def chinese_number(n: int) -> str:
    if not 0 <= n <= MAX_NUMBER:
        raise ValueError(f"n must be in [0, {MAX_NUMBER}]")
    hundreds, rest = divmod(n, 100)
    tens, ones = divmod(rest, 10)
    if not hundreds:
        if rest < 10:
            return ZH_DIGITS[rest]
        # 十, 十五 (not 一十五) on their own; 二十, 二十一
        head = "十" if tens == 1 else ZH_DIGITS[tens] + "十"
        return head + (ZH_DIGITS[ones] if ones else "")
    out = ZH_DIGITS[hundreds] + "百"
    if rest == 0:
        return out
    if tens == 0:
        return out + "零" + ZH_DIGITS[ones]  # 一百零五
    # after 百 the ten is spoken: 一百一十五
    return out + ZH_DIGITS[tens] + "十" + (ZH_DIGITS[ones] if ones else "")


def _held_out_numbers() -> frozenset[int]:
    order = torch.randperm(MAX_NUMBER + 1, generator=torch.Generator().manual_seed(HELD_OUT_SEED))
    return frozenset(order[: (MAX_NUMBER + 1) // HELD_OUT_BUCKETS].tolist())


@cache
def _number_vocab() -> tuple[str, ...]:
    words = sorted({w for n in range(MAX_NUMBER + 1) for w in english_number(n)})
    return (PAD, BOS, EOS, *words, *ZH_DIGITS, "十", "百")


@cache
def _encoded_number(n: int) -> tuple[list[int], list[int]]:
    index = {token: i for i, token in enumerate(_number_vocab())}
    source = [index[w] for w in english_number(n)]
    target = [index[BOS], *(index[c] for c in chinese_number(n)), index[EOS]]
    return source, target


@dataclass(frozen=True)
class Numbers(Task):
    def __post_init__(self) -> None:
        object.__setattr__(self, "name", "numbers")
        object.__setattr__(self, "models", ("encdec",))

    @property
    def vocab(self):
        return _number_vocab()

    @property
    def n_ctx(self) -> int:
        return 8  # the longest target, 一百一十五 plus [BOS] and [EOS], is 7

    def numbers(self, held_out: bool) -> list[int]:
        hidden = _held_out_numbers()
        return [n for n in range(MAX_NUMBER + 1) if (n in hidden) == held_out]

    def encode(self, n: int) -> tuple[list[int], list[int]]:
        return _encoded_number(n)

    def decode(self, ids) -> str:
        out = []
        for i in ids:
            token = self.vocab[int(i)]
            if token == EOS:
                break
            if token not in (PAD, BOS):
                out.append(token)
        return "".join(out)

    def make(self, generator, size, held_out):
        pool = self.numbers(held_out)
        if held_out:
            chosen = pool
        else:
            chosen = [pool[i] for i in torch.randint(len(pool), (size,), generator=generator)]
        pad = self.vocab.index(PAD)
        sources = torch.full((len(chosen), 4), pad)
        targets = torch.full((len(chosen), self.n_ctx), pad)
        for row, n in enumerate(chosen):
            source, target = self.encode(n)
            sources[row, : len(source)] = torch.tensor(source)
            targets[row, : len(target)] = torch.tensor(target)
        scored = targets[:, 1:].masked_fill(targets[:, 1:] == pad, IGNORE)
        return Batch(sources, scored, decoder_inputs=targets[:, :-1])


TASKS = {
    "copy": Copy,
    "reverse": Reverse,
    "adding": Adding,
    "induction": Induction,
    "lm": CharLM,
    "numbers": Numbers,
}


def make_task(name: str, **settings) -> Task:
    if name not in TASKS:
        raise ValueError(f"task must be one of {tuple(TASKS)}, got {name!r}")
    return TASKS[name](**settings)


def task_from_config(raw: dict) -> Task:
    raw = dict(raw)
    return make_task(raw.pop("name", ""), **raw)
