"""Whether an answer shows the visitor's own sentence, read from a Rerun."""

from __future__ import annotations

import json

from bench.rerun import Rerun

# Chart keys on the heads page whose x axis is the sentence's token labels.
TOKEN_CHART_KEYS = ("one_head", "focus")


def check_heads_tokens(run: Rerun) -> str:
    """'' when the heads page's token charts show exactly `run.sentence`'s tokens."""
    from bench.sentences import chart_labels, minilm_tokens

    expected = chart_labels(minilm_tokens(run.sentence)[:128])
    for key in TOKEN_CHART_KEYS:
        got = run.chart_x(key)
        if got is None:
            return f"no {key} chart"
        if got != expected:
            return f"{key} chart shows other tokens: {got[:6]}… (expected {expected[:6]}…)"
    return ""


def check_words_shown(run: Rerun) -> str:
    """'' when every word of the sentence appears in the page's token text (any page)."""
    shown = " ".join(run.texts).lower()
    missing = [w for w in run.sentence.lower().split() if w not in shown]
    return f"words not on the page: {missing[:5]}" if missing else ""


def check_text_charted(run: Rerun, key: str, n: int = 12) -> str:
    """'' when chart `key` carries the sentence's first `n` characters (for a page that
    reads the sentence character by character and shows it only inside a chart)."""
    spec = run.charts.get(key)
    if spec is None:
        return f"chart {key!r} not drawn"
    prefix = json.dumps(run.sentence[:n], ensure_ascii=False)[1:-1]
    return "" if prefix in spec else f"chart {key!r} does not show {run.sentence[:n]!r}"
