"""The part "masks": what the masks do, step by step under the chosen mask, then the
leakage proof on the visitor's sentence."""

from __future__ import annotations

from components.ui.parts.masks import leakage, steps
from models.nets.transformer import TransformerConfig


def draw(sentence_text: str, ids: list[int], tokens: list[str], cfg: TransformerConfig) -> None:
    """`ids` and `tokens` are the sentence as the lesson's random Transformer reads it,
    `cfg` that Transformer's."""
    steps.draw(sentence_text, cfg)
    leakage.draw(ids, tokens)
