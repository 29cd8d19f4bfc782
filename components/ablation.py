"""Figures of what switching attention heads off changes. Arrays in, plotly figures out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from components.figure import PlainFigure, figure
from components.palette import BLUE, VERMILLION

_FONT = dict(size=14)
# Okabe-Ito, as every line and bar chart (tests/unit/test_palette.py checks the pair).
BEFORE_COLOR = BLUE
AFTER_COLOR = VERMILLION


def next_token_figure(
    tokens: Sequence[str],
    before: np.ndarray,
    after: np.ndarray,
    before_name: str,
    after_name: str,
    probability_title: str,
) -> PlainFigure:
    """The most likely next tokens, their probability with every head on and with the
    chosen heads off, side by side (most likely first, at the top)."""
    labels = list(tokens)
    bars = [
        dict(
            type="bar",
            y=labels,
            x=values,
            name=name,
            orientation="h",
            marker=dict(color=color),
            hovertemplate="%{y}: %{x:.4f}<extra>" + name + "</extra>",
        )
        for values, name, color in (
            (before, before_name, BEFORE_COLOR),
            (after, after_name, AFTER_COLOR),
        )
    ]
    layout = dict(
        barmode="group",
        height=max(320, 34 * len(labels) + 120),
        margin=dict(l=10, r=10, t=40, b=10),
        font=_FONT,
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
        xaxis=dict(title=dict(text=probability_title), rangemode="tozero"),
        yaxis=dict(autorange="reversed", type="category", automargin=True),
    )
    return figure(bars, layout)


def token_similarity_figure(
    labels: Sequence[str], cosine: np.ndarray, similarity_title: str
) -> PlainFigure:
    """Each token's last-layer vector: cosine similarity with the chosen heads off vs on."""
    low = float(min(np.min(cosine), 0.9)) if len(cosine) else 0.9
    bar = dict(
        type="bar",
        x=list(labels),
        y=cosine,
        marker=dict(color=AFTER_COLOR),
        hovertemplate="%{x}: %{y:.5f}<extra></extra>",
    )
    layout = dict(
        height=360,
        margin=dict(l=10, r=10, t=30, b=10),
        font=_FONT,
        xaxis=dict(type="category", tickangle=-60, automargin=True),
        # The title is long in Chinese: the margin grows so it never covers the ticks.
        yaxis=dict(
            title=dict(text=similarity_title),
            range=[low - 0.02 * (1 - low), 1.0],
            automargin=True,
        ),
    )
    return figure([bar], layout)
