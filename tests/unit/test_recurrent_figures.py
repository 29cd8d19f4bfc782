"""Figures of the recurrent lesson: built from arrays, asserted on fig.data / fig.layout
(plotly) or on the spec (grid charts)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import cells  # a grid panel's values as sent

from components.grid import palette_b64
from components.palette import DIVERGING_COLORSCALE, GATE_COLORSCALE, MAGNITUDE_COLORSCALE
from components.recurrent import (
    F32_MAX,
    LOG_FLOOR,
    chartable,
    clipping_figure,
    gates_figure,
    lines_figure,
    step_labels,
    unit_heatmap,
)


def _finite(node) -> bool:
    """No NaN or inf anywhere in the figure the browser would receive."""
    if isinstance(node, float):
        return bool(np.isfinite(node))
    if isinstance(node, np.ndarray):
        return node.dtype.kind not in "fc" or bool(np.isfinite(node).all())
    if isinstance(node, dict):
        return all(_finite(v) for v in node.values())
    if isinstance(node, list | tuple):
        return all(_finite(v) for v in node)
    return True


def _finite_json(fig) -> bool:
    return _finite(fig.to_plotly_json())


def test_lines_leave_out_nan_inf_and_on_a_log_axis_zero():
    x = np.arange(6)
    y = np.array([1.0, 0.5, 0.0, np.nan, np.inf, 1e-30])
    fig = lines_figure({"RNN": (x, y), "r^k": (x, 0.5**x)}, dashed=("r^k",))
    rnn, theory = fig.data
    assert list(rnn.x) == [0, 1, 5] and list(rnn.y) == [1.0, 0.5, 1e-30]
    assert theory.line.dash == "dash" and rnn.line.dash == "solid"
    assert fig.layout.yaxis.type == "log"
    assert _finite_json(fig)
    linear = lines_figure({"RNN": (x, y)}, log_y=False)
    assert list(linear.data[0].x) == [0, 1, 2, 5]


def test_lines_carry_hover_labels_for_the_points_kept():
    labels = step_labels(["<b>a</b>", "b", "c"], 3)
    fig = lines_figure({"LSTM": (np.arange(3), np.array([1.0, np.nan, 2.0]))}, hover_labels={
        "LSTM": labels
    })  # fmt: skip
    assert list(fig.data[0].text) == ["0:&lt;b&gt;a&lt;/b&gt;", "2:c"]


def test_heatmap_is_log10_with_overflow_clamped_and_zeros_at_the_floor():
    values = np.array([[1.0, -100.0], [np.inf, 0.0], [np.nan, 1e-3]])
    spec = unit_heatmap(values, step_labels(None, 3), value_name="log10 |∂L/∂H|")
    [panel] = spec["panels"]
    z = cells(panel)  # [unit, step]
    assert z.shape == (2, 3)
    assert z[0, 0] == 0.0 and z[1, 0] == pytest.approx(2.0)
    assert z[0, 1] == pytest.approx(np.log10(F32_MAX), rel=1e-6) and z[1, 1] == LOG_FLOOR
    assert z[0, 2] == pytest.approx(np.log10(F32_MAX), rel=1e-6) and z[1, 2] == pytest.approx(-3)
    assert panel["columns"] == panel["hover"]["x"] == ["t=0", "t=1", "t=2"]
    assert [label for _, label in panel["x"]["ticks"]] == ["t=0", "t=1", "t=2"]
    # Twelve decades shown at most: what lies below sits at the colour scale's end.
    assert panel["zmax"] == pytest.approx(np.log10(F32_MAX), rel=1e-6)
    assert panel["zmin"] == pytest.approx(panel["zmax"] - 12.0)
    assert panel["palette"] == palette_b64(MAGNITUDE_COLORSCALE)
    assert panel["hover"]["name"] == panel["colorbar"]["title"] == "log10 |∂L/∂H|"
    assert _finite(spec)


def test_grid_heatmaps_draw_a_visitors_token_as_typed():
    # Drawn as canvas text, never read as markup: nothing escaped (plotly's labels are).
    tokens = ["<b>", "a&b"]
    spec = unit_heatmap(np.ones((2, 3)), step_labels(tokens, 2, escaped=False))
    assert spec["panels"][0]["columns"] == ["0:<b>", "1:a&b"]
    assert step_labels(tokens, 2) == ["0:&lt;b&gt;", "1:a&amp;b"]


def test_gates_share_the_step_axis_and_keep_gate_and_state_scales_apart():
    rng = np.random.default_rng(0)
    gates = {
        "I": rng.random((5, 40)),
        "F": rng.random((5, 40)),
        "C": rng.normal(size=(5, 40)) * 3,
    }
    gates["C"][2, 3] = np.inf
    labels = step_labels(["a", "a", "b", "c", "d"], 5, escaped=False)
    spec = gates_figure(gates, labels, title="LSTM", max_units=32)
    panels = spec["panels"]
    assert [p["palette"] for p in panels] == [palette_b64(GATE_COLORSCALE)] * 2 + [
        palette_b64(DIVERGING_COLORSCALE)
    ]
    assert all(cells(p).shape == (32, 5) for p in panels)
    assert [(p["zmin"], p["zmax"]) for p in panels[:2]] == [(0.0, 1.0)] * 2
    state = panels[2]  # symmetric about zero; the inf (the page counts it) drawn as 0
    finite = np.where(np.isfinite(gates["C"]), gates["C"], 0.0)[:, :32]
    assert state["zmax"] == -state["zmin"] == pytest.approx(np.abs(finite).max())
    assert cells(state)[3, 2] == 0.0
    # One step axis, along the top of the first panel; every panel says its step on hover.
    assert [len(p["x"]["ticks"]) for p in panels] == [5, 0, 0]
    assert all(p["hover"]["x"][:2] == ["0:a", "1:a"] for p in panels)  # a repeat keeps its own
    assert spec["title"] == "LSTM" and [p["title"] for p in panels] == ["I", "F", "C"]
    assert [p["hover"]["name"] for p in panels] == ["I", "F", "C"]
    assert _finite(spec)


def test_clipping_bars_show_totals_and_shares_and_skip_what_is_not_finite():
    fig = clipping_figure({"without": 50.0, "with": 1.0}, {"without": 0.02, "with": 0.02}, 1.0)
    totals, shares = fig.data
    assert list(totals.y) == [50.0, 1.0] and list(shares.y) == [2.0, 2.0]
    assert fig.layout.yaxis.type == "log"
    broken = clipping_figure(
        {"without": float("inf"), "with": float("nan")},
        {"without": float("nan"), "with": float("nan")},
        1.0,
    )
    assert all(len(trace.y) == 0 for trace in broken.data)
    assert _finite_json(broken)


def test_chartable_counts_what_a_page_must_mention():
    assert chartable(np.array([1.0, np.nan, np.inf, -np.inf, 0.0])) == 3
    assert chartable(np.zeros((3, 4))) == 0
