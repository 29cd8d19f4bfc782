"""Figures of "The selective state": the selective SSM's step sizes Δ_t over the visitor's
tokens, how much of its state each step keeps, exp(Δ_t A), and the state's size ‖h_t‖, beside
the time-invariant layer (Δ, B, C constant) on the same tokens.

The token × channel heatmaps are grid charts drawn as the recurrent lesson draws the LSTM's
gates (components/recurrent.py gates_figure): one panel per quantity under one token axis
along the top, a row per channel. Δ spans two decades at initialisation (log-uniform in
[0.001, 0.1]), so it is drawn as log10 Δ; the kept fraction lies in (0, 1] and shares the
gates' colour scale. The per-token means are one plotly figure of three rows. Token labels
are drawn as canvas text by grid charts (never markup) and come escaped for plotly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from components.figure import PlainFigure, figure
from components.grid import TOKEN_ANGLE, cell_ticks, cell_values, grid, palette_b64
from components.i18n import t
from components.layout import frame_layout, grid_layout, subplot_suffix
from components.palette import BLUE, GATE_COLORSCALE, MAGNITUDE_COLORSCALE, ORANGE
from components.summaries import number

MAX_CHANNELS = 32  # channels a heatmap draws, as the gates' charts draw 32 units
# The two layers' colours on every chart of the part.
LAYER_COLORS = (BLUE, ORANGE)


def token_means(values: np.ndarray) -> np.ndarray:
    """`[pos, channel] → [pos]`: the mean over channels of every token's row."""
    return np.asarray(values, dtype=np.float64).mean(axis=1)


def spread(values: np.ndarray) -> dict[str, float]:
    """How much a `[pos, channel]` quantity changes from token to token: `tokens`, the
    range (max − min) of its per-token mean; `channels`, the largest range across tokens
    of any one channel. Both are exactly 0 for a quantity that does not depend on the token."""
    values = np.asarray(values, dtype=np.float64)
    means = values.mean(axis=1)
    return {
        "tokens": float(means.max() - means.min()),
        "channels": float((values.max(axis=0) - values.min(axis=0)).max()),
    }


def extremes(kept: np.ndarray) -> tuple[int, int]:
    """(the token that keeps least of its state, the one that keeps most), by the mean
    over channels of the kept fraction; the first one where two tie."""
    means = token_means(kept)
    return int(np.argmin(means)), int(np.argmax(means))


def widest_channel(kept: np.ndarray) -> tuple[int, int, int]:
    """(the channel whose kept fraction changes most across tokens, the token where it
    keeps least, the token where it keeps most)."""
    kept = np.asarray(kept, dtype=np.float64)
    channel = int(np.argmax(kept.max(axis=0) - kept.min(axis=0)))
    return channel, int(np.argmin(kept[:, channel])), int(np.argmax(kept[:, channel]))


def _ticks(low: float, high: float, count: int = 5) -> list:
    return [[float(v), f"{v:.3g}"] for v in np.linspace(low, high, count)]


def _channel_panel(
    values: np.ndarray,
    token_names: Sequence[str],
    title: str,
    zmin: float,
    zmax: float,
    scale: str,
    value_name: str,
    value_format: str,
    tokens_on_top: bool,
) -> dict:
    """`values [pos, channel]` as a row per channel and a column per token."""
    cells = np.asarray(values, dtype=np.float32).T
    channels, n_tokens = cells.shape
    shown = list(token_names) if tokens_on_top else []
    return dict(
        **cell_values(cells, zmin, zmax),
        palette=palette_b64(scale),
        title=title,
        x=dict(
            title=t("recurrence.selective.token_axis") if tokens_on_top else "",
            ticks=cell_ticks(shown),
            side="top",
            angle=TOKEN_ANGLE,
            size=12,
        ),
        y=dict(title=t("recurrence.selective.channel_axis"), ticks=cell_ticks(range(channels))),
        colorbar=dict(title=value_name, ticks=_ticks(zmin, zmax)),
        hover=dict(
            rows=channels,
            cols=n_tokens,
            x=list(token_names),
            y=[t("recurrence.selective.channel", c=c) for c in range(channels)],
            joiner=", ",
            name=value_name,
            format=value_format,
        ),
        columns=shown,
    )


def state_grid(
    delta: np.ndarray,
    kept: np.ndarray,
    token_names: Sequence[str],
    title: str = "",
    max_channels: int = MAX_CHANNELS,
) -> dict:
    """Δ `[pos, d_inner]` (as log10 Δ) above the kept fraction exp(Δ A) `[pos, d_inner]`,
    the first `max_channels` channels, tokens along the top: a grid chart. `token_names`
    are drawn as text, unescaped (components.grid.position_labels)."""
    delta = np.asarray(delta, dtype=np.float64)[:, :max_channels]
    kept = np.asarray(kept, dtype=np.float64)[:, :max_channels]
    log_delta = np.log10(np.maximum(delta, np.finfo(np.float32).tiny))
    low, high = float(log_delta.min()), float(log_delta.max())
    if high - low < 1e-6:  # one value everywhere: a colour scale still needs a width
        low, high = low - 0.5, high + 0.5
    panels = [
        _channel_panel(
            log_delta,
            token_names,
            t("recurrence.selective.delta_panel"),
            low,
            high,
            MAGNITUDE_COLORSCALE,
            "log₁₀ Δ",
            ".3f",
            tokens_on_top=True,
        ),
        _channel_panel(
            kept,
            token_names,
            t("recurrence.selective.kept_panel"),
            0.0,
            1.0,
            GATE_COLORSCALE,
            "exp(ΔA)",
            ".4f",
            tokens_on_top=False,
        ),
    ]
    return grid(panels, 150 + 200 * len(panels), title=title)


def state_grid_summary(
    delta: np.ndarray,
    kept: np.ndarray,
    token_names: Sequence[str],
    max_channels: int = MAX_CHANNELS,
) -> str:
    """The drawn heatmaps' ranges (the first `max_channels` channels, as `state_grid`
    draws them) and the drawn channel whose kept fraction changes most across tokens."""
    delta = np.asarray(delta, dtype=np.float64)[:, :max_channels]
    kept = np.asarray(kept, dtype=np.float64)[:, :max_channels]
    channel, least, most = widest_channel(kept)
    flat = kept[least, channel] == kept[most, channel]
    return t(
        "recurrence.selective.grid_summary_flat" if flat else "recurrence.selective.grid_summary",
        channels=delta.shape[1],
        delta_low=number(delta.min()),
        delta_high=number(delta.max()),
        kept_low=number(kept.min()),
        kept_high=number(kept.max()),
        channel=channel,
        channel_low=number(kept[least, channel]),
        least=token_names[least],
        channel_high=number(kept[most, channel]),
        most=token_names[most],
    )


def state_lines(
    series: Mapping[str, Mapping[str, np.ndarray]],
    token_names: Sequence[str],
    titles: Sequence[str],
    title: str = "",
) -> PlainFigure:
    """Three rows under one token axis, one line per layer in each:
    `series[layer] = {"delta": [pos], "kept": [pos], "h_norm": [pos]}` (the per-token mean
    Δ, the per-token mean kept fraction and ‖h_t‖). Δ and ‖h_t‖ on log axes (a value ≤ 0 or
    not finite is left out), the kept fraction on a linear one fitted to the values, so that
    small changes from token to token show. `token_names` escaped for plotly."""
    rows = ("delta", "kept", "h_norm")
    layout = grid_layout(3, 1, tuple(titles), shared_xaxes=True, vertical_spacing=0.09)
    x = list(token_names)
    traces = []
    for index, (layer, values) in enumerate(series.items()):
        color = LAYER_COLORS[index % len(LAYER_COLORS)]
        for row, name in enumerate(rows, start=1):
            y = np.asarray(values[name], dtype=np.float64)
            keep = np.isfinite(y) & ((y > 0) if name != "kept" else True)
            suffix = subplot_suffix(row, 1, 1)
            traces.append(
                dict(
                    type="scatter",
                    x=[x[i] for i in np.flatnonzero(keep)],
                    y=y[keep],
                    mode="lines+markers",
                    name=layer,
                    legendgroup=layer,
                    showlegend=row == 1,
                    line=dict(color=color, width=2),
                    marker=dict(size=5),
                    hovertemplate=f"{layer}<br>%{{x}}: %{{y:.4g}}<extra></extra>",
                    xaxis=f"x{suffix}",
                    yaxis=f"y{suffix}",
                )
            )
    for row, name in enumerate(rows, start=1):
        suffix = subplot_suffix(row, 1, 1)
        layout[f"yaxis{suffix}"].update(
            automargin=True,
            **({} if name == "kept" else dict(type="log", exponentformat="e")),
        )
        layout[f"xaxis{suffix}"].update(automargin=True, type="category", tickangle=TOKEN_ANGLE)
    layout.update(
        frame_layout(title, 720, top=70, bottom=40),
        # Above the first row, at the right: clear of the title and the rows' own titles.
        legend=dict(orientation="h", xanchor="right", x=1, yanchor="bottom", y=1.03),
    )
    return figure(traces, layout)


def state_lines_summary(
    series: Mapping[str, Mapping[str, np.ndarray]], token_names: Sequence[str]
) -> str:
    """Each layer's per-token mean kept fraction, lowest to highest, and its last ‖h_t‖."""
    parts = []
    for layer, values in series.items():
        kept = np.asarray(values["kept"], dtype=np.float64)
        norm = number(np.asarray(values["h_norm"])[-1])
        if kept.max() == kept.min():
            parts.append(
                t(
                    "recurrence.selective.lines_summary_flat",
                    layer=layer,
                    kept=number(kept[0]),
                    norm=norm,
                )
            )
            continue
        parts.append(
            t(
                "recurrence.selective.lines_summary",
                layer=layer,
                low=number(kept.min()),
                low_token=token_names[int(np.argmin(kept))],
                high=number(kept.max()),
                high_token=token_names[int(np.argmax(kept))],
                norm=norm,
            )
        )
    return "; ".join(parts)
