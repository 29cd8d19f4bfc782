"""Figures of the recurrent lesson: built from arrays, asserted on fig.data / fig.layout."""

from __future__ import annotations

import numpy as np
import pytest

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
    fig = unit_heatmap(values, step_labels(None, 3))
    z = np.asarray(fig.data[0].z)  # [unit, step]
    assert z.shape == (2, 3)
    assert z[0, 0] == 0.0 and z[1, 0] == pytest.approx(2.0)
    assert z[0, 1] == pytest.approx(np.log10(F32_MAX), rel=1e-6) and z[1, 1] == LOG_FLOOR
    assert z[0, 2] == pytest.approx(np.log10(F32_MAX), rel=1e-6) and z[1, 2] == pytest.approx(-3)
    assert list(fig.data[0].x) == ["t=0", "t=1", "t=2"]
    assert _finite_json(fig)


def test_gates_share_the_step_axis_and_keep_gate_and_state_scales_apart():
    rng = np.random.default_rng(0)
    gates = {
        "I": rng.random((5, 40)),
        "F": rng.random((5, 40)),
        "C": rng.normal(size=(5, 40)) * 3,
    }
    gates["C"][2, 3] = np.inf
    fig = gates_figure(gates, step_labels(["a", "a", "b", "c", "d"], 5), max_units=32)
    assert [trace.coloraxis for trace in fig.data] == ["coloraxis", "coloraxis", "coloraxis2"]
    assert all(np.asarray(trace.z).shape == (32, 5) for trace in fig.data)
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1
    assert fig.layout.coloraxis2.cmin == -fig.layout.coloraxis2.cmax
    assert list(fig.data[0].x)[:2] == ["0:a", "1:a"]  # a repeated token keeps its own column
    assert _finite_json(fig)


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
