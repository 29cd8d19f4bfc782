"""Figures as the plain JSON dicts plotly.js reads, handed to Streamlit without a detour.

A `go.Figure` checks every property of every trace against plotly's schema when it is
built (a 20 × 20 heatmap: ~12 ms), and `st.plotly_chart` then deep-copies it with
`to_dict()` (~3 ms) before writing its JSON. Our builders produce the same few kinds of
trace from numbers they computed themselves, on every rerun of every visitor, so they
build `PlainFigure`s: traces and layout as dicts, sent as they are (~1 ms a chart).

Nothing is lost against the checked figure: the tests compare the `go.Figure` the same
dicts make with the plain one, JSON for JSON, for every chart they draw
(tests/unit/test_figure.py, tests/app/test_chart_specs.py). The attributes tests and
pages read (`fig.data`, `fig.layout`) are that checked figure's.
"""

from __future__ import annotations

import base64
import json
from functools import cache, cached_property
from typing import Any

import numpy as np
from _plotly_utils.utils import is_skipped_key, plotlyjsShortTypes


def figure(data: list[dict], layout: dict) -> PlainFigure:
    """`go.Figure(data=data, layout=layout)` without checking or copying: traces are dicts
    with their `type` ("heatmap", "scatter", "bar", "image")."""
    return PlainFigure(list(data), dict(layout))


@cache
def _default_template() -> dict:
    """The template a checked figure carries in its layout (plotly's default, "plotly").
    Shared by every plain figure: nothing writes into it (the projector copies)."""
    import plotly.graph_objects as go

    return go.Figure().layout.template.to_plotly_json()


@cache
def _named_colorscale(name: str) -> list:
    """The list of stops plotly writes for a colour scale given by name ("Blues")."""
    from _plotly_utils.basevalidators import ColorscaleValidator

    return ColorscaleValidator("colorscale", "heatmap").validate_coerce(name)


# Lists of layout items plotly leaves out of its JSON when they are empty.
_ITEM_LISTS = frozenset({"annotations", "images", "shapes"})


def _as_plotly_writes(node: Any) -> Any:
    """`node` as plotly's checked figure writes it (`to_dict()`): a property set to None
    is left out (None means "unset"), as is one left empty (a dict with nothing set, an
    empty list of shapes); a title given as a string becomes {"text": …}; a colour scale
    named by a string becomes its stops; a numpy array becomes plotly's typed array,
    sent as binary. Lists of numbers or labels are passed through, never walked."""
    if isinstance(node, dict):
        written = {}
        for key, value in node.items():
            value = _property(key, value)
            if value is None or (isinstance(value, dict) and not value):
                continue
            if key in _ITEM_LISTS and len(value) == 0:
                continue
            written[key] = value
        return written
    if isinstance(node, (list, tuple)) and node and isinstance(node[0], dict):
        return [_as_plotly_writes(item) for item in node]
    return node


def _property(key: str, value: Any) -> Any:
    if isinstance(value, str):
        if key == "title":
            return {"text": value}
        if key == "colorscale":
            return _named_colorscale(value)
        return value
    if isinstance(value, np.ndarray) and not is_skipped_key(key):
        return _typed_array(value)
    return _as_plotly_writes(value)


def _typed_array(values: np.ndarray) -> dict | np.ndarray:
    """A numeric array as plotly's typed array: its bytes in base64, its type, its shape.

    What plotly's `to_typed_array_spec` writes for a numpy array, without its detour
    through dataframe libraries (~0.3 ms an array, a dozen arrays a chart). Integers of
    64 bits are narrowed to the smallest type that holds them (plotly.js reads no 64-bit
    integers); other arrays (text, booleans, empty) stay arrays, written as lists.
    """
    if values.dtype.kind not in "uif" or values.size == 0:
        return values
    if values.dtype in (np.int64, np.uint64):
        narrowed = _narrowed(values)
        if narrowed is None:
            return values
        values = narrowed
    code = plotlyjsShortTypes.get(str(values.dtype))
    if code is None:
        return values
    typed = {"dtype": code, "bdata": base64.b64encode(np.ascontiguousarray(values)).decode()}
    if values.ndim > 1:
        typed["shape"] = str(values.shape)[1:-1]
    return typed


def _narrowed(values: np.ndarray) -> np.ndarray | None:
    low, high = values.min(), values.max()
    kinds = (
        (np.int8, np.int16, np.int32)
        if values.dtype == np.int64
        else (np.uint8, np.uint16, np.uint32)
    )
    for kind in kinds:
        limits = np.iinfo(kind)
        if limits.min <= low and high <= limits.max:
            return values.astype(kind)
    return None


class PlainFigure:
    """A figure as `fig.to_plotly_json()` gives it, built without plotly's checks.

    `components/ui/charts.py` `show_chart` hands its JSON form to `st.plotly_chart` through
    `ready_for_streamlit`.
    """

    def __init__(self, data: list[dict], layout: dict) -> None:
        self._data = data
        self._layout = layout

    def to_plotly_json(self) -> dict:
        """The figure's JSON form: a fresh outer dict; traces, arrays and the template
        are shared with this figure, so a caller copies what it changes."""
        layout = _as_plotly_writes(self._layout)
        layout.setdefault("template", _default_template())
        return {"data": [_as_plotly_writes(trace) for trace in self._data], "layout": layout}

    # --- the checked figure, for tests and anyone inspecting a chart ---------------

    @cached_property
    def _checked(self):
        import plotly.graph_objects as go

        return go.Figure(data=self._data, layout=self._layout)

    def json_pair(self) -> tuple[dict, dict]:
        """(this figure's JSON, the checked figure's JSON), as the browser would get each;
        the tests hold every chart to their being equal."""
        import plotly.io as pio

        return tuple(
            json.loads(pio.to_json(form, validate=False))
            for form in (self.to_plotly_json(), self._checked.to_dict())
        )

    @property
    def data(self):
        return self._checked.data

    @property
    def layout(self):
        return self._checked.layout


def ready_for_streamlit(spec: dict):
    """A figure in JSON form (`to_plotly_json()`) as the object `st.plotly_chart` takes,
    which it sends as it is: not checked again, not copied."""
    return _ready_figure_type()(spec)


@cache
def _ready_figure_type() -> type:
    """A plotly figure class whose `to_dict()` is a JSON form given to it (defined on first
    use: plotly's figure classes take a while to import)."""
    import plotly.graph_objects as go

    class ReadyFigure(go.Figure):
        """A figure already in JSON form. `st.plotly_chart` calls `to_dict()` on a plotly
        figure object and writes the result as JSON (a dict it would check again);
        tests/app/test_chart_specs.py fails if the Streamlit in use stops doing so."""

        def __init__(self, spec: dict) -> None:
            # Nothing to build or check; plotly's own attribute setter is bypassed.
            object.__setattr__(self, "_ready_spec", spec)

        def to_dict(self) -> dict:
            return self._ready_spec

    return ReadyFigure
