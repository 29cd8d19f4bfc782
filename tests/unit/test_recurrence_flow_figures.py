"""Figures of "Gradient flow through time" (components/recurrence/flow.py): curves by
distance, the ratios quoted under the chart, and the chart itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.i18n import using_language
from components.palette import PURPLE, SKY_BLUE
from components.recurrence.flow import (
    distance_curves,
    flow_figure,
    flow_summary,
    model_colors,
    per_step_factor,
    ratios_text,
    reach_ratio,
)
from components.recurrent import MODEL_COLORS


def test_curves_run_back_from_the_loss_token():
    grads = {"RNN": np.array([1e-4, 1e-2, 1.0]), "SSM": np.array([0.3, 0.2, 0.5])}
    curves = distance_curves(grads, tau=2)
    k, rnn = curves["RNN"]
    assert list(k) == [0, 1, 2] and list(rnn) == [1.0, 1e-2, 1e-4]
    assert list(curves["SSM"][1]) == [0.5, 0.2, 0.3]


def test_ratio_is_first_over_own_and_nan_where_it_has_no_meaning():
    assert reach_ratio(np.array([2e-3, 0.5, 4.0]), 2) == pytest.approx(5e-4)
    # τ before the end: the tokens after it take no part.
    assert reach_ratio(np.array([1.0, 4.0, 0.0]), 1) == pytest.approx(0.25)
    assert math.isnan(reach_ratio(np.array([1.0, 0.0]), 1))
    assert math.isnan(reach_ratio(np.array([np.inf, 1.0]), 1))


def test_per_step_factor_is_the_geometric_mean():
    assert per_step_factor(1e-6, 3) == pytest.approx(1e-2)
    assert per_step_factor(8.0, 3) == pytest.approx(2.0)
    assert math.isnan(per_step_factor(0.5, 0)) and math.isnan(per_step_factor(np.nan, 4))


def test_figure_keeps_the_lessons_colours_and_gives_the_new_layers_their_own():
    grads = {
        "RNN": np.array([1e-5, 1e-3, 1.0]),
        "Transformer": np.array([0.2, 0.1, 0.9]),
        "SSM": np.array([0.0, 0.05, 0.8]),  # an exact 0 has no point on the log axis
        "Linear attention": np.array([0.1, 0.1, 0.2]),
    }
    curves = distance_curves(grads, tau=2)
    hover = ["2:c", "1:&lt;b&gt;", "0:a"]
    fig = flow_figure(curves, hover, ["SSM", "Linear attention"], title="T", x_title="k")
    by_name = {trace.name: trace for trace in fig.data}
    assert list(by_name) == list(grads)
    assert by_name["RNN"].line.color == MODEL_COLORS["RNN"]
    assert by_name["Transformer"].line.color == MODEL_COLORS["Transformer"]
    assert by_name["SSM"].line.color == PURPLE
    assert by_name["Linear attention"].line.color == SKY_BLUE
    assert list(by_name["SSM"].x) == [0, 1] and list(by_name["SSM"].text) == hover[:2]
    assert list(by_name["RNN"].y) == [1.0, 1e-3, 1e-5]
    assert fig.layout.yaxis.type == "log"
    assert model_colors(["GRU", "X"], ["X"]) == {"GRU": MODEL_COLORS["GRU"], "X": PURPLE}


def test_summary_and_ratio_text_quote_the_numbers_drawn():
    curves = distance_curves({"RNN": np.array([2e-5, 0.3, 0.5])}, tau=2)
    with using_language("en"):
        assert flow_summary(curves) == "RNN: 0.5 at 0 → 2e-05 at 2"
    assert ratios_text({"RNN": 4e-5, "LSTM": 0.25, "GRU": float("nan")}) == (
        "RNN 4e-05, LSTM 0.25, GRU NaN"
    )
