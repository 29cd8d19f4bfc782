"""Grid charts: panels of coloured cells, as the spec `assets/grid_chart.js` draws.

The attention lesson redraws four charts of cells on every keystroke. Plotly spent
40–120 ms of the browser's main thread on each (docs/PERFORMANCE.md); a grid is drawn
on a canvas in a few. Arrays in, a JSON-ready dict out; no st.*, no torch.

Spec, top level:
- `panels`: one or more panels, `columns` to a row, sharing `height` px (under the
  chart's `title`, if it has one);
- `palette`: base64 of the colour lookup, RGB bytes from lightest to darkest;
- `font`, `hover_font`: text sizes in px; `highlight`: the outline's colour;
- `label`: what screen readers read; `file`, `format`, `save_label`, `save_help`: the
  save button (set when the chart is drawn, components/ui/charts.py).

Each panel: `rows` × `cols` cells with values `z` (float32, base64, row-major) between
`zmin` and `zmax`, or a PNG `image` covering the plot; `x` and `y` axes (`title`,
`ticks` as [position in cells, label], label `size`, `spacing` in cells between ticks,
x's `side` and `angle`); optional `text` printed in the cells (`text_size`), `outline`
[col0, row0, col1, row1], `separators` (rows between which a white line runs),
`colorbar`, `square` cells, `palette` (its own colour lookup, as the top level's), `pick`
(a click on a hover cell sends its [row, col] back to the page), `title`; `hover`: what
the label under the pointer says (`y` and `x` labels, between them `joiner` (" → ") and
the value's `name` and `format`, or one `text` per hover cell of a coarser `rows` × `cols`
grid, `pitch` cells each); `columns`: the panel's column labels, set on the chart once it
is drawn (`data-columns`).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from functools import cache

import numpy as np

from components.labels import head_label
from components.palette import (
    ATTENTION_COLORSCALE,
    GAP_INDEX,
    HIGHLIGHT,
    lookup_table,
    png_data_uri,
    weights_to_indices,
)
from components.projector import MAX_HEIGHT, projected_height

FONT_PX = 14
# The bar above a grid chart's canvas that holds its save button (assets/grid_chart.js:
# 1.6rem; 35 px at presenter mode's 22 px text), part of the chart's height on the page.
SAVE_BAR_PX = 40
HOVER_FONT_PX = 13
TOKEN_ANGLE = -60
WEIGHT_TICKS = [[v, f"{v:g}"] for v in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)]


@cache
def palette_b64(scale: str) -> str:
    """A colour scale's 255 levels as a grid's `palette`: RGB bytes in base64 (sampled
    once per scale: plotly's sampling takes milliseconds)."""
    return base64.b64encode(lookup_table(scale, GAP_INDEX).tobytes()).decode("ascii")


# The attention palette's 255 levels (the gap colour left out): cells and the all-heads
# image are coloured from the same table.
PALETTE_B64 = palette_b64(ATTENTION_COLORSCALE)


def floats_b64(values: np.ndarray) -> str:
    """Values as little-endian float32 bytes in base64 (a Float32Array in the browser)."""
    return base64.b64encode(np.ascontiguousarray(values, dtype="<f4").tobytes()).decode("ascii")


def grid(panels: list[dict], height: int, columns: int = 1, title: str = "") -> dict:
    spec = dict(
        panels=panels,
        columns=columns,
        height=int(height),
        palette=PALETTE_B64,
        font=FONT_PX,
        hover_font=HOVER_FONT_PX,
        highlight=HIGHLIGHT,
    )
    if title:
        spec["title"] = title
    return spec


def cell_ticks(labels: Sequence) -> list:
    """One tick per cell, at its centre."""
    return [[i + 0.5, str(label)] for i, label in enumerate(labels)]


def cell_values(values: np.ndarray, zmin: float = 0.0, zmax: float = 1.0) -> dict:
    """A panel's `rows` × `cols` cells and their value range."""
    rows, cols = values.shape
    return dict(rows=rows, cols=cols, z=floats_b64(values), zmin=zmin, zmax=zmax)


def token_grid(
    values: np.ndarray,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    *,
    row_title: str,
    column_title: str,
    value_title: str,
    separators: Sequence[int] = (),
    row_size: int | None = None,
    height: int,
) -> dict:
    """Rows (queries, or heads) × token columns labelled along the top, a weight per cell."""
    n = len(column_labels)
    size = 12 if n <= 30 else 10  # token labels: smaller as they crowd
    panel = dict(
        **cell_values(values),
        x=dict(
            title=column_title,
            ticks=cell_ticks(column_labels),
            side="top",
            angle=TOKEN_ANGLE,
            size=size,
        ),
        y=dict(title=row_title, ticks=cell_ticks(row_labels), size=row_size or size),
        gap=1,
        separators=list(separators),
        colorbar=dict(title=value_title, ticks=WEIGHT_TICKS),
        hover=dict(
            rows=len(row_labels),
            cols=n,
            x=list(column_labels),
            y=list(row_labels),
            name=value_title,
            format=".4f",
        ),
        columns=list(column_labels),
    )
    return grid([panel], height)


def position_labels(tokens: Sequence[str]) -> list[str]:
    """`0:[CLS]`, `1:the`, …: a repeated token keeps its own row and column. Drawn as
    text, never read as markup, so nothing is escaped."""
    return [f"{i}:{token}" for i, token in enumerate(tokens)]


def head_grid(
    pattern: np.ndarray,
    tokens: Sequence[str],
    query_title: str = "query",
    key_title: str = "key",
    weight_title: str = "weight",
) -> dict:
    """One head: queries down, keys along the top."""
    labels = position_labels(tokens)
    n = len(labels)
    return token_grid(
        pattern,
        labels,
        labels,
        row_title=query_title,
        column_title=key_title,
        value_title=weight_title,
        height=min(900, max(420, 22 * n + 160)),
    )


def focus_grid(
    patterns: np.ndarray,
    query_pos: int,
    tokens: Sequence[str],
    key_title: str = "key",
    weight_title: str = "weight",
) -> dict:
    """What one token attends to in every head: a row per head, layers set apart."""
    n_layers, n_heads, n, _ = patterns.shape
    rows = patterns[:, :, query_pos, :].reshape(n_layers * n_heads, n)
    return token_grid(
        rows,
        [head_label(la, h) for la in range(n_layers) for h in range(n_heads)],
        position_labels(tokens),
        row_title="",
        column_title=key_title,
        value_title=weight_title,
        separators=[layer * n_heads for layer in range(1, n_layers)],
        row_size=10,
        height=focus_height(n_layers * n_heads),
    )


# A 12 px row per head, up to the shipped model's 72 heads (1,024 px); a model with more
# heads keeps that height and draws every head's row thinner (the rows' labels thin out
# where they would touch; each row still names its head under the pointer).
FOCUS_ROW_PX, FOCUS_FRAME_PX, FOCUS_MAX_PX = 12, 160, 1024


def focus_height(rows: int) -> int:
    return min(FOCUS_MAX_PX, max(500, FOCUS_ROW_PX * rows + FOCUS_FRAME_PX))


# Statistics: two grids to a row, each cell wide enough for its number.
SUMMARY_COLUMNS = 2
SUMMARY_ROW_PX = 310


def statistics_grid(
    stats: dict[str, np.ndarray], titles: dict[str, str], formats: dict[str, str]
) -> dict:
    """One layer × head grid per statistic, its value printed in each cell; each grid
    coloured from its own least to its greatest value."""
    panels = []
    for name, values in stats.items():
        values = np.asarray(values, dtype=float)
        n_layers, n_heads = values.shape
        heads, layers = [f"H{h}" for h in range(n_heads)], [f"L{la}" for la in range(n_layers)]
        low, high = float(np.nanmin(values)), float(np.nanmax(values))
        panels.append(
            dict(
                **cell_values(values, low, high if high > low else low + 1.0),
                title=titles[name],
                x=dict(title="", ticks=cell_ticks(heads), side="bottom"),
                y=dict(title="", ticks=cell_ticks(layers)),
                gap=1,
                text=[_format(v, formats[name]) for v in values.reshape(-1).tolist()],
                text_size=11,
                hover=dict(
                    rows=n_layers, cols=n_heads, x=heads, y=layers, name=titles[name], joiner=" "
                ),
                columns=heads,
            )
        )
    columns = min(len(panels), SUMMARY_COLUMNS)
    return grid(panels, SUMMARY_ROW_PX * -(-len(panels) // columns), columns)


def _format(value: float, spec: str) -> str:
    """`value` (a Python float: numpy's scalars format several times slower) as the d3
    format `spec` (".2f", ".0%") writes it: Python's own format reads these the same way."""
    return format(value, spec) if math.isfinite(value) else "–"


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


# Past this many image pixels across, the browser shrinks the picture: smooth it then,
# so thin lines of attention are averaged in rather than dropped.
_SHARP_UP_TO_PX = 1200


def all_heads_grid(
    patterns: np.ndarray,
    selected: tuple[int, int] | None,
    hover_text: Sequence[Sequence[str]],
    head_title: str = "head",
    layer_title: str = "layer",
) -> dict:
    """Every head at once, as one palette image (one pixel per weight, cheap to send and
    draw), tiles of `n` cells and gaps; the selected head outlined."""
    n_layers, n_heads, n, _ = patterns.shape
    gap = max(1, n // 12)
    pitch = n + gap
    pixels = composite_image(weights_to_indices(patterns), 1, gap, fill=GAP_INDEX)
    rows, cols = pixels.shape

    def centres(count: int) -> list[float]:
        return [i * pitch + n / 2 for i in range(count)]

    outline = None
    if selected is not None:
        layer, head = selected
        outline = [head * pitch - gap / 2, layer * pitch - gap / 2]
        outline += [outline[0] + n + gap, outline[1] + n + gap]
    heads = [f"H{h}" for h in range(n_heads)]
    panel = dict(
        rows=rows,
        cols=cols,
        image=png_data_uri(pixels),
        smooth=cols > _SHARP_UP_TO_PX,
        square=True,
        x=dict(
            title=head_title,
            ticks=[[c, f"H{h}"] for h, c in enumerate(centres(n_heads))],
            side="top",
            spacing=pitch,
        ),
        y=dict(
            title=layer_title,
            spacing=pitch,
            ticks=[[c, f"L{la}"] for la, c in enumerate(centres(n_layers))],
        ),
        outline=outline,
        pick=True,  # a click on a head chooses it (the page sets the layer and head)
        hover=dict(
            rows=n_layers,
            cols=n_heads,
            pitch=pitch,
            text=[line for row in hover_text for line in row],
        ),
        columns=heads,
    )
    return grid([panel], 560)


def enlarged(spec: dict, scale: float) -> dict:
    """The same chart for a projector: its text and its height `scale` times as large, the
    height at most the projector's ceiling less the save button's bar above the canvas."""

    def bigger(node: dict, keys: tuple[str, ...]) -> dict:
        return {**node, **{k: node[k] * scale for k in keys if k in node}}

    panels = [
        bigger(panel, ("text_size",)) | {axis: bigger(panel[axis], ("size",)) for axis in "xy"}
        for panel in spec["panels"]
    ]
    sizes = {k: spec[k] * scale for k in ("font", "hover_font")}
    height = projected_height(spec["height"], scale, MAX_HEIGHT - SAVE_BAR_PX)
    return {**spec, **sizes, "height": height, "panels": panels}
