"""Figures of gradient flow through time: numpy arrays and labels in, plotly figures (the
lines and bars) or grid charts (the heatmaps: components/grid.py, drawn on a canvas) out.

No NaN or inf reaches the browser: line builders leave such points out (and zeros too on a
log axis); heatmaps clamp them to float32's range. `chartable` says how many values a page
must tell the visitor were changed. Step labels come from `components.labels.token_labels`
(escaped and unique) or plain step numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from components.figure import PlainFigure, figure
from components.grid import (
    TOKEN_ANGLE,
    cell_ticks,
    cell_values,
    grid,
    palette_b64,
    position_labels,
)
from components.i18n import t
from components.labels import token_labels
from components.layout import axis, frame_layout, grid_layout, subplot_suffix
from components.layout import hline as hline_shape
from components.palette import (
    BLUE,
    CATEGORICAL,
    DIVERGING_COLORSCALE,
    GATE_COLORSCALE,
    MAGNITUDE_COLORSCALE,
    ORANGE,
)

MODEL_COLORS = dict(zip(("RNN", "LSTM", "GRU", "Transformer"), CATEGORICAL, strict=False))
F32_MAX = float(np.finfo(np.float32).max)
# log10 of the smallest value a heatmap shows; exact zeros (underflow) sit here.
LOG_FLOOR = -45.0
STATE_COLORSCALE = DIVERGING_COLORSCALE


def chartable(values: np.ndarray) -> int:
    """How many values are NaN or inf (and so changed or left out before drawing)."""
    return int((~np.isfinite(np.asarray(values, dtype=np.float64))).sum())


def lines_figure(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    log_y: bool = True,
    dashed: Sequence[str] = (),
    colors: Mapping[str, str] | None = None,
    hline: float | None = None,
    hover_labels: Mapping[str, Sequence[str]] | None = None,
    widths: Mapping[str, float] | None = None,
) -> PlainFigure:
    """One line per name: `curves[name] = (x, y)`. On a log axis, points ≤ 0 are left out
    (an exact zero has no logarithm); NaN and inf are always left out."""
    traces = []
    colors = {**MODEL_COLORS, **(colors or {})}
    for name, (x, y) in curves.items():
        labels = (hover_labels or {}).get(name)
        keep = np.isfinite(np.asarray(y, dtype=np.float64))
        if log_y:
            keep &= np.asarray(y, dtype=np.float64) > 0
        xs, ys = np.asarray(x)[keep], np.asarray(y, dtype=np.float64)[keep]
        text = [labels[i] for i in np.flatnonzero(keep)] if labels is not None else None
        traces.append(
            dict(
                type="scatter",
                x=xs,
                y=ys,
                mode="lines",
                name=name,
                text=text,
                line=dict(
                    color=colors.get(name),
                    dash="dash" if name in dashed else "solid",
                    width=(widths or {}).get(name, 2),
                ),
                hovertemplate=f"{name}<br>%{{x}}: %{{y:.3e}}"
                + ("<br>%{text}" if text is not None else "")
                + "<extra></extra>",
            )
        )
    shapes = []
    if hline is not None:
        shapes.append(hline_shape(hline, dict(color="#444", width=1, dash="dot")))
    layout = frame_layout(
        title,
        470,
        top=60,
        bottom=40,
        xaxis=axis(x_title),
        yaxis=axis(y_title, type="log" if log_y else "linear", exponentformat="e"),
        # Below the plot: long names wrap onto several rows without covering the title.
        legend=dict(orientation="h", yanchor="top", y=-0.3, x=0),
        shapes=shapes,
    )
    return figure(traces, layout)


def _log10_clamped(values: np.ndarray) -> np.ndarray:
    """log10 |values| with inf/NaN clamped to float32's largest and zeros to LOG_FLOOR."""
    magnitude = np.abs(np.asarray(values, dtype=np.float64))
    magnitude = np.where(np.isfinite(magnitude), magnitude, F32_MAX)
    with np.errstate(divide="ignore"):
        logs = np.log10(magnitude)
    return np.clip(logs, LOG_FLOOR, np.log10(F32_MAX)).astype(np.float32)


def unit_heatmap(
    values: np.ndarray, step_labels: Sequence[str], title: str = "", value_name: str = ""
) -> dict:
    """`values [T, units]` as log10 |value|, a grid chart (components/grid.py): the steps
    along the top, a row per hidden unit. `step_labels` are drawn as text, unescaped."""
    logs = _log10_clamped(values)
    finite_max = float(logs.max())
    zmin = max(float(logs.min()), finite_max - 12.0)
    panel = _step_panel(
        logs.T, step_labels, title, zmin, finite_max, MAGNITUDE_COLORSCALE, value_name, ".2f"
    )
    return grid([panel], 440)


def gates_figure(
    gates: Mapping[str, np.ndarray],
    step_labels: Sequence[str],
    title: str = "",
    max_units: int = 32,
    signed: Sequence[str] = ("C", "C_tilde", "H_tilde", "H"),
) -> dict:
    """One panel per gate `[T, units]` (first `max_units` units), stacked under one step
    axis along the top, a grid chart. Gates in (0, 1) use one colour scale; signed states
    (C, H̃) a diverging one, symmetric about zero. `step_labels` are drawn unescaped."""
    names = list(gates)
    drawn = {}
    for name in names:
        values = np.asarray(gates[name], dtype=np.float64)[:, :max_units]
        # A value that overflowed is drawn as 0 (the page says how many there are).
        drawn[name] = np.clip(np.where(np.isfinite(values), values, 0.0), -F32_MAX, F32_MAX)
    signed_limit = max([1.0] + [float(np.abs(drawn[n]).max()) for n in names if n in signed])
    panels = []
    for row, name in enumerate(names):
        is_signed = name in signed
        panels.append(
            _step_panel(
                drawn[name].T,
                step_labels,
                name,
                -signed_limit if is_signed else 0.0,
                signed_limit if is_signed else 1.0,
                STATE_COLORSCALE if is_signed else GATE_COLORSCALE,
                t("chart.state") if is_signed else t("chart.gate"),
                ".3f",
                steps_on_top=row == 0,
                hover_name=name,
            )
        )
    return grid(panels, 150 + 170 * len(names), title=title)


def _step_panel(
    values,
    step_labels,
    title,
    zmin,
    zmax,
    scale,
    value_name,
    value_format,
    steps_on_top: bool = True,
    hover_name: str | None = None,
) -> dict:
    """A `[units, T]` panel: a row per unit, its own colour scale and colour bar, the steps
    labelled along the top (`steps_on_top`; else only under the pointer, which names the
    value `hover_name`, by default `value_name`)."""
    units, n_steps = values.shape
    axis_labels = step_labels if steps_on_top else []
    return dict(
        **cell_values(values, zmin, zmax),
        palette=palette_b64(scale),
        title=title,
        x=dict(
            title=t("chart.step") if steps_on_top else "",
            ticks=cell_ticks(axis_labels),
            side="top",
            angle=TOKEN_ANGLE,
            size=12,
        ),
        y=dict(
            title=t("chart.hidden_unit"),
            ticks=cell_ticks(range(units)),
            size=12,
        ),
        colorbar=dict(title=value_name, ticks=_colorbar_ticks(zmin, zmax)),
        hover=dict(  # "unit 5, 3:cat" then the value
            rows=units,
            cols=n_steps,
            x=list(step_labels),
            y=[f"{t('chart.unit')} {u}" for u in range(units)],
            joiner=", ",
            name=hover_name or value_name,
            format=value_format,
        ),
        columns=list(axis_labels),
    )


def _colorbar_ticks(zmin: float, zmax: float, count: int = 5) -> list:
    return [[float(v), f"{v:.3g}"] for v in np.linspace(zmin, zmax, count)]


def clipping_figure(
    totals: Mapping[str, float],
    shares: Mapping[str, float],
    threshold: float,
    title: str = "",
    total_title: str = "",
    share_title: str = "",
) -> PlainFigure:
    """Two bar groups: the total gradient norm (log axis) and the early steps' share (%),
    each without and with clipping. A non-finite value gets no bar (the page says why)."""
    layout = grid_layout(1, 2, (total_title, share_title))
    colors = (BLUE, ORANGE)
    names = list(totals)
    total_values = np.array([totals[n] for n in names], dtype=np.float64)
    share_values = 100 * np.array([shares[n] for n in names], dtype=np.float64)
    traces = []
    for col, values, suffix in ((1, total_values, ""), (2, share_values, " %")):
        keep = np.isfinite(values) & (values > 0)
        kept = values[keep]
        traces.append(
            dict(
                type="bar",
                x=[n for n, k in zip(names, keep, strict=True) if k],
                y=kept,
                marker=dict(color=[c for c, k in zip(colors, keep, strict=False) if k]),
                text=[f"{v:.3g}{suffix}" for v in kept],
                textposition="outside",
                cliponaxis=False,
                showlegend=False,
                hovertemplate="%{x}: %{y:.3e}" + suffix + "<extra></extra>",
                xaxis=f"x{subplot_suffix(1, col, 2)}",
                yaxis=f"y{subplot_suffix(1, col, 2)}",
            )
        )
        axis_suffix = subplot_suffix(1, col, 2)
        if not keep.all():
            layout.setdefault("annotations", []).append(
                dict(
                    text=t("chart.no_bar"),
                    xref=f"x{axis_suffix} domain",
                    yref=f"y{axis_suffix} domain",
                    x=0.5,
                    y=0.5,
                    showarrow=False,
                    font=dict(color="#b22"),
                )
            )
        # Log axes from a decade under the smallest bar to a decade over the largest, so
        # bars of very different sizes (and the threshold line) stay readable.
        low = float(kept.min()) if kept.size else 1.0
        high = float(kept.max()) if kept.size else 1.0
        if col == 1:
            low, high = min(low, threshold), max(high, threshold)
        else:
            high = max(high, 100.0)
        layout[f"yaxis{axis_suffix}"].update(
            automargin=True,
            type="log",
            exponentformat="e",
            range=[np.log10(low) - 1, np.log10(high) + 0.5],
            ticksuffix=suffix,
        )
        layout[f"xaxis{axis_suffix}"].update(automargin=True, type="category")
    layout.update(
        frame_layout(title, 400, top=90),
        shapes=[hline_shape(threshold, dict(color="#444", dash="dot"))],
    )
    return figure(traces, layout)


def step_labels(tokens: Sequence[str] | None, n_steps: int, escaped: bool = True) -> list[str]:
    """Unique token labels for a sentence, or `t=0, t=1, …` for a synthetic sequence;
    escaped for plotly's markup, or as they are for a grid chart, which draws text."""
    if tokens is not None:
        return token_labels(tokens) if escaped else position_labels(tokens)
    return [t("chart.step_label", i=i) for i in range(n_steps)]
