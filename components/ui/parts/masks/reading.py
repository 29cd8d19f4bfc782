"""What the lesson's random models read of a text: its first SHOWN_TOKENS tokens."""

from __future__ import annotations

from components.ui.runs.shared import load_tokenizer
from models.text import tokenization_notes

# Step-by-step heatmaps stop being readable long before the model's 512 positions.
SHOWN_TOKENS = 40


def encode(text: str) -> tuple[list[int], list[str], list]:
    """Ids and tokens of `text` (the first SHOWN_TOKENS), with notes on what was lost."""
    encoded = load_tokenizer().encode(text, SHOWN_TOKENS)
    notes = tokenization_notes(
        len(encoded.ids),
        encoded.n_tokens_before_cap,
        SHOWN_TOKENS,
        encoded.unknown_spans(text),
        vocabulary="own_",
    )
    return list(encoded.ids), list(encoded.tokens), notes
