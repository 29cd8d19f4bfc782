"""Token labels that are safe and unique on a chart axis."""

from __future__ import annotations

import html
from collections.abc import Sequence


def escape_label(text: str) -> str:
    """Plotly reads pseudo-HTML (<b>, <a href>, <br>) in labels; show it as text instead."""
    return html.escape(str(text), quote=False)


def token_labels(tokens: Sequence[str]) -> list[str]:
    """`"0:[CLS]", "1:the", …`: a repeated token keeps its own row and column."""
    return [f"{i}:{escape_label(tok)}" for i, tok in enumerate(tokens)]


def head_label(layer: int, head: int) -> str:
    return f"L{layer} H{head}"
