"""Validation of the text a visitor types, before any model sees it.

Every model page goes through `prepare_sentence`, so the same caps and the same
messages hold everywhere. A note is a (code, params) pair: the page turns it into
words in the visitor's language.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

MAX_CHARS = 2000

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


def prepare_sentence(raw: object, max_chars: int = MAX_CHARS) -> PreparedText:
    """Clean `raw` into text a model can read, with a note for every change made."""
    if not isinstance(raw, str):
        raw = "" if raw is None else str(raw)
    notes: list[Note] = []
    text, removed = _strip_invisible(unicodedata.normalize("NFC", raw))
    if removed:
        notes.append(Note("removed_invisible", {"count": removed}))
    text = " ".join(text.split())
    if len(text) > max_chars:
        notes.append(Note("truncated_chars", {"cap": max_chars, "original": len(text)}))
        text = text[:max_chars].rstrip()
    if not text:
        notes.append(Note("empty_text"))
    return PreparedText(text, tuple(notes))
