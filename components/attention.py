"""Figures of attention patterns.

`patterns` is `[layer, head, query_pos, key_pos]`; a single head is
`[query_pos, key_pos]`. Labels come from `components.labels.token_labels`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from components.figure import PlainFigure, figure
from components.labels import head_label
from components.margins import above_slanted, beside_axis, colorbar_px, slanted_overhang
from components.palette import (
    ATTENTION_COLORSCALE,
    GAP_INDEX,
    HIGHLIGHT,
    png_data_uri,
    weights_to_indices,
)

_FONT = dict(size=14)
# Up to this many tokens every tick is labelled; past it plotly thins them to fit.
_ALL_TICKS = 64
_KEY_ANGLE = -60
_COLORBAR_PX = 12
_WEIGHT_TICKS = ("0", "0.2", "0.4", "0.6", "0.8", "1")


def _key_axis(title: str, n: int) -> dict:
    """The token axis along the top of a [query or head] × key heatmap."""
    return dict(
        title=dict(text=title),
        tickangle=_KEY_ANGLE,
        type="category",
        side="top",
        automargin=True,
        **_token_ticks(n),
    )


def _token_tick_size(n: int) -> int:
    """Token labels' font size: smaller as they crowd; past _ALL_TICKS, the chart's own."""
    return 12 if n <= 30 else 9 if n <= _ALL_TICKS else _FONT["size"]


def _token_ticks(n: int) -> dict:
    if n > _ALL_TICKS:
        return {}
    return dict(tickmode="linear", dtick=1, tickfont=dict(size=_token_tick_size(n)))


def _token_margins(key_labels: Sequence[str], key_title: str, weight_title: str, left: int) -> dict:
    """Margins that hold the slanted token labels and the title above the plot, the
    colour bar at its right and `left` px of labels at its left (components/margins.py:
    wide enough that plotly draws the chart once)."""
    size = _token_tick_size(len(key_labels))
    colorbar = colorbar_px(weight_title, _WEIGHT_TICKS, _FONT["size"], _COLORBAR_PX)
    overhang = slanted_overhang(key_labels[-1], size, _KEY_ANGLE) if key_labels else 0
    return dict(
        l=left,
        r=max(colorbar, overhang),
        t=above_slanted(key_labels, size, _KEY_ANGLE, key_title, _FONT["size"]),
        b=10,
    )


# Wider than this (in image pixels) the browser shrinks the picture: smooth it then, so
# thin lines of attention are averaged in rather than dropped. Narrower pictures are
# enlarged with sharp edges, one crisp block per weight.
_SHARP_UP_TO_PX = 1200


def composite_image(patterns: np.ndarray, scale: int, gap: int, fill=np.nan) -> np.ndarray:
    """Tile every head into one `[rows·cell, cols·cell]` array, `fill` in the gaps: NaN
    for weights (float32), the gap's palette index for indices already mapped (uint8)."""
    n_layers, n_heads, n, _ = patterns.shape
    cell = n * scale
    height = n_layers * cell + (n_layers - 1) * gap
    width = n_heads * cell + (n_heads - 1) * gap
    dtype = np.uint8 if patterns.dtype == np.uint8 else np.float32
    canvas = np.full((height, width), fill, dtype=dtype)
    tiles = patterns
    if scale > 1:
        tiles = np.repeat(np.repeat(patterns, scale, axis=2), scale, axis=3)
    for layer in range(n_layers):
        for head in range(n_heads):
            top, left = layer * (cell + gap), head * (cell + gap)
            canvas[top : top + cell, left : left + cell] = tiles[layer, head]
    return canvas


def all_heads_figure(
    patterns: np.ndarray,
    selected: tuple[int, int] | None = None,
    hover_text: Sequence[Sequence[str]] | None = None,
    title: str = "",
    head_title: str = "head",
    layer_title: str = "layer",
) -> PlainFigure:
    """Every head at once as one image (cheap to send and draw), the selected head outlined."""
    n_layers, n_heads, n, _ = patterns.shape
    # One pixel per weight: the PNG stays small and quick to encode at any length.
    gap = max(1, n // 12)
    cell = n
    pitch = cell + gap
    # Weights mapped to palette indices before tiling: one pass over the weights, and
    # a canvas of bytes, not of floats (at 128 tokens 10 → 2 ms).
    pixels = composite_image(weights_to_indices(patterns), 1, gap, fill=GAP_INDEX)
    smooth = "fast" if pixels.shape[1] > _SHARP_UP_TO_PX else False
    image = dict(type="image", source=png_data_uri(pixels), hoverinfo="skip", zsmooth=smooth)

    # Pixel i is centred on coordinate i, so a tile starting at pixel a spans
    # [a − ½, a + cell − ½].
    def left_edge(index: int) -> float:
        return index * pitch - 0.5

    centers_x = [left_edge(h) + cell / 2 for h in range(n_heads)]
    centers_y = [left_edge(layer) + cell / 2 for layer in range(n_layers)]
    if hover_text is None:
        hover_text = [[head_label(la, h) for h in range(n_heads)] for la in range(n_layers)]
    # An invisible one-cell-per-head layer gives each head a hover label.
    hover = dict(
        type="heatmap",
        z=np.zeros((n_layers, n_heads)),
        x=centers_x,
        y=centers_y,
        text=hover_text,
        hovertemplate="%{text}<extra></extra>",
        opacity=0,
        showscale=False,
    )
    outline = []
    if selected is not None:
        layer, head = selected
        pad = gap / 2
        outline.append(
            dict(
                type="rect",
                x0=left_edge(head) - pad,
                x1=left_edge(head) + cell + pad,
                y0=left_edge(layer) - pad,
                y1=left_edge(layer) + cell + pad,
                line=dict(color=HIGHLIGHT, width=3),
            )
        )
    width = n_heads * pitch - gap
    height = n_layers * pitch - gap
    layout = dict(
        title=title,
        height=560,
        margin=dict(l=50, r=10, t=80 if title else 40, b=10),
        font=_FONT,
        plot_bgcolor="white",
        dragmode="zoom",
        shapes=outline,
        xaxis=dict(
            tickvals=centers_x,
            ticktext=[f"H{h}" for h in range(n_heads)],
            side="top",
            range=[-0.5 - gap, width - 0.5 + gap],
            showgrid=False,
            zeroline=False,
            title=dict(text=head_title),
        ),
        yaxis=dict(
            tickvals=centers_y,
            ticktext=[f"L{layer}" for layer in range(n_layers)],
            range=[height - 0.5 + gap, -0.5 - gap],
            showgrid=False,
            zeroline=False,
            scaleanchor="x",
            title=dict(text=layer_title),
        ),
    )
    # Everything goes in at once: each later update_* or add_* call is validated again.
    return figure([image, hover], layout)


def head_heatmap(
    pattern: np.ndarray,
    labels: Sequence[str],
    title: str = "",
    query_title: str = "query",
    key_title: str = "key",
    weight_title: str = "weight",
) -> PlainFigure:
    """One head, token labels on both axes, exact weights on hover."""
    n = pattern.shape[0]
    heatmap = dict(
        type="heatmap",
        z=pattern,
        x=list(labels),
        y=list(labels),
        zmin=0.0,
        zmax=1.0,
        colorscale=ATTENTION_COLORSCALE,
        colorbar=dict(title=weight_title, thickness=_COLORBAR_PX),
        hovertemplate=f"%{{y}} → %{{x}}<br>{weight_title} %{{z:.4f}}<extra></extra>",
        xgap=1 if n <= 40 else 0,
        ygap=1 if n <= 40 else 0,
    )
    query_width = beside_axis(labels, _token_tick_size(n), query_title, _FONT["size"])
    layout = dict(
        title=title,
        height=min(900, max(420, 22 * n + 160)),
        margin=_token_margins(labels, key_title, weight_title, query_width),
        font=_FONT,
        xaxis=_key_axis(key_title, n),
        yaxis=dict(
            title=dict(text=query_title),
            autorange="reversed",
            type="category",
            automargin=True,
            **_token_ticks(n),
        ),
    )
    return figure([heatmap], layout)


def token_focus_figure(
    patterns: np.ndarray,
    query_pos: int,
    labels: Sequence[str],
    title: str = "",
    key_title: str = "key",
    weight_title: str = "weight",
) -> PlainFigure:
    """What one token attends to, in every head: one row per head, grouped by layer."""
    n_layers, n_heads, n, _ = patterns.shape
    rows = patterns[:, :, query_pos, :].reshape(n_layers * n_heads, n)
    row_labels = [head_label(la, h) for la in range(n_layers) for h in range(n_heads)]
    # White lines between layers.
    separators = [
        dict(
            type="line",
            xref="paper",
            x0=0,
            x1=1,
            y0=layer * n_heads - 0.5,
            y1=layer * n_heads - 0.5,
            line=dict(color="white", width=3),
        )
        for layer in range(1, n_layers)
    ]
    heatmap = dict(
        type="heatmap",
        z=rows,
        x=list(labels),
        y=row_labels,
        zmin=0.0,
        zmax=1.0,
        colorscale=ATTENTION_COLORSCALE,
        colorbar=dict(title=weight_title, thickness=_COLORBAR_PX),
        hovertemplate=f"%{{y}} → %{{x}}<br>{weight_title} %{{z:.4f}}<extra></extra>",
    )
    layout = dict(
        title=title,
        height=max(500, 12 * n_layers * n_heads + 160),
        margin=_token_margins(labels, key_title, weight_title, beside_axis(row_labels, 10)),
        font=_FONT,
        shapes=separators,
        xaxis=_key_axis(key_title, n),
        yaxis=dict(autorange="reversed", type="category", tickfont=dict(size=10), automargin=True),
    )
    return figure([heatmap], layout)


# The per-head statistics: at most two grids side by side, so that each cell of a
# twelve-head row is wide enough for its number (four in a row left ~12 px a cell).
SUMMARY_COLUMNS = 2
SUMMARY_PANEL_PX = 240
SUMMARY_TITLE_PX = 40  # above each grid
SUMMARY_TICKS_PX = 30  # below it: the head labels


def head_summary_figure(
    stats: dict[str, np.ndarray], titles: dict[str, str], formats: dict[str, str]
) -> PlainFigure:
    """One layer × head grid per statistic, two to a row (laid out by hand: plotly's
    make_subplots took longer than the rest of the figure)."""
    names = list(stats)
    count = len(names)
    columns = min(count, SUMMARY_COLUMNS)
    rows = -(-count // columns)
    spacing = 0.06
    width = (1 - spacing * (columns - 1)) / columns
    row_px = SUMMARY_TITLE_PX + SUMMARY_PANEL_PX + SUMMARY_TICKS_PX
    plot_px = rows * row_px
    n_layers, n_heads = stats[names[0]].shape
    layer_labels = [f"L{la}" for la in range(n_layers)]
    # Only the left column's layer labels stand in the margin (components/margins.py).
    margin = dict(l=beside_axis(layer_labels, _FONT["size"]), r=10, t=10, b=10)
    traces, layout = [], dict(height=plot_px + 20, margin=margin, font=_FONT)
    annotations = []
    for i, name in enumerate(names):
        values = stats[name]
        suffix = "" if i == 0 else str(i + 1)
        row, column = divmod(i, columns)
        left = column * (width + spacing)
        top = 1 - (row * row_px + SUMMARY_TITLE_PX) / plot_px
        bottom = top - SUMMARY_PANEL_PX / plot_px
        traces.append(
            dict(
                type="heatmap",
                z=values,
                x=[f"H{h}" for h in range(n_heads)],
                y=layer_labels,
                xaxis=f"x{suffix}",
                yaxis=f"y{suffix}",
                colorscale=ATTENTION_COLORSCALE,
                showscale=False,
                hovertemplate=f"%{{y}} %{{x}}<br>{titles[name]}: %{{z:{formats[name]}}}"
                "<extra></extra>",
                texttemplate=f"%{{z:{formats[name]}}}",
                textfont=dict(size=11),
                name=name,
            )
        )
        layout[f"xaxis{suffix}"] = dict(domain=[left, left + width], anchor=f"y{suffix}")
        layout[f"yaxis{suffix}"] = dict(
            domain=[max(bottom, 0.0), top],
            anchor=f"x{suffix}",
            autorange="reversed",
            automargin=True,
        )
        annotations.append(
            dict(
                text=titles[name],
                x=left + width / 2,
                y=top,
                xref="paper",
                yref="paper",
                xanchor="center",
                yanchor="bottom",
                showarrow=False,
                font=dict(size=16),
            )
        )
    layout["annotations"] = annotations
    return figure(traces, layout)
