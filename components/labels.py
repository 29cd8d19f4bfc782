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


# Every ASCII punctuation character may be backslash-escaped in CommonMark, and then
# stands for itself: no emphasis, link, image, HTML, math ($), directive (:red[…]) or
# emoji shortcode (:smile:) can form. Backslash itself is in the set.
_MARKDOWN_SPECIAL = frozenset(r"""!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~""")


def markdown_literal(text: str) -> str:
    """Text that st.markdown / st.caption show exactly as written, on one line."""
    flat = " ".join(str(text).split())
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIAL else ch for ch in flat)
