"""The plain figure path writes what plotly's checked figure writes, and says so for the
cases it handles itself (the conftest holds every figure the tests build to the same)."""

from __future__ import annotations

import json

import numpy as np
import plotly.io
import plotly.tools

from components.figure import figure, ready_for_streamlit
from components.projector import for_projector


def _heatmap(**extra) -> dict:
    return dict(type="heatmap", z=np.arange(6.0).reshape(2, 3), x=["a", "b", "c"], **extra)


def test_unset_properties_empty_items_titles_and_named_scales_are_written_as_plotly_does():
    fig = figure(
        [
            _heatmap(
                colorscale="Blues",
                colorbar=dict(title="value", thickness=None, tickfont=dict(size=None)),
                texttemplate=None,
            )
        ],
        dict(title="T", shapes=[], annotations=[], xaxis=dict(title=dict(text="x"))),
    )
    plain, checked = fig.json_pair()
    assert plain == checked
    trace = plain["data"][0]
    assert trace["colorbar"] == {"title": {"text": "value"}}
    assert "texttemplate" not in trace
    assert trace["colorscale"][0] == [0.0, "rgb(247,251,255)"]
    assert trace["z"]["dtype"] == "f8" and "bdata" in trace["z"]  # sent as binary
    assert "shapes" not in plain["layout"] and plain["layout"]["template"]


def test_building_and_writing_leave_the_builder_s_dicts_and_arrays_alone():
    z = np.arange(6.0).reshape(2, 3)
    trace = dict(type="heatmap", z=z, colorscale="Blues", colorbar=dict(title="v"))
    fig = figure([trace], dict(title="T"))
    fig.to_plotly_json()
    assert trace == dict(type="heatmap", z=z, colorscale="Blues", colorbar=dict(title="v"))
    assert fig.layout.title.text == "T" and fig.data[0].colorbar.title.text == "v"


def test_streamlit_s_conversion_hands_back_the_spec_itself():
    """`st.plotly_chart` converts a figure object with plotly's tools; the ready figure
    must come back as the very dict given, not checked or copied again."""
    spec = figure([_heatmap()], dict(height=300)).to_plotly_json()
    ready = ready_for_streamlit(spec)
    assert plotly.tools.return_figure_from_figure_or_data(ready, validate_figure=True) is spec


def test_charts_are_written_by_orjson_as_the_json_module_writes_them():
    """`st.plotly_chart` writes each chart with plotly's default engine, which takes
    orjson when it can import it; the page's JSON must read back the same either way."""
    import orjson  # noqa: F401 - in requirements.txt; fails here if it is dropped

    spec = figure(
        [
            _heatmap(text=[["<b>é</b>", "中文", 'a"b'], ["", "x", "y"]]),
            dict(type="scatter", y=[np.nan, 1.5, 2]),
        ],
        dict(title="T"),
    ).to_plotly_json()
    written = {
        engine: plotly.io.to_json(spec, validate=False, engine=engine)
        for engine in (None, "orjson", "json")
    }
    assert written[None] == written["orjson"]  # the default is orjson
    assert json.loads(written["orjson"]) == json.loads(written["json"])
    assert "<" not in written["orjson"]  # markup stays escaped, as the json engine leaves it


def test_the_projector_copy_leaves_the_shared_template_alone():
    fig = figure([_heatmap()], dict(font=dict(size=14)))
    template = fig.to_plotly_json()["layout"]["template"]
    before = repr(template)
    scaled = for_projector(fig.to_plotly_json())
    assert scaled["layout"]["font"]["size"] == 21
    assert repr(fig.to_plotly_json()["layout"]["template"]) == before


def test_arrays_of_every_kind_are_written_as_plotly_writes_them():
    rng = np.random.default_rng(0)
    arrays = [
        np.arange(5),  # int64 narrowed to int8
        np.arange(300) * 200,  # to int32
        np.array([2**40, 1]),  # too wide: a list
        np.arange(4, dtype=np.uint64),
        np.arange(70000, dtype=np.uint64),
        rng.normal(size=(3, 4)),  # 2-D, with its shape
        rng.normal(size=(3, 4)).astype(np.float32).T,  # not contiguous
        np.arange(6, dtype=np.int16)[::2],
        np.array([True, False]),
        np.array(["a", "b"]),
        np.array([], dtype=np.float64),
    ]
    for values in arrays:
        fig = figure([dict(type="scatter", x=values, y=np.arange(len(values)))], {})
        plain, checked = fig.json_pair()
        assert plain == checked, values
