"""What the lesson reads of the visitor's sentence: its tokens, their vectors and the queries,
keys and values of the lesson's random Transformer, so every model on the page reads the same
inputs and every pattern compares the same queries and keys."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from components.ui.linked import linked_selectbox
from components.ui.parts.masks.reading import encode
from components.ui.runs import recurrence as runs


@dataclass(frozen=True)
class Reading:
    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    notes: tuple  # what the tokenizer lost of the text (models/text.py Note)
    # The lesson Transformer's first block: its input `X [pos, d_model]` (token vector plus
    # position) and its queries, keys and values `[head, pos, d_head]` (read-only arrays).
    X: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    softmax_pattern: np.ndarray  # `[head, query_pos, key_pos]`, causal

    @property
    def n_tokens(self) -> int:
        return len(self.ids)


def read(text: str) -> Reading | None:
    """`text`'s first SHOWN_TOKENS tokens (components/ui/parts/masks/reading.py), read; None
    when it has no token at all."""
    ids, tokens, notes = encode(text)
    if not ids:
        return None
    first = runs.first_block(tuple(ids))
    return Reading(tuple(ids), tuple(tokens), tuple(notes), **first)


# The head ① and ② draw: one control, kept in the link, the same in both parts.
HEAD_KEY = "rr_head"


def head_name(head: int) -> str:
    return f"H{head}"


def head_control(where, label: str, n_heads: int) -> int:
    return linked_selectbox(where, label, range(n_heads), 0, key=HEAD_KEY, format_func=head_name)
