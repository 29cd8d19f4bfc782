"""Figures of the training lab: bars for perplexities, a grid of head scores.

Arrays and labels in, plotly figures out; no st.*, no torch. Also how a character is
labelled and a character model's likeliest next characters. Line charts (loss curves,
accuracy against lag, n-gram sparsity) use components.recurrent.lines_figure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from components.figure import PlainFigure, figure
from components.labels import escape_label
from components.layout import grid_layout, subplot_suffix
from components.recurrent import MODEL_COLORS

NGRAM_COLOR = "#7f7f7f"
# Characters a label would show as nothing: a space, a line break, a tab.
_SHOWN_AS = {" ": "␣", "\n": "⏎", "\t": "⇥"}


def char_label(char: str) -> str:
    """A character as a chart or an option shows it: a space as ␣, a line break as ⏎."""
    return escape_label(_SHOWN_AS.get(char, char))


def top_next(model, history: str, k: int) -> tuple[tuple[str, ...], np.ndarray]:
    """The `k` characters of `model.alphabet` most likely after `history` under a character
    model with `probability(char, history)` (models.analysis.ngram.WittenBell), most likely
    first (ties in alphabet order), and their probabilities."""
    alphabet = tuple(model.alphabet)
    probs = np.asarray([model.probability(c, history) for c in alphabet], dtype=np.float64)
    order = np.argsort(-probs, kind="stable")[:k]
    return tuple(alphabet[i] for i in order), probs[order]


def bars_figure(
    labels: Sequence[str],
    values: Sequence[float],
    title: str = "",
    y_title: str = "",
    colors: Sequence[str] | None = None,
    value_format: str = ".1f",
) -> PlainFigure:
    """One bar per label, its value written above it in `value_format`; non-finite values
    are left out (a bar of NaN draws nothing true)."""
    values = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(values)
    names = [escape_label(label) for label, k in zip(labels, keep, strict=True) if k]
    shown = [c for c, k in zip(colors, keep, strict=True) if k] if colors else None
    bar = dict(
        type="bar",
        x=names,
        y=values[keep],
        marker=dict(color=shown),
        text=[f"{v:{value_format}}" for v in values[keep]],
        textposition="outside",
        hovertemplate="%{x}: %{y:.2f}<extra></extra>",
    )
    layout = dict(
        title=dict(text=title),
        # Slanted names grow the margins they need (the last one overhangs the right edge).
        xaxis=dict(automargin=True),
        yaxis=dict(title=dict(text=y_title)),
        height=360,
        margin=dict(l=50, r=20, t=50, b=60),
    )
    return figure([bar], layout)


def perplexity_colors(labels: Sequence[str]) -> list[str]:
    """Each neural model in its usual colour; every n-gram order in grey."""
    return [MODEL_COLORS.get(label, NGRAM_COLOR) for label in labels]


def head_grids_figure(
    grids: dict[str, np.ndarray], x_title: str = "", y_title: str = "", zmax: float = 1.0
) -> PlainFigure:
    """Each `scores [layer, head]` of `grids` (title → scores) as a small heatmap with each
    value written in its cell, side by side in one chart on one colour scale."""
    titles = list(grids)
    layout = grid_layout(1, len(titles), titles, horizontal_spacing=0.12)
    traces = []
    for col, (name, scores) in enumerate(grids.items(), start=1):
        suffix = subplot_suffix(1, col, len(titles))
        traces.append(
            _head_heatmap(scores, name, x_title, y_title, zmax, last=col == len(titles))
            | dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}")
        )
        # Layers and heads are names, not a scale: one tick each, no half-layers.
        layout[f"xaxis{suffix}"].update(title=dict(text=x_title), type="category")
        layout[f"yaxis{suffix}"].update(title=dict(text=y_title), type="category")
    n_layers = max(len(scores) for scores in grids.values())
    layout.update(height=120 + 60 * n_layers, margin=dict(l=50, r=20, t=50, b=40))
    return figure(traces, layout)


def _head_heatmap(
    scores: np.ndarray, name: str, x_title: str, y_title: str, zmax: float, last: bool
) -> dict:
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=0.0)
    n_layers, n_heads = scores.shape
    return dict(
        type="heatmap",
        name=name,
        z=scores,
        x=[str(h) for h in range(n_heads)],
        y=[str(layer) for layer in range(n_layers)],
        zmin=0.0,
        zmax=zmax,
        colorscale="Blues",
        showscale=last,  # one colour bar serves every grid: the same scale
        text=[[f"{v:.2f}" for v in row] for row in scores],
        texttemplate="%{text}",
        # In the page's language: the axis titles name the layer and the head.
        hovertemplate=f"{y_title} %{{y}} · {x_title} %{{x}}: %{{z:.3f}}<extra>{name}</extra>",
    )
