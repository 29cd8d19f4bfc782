"""Figures of gradient flow through time: numpy arrays and labels in, plotly figures out.

No NaN or inf reaches the browser: line builders leave such points out (and zeros too on a
log axis); heatmaps clamp them to float32's range. `chartable` says how many values a page
must tell the visitor were changed. Step labels come from `components.labels.token_labels`
(escaped and unique) or plain step numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from components.figure import PlainFigure, figure
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
) -> PlainFigure:
    """`values [T, units]` as log10 |value|: x is the step, y the hidden unit."""
    logs = _log10_clamped(values)
    finite_max = float(logs.max())
    heatmap = dict(
        type="heatmap",
        z=logs.T,
        x=list(step_labels),
        y=np.arange(logs.shape[1]),
        zmin=max(float(logs.min()), finite_max - 12.0),
        zmax=finite_max,
        colorscale=MAGNITUDE_COLORSCALE,
        colorbar=dict(title=value_name, thickness=12),
        hovertemplate=f"%{{x}}, {t('chart.unit')} %{{y}}<br>log10 = %{{z:.2f}}<extra></extra>",
    )
    layout = frame_layout(
        title,
        440,
        xaxis=axis(t("chart.step"), type="category", showgrid=False, nticks=24),
        yaxis=axis(t("chart.hidden_unit"), autorange="reversed", showgrid=False),
    )
    return figure([heatmap], layout)


def gates_figure(
    gates: Mapping[str, np.ndarray],
    step_labels: Sequence[str],
    title: str = "",
    max_units: int = 32,
    signed: Sequence[str] = ("C", "C_tilde", "H_tilde", "H"),
) -> PlainFigure:
    """One heatmap row per gate `[T, units]` (first `max_units` units), sharing the step axis.
    Gates in (0, 1) use one colour scale; signed states (C, H̃) a diverging one."""
    names = list(gates)
    layout = grid_layout(len(names), 1, names, shared_xaxes=True, vertical_spacing=0.04)
    signed_limit = 1.0
    for name in names:
        if name in signed:
            values = np.asarray(gates[name], dtype=np.float64)[:, :max_units]
            values = np.where(np.isfinite(values), values, 0.0)
            signed_limit = max(signed_limit, float(np.abs(values).max()))
    traces = []
    unit = t("chart.unit")
    for row, name in enumerate(names, start=1):
        values = np.asarray(gates[name], dtype=np.float64)[:, :max_units]
        values = np.clip(np.where(np.isfinite(values), values, 0.0), -F32_MAX, F32_MAX)
        is_signed = name in signed
        suffix = subplot_suffix(row, 1, 1)
        traces.append(
            dict(
                type="heatmap",
                z=values.T.astype(np.float32),
                x=list(step_labels),
                y=np.arange(values.shape[1]),
                coloraxis="coloraxis2" if is_signed else "coloraxis",
                hovertemplate=f"{name}<br>%{{x}}, {unit} %{{y}}<br>%{{z:.3f}}<extra></extra>",
                xaxis=f"x{suffix}",
                yaxis=f"y{suffix}",
            )
        )
        layout[f"yaxis{suffix}"].update(axis(unit, autorange="reversed", showgrid=False))
        layout[f"xaxis{suffix}"].update(automargin=True, type="category", showgrid=False, nticks=24)
    layout.update(
        frame_layout(title, 150 + 170 * len(names), top=80),
        coloraxis=dict(
            colorscale=GATE_COLORSCALE,
            cmin=0.0,
            cmax=1.0,
            colorbar=dict(title=t("chart.gate"), thickness=12, len=0.45, y=0.78),
        ),
        coloraxis2=dict(
            colorscale=STATE_COLORSCALE,
            cmid=0.0,
            cmin=-signed_limit,
            cmax=signed_limit,
            colorbar=dict(title=t("chart.state"), thickness=12, len=0.45, y=0.22),
        ),
    )
    return figure(traces, layout)


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


def step_labels(tokens: Sequence[str] | None, n_steps: int) -> list[str]:
    """Escaped unique token labels for a sentence, or `t=0, t=1, …` for a synthetic sequence."""
    if tokens is not None:
        return token_labels(tokens)
    return [t("chart.step_label", i=i) for i in range(n_steps)]
