"""The one tokenizer of SeqLens's own small models (models/nets/transformer.py and the others).

Each English word, each CJK character, each digit and each punctuation mark is a token,
so "我爱你" is three tokens and reads differently from "你爱我". The vocabulary is fixed
and shipped: four special tokens, punctuation, the digits, 12000 common English words
(assets/vocab/en_words.txt, matched lowercase) and the whole CJK Unified Ideographs block
(U+4E00–U+9FFF) mapped by code point. Anything else (emoji, rare words, other scripts)
becomes the visible unknown token `[UNK]`, and `unknown_spans` says which text it hid.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from models.text import Tokenized

WORDS_FILE = Path(__file__).resolve().parent.parent.parent / "assets" / "vocab" / "en_words.txt"
MAX_TOKENS = 512

PAD, UNK, BOS, EOS = "[PAD]", "[UNK]", "[BOS]", "[EOS]"
SPECIAL_TOKENS = (PAD, UNK, BOS, EOS)
PUNCTUATION = tuple(
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" + "，。、！？；：「」『』（）《》【】…—“”‘’·～"
)
DIGITS = tuple("0123456789")
CJK_FIRST, CJK_LAST = 0x4E00, 0x9FFF

_CJK = "\u4e00-\u9fff"
# One CJK character; a run of letters in any other script; one digit; any other mark.
_PIECES = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])[^\W\d_])+|\d|\S")


# What encode() returns; unknown_spans() defaults to this tokenizer's "[UNK]".
Encoded = Tokenized


@cache
def english_words() -> tuple[str, ...]:
    lines = WORDS_FILE.read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


class Tokenizer:
    """Words, CJK characters, digits and punctuation to ids, with a fixed vocabulary."""

    def __init__(self) -> None:
        fixed = [*SPECIAL_TOKENS, *PUNCTUATION, *DIGITS, *english_words()]
        if len(set(fixed)) != len(fixed):
            raise ValueError("the fixed vocabulary repeats a token")
        self._ids = {token: i for i, token in enumerate(fixed)}
        self._fixed = tuple(fixed)
        self.cjk_offset = len(fixed)
        self.vocab_size = self.cjk_offset + (CJK_LAST - CJK_FIRST + 1)
        self.unk_id = self._ids[UNK]

    def token_id(self, piece: str) -> int:
        if len(piece) == 1 and CJK_FIRST <= ord(piece) <= CJK_LAST:
            return self.cjk_offset + ord(piece) - CJK_FIRST
        return self._ids.get(piece.lower() if piece.isascii() else piece, self.unk_id)

    def id_to_token(self, token_id: int) -> str:
        if 0 <= token_id < self.cjk_offset:
            return self._fixed[token_id]
        if self.cjk_offset <= token_id < self.vocab_size:
            return chr(CJK_FIRST + token_id - self.cjk_offset)
        raise ValueError(f"token id {token_id} is outside the vocabulary")

    def encode(self, text: str, max_tokens: int = MAX_TOKENS) -> Encoded:
        """Tokens of `text`, at most `max_tokens` (the first ones); `truncated` says if cut."""
        matches = list(_PIECES.finditer(text))
        kept = matches[: max(0, max_tokens)]
        ids = tuple(self.token_id(m.group()) for m in kept)
        return Encoded(
            ids=ids,
            tokens=tuple(self.id_to_token(i) for i in ids),
            offsets=tuple(m.span() for m in kept),
            n_tokens_before_cap=len(matches),
        )
