"""Figures built in one constructor call equal the ones plotly's step-by-step API builds."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from components.layout import grid_layout, hline, subplot_suffix, vline
from components.positional import curves_figure, error_bars_figure


def test_vline_and_hline_are_the_shapes_add_vline_and_add_hline_draw():
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]))
    fig.add_vline(x=0.5, line=dict(color="#444", dash="dash"))
    fig.add_hline(y=2.0, line=dict(color="#444", dash="dot"))
    ours = go.Figure(
        go.Scatter(x=[0, 1], y=[0, 1]),
        layout=dict(
            shapes=[
                vline(0.5, dict(color="#444", dash="dash")),
                hline(2.0, dict(color="#444", dash="dot")),
            ]
        ),
    )
    assert ours.layout.shapes == fig.layout.shapes


def test_hline_on_the_second_subplot_matches_add_hline_there():
    fig = make_subplots(rows=1, cols=2)
    fig.add_trace(go.Bar(x=[1], y=[1]), row=1, col=2)
    fig.add_hline(y=0.3, line=dict(color="#444"), row=1, col=2)
    assert fig.layout.shapes[0].to_plotly_json() == hline(0.3, dict(color="#444"), "2")


def test_curves_figure_equals_the_step_by_step_figure():
    x = np.arange(6)
    curves = {"a": np.array([1.0, 2, np.nan, 4, 5, 6]), "b": np.linspace(0.1, 1, 6)}
    fig = curves_figure(curves, x, "T", "X", "Y", marker_at=2.5, marker_text="end", log_y=True)
    ref = go.Figure()
    for name, y in curves.items():
        keep = np.isfinite(y)
        ref.add_trace(
            go.Scatter(
                x=x[keep],
                y=np.maximum(np.abs(y[keep]), 1e-17),
                mode="lines",
                name=name,
                line=dict(color=None),
                hovertemplate=f"{name}<br>%{{x}}: %{{y:.4g}}<extra></extra>",
            )
        )
    ref.add_vline(x=2.5, line=dict(color="#444", width=2, dash="dash"))
    ref.add_annotation(
        x=2.5,
        y=1.0,
        yref="paper",
        text="end",
        showarrow=False,
        xanchor="left",
        yanchor="top",
        xshift=4,
        bgcolor="rgba(255,255,255,0.85)",
    )
    ref.update_xaxes(title_text="X", automargin=True)
    ref.update_yaxes(title_text="Y", type="log", exponentformat="e", automargin=True)
    ref.update_layout(
        legend=dict(orientation="h", yanchor="bottom", y=1.0),
        title="T",
        height=420,
        margin=dict(l=10, r=10, t=110, b=10),
        font=dict(size=14),
    )
    assert fig.json_pair()[0] == json.loads(pio.to_json(ref.to_dict(), validate=False))


def test_error_bars_draw_the_threshold_line():
    fig = error_bars_figure({"none": 0.5, "sinusoidal": 0.0}, threshold=1e-5)
    assert fig.layout.shapes[0].y0 == fig.layout.shapes[0].y1 == 1e-5
    assert fig.layout.shapes[0].xref == "x domain"


def test_grid_layout_is_make_subplots_layout_and_a_fresh_copy_each_time():
    fig = make_subplots(
        rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.04, subplot_titles=["a", "b", "c"]
    )
    expected = fig.layout.to_plotly_json()
    expected.pop("template")
    grid = grid_layout(3, 1, ["a", "b", "c"], shared_xaxes=True, vertical_spacing=0.04)
    assert grid == expected
    grid["xaxis"]["type"] = "category"  # a caller's change never reaches the next caller
    assert grid_layout(3, 1, ["a", "b", "c"], shared_xaxes=True, vertical_spacing=0.04) == expected


def test_subplot_suffix_names_the_axes_make_subplots_gives_each_cell():
    fig = make_subplots(rows=2, cols=2)
    for row in (1, 2):
        for col in (1, 2):
            fig.add_trace(go.Scatter(x=[0], y=[0]), row=row, col=col)
    refs = [(trace.xaxis, trace.yaxis) for trace in fig.data]
    suffixes = [subplot_suffix(r, c, 2) for r in (1, 2) for c in (1, 2)]
    assert refs == [(f"x{s}", f"y{s}") for s in suffixes]
