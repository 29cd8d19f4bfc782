"""Figure builders draw their own words (axis titles, colour bars, scheme names, the home
table's units) in the current language."""

from __future__ import annotations

import numpy as np

from components.i18n import using_language
from components.lineage import cells
from components.positional import encoding_heatmap, error_bars_figure, waves_figure
from components.recurrent import clipping_figure, gates_figure, unit_heatmap
from models.analysis import positional as pe
from models.analysis.lineage import Measured


def test_positional_builders_follow_the_language():
    table = pe.sinusoidal_table(8, 4)
    with using_language("zh"):
        heatmap = encoding_heatmap(table, 3)
        waves = waves_figure(table, [1], 3)
        bars = error_bars_figure({"sinusoidal": 1.0, "none": 0.0})
    assert heatmap.layout.xaxis.title.text == "位置"
    assert heatmap.layout.yaxis.title.text == "维度"
    assert heatmap.data[0].colorbar.title.text == "数值"
    assert waves.data[0].name == "维度 1"
    assert list(bars.data[0].x) == ["正弦", "无"]
    english = error_bars_figure({"sinusoidal": 1.0, "none": 0.0})
    assert list(english.data[0].x) == ["sinusoidal", "none"]


def test_recurrent_builders_follow_the_language():
    values = np.ones((3, 2))
    with using_language("zh"):
        units = unit_heatmap(values, ["a", "b", "c"])
        gates = gates_figure({"F": values, "C": values}, ["a", "b", "c"])
        clip = clipping_figure({"x": np.inf}, {"x": 0.5}, 1.0)
    [panel] = units["panels"]
    assert panel["x"]["title"] == "时间步"
    assert panel["y"]["title"] == "隐藏单元"
    assert [p["colorbar"]["title"] for p in gates["panels"]] == ["门", "状态"]
    assert "无柱" in clip.layout.annotations[-1].text


def test_home_table_cells_come_from_the_measurement_in_the_language():
    # An RNN: its gradient underflows float32 but float64 still measures it; it cannot see
    # a later token at all (0 in both).
    row = Measured(
        "rnn", (10, 40), (0.001, 0.004), 0.0, 0.0, (2048, 3 * 1024 * 1024), 5.86e-60, 0.0
    )
    assert cells(row) == {
        "depth": "10 → 40",
        "seconds": "1 ms → 4 ms",
        "reach": "below float32's smallest number (float64: 5.86e-60)",
        "sees_later": "no: 0 (cannot depend)",
        "memory": "2 kB → 3 MB",
    }
    with using_language("zh"):
        assert cells(row)["reach"] == "小于 float32 能表示的最小数（float64：5.86e-60）"
        assert cells(row)["sees_later"] == "否：0（不可能依赖）"
        assert cells(row)["seconds"] == "1 毫秒 → 4 毫秒"
