"""Figures of "The same output, two ways": one model's output computed in parallel and as a
recurrence, side by side, and what each form costs (the state it carries, its time per
token, the steps training must run one after another).

Arrays and labels in, a figure out: grid charts (components/grid.py) for the token ×
dimension outputs, plain plotly figures (components/figure.py) for the costs. Token labels
are drawn as canvas text by the grid charts (never read as markup) and escaped for plotly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from components.figure import PlainFigure, figure
from components.grid import cell_ticks, cell_values, grid, palette_b64, position_labels
from components.i18n import t
from components.layout import axis, frame_layout, vline
from components.palette import (
    BLUE,
    CATEGORICAL,
    DIVERGING_COLORSCALE,
    ORANGE,
    SKY_BLUE,
    VERMILLION,
)

# A form's bars: the recurrent step in blues, the parallel recomputation in warm colours,
# the darker shade at the visitor's length, the lighter at the long one.
TIMING_COLORS = (BLUE, VERMILLION, SKY_BLUE, ORANGE)


def output_height(n_tokens: int) -> int:
    """A row of outputs: 16 px a token (the lesson reads at most 40), 300 to 800 px in all."""
    return min(800, max(300, 16 * n_tokens + 150))


def symmetric_limit(arrays: Sequence[np.ndarray]) -> float:
    """The largest |value| among `arrays` (1 when all are 0): one colour scale for all."""
    largest = max(float(np.abs(np.asarray(a, dtype=np.float64)).max()) for a in arrays)
    return largest if np.isfinite(largest) and largest > 0 else 1.0


def _colorbar_ticks(limit: float) -> list:
    return [[float(v), f"{v:.2g}"] for v in np.linspace(-limit, limit, 5)]


def _output_panel(
    values: np.ndarray,
    token_names: list[str],
    title: str,
    limit: float,
    *,
    token_title: str,
    dim_title: str,
    value_title: str,
    colorbar: bool,
) -> dict:
    """One form's output `[pos, dim]`: a row per token, the dimensions along the top."""
    rows, cols = values.shape
    dims = [str(d) for d in range(cols)]
    panel = dict(
        **cell_values(np.asarray(values, dtype=np.float32), -limit, limit),
        palette=palette_b64(DIVERGING_COLORSCALE),
        title=title,
        x=dict(title=dim_title, ticks=cell_ticks(dims), side="top", angle=0, size=10),
        y=dict(title=token_title, ticks=cell_ticks(token_names), size=11),
        hover=dict(
            rows=rows,
            cols=cols,
            x=[t("chart.dim", dim=d) for d in dims],
            y=token_names,
            joiner=", ",
            name=value_title,
            format=".5f",
        ),
        columns=dims,
    )
    if colorbar:
        panel["colorbar"] = dict(title=value_title, ticks=_colorbar_ticks(limit))
    return panel


def outputs_grid(
    forms: Mapping[str, np.ndarray],
    tokens: Sequence[str],
    *,
    title: str = "",
    token_title: str = "",
    dim_title: str = "",
    value_title: str = "",
) -> dict:
    """The same output computed by each form (`forms[name] = [pos, dim]`), side by side
    on one colour scale, symmetric about zero; the last panel carries the colour bar."""
    names = position_labels(tokens)
    limit = symmetric_limit(list(forms.values()))
    panels = [
        _output_panel(
            values,
            names,
            name,
            limit,
            token_title=token_title if i == 0 else "",
            dim_title=dim_title,
            value_title=value_title,
            colorbar=i == len(forms) - 1,
        )
        for i, (name, values) in enumerate(forms.items())
    ]
    return grid(panels, output_height(len(tokens)), columns=len(panels), title=title)


def log_lines_figure(
    curves: Mapping[str, np.ndarray],
    x: np.ndarray,
    marked: int,
    marked_text: str,
    *,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    dashes: Mapping[str, str] | None = None,
) -> PlainFigure:
    """Lines over log x and log y axes (`curves[name]` against `x`), a dotted line at
    `marked` (the visitor's length) labelled `marked_text`; `dashes` names a line's dash
    ("dash", "dot"), so lines of equal values stay apart. Points ≤ 0 have no logarithm
    and are left out (a scan of one token has 0 levels)."""
    traces = []
    for color, (name, y) in zip(CATEGORICAL, curves.items(), strict=False):
        y = np.asarray(y, dtype=np.float64)
        keep = np.isfinite(y) & (y > 0)
        traces.append(
            dict(
                type="scatter",
                x=np.asarray(x, dtype=np.float64)[keep],
                y=y[keep],
                mode="lines",
                name=name,
                line=dict(color=color, width=2, dash=(dashes or {}).get(name, "solid")),
                hovertemplate=f"{name}<br>%{{x}}: %{{y:,.0f}}<extra></extra>",
            )
        )
    label = dict(
        x=float(np.log10(marked)),
        xref="x",
        y=1.0,
        yref="paper",
        text=marked_text,
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
    )
    layout = frame_layout(
        title,
        440,
        top=80,
        bottom=10,
        xaxis=axis(x_title, type="log", dtick=np.log10(2), tickformat="d"),
        yaxis=axis(y_title, type="log", exponentformat="power", dtick=1),
        # Under the axis title: in a half-width column the legend wraps onto two rows.
        legend=dict(orientation="h", yanchor="top", y=-0.3, x=0, xanchor="left"),
        shapes=[vline(marked, dict(color="#444", width=1, dash="dot"))],
        annotations=[label],
    )
    return figure(traces, layout)


def timing_figure(
    seconds: Mapping[str, Mapping[str, float]],
    *,
    title: str = "",
    y_title: str = "",
) -> PlainFigure:
    """Grouped bars of time per token in µs on a log axis: a group per model, a bar per
    series (`seconds[series][model]`, in seconds), each bar's number printed above it."""
    traces = []
    for color, (series, by_model) in zip(TIMING_COLORS, seconds.items(), strict=False):
        models = list(by_model)
        micro = 1e6 * np.array([by_model[m] for m in models], dtype=np.float64)
        if not np.isfinite(micro).all() or (micro <= 0).any():
            raise ValueError("a time to draw is not a positive number")
        traces.append(
            dict(
                type="bar",
                x=models,
                y=micro,
                name=series,
                marker=dict(color=color),
                text=[f"{v:.3g}" for v in micro],
                textposition="outside",
                cliponaxis=False,
                hovertemplate=f"{series}<br>%{{x}}: %{{y:.3g}} µs<extra></extra>",
            )
        )
    layout = frame_layout(
        title,
        440,
        top=80,
        bottom=10,
        xaxis=axis(None, type="category"),
        yaxis=axis(y_title, type="log", exponentformat="power", dtick=1),
        barmode="group",
        legend=dict(orientation="h", yanchor="top", y=-0.12, x=0, xanchor="left"),
    )
    return figure(traces, layout)
