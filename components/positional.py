"""Figures of positional encodings: numpy arrays and labels in, plotly figures out.

Every builder drops or refuses non-finite values, so no NaN or inf reaches the browser;
token axes take labels from `components.labels.token_labels` (escaped and unique).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from components.figure import PlainFigure, figure
from components.i18n import t
from components.labels import token_labels
from components.layout import axis, frame_layout, hline, vline
from components.palette import BLUE, CATEGORICAL, DIVERGING_COLORSCALE

ENCODING_COLORSCALE = DIVERGING_COLORSCALE
SCHEME_COLORS = dict(
    zip(("sinusoidal", "learned", "rope", "alibi", "none"), CATEGORICAL, strict=False)
)


# The combined table chart: its height and the share of it the curves take.
ENCODING_HEIGHT = 760
WAVES_SHARE = 0.4
WAVES_GAP = 0.06


def scheme_label(code: str) -> str:
    """A scheme's name in the current language ("sinusoidal" → "正弦"); other names as given."""
    return t(f"positional.scheme.{code}") if code in SCHEME_COLORS else code


# The position axis names each token of a sentence up to this long; a longer one keeps
# plotly's own numbered ticks (one label per position would overlap).
TOKEN_TICKS_UP_TO = 40


def _position_ticks(tokens: Sequence[str], n_pos: int) -> dict:
    """Position-axis options: each of the sentence's positions labelled by its token
    ("3:cat"), then every tenth position past it by its number."""
    if not tokens or len(tokens) > TOKEN_TICKS_UP_TO:
        return {}
    n = len(tokens)
    past = list(range(-(-n // 10) * 10, n_pos, 10))
    return dict(
        tickmode="array",
        tickvals=[*range(n), *past],
        ticktext=[*token_labels(tokens), *map(str, past)],
        # Upright and small: a position is about ten pixels wide on a lesson's chart.
        tickangle=-90,
        tickfont=dict(size=10),
    )


# Errors are drawn on a log axis; an exact zero is drawn at this floor instead.
LOG_FLOOR = 1e-17
# A threshold drawn across a chart.
LEVEL_LINE = dict(color="#444", dash="dot")


def _finite(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if not np.isfinite(values).all():
        raise ValueError("a chart was given NaN or inf")
    return values


def _finite_line(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points of a line whose y is finite (NaN marks 'not defined here')."""
    x, y = np.asarray(x), np.asarray(y, dtype=np.float64)
    keep = np.isfinite(y)
    return x[keep], y[keep]


def _end_marker(at: float, text: str, inside: bool = False) -> dict:
    """The dashed line where the sentence ends, with its label: layout shapes/annotations.
    The label sits above the plot, clear of the data; `inside` hangs it inside, beside the
    line's top, for a chart whose legend sits above the plot."""
    marker = dict(shapes=[vline(at, dict(color="#444", width=2, dash="dash"))])
    if text:
        place = (
            dict(yanchor="top", xshift=4, bgcolor="rgba(255,255,255,0.85)")
            if inside
            else dict(yanchor="bottom")
        )
        marker["annotations"] = [
            dict(x=at, y=1.0, yref="paper", text=text, showarrow=False, xanchor="left", **place)
        ]
    return marker


def encoding_heatmap(
    table: np.ndarray,
    n_sentence: int,
    title: str = "",
    end_text: str = "",
    tokens: Sequence[str] = (),
) -> PlainFigure:
    """A `[position, dimension]` table: x is the position, y the dimension; `tokens` (the
    sentence's) name the positions they sit at."""
    heatmap, xaxis, yaxis = _table_heatmap(table)
    xaxis |= _position_ticks(tokens, len(table))
    layout = frame_layout(
        title, 420, xaxis=xaxis, yaxis=yaxis, **_end_marker(n_sentence - 0.5, end_text)
    )
    return figure([heatmap], layout)


def _table_heatmap(table: np.ndarray) -> tuple[dict, dict, dict]:
    """The table's heatmap trace, its x axis and its y axis."""
    table = _finite(table)
    n_pos, d = table.shape
    limit = float(np.abs(table).max()) or 1.0
    heatmap = dict(
        type="heatmap",
        z=table.T.astype(np.float32),
        x=np.arange(n_pos),
        y=np.arange(d),
        zmid=0.0,
        zmin=-limit,
        zmax=limit,
        colorscale=ENCODING_COLORSCALE,
        colorbar=dict(title=t("chart.value"), thickness=12),
        hovertemplate=f"{t('chart.position')} %{{x}}, {t('chart.dimension')} %{{y}}"
        f"<br>{t('chart.value')} %{{z:.4f}}<extra></extra>",
    )
    xaxis = axis(t("chart.position"), showgrid=False)
    yaxis = axis(t("chart.dimension"), autorange="reversed", showgrid=False)
    return heatmap, xaxis, yaxis


def waves_figure(
    table: np.ndarray, dims: Sequence[int], n_sentence: int, title: str = "", end_text: str = ""
) -> PlainFigure:
    """Chosen dimensions of a table as curves over position."""
    layout = frame_layout(
        title,
        360,
        xaxis=axis(t("chart.position")),
        yaxis=axis(t("chart.value")),
        **_end_marker(n_sentence - 0.5, end_text),
    )
    return figure(_wave_traces(table, dims), layout)


def _wave_traces(table: np.ndarray, dims: Sequence[int]) -> list[dict]:
    table = _finite(table)
    positions = np.arange(table.shape[0])
    position = t("chart.position")
    traces = []
    for dim in dims:
        name = t("chart.dim", dim=dim)
        traces.append(
            dict(
                type="scatter",
                x=positions,
                y=table[:, dim],
                mode="lines+markers" if len(positions) <= 80 else "lines",
                marker=dict(size=5),
                name=name,
                hovertemplate=f"{name}<br>{position} %{{x}}: %{{y:.4f}}<extra></extra>",
            )
        )
    return traces


def encoding_figure(
    table: np.ndarray,
    dims: Sequence[int],
    n_sentence: int,
    end_text: str = "",
    tokens: Sequence[str] = (),
) -> PlainFigure:
    """The table as a heatmap and, under it on the same position axis, the chosen
    dimensions as curves (none chosen: the heatmap alone). One chart: zooming into
    positions zooms both. `tokens` (the sentence's) name the positions they sit at."""
    if not dims:
        return encoding_heatmap(table, n_sentence, end_text=end_text, tokens=tokens)
    heatmap, xaxis, yaxis = _table_heatmap(table)
    top = WAVES_SHARE + WAVES_GAP  # the heatmap's panel starts above the curves' one
    heatmap["colorbar"].update(y=top, yanchor="bottom", len=1 - top)
    curves = [dict(trace, xaxis="x2", yaxis="y2") for trace in _wave_traces(table, dims)]
    end = _end_marker(n_sentence - 0.5, end_text)
    end["shapes"].append(vline(n_sentence - 0.5, end["shapes"][0]["line"], axis_suffix="2"))
    layout = frame_layout(
        "",
        ENCODING_HEIGHT,
        # The position axis is drawn once, under the curves; the table follows its zoom.
        xaxis=dict(xaxis, title=None, showticklabels=False, anchor="y", matches="x2"),
        yaxis=dict(yaxis, domain=[top, 1.0]),
        xaxis2=axis(t("chart.position"), anchor="y2", **_position_ticks(tokens, len(table))),
        yaxis2=axis(t("chart.value"), anchor="x2", domain=[0.0, WAVES_SHARE]),
        legend=dict(y=WAVES_SHARE, yanchor="top"),
        **end,
    )
    return figure([heatmap, *curves], layout)


def curves_figure(curves: Mapping[str, np.ndarray], x: np.ndarray, *args, **options) -> PlainFigure:
    """One line per named curve over a shared x; NaN points are left out of the line.
    The other arguments are `curves_parts`'s (titles, colours, an end marker, log y)."""
    traces, layout = curves_parts(curves, x, *args, **options)
    return figure(traces, layout)


def curves_parts(
    curves: Mapping[str, np.ndarray],
    x: np.ndarray,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    colors: Mapping[str, str] | None = None,
    marker_at: float | None = None,
    marker_text: str = "",
    log_y: bool = False,
    y_axis: Mapping[str, object] | None = None,
    level: float | None = None,
) -> tuple[list[dict], dict]:
    """`curves_figure`'s traces (plain dicts) and layout, for a caller that adds to them
    before building the figure once. `y_axis` adds options to the y axis (a range, a
    tick step); `level` draws a dotted line across at that y (a threshold)."""
    traces = []
    for name, y in curves.items():
        xs, ys = _finite_line(x, y)
        if log_y:
            ys = np.maximum(np.abs(ys), LOG_FLOOR)
        traces.append(
            dict(
                type="scatter",
                x=xs,
                y=ys,
                mode="lines",
                name=name,
                line=dict(color=(colors or {}).get(name)),
                hovertemplate=f"{name}<br>%{{x}}: %{{y:.4g}}<extra></extra>",
            )
        )
    # The legend is above the plot: the label goes inside.
    marker = _end_marker(marker_at, marker_text, inside=True) if marker_at is not None else {}
    if level is not None:
        marker["shapes"] = [*marker.get("shapes", []), hline(level, LEVEL_LINE)]
    layout = frame_layout(
        title,
        420,
        top=110,
        xaxis=axis(x_title),
        yaxis=axis(
            y_title, type="log" if log_y else "linear", exponentformat="e", **(y_axis or {})
        ),
        legend=dict(orientation="h", yanchor="bottom", y=1.0),
        **marker,
    )
    return traces, layout


# The length chart: its height, and the share of it ALiBi's bias panel takes (below).
EXTRAPOLATION_HEIGHT = 620
BIAS_SHARE = 0.4


def extrapolation_figure(
    similarities: Mapping[str, np.ndarray],
    biases: Mapping[str, np.ndarray],
    x: np.ndarray,
    similarity_title: str,
    bias_title: str,
    **options,
) -> PlainFigure:
    """Two panels over one distance axis: above, the curves that compare two positions'
    encodings (`similarities`, each normalised to 1 at r = 0, or 0 everywhere); below, on
    an axis of its own, what is added to the score (`biases`: ALiBi's −m·r, 0 at r = 0).
    A bias is not a similarity, so the two never share a y axis. `options` are
    `curves_parts`'s (title, x_title, colors, marker_at, marker_text)."""
    x_title = options.pop("x_title", "")
    traces, layout = curves_parts(similarities, x, y_title=similarity_title, **options)
    colors = options.get("colors")
    below, _ = curves_parts(biases, x, colors=colors)
    below = [dict(trace, xaxis="x2", yaxis="y2") for trace in below]
    top = BIAS_SHARE + WAVES_GAP
    shapes = layout.get("shapes", [])
    layout.update(
        height=EXTRAPOLATION_HEIGHT,
        xaxis=dict(layout["xaxis"], showticklabels=False, anchor="y", matches="x2"),
        yaxis=dict(layout["yaxis"], domain=[top, 1.0]),
        xaxis2=axis(x_title, anchor="y2"),
        yaxis2=axis(bias_title, anchor="x2", domain=[0.0, BIAS_SHARE]),
        shapes=shapes + [dict(shape, xref="x2", yref="y2 domain") for shape in shapes],
    )
    return figure([*traces, *below], layout)


def matrix_figure(
    matrix: np.ndarray,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    x_labels: Sequence | None = None,
    y_labels: Sequence | None = None,
    value_name: str = "",
) -> PlainFigure:
    """A square-ish matrix, diverging colours centred on zero, exact values on hover."""
    matrix = _finite(matrix)
    value_name = value_name or t("chart.value")
    limit = float(np.abs(matrix).max()) or 1.0
    heatmap = dict(
        type="heatmap",
        z=matrix.astype(np.float32),
        x=list(x_labels) if x_labels is not None else None,
        y=list(y_labels) if y_labels is not None else None,
        zmid=0.0,
        zmin=-limit,
        zmax=limit,
        colorscale=ENCODING_COLORSCALE,
        colorbar=dict(title=value_name, thickness=12),
        hovertemplate=f"{t('chart.row')} %{{y}}, {t('chart.column')} %{{x}}"
        f"<br>{value_name} %{{z:.4f}}<extra></extra>",
    )
    layout = frame_layout(
        title,
        460,
        xaxis=axis(x_title, showgrid=False),
        yaxis=axis(
            y_title, autorange="reversed", showgrid=False, scaleanchor="x", constrain="domain"
        ),
    )
    return figure([heatmap], layout)


def error_bars_figure(
    errors: Mapping[str, float], title: str = "", y_title: str = "", threshold: float | None = None
) -> PlainFigure:
    """One bar per named measurement, on a log axis (an exact zero sits at LOG_FLOOR)."""
    names = list(errors)
    values = np.maximum(_finite(np.array([errors[n] for n in names])), LOG_FLOOR)
    bars = dict(
        type="bar",
        x=[scheme_label(n) for n in names],
        y=values,
        marker=dict(color=[SCHEME_COLORS.get(n, BLUE) for n in names]),
        text=[f"{v:.1e}" for v in values],
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{x}<br>%{y:.3e}<extra></extra>",
    )
    shapes = [hline(threshold, LEVEL_LINE)] if threshold is not None else []
    layout = frame_layout(
        title,
        380,
        xaxis=axis(None, type="category"),
        yaxis=axis(y_title, type="log", exponentformat="e"),
        shapes=shapes,
    )
    return figure([bars], layout)


def per_token_figure(
    per_token: Mapping[str, np.ndarray], labels: Sequence[str], title: str = "", y_title: str = ""
) -> PlainFigure:
    """Grouped bars: how far each token's output moved, one group per token, a bar per scheme."""
    traces = [
        dict(
            type="bar",
            x=list(labels),
            y=np.maximum(_finite(values), LOG_FLOOR),
            name=scheme_label(name),
            marker=dict(color=SCHEME_COLORS.get(name)),
            hovertemplate=f"{scheme_label(name)}<br>%{{x}}: %{{y:.3e}}<extra></extra>",
        )
        for name, values in per_token.items()
    ]
    layout = frame_layout(
        title,
        400,
        top=90,
        xaxis=axis(None, type="category", tickangle=-45),
        yaxis=axis(y_title, type="log", exponentformat="e"),
        barmode="group",
        legend=dict(orientation="h", yanchor="bottom", y=1.0),
    )
    return figure(traces, layout)
