"""Figures of the masks lesson: numpy arrays and labels in, plotly figures out.

Masked cells are never sent as −inf or NaN (no non-finite number reaches the browser):
the values trace leaves them empty (null) and a grey overlay draws them, labelled with
the text the caller gives ("−∞" before softmax, "0" after).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from components.figure import PlainFigure, figure
from components.palette import ATTENTION_COLORSCALE
from components.positional import ENCODING_COLORSCALE, curves_parts

_FONT = dict(size=13)
MASKED_COLOR = "#8c8c8c"
# Up to this many cells per side, each cell carries its number (or its −∞) as text.
_TEXT_UP_TO = 16
BAR_COLORS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd")


def _layout(title: str, height: int, top: int, xaxis: dict, yaxis: dict, **options) -> dict:
    """Every masks chart's layout: axes whose margins grow to fit their labels, the
    title, tight margins (built whole: see components/layout.py)."""
    return dict(
        xaxis=dict(automargin=True, **xaxis),
        yaxis=dict(automargin=True, **yaxis),
        title=dict(text=title, font=dict(size=15)),
        height=height,
        margin=dict(l=10, r=10, t=top, b=10),
        font=_FONT,
        **options,
    )


def _with_gaps(values: np.ndarray, hidden: np.ndarray) -> list[list[float | None]]:
    """Rows of numbers with None where hidden: plotly leaves those cells empty."""
    cells = np.asarray(values, dtype=np.float64).astype(object)  # Python floats
    cells[np.asarray(hidden, dtype=bool)] = None
    return cells.tolist()


def shape_text(array: np.ndarray) -> str:
    return " × ".join(str(n) for n in array.shape)


def step_heatmap(
    matrix: np.ndarray,
    title: str,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    x_title: str = "",
    y_title: str = "",
    masked: np.ndarray | None = None,
    masked_text: str = "−∞",
    weights: bool = False,
    value_name: str = "value",
    cell_text: bool = True,
    value_format: str = ".2f",
    show_scale: bool = True,
    x_tickangle: int = -60,
    shapes: Sequence[dict] = (),
) -> PlainFigure:
    """One step of attention as a heatmap: rows are queries (or positions), columns keys
    (or dimensions). `masked` cells are drawn grey with `masked_text`; `weights` uses the
    0…1 attention colours, otherwise diverging colours centred on zero. Small matrices
    write each value in its cell (`cell_text`, in `value_format`). `shapes` are drawn over
    the cells."""
    # Traces are float32: sent as they are, the same numbers in half the bytes of float64.
    matrix = np.asarray(matrix)
    if matrix.dtype != np.float32:
        matrix = matrix.astype(np.float64)
    hidden = np.zeros(matrix.shape, dtype=bool) if masked is None else np.asarray(masked)
    finite = matrix[~hidden]
    if not np.isfinite(finite).all():
        raise ValueError("a chart was given NaN or inf outside the masked cells")
    limit = float(np.abs(finite).max()) if finite.size else 1.0
    limit = limit or 1.0
    small = cell_text and max(matrix.shape) <= _TEXT_UP_TO
    scale = dict(zmin=0.0, zmax=1.0) if weights else dict(zmid=0.0, zmin=-limit, zmax=limit)
    traces = [
        dict(
            type="heatmap",
            # A plain array when nothing is hidden: sent as compact binary, not checked
            # and copied number by number as nested lists are.
            z=_with_gaps(matrix, hidden) if hidden.any() else matrix,
            x=list(x_labels),
            y=list(y_labels),
            colorscale=ATTENTION_COLORSCALE if weights else ENCODING_COLORSCALE,
            colorbar=dict(title=value_name, thickness=10),
            showscale=show_scale,
            texttemplate=f"%{{z:{value_format}}}" if small else None,
            textfont=dict(size=9),
            hovertemplate=f"%{{y}} · %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>",
            name=value_name,
            **scale,
        )
    ]
    if hidden.any():
        traces.append(
            dict(
                type="heatmap",
                z=_with_gaps(np.ones(matrix.shape), ~hidden),
                x=list(x_labels),
                y=list(y_labels),
                colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]],
                showscale=False,
                # Text only on the masked cells: plotly writes text on empty cells too.
                # None where no cell carries text: the hover names the mask by itself, and
                # the strings would be most of a large chart's bytes.
                text=np.where(hidden, masked_text, "").tolist() if small else None,
                texttemplate="%{text}" if small else None,
                textfont=dict(color="white", size=10),
                hovertemplate=f"%{{y}} · %{{x}}<br>{masked_text}<extra></extra>",
                name=masked_text,
            )
        )
    # Keys along the bottom: a top axis would share its space with the title.
    layout = _layout(
        title,
        340 + 12 * min(len(y_labels), 40),
        50,
        xaxis=dict(
            title=dict(text=x_title), type="category", tickangle=x_tickangle, showgrid=False
        ),
        yaxis=dict(title=dict(text=y_title), type="category", autorange="reversed", showgrid=False),
        shapes=list(shapes),
    )
    return figure(traces, layout)


def _bars(name: str, labels, values, color, text, hover_format: str, **more) -> dict:
    """One series of labelled bars, each bar's number printed above it."""
    return dict(
        type="bar",
        x=list(labels),
        y=values,
        name=name,
        marker=dict(color=color),
        text=text,
        textposition="outside",
        cliponaxis=False,
        hovertemplate=f"{name}<br>%{{x}}: %{{y:{hover_format}}}<extra></extra>",
        **more,
    )


def leakage_figure(
    changes: Mapping[str, np.ndarray],
    labels: Sequence[str],
    edited: int,
    title: str = "",
    y_title: str = "",
    edited_text: str = "",
) -> PlainFigure:
    """Grouped bars of max |Δ output| per position, one bar per mask; exact zeros are
    labelled "0" so they read as exact, not as small. The edited position is marked."""
    traces = []
    for color, (name, values) in zip(BAR_COLORS, changes.items(), strict=False):
        values = np.asarray(values, dtype=np.float64)
        if not np.isfinite(values).all():
            raise ValueError("a chart was given NaN or inf")
        text = ["0" if v == 0 else f"{v:.2g}" for v in values]
        traces.append(_bars(name, labels, values, color, text, ".3e"))
    edited_band = dict(
        type="rect",
        x0=edited - 0.5,
        x1=edited + 0.5,
        xref="x",
        y0=0,
        y1=1,
        yref="y domain",
        fillcolor="#ffd54f",
        opacity=0.35,
        line=dict(width=0),
        layer="below",
    )
    edited_label = dict(
        x=edited, y=1.0, yref="paper", text=edited_text, showarrow=False, yanchor="bottom"
    )
    layout = _layout(
        title,
        420,
        110,
        xaxis=dict(type="category", tickangle=-45),
        yaxis=dict(title=dict(text=y_title), rangemode="tozero"),
        barmode="group",
        legend=dict(orientation="h", yanchor="bottom", y=1.08),
        shapes=[edited_band],
        annotations=[edited_label] if edited_text else [],
    )
    return figure(traces, layout)


def log_x_curves(
    curves: Mapping[str, np.ndarray],
    x: np.ndarray,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    log_y: bool = False,
    dashed: Sequence[str] = (),
) -> PlainFigure:
    """Curves over a base-2 log x axis (d_k, sequence length); names in `dashed` are
    reference lines, drawn dashed and without markers."""
    traces, layout = curves_parts(
        curves, x, title=title, x_title=x_title, y_title=y_title, log_y=log_y
    )
    for trace in traces:
        if trace["name"] in dashed:
            trace["line"]["dash"] = "dash"
        else:
            trace["mode"] = "lines+markers"
    layout["xaxis"].update(type="log", dtick=np.log10(2), tickformat="d", tickangle=0)
    if log_y:
        layout["yaxis"]["dtick"] = 1  # one label per decade
    # The legend under the plot: in a narrow column it would cover the title above it.
    layout.update(
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0, xanchor="left"),
        height=460,
    )
    layout["margin"].update(t=60, b=10)
    return figure(traces, layout)


def cache_growth_figure(
    keys: np.ndarray,
    labels: Sequence[str],
    new_rows: int,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    value_name: str = "K",
) -> PlainFigure:
    """The cached keys (or values) of one head `[pos, d_head]`; the last `new_rows` rows
    (this step's) outlined."""
    keys = np.asarray(keys)
    n = keys.shape[0]
    this_step = dict(
        type="rect",
        x0=-0.5,
        x1=keys.shape[1] - 0.5,
        y0=n - new_rows - 0.5,
        y1=n - 0.5,
        line=dict(color="#d62728", width=3),
    )
    return step_heatmap(
        keys,
        title,
        [str(i) for i in range(keys.shape[1])],
        labels,
        x_title,
        y_title,
        value_name=value_name,
        x_tickangle=0,
        shapes=[this_step],
    )


def extreme_cell(
    matrix: np.ndarray, hidden: np.ndarray | None = None, by_size: bool = False
) -> tuple[int, int, float]:
    """(row, column, value) of the largest visible cell, or of the largest |value| when
    `by_size`: what a chart's one-line summary names."""
    matrix = np.asarray(matrix, dtype=np.float64)
    score = np.abs(matrix) if by_size else matrix.copy()
    if hidden is not None:
        score[np.asarray(hidden)] = -np.inf
    row, column = np.unravel_index(int(np.argmax(score)), matrix.shape)
    return int(row), int(column), float(matrix[row, column])


def row_figure(
    series: Mapping[str, np.ndarray],
    labels: Sequence[str],
    title: str,
    x_title: str = "",
    masked: np.ndarray | None = None,
    masked_text: str = "−∞",
    value_format: str = ".2f",
) -> PlainFigure:
    """One query's row at one step as bars, each bar carrying its number in a large font
    (the row is at most 40 keys or dimensions). `masked` positions are drawn as grey bars
    of height 0 labelled `masked_text`: no −∞ is sent."""
    hidden = np.zeros(len(labels), dtype=bool) if masked is None else np.asarray(masked, bool)
    big = len(labels) <= 24
    with_text = len(labels) <= 40
    traces = []
    for color, (name, values) in zip(BAR_COLORS[1:] + BAR_COLORS[:1], series.items(), strict=False):
        values = np.asarray(values, dtype=np.float64)
        if not np.isfinite(values[~hidden]).all():
            raise ValueError("a chart was given NaN or inf outside the masked cells")
        shown = np.where(hidden, 0.0, values)
        colors = np.where(hidden, MASKED_COLOR, color).tolist()
        text = None
        if with_text:
            pairs = zip(shown, hidden, strict=True)
            text = [masked_text if h else f"{v:{value_format}}" for v, h in pairs]
        size = 17 if big and len(series) == 1 else 12
        traces.append(_bars(name, labels, shown, colors, text, ".4f", textfont=dict(size=size)))
    layout = _layout(
        title,
        240,
        40,
        xaxis=dict(title=dict(text=x_title), type="category", tickangle=-45),
        yaxis=dict(zeroline=True, zerolinecolor="#444"),
        barmode="group",
        showlegend=len(series) > 1,
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=1, xanchor="right"),
    )
    return figure(traces, layout)
