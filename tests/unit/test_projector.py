"""Charts for the projector: larger text and height through the figure itself."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from components.layout import grid_layout
from components.positional import encoding_heatmap
from components.projector import SCALE, for_projector
from components.recurrent import lines_figure


def font_sizes(node, path: str = "") -> dict[str, float]:
    """Every explicit font size in a figure dict, by where it sits."""
    found = {}
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}"
            if key.endswith("font") and isinstance(value, dict) and "size" in value:
                found[where] = value["size"]
            found |= font_sizes(value, where)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found |= font_sizes(item, f"{path}[{i}]")
    return found


def heatmap() -> dict:
    table = np.linspace(-1.0, 1.0, 48).reshape(6, 8)
    return encoding_heatmap(table, 4, title="t", end_text="end").to_plotly_json()


def test_every_font_the_figure_sets_and_its_height_grow_by_the_scale():
    figure = heatmap()
    before = font_sizes(figure)
    assert before, "the builder sets font sizes"
    scaled = for_projector(figure)
    after = font_sizes(scaled)
    for where, size in before.items():
        assert after[where] == size * SCALE, where
    assert scaled["layout"]["height"] == round(figure["layout"]["height"] * SCALE)
    assert scaled["layout"]["margin"]["t"] == figure["layout"]["margin"]["t"] * SCALE


def test_fonts_left_to_plotlys_defaults_are_enlarged_too():
    scaled = for_projector(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])).to_plotly_json())
    assert scaled["layout"]["font"]["size"] == 12 * SCALE
    assert scaled["layout"]["hoverlabel"]["font"]["size"] == 13 * SCALE
    assert scaled["layout"]["height"] == round(450 * SCALE)


def test_subplot_titles_and_per_point_sizes_grow():
    layout = grid_layout(1, 2, ["left", "right"])
    figure = {"data": [{"type": "bar", "textfont": {"size": [10, 20]}}], "layout": layout}
    scaled = for_projector(figure)
    assert [a["font"]["size"] for a in scaled["layout"]["annotations"]] == [
        a["font"]["size"] * SCALE for a in layout["annotations"]
    ]
    assert scaled["data"][0]["textfont"]["size"] == [15, 30]


def test_the_data_and_the_original_figure_are_left_as_they_were():
    curves = {"RNN": (np.arange(5), np.linspace(1, 2, 5))}
    figure = lines_figure(curves, title="t", x_title="x", y_title="y").to_plotly_json()
    before = font_sizes(figure)
    scaled = for_projector(figure)
    assert font_sizes(figure) == before
    assert scaled["data"][0]["y"] == figure["data"][0]["y"]
    go.Figure(scaled)  # still a figure plotly accepts
