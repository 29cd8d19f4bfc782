"""The tasks on text: the next character of a text, and number words to numerals.

The language models read one of two texts (assets/text/): the bilingual story, or a Chinese
one (the bilingual story's Chinese half, then more of the same story, written to hold every
character of the Chinese example sentences). A language model holds out the end of its text;
the number task holds out a fixed tenth of the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch

from models.training.task_base import HELD_OUT_BUCKETS, HELD_OUT_SEED, IGNORE, Batch, Task

TEXT_DIR = Path(__file__).resolve().parent.parent.parent / "assets" / "text"
# A language model's text, by the name its task's config gives (`text`).
TEXTS = {"bilingual": "bilingual.txt", "zh": "chinese.txt"}
BILINGUAL = "bilingual"
TEXT_FILE = TEXT_DIR / TEXTS[BILINGUAL]


@cache
def corpus(name: str = BILINGUAL) -> str:
    return (TEXT_DIR / TEXTS[name]).read_text(encoding="utf-8")


def bilingual_text() -> str:
    return corpus(BILINGUAL)


@cache
def _characters(name: str = BILINGUAL) -> tuple[str, ...]:
    return tuple(sorted(set(corpus(name))))


@cache
def _character_index(name: str = BILINGUAL) -> dict[str, int]:
    return {c: i for i, c in enumerate(_characters(name))}


TRAIN_SHARE = 0.9


def text_split(name: str = BILINGUAL) -> tuple[str, str]:
    """(training text, held-out text): the held-out part is the text's last tenth."""
    text = corpus(name)
    cut = int(len(text) * TRAIN_SHARE)
    return text[:cut], text[cut:]


@cache
def _split_ids(held_out: bool, name: str = BILINGUAL) -> torch.Tensor:
    index = _character_index(name)
    return torch.tensor([index[c] for c in text_split(name)[1 if held_out else 0]])


@dataclass(frozen=True)
class CharLM(Task):
    context: int = 64
    text: str = BILINGUAL

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", "lm")
        if self.text not in TEXTS:
            raise ValueError(f"text must be one of {tuple(TEXTS)}, got {self.text!r}")

    def key(self) -> str:
        return self.name if self.text == BILINGUAL else f"{self.name}-{self.text}"

    def config(self) -> dict:
        """The bilingual text is the default, and left out (as the files made before
        there were two texts have it)."""
        raw = super().config()
        if self.text == BILINGUAL:
            del raw["text"]
        return raw

    @property
    def vocab(self):
        return _characters(self.text)

    @property
    def n_ctx(self) -> int:
        return self.context

    def ids(self, text: str) -> torch.Tensor:
        index = _character_index(self.text)
        return torch.tensor([index[c] for c in text])

    def split(self) -> tuple[str, str]:
        return text_split(self.text)

    def make(self, generator, size, held_out):
        ids = _split_ids(held_out, self.text)
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
