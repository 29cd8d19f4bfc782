"""Figures of "The same output, two ways" (components/recurrence/two_ways.py), asserted on
the grid spec and on the plotly figure."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import cells  # a grid panel's values as sent

from components.grid import palette_b64
from components.i18n import using_language
from components.palette import DIVERGING_COLORSCALE
from components.recurrence.two_ways import (
    log_lines_figure,
    output_height,
    outputs_grid,
    symmetric_limit,
    timing_figure,
)

TOKENS = ["<b>the</b>", "cat", "cat"]


def test_outputs_sit_side_by_side_on_one_scale_symmetric_about_zero(rng):
    parallel = rng.normal(size=(3, 4)).astype(np.float32)
    recurrent = parallel + np.float32(1e-7)
    recurrent[2, 3] = -5.0  # the largest |value| of either form sets both scales
    spec = outputs_grid(
        {"parallel": parallel, "recurrent": recurrent},
        TOKENS,
        title="z",
        token_title="token",
        dim_title="dimension",
        value_title="output",
    )
    assert spec["columns"] == 2 and spec["title"] == "z"
    first, second = spec["panels"]
    np.testing.assert_array_equal(cells(first), parallel)
    np.testing.assert_array_equal(cells(second), recurrent)
    for panel in (first, second):
        assert (panel["zmin"], panel["zmax"]) == (-5.0, 5.0)
        assert panel["palette"] == palette_b64(DIVERGING_COLORSCALE)
        assert panel["columns"] == ["0", "1", "2", "3"]
    assert [first["title"], second["title"]] == ["parallel", "recurrent"]
    # Rows are the tokens, drawn as text (not markup), a repeated token kept apart.
    assert [label for _, label in first["y"]["ticks"]] == ["0:<b>the</b>", "1:cat", "2:cat"]
    assert first["hover"]["y"] == ["0:<b>the</b>", "1:cat", "2:cat"]
    # The token axis is named once, the colour bar drawn once, on the last panel.
    assert (first["y"]["title"], second["y"]["title"]) == ("token", "")
    assert "colorbar" not in first and second["colorbar"]["title"] == "output"
    assert second["colorbar"]["ticks"][0][0] == -5.0 and second["colorbar"]["ticks"][-1][0] == 5.0


def test_an_all_zero_output_still_gets_a_scale():
    assert symmetric_limit([np.zeros((2, 2))]) == 1.0
    assert symmetric_limit([np.array([[0.5, -2.0]]), np.array([[1.0]])]) == 2.0


def test_output_height_grows_with_the_tokens_between_bounds():
    assert output_height(1) == 300
    assert output_height(20) == 16 * 20 + 150
    assert output_height(40) == 16 * 40 + 150 <= 800
    assert output_height(500) == 800


def test_output_hover_names_dimensions_in_the_language():
    with using_language("zh"):
        spec = outputs_grid({"a": np.ones((1, 2)), "b": np.ones((1, 2))}, ["x"])
    assert spec["panels"][0]["hover"]["x"] == ["维度 0", "维度 1"]


def test_log_lines_leave_out_zeros_and_mark_the_visitors_length():
    x = np.array([1, 2, 4, 20, 4096])
    fig = log_lines_figure(
        {"scan": np.array([0, 1, 2, 5, 12]), "kv": 2 * x},
        x,
        20,
        "your sentence: 20",
        title="steps",
        dashes={"kv": "dash"},
    )
    scan, kv = fig.data
    assert list(scan.x) == [2, 4, 20, 4096] and list(scan.y) == [1, 2, 5, 12]
    assert list(kv.y) == [2, 4, 8, 40, 8192]
    assert kv.line.dash == "dash" and scan.line.dash == "solid"
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.layout.yaxis.dtick == 1  # a label per decade
    [marker] = fig.layout.shapes
    assert marker.x0 == marker.x1 == 20
    [label] = fig.layout.annotations
    assert label.text == "your sentence: 20"
    assert label.x == pytest.approx(np.log10(20))  # a log axis places annotations by log10


def test_timing_bars_are_microseconds_per_model_on_a_log_axis():
    seconds = {
        "one step, L = 20": {"linear attention": 2e-5, "SSM": 3e-5},
        "parallel, L = 20": {"linear attention": 1e-4, "SSM": 4.5e-4},
    }
    fig = timing_figure(seconds, title="time", y_title="µs")
    step, parallel = fig.data
    assert list(step.x) == ["linear attention", "SSM"]
    np.testing.assert_allclose(step.y, [20.0, 30.0])
    np.testing.assert_allclose(parallel.y, [100.0, 450.0])
    assert list(parallel.text) == ["100", "450"]
    assert fig.layout.barmode == "group" and fig.layout.yaxis.type == "log"
    assert step.marker.color != parallel.marker.color


@pytest.mark.parametrize("bad", [0.0, -1e-6, np.nan, np.inf])
def test_a_time_that_is_not_positive_is_refused(bad):
    with pytest.raises(ValueError):
        timing_figure({"step": {"SSM": bad}})
