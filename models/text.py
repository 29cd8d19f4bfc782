"""The text a visitor types, cleaned before any model sees it, and the notes about it.

Every model page goes through `prepare_sentence`, so the same caps and the same
messages hold everywhere. A note is a (code, params) pair: the page turns it into
words in the visitor's language.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

MAX_CHARS = 2000
# Of a raw text, prepare_sentence reads at most this many characters per character it
# keeps: room for the spaces and invisible characters cleaning removes, while NFC and
# the strip below only ever see a bounded string (an 8 MB text took 2.3 s a rerun).
READ_PER_KEPT_CHAR = 4


def chars_read(max_chars: int) -> int:
    """How much of a raw text prepare_sentence reads when it keeps `max_chars`."""
    return READ_PER_KEPT_CHAR * max_chars


# The sentence boxes take no more than this (their max_chars): a longer value, from a
# link or a script, reaches the page cut to this length.
READ_CHARS = chars_read(MAX_CHARS)
# The unknown token of both tokenizers SeqLens runs (BERT's WordPiece and its own).
UNKNOWN = "[UNK]"

# Categories that carry no visible text: control characters (Cc), format marks such
# as zero-width joiners and right-to-left overrides (Cf), unassigned and private use.
_INVISIBLE_CATEGORIES = {"Cc", "Cf", "Cn", "Co", "Cs"}


@dataclass(frozen=True)
class Note:
    """A message for the visitor: `code` names our own words, `params` fill them in.

    `quote` is the visitor's own text the note refers to; it is shown apart, as
    plain text, never inside the formatted message (which renders markdown).
    """

    code: str
    params: dict = field(default_factory=dict)
    quote: str = ""


@dataclass(frozen=True)
class Tokenized:
    """What a tokenizer made of a text, for SeqLens's tokenizer and the pretrained one."""

    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    # For each token, the (start, end) characters of the text it came from; (0, 0) for
    # special tokens such as [CLS] that stand for no text.
    offsets: tuple[tuple[int, int], ...]
    n_tokens_before_cap: int

    @property
    def truncated(self) -> bool:
        return self.n_tokens_before_cap > len(self.ids)

    def unknown_spans(self, text: str, unknown_token: str = UNKNOWN) -> list[str]:
        """The pieces of `text` the tokenizer could only read as the unknown token."""
        return [
            text[start:end]
            for token, (start, end) in zip(self.tokens, self.offsets, strict=True)
            if token == unknown_token and end > start
        ]


@dataclass(frozen=True)
class PreparedText:
    text: str
    notes: tuple[Note, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.text


def _strip_invisible(text: str) -> tuple[str, int]:
    kept = []
    removed = 0
    for ch in text:
        if ch.isspace():
            # Every kind of line break and space separates words, as a space does.
            kept.append(" ")
        elif unicodedata.category(ch) not in _INVISIBLE_CATEGORIES:
            kept.append(ch)
        else:
            removed += 1
    return "".join(kept), removed


def _truncation_note(raw_length: int, cleaned_length: int, max_chars: int) -> Note | None:
    """What the visitor is told about a cut: the length of the text they sent, which
    is exact unless it is as long as a sentence box takes (it may have been longer)."""
    limit = chars_read(max_chars)
    if raw_length == limit:
        return Note("truncated_chars_at_least", {"cap": max_chars, "original": raw_length})
    if raw_length > limit:
        return Note("truncated_chars", {"cap": max_chars, "original": raw_length})
    if cleaned_length > max_chars:
        return Note("truncated_chars", {"cap": max_chars, "original": cleaned_length})
    return None


def prepare_sentence(raw: object, max_chars: int = MAX_CHARS) -> PreparedText:
    """Clean `raw` into text a model can read, with a note for every change made.

    Only the first chars_read(max_chars) characters are read: the work is bounded
    however long the text that arrives."""
    if not isinstance(raw, str):
        raw = "" if raw is None else str(raw)
    notes: list[Note] = []
    text, removed = _strip_invisible(unicodedata.normalize("NFC", raw[: chars_read(max_chars)]))
    if removed:
        notes.append(Note("removed_invisible", {"count": removed}))
    text = " ".join(text.split())
    truncation = _truncation_note(len(raw), len(text), max_chars)
    if truncation is not None:
        notes.append(truncation)
        text = text[:max_chars].rstrip()
    if not text:
        notes.append(Note("empty_text"))
    return PreparedText(text, tuple(notes))


def tokenization_notes(
    n_tokens: int, n_before_cap: int, cap: int, unknown: list[str], vocabulary: str = ""
) -> list[Note]:
    """What a tokenizer did to the visitor's text: cut it at `cap` tokens, or read pieces
    of it only as an unknown token. `vocabulary` prefixes the note codes ("own_" for
    SeqLens's tokenizer), whose messages explain that vocabulary."""
    notes = []
    if n_before_cap > n_tokens:
        params = {"cap": cap, "original": n_before_cap, "cap_words": cap * 3 // 4}
        notes.append(Note(f"{vocabulary}truncated_tokens", params))
    if unknown:
        shown = " ".join(dict.fromkeys(unknown))[:200]
        notes.append(Note(f"{vocabulary}unknown_tokens", {"count": len(unknown)}, quote=shown))
    return notes
