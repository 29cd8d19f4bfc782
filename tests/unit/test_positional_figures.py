"""Figure builders of the positional lesson: plain figures, finite data, escaped labels."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from components.labels import token_labels
from components.positional import (
    LOG_FLOOR,
    curves_figure,
    encoding_figure,
    encoding_heatmap,
    error_bars_figure,
    extrapolation_figure,
    matrix_figure,
    per_token_figure,
    waves_figure,
)
from models.analysis import positional as pe


def _finite_everywhere(fig: go.Figure) -> bool:
    for trace in fig.data:
        for name in ("x", "y", "z"):
            values = getattr(trace, name, None)
            is_float = values is not None and np.asarray(values).dtype.kind == "f"
            if is_float and not np.isfinite(np.asarray(values, dtype=float)).all():
                return False
    return True


def test_encoding_heatmap_is_dimension_by_position_with_the_sentence_end_marked():
    table = pe.sinusoidal_table(40, 16)
    fig = encoding_heatmap(table, n_sentence=12, end_text="end")
    z = np.asarray(fig.data[0].z)
    assert z.shape == (16, 40)
    np.testing.assert_allclose(z[3], table[:, 3], atol=1e-6)
    assert fig.layout.shapes[0].x0 == pytest.approx(11.5)
    assert fig.data[0].zmid == 0


def test_waves_draw_one_line_per_chosen_dimension():
    table = pe.sinusoidal_table(30, 16)
    fig = waves_figure(table, [0, 5], n_sentence=10)
    assert [t.name for t in fig.data] == ["dim 0", "dim 5"]
    np.testing.assert_allclose(fig.data[1].y, table[:, 5])


def test_curves_leave_out_undefined_points_and_floor_zeros_on_log_axes():
    y = np.array([1.0, 0.5, np.nan, np.nan])
    fig = curves_figure({"learned": y, "exact": np.zeros(4)}, np.arange(4), log_y=True)
    assert list(fig.data[0].x) == [0, 1]
    assert list(fig.data[1].y) == [LOG_FLOOR] * 4
    assert fig.layout.yaxis.type == "log"
    assert _finite_everywhere(fig)


def test_builders_refuse_nan_and_inf():
    bad = np.array([[0.0, np.inf], [1.0, 2.0]])
    with pytest.raises(ValueError):
        encoding_heatmap(bad, 1)
    with pytest.raises(ValueError):
        matrix_figure(bad)
    with pytest.raises(ValueError):
        error_bars_figure({"none": float("nan")})


def test_matrix_figure_draws_the_rotation_blocks():
    m = pe.rotation_matrix(3, 8)
    fig = matrix_figure(m, title="M_3")
    np.testing.assert_allclose(np.asarray(fig.data[0].z), m, atol=1e-6)
    assert fig.layout.yaxis.autorange == "reversed"


def test_order_figures_use_escaped_unique_token_labels():
    tokens = ["<b>", "the", "the", "我"]
    labels = token_labels(tokens)
    fig = per_token_figure(
        {"none": np.zeros(4), "sinusoidal": np.array([1.0, 2.0, 3.0, 4.0])}, labels
    )
    assert list(fig.data[0].x) == ["0:&lt;b&gt;", "1:the", "2:the", "3:我"]
    assert len(set(fig.data[0].x)) == 4
    assert min(fig.data[0].y) == LOG_FLOOR
    assert "<b>" not in json.dumps(fig.to_plotly_json()["data"], ensure_ascii=False)
    bars = error_bars_figure({"sinusoidal": 1.3, "none": 0.0}, threshold=1e-5)
    assert list(bars.data[0].x) == ["sinusoidal", "none"]
    assert bars.data[0].y[1] == LOG_FLOOR
    assert bars.layout.yaxis.type == "log"


def test_the_end_marker_label_hangs_inside_the_plot_clear_of_the_legend():
    """The legend sits on the plot's top edge; a label above that edge covered it."""
    fig = curves_figure(
        {"a": np.ones(4), "b": np.zeros(4)}, np.arange(4), marker_at=2, marker_text="built 32"
    )
    (label,) = fig.layout.annotations
    assert label.text == "built 32" and label.x == 2
    assert label.yref == "paper" and label.y <= 1.0 and label.yanchor == "top"
    assert fig.layout.legend.y >= 1.0 and fig.layout.legend.yanchor == "bottom"
    assert fig.layout.shapes[0].x0 == 2


def test_the_sentence_end_label_stays_above_the_encoding_heatmap_clear_of_its_cells():
    fig = encoding_heatmap(np.zeros((6, 4)), n_sentence=3, end_text="end")
    (label,) = fig.layout.annotations
    assert label.yref == "paper" and label.y == 1.0 and label.yanchor == "bottom"


def test_the_table_and_its_chosen_dimensions_share_one_position_axis():
    table = pe.sinusoidal_table(40, 16)
    fig = encoding_figure(table, [0, 3], n_sentence=12, end_text="end")
    heatmap, *curves = fig.data
    np.testing.assert_allclose(np.asarray(heatmap.z), table.T, atol=1e-6)
    assert [(c.xaxis, c.yaxis) for c in curves] == [("x2", "y2")] * 2
    for curve, dim in zip(curves, (0, 3), strict=True):
        np.testing.assert_allclose(np.asarray(curve.y), table[:, dim])
        np.testing.assert_array_equal(np.asarray(curve.x), np.arange(40))
    assert fig.layout.xaxis.matches == "x2"  # zooming positions zooms both panels
    assert fig.layout.yaxis.domain[0] > fig.layout.yaxis2.domain[1]  # table above curves
    assert sorted(shape.xref for shape in fig.layout.shapes) == ["x", "x2"]  # the end, twice
    assert all(shape.x0 == 11.5 for shape in fig.layout.shapes)
    assert [a.text for a in fig.layout.annotations] == ["end"]
    assert fig.layout.xaxis2.title.text and fig.layout.yaxis2.title.text
    assert _finite_everywhere(fig)


def test_without_chosen_dimensions_the_table_is_drawn_alone():
    table = pe.sinusoidal_table(20, 8)
    alone = encoding_figure(table, [], n_sentence=5, end_text="end")
    assert alone.json_pair()[0] == encoding_heatmap(table, 5, end_text="end").json_pair()[0]


def test_the_position_axis_names_each_token_of_the_sentence_at_its_position():
    table = pe.sinusoidal_table(45, 16)
    tokens = ["the", "cat", "<b>", "sat"]
    fig = encoding_figure(table, [0], n_sentence=4, tokens=tokens)
    axis = fig.layout.xaxis2  # the one position axis drawn, under the curves
    assert list(axis.tickvals) == [0, 1, 2, 3, 10, 20, 30, 40]
    assert list(axis.ticktext) == [*token_labels(tokens), "10", "20", "30", "40"]
    alone = encoding_figure(table, [], n_sentence=4, tokens=tokens)
    assert list(alone.layout.xaxis.ticktext)[:4] == token_labels(tokens)
    # A sentence too long to name every position keeps plotly's numbered ticks.
    long = encoding_figure(table, [0], n_sentence=41, tokens=["w"] * 41)
    assert long.layout.xaxis2.tickvals is None


def test_alibi_s_bias_is_drawn_on_its_own_axis_from_zero_not_as_a_similarity():
    built, reach = 32, 128
    r = np.arange(reach + 1)
    learned = np.random.default_rng(0).standard_normal((built, 64))
    similarities = {
        s: pe.positional_score_by_distance(s, 16 if s == "rope" else 64, reach, learned=learned)
        for s in ("sinusoidal", "learned", "rope", "none")
    }
    bias = pe.positional_score_by_distance("alibi", 64, reach)
    fig = extrapolation_figure(
        similarities,
        {"ALiBi": bias},
        r,
        similarity_title="similarity",
        bias_title="bias added to the score",
        x_title="distance",
        marker_at=built,
        marker_text="built",
    )
    (alibi,) = [trace for trace in fig.data if trace.name == "ALiBi"]
    assert alibi.yaxis == "y2" and fig.layout.yaxis2.title.text == "bias added to the score"
    # 0 at r = 0 and −m·r after, with the gentlest slope m = 2^−8: a penalty that grows.
    np.testing.assert_allclose(alibi.y, -(2.0**-8) * r)
    # Every curve above is a normalised similarity: 1 at r = 0, or 0 for no encoding.
    above = [trace for trace in fig.data if trace.yaxis in (None, "y")]
    assert sorted(trace.name for trace in above) == ["learned", "none", "rope", "sinusoidal"]
    assert {trace.name: trace.y[0] for trace in above} == pytest.approx(
        {"sinusoidal": 1.0, "learned": 1.0, "rope": 1.0, "none": 0.0}
    )
    # One distance axis: the panels zoom together, and "built for" is marked on both.
    assert fig.layout.xaxis.matches == "x2"
    marked = {(shape.xref, shape.x0) for shape in fig.layout.shapes}
    assert marked == {("x", built), ("x2", built)}
    assert _finite_everywhere(fig)
