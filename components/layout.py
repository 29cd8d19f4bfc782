"""Plotly layout pieces as plain dicts, for figures built in one constructor call.

`go.Figure(data=traces, layout=layout)` validates the figure once. Building it step by
step (`update_layout`, `update_xaxes`, `add_vline`, `add_trace`) validates again at every
step: a line chart of four curves took ~11 ms that way and ~2 ms built at once, and a
lesson draws ten such charts on every rerun.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache

FONT = dict(size=14)


def axis(title: str | None = "", **options) -> dict:
    """An axis whose margin grows so its tick labels are never clipped (no title: None)."""
    titled = {} if title is None else dict(title=dict(text=title))
    return dict(**titled, automargin=True, **options)


def frame_layout(title: str, height: int, top: int = 70, bottom: int = 10, **options) -> dict:
    """The layout every lesson chart shares: title, height, tight margins, font."""
    return dict(
        title=dict(text=title),
        height=height,
        margin=dict(l=10, r=10, t=top, b=bottom),
        font=FONT,
        **options,
    )


def vline(x: float, line: dict, axis_suffix: str = "") -> dict:
    """A vertical line across the plot at data x (as `fig.add_vline` draws it)."""
    return dict(
        type="line",
        x0=x,
        x1=x,
        xref=f"x{axis_suffix}",
        y0=0,
        y1=1,
        yref=f"y{axis_suffix} domain",
        line=line,
    )


def hline(y: float, line: dict, axis_suffix: str = "") -> dict:
    """A horizontal line across the plot at data y (as `fig.add_hline` draws it)."""
    return dict(
        type="line",
        x0=0,
        x1=1,
        xref=f"x{axis_suffix} domain",
        y0=y,
        y1=y,
        yref=f"y{axis_suffix}",
        line=line,
    )


def subplot_suffix(row: int, col: int, cols: int) -> str:
    """'' for the first subplot, '2', '3', … after it (axis names x, x2, …; y, y2, …)."""
    index = (row - 1) * cols + col
    return str(index) if index > 1 else ""


@lru_cache(maxsize=64)
def _grid_json(rows: int, cols: int, titles: tuple[str, ...], options: str) -> str:
    from plotly.subplots import make_subplots

    grid = make_subplots(rows=rows, cols=cols, subplot_titles=titles, **json.loads(options))
    layout = grid.layout.to_plotly_json()
    layout.pop("template", None)
    return json.dumps(layout)


def grid_layout(rows: int, cols: int, titles: Sequence[str], **options) -> dict:
    """The axes and title annotations `make_subplots` lays out, as a fresh plain dict.

    make_subplots builds and validates a whole figure (~25 ms for four rows); the grid
    depends only on its shape, options and titles, so it is built once per combination.
    Traces go on subplot (row, col) with `xaxis="x" + suffix, yaxis="y" + suffix`.
    """
    return json.loads(_grid_json(rows, cols, tuple(titles), json.dumps(options, sort_keys=True)))
