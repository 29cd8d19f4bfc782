"""Charts on the page: the sidebar's formats, the chart library fetched ahead, show_chart,
and the grid charts."""

from __future__ import annotations

from functools import cache, partial
from pathlib import Path

import orjson
import streamlit as st

from components.export import to_csv, to_json
from components.figure import ready_for_streamlit
from components.grid import enlarged
from components.i18n import t
from components.labels import markdown_literal
from components.projector import SCALE as PROJECTOR_SCALE
from components.projector import for_projector

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"

PLOTLY_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "seqlens"},
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


# Whether this run is in presenter mode: set by the frame before the page draws
# (components/frame.py, presenter_toggle).
PRESENTING_KEY = "_present_chosen"

# The sidebar's two format choices: the chart toolbar's camera saves the image in one, and
# the button under each chart downloads its numbers in the other. A button per data format
# under every chart cost script time on every keystroke: 0.21 ms a download button, 0.14 ms
# a container, and their messages to send (docs/PERFORMANCE.md). Each key
# names its label in the i18n files (app.<key>, app.<key>_help); the first format is the
# default.
IMAGE_FORMAT_KEY = "image_format"
IMAGE_FORMATS = ("png", "svg")
DATA_FORMAT_KEY = "data_format"
DATA_FORMATS = {"csv": (to_csv, "text/csv"), "json": (to_json, "application/json")}
_FORMAT_CHOICES = ((IMAGE_FORMAT_KEY, IMAGE_FORMATS), (DATA_FORMAT_KEY, tuple(DATA_FORMATS)))
_DEFAULT_FORMAT = {key: formats[0] for key, formats in _FORMAT_CHOICES}


def format_choices() -> None:
    for key, formats in _FORMAT_CHOICES:
        st.sidebar.segmented_control(
            t(f"app.{key}"),
            formats,
            format_func=str.upper,
            default=formats[0],
            required=True,
            key=key,
            help=t(f"app.{key}_help"),
        )


def chosen_format(key: str) -> str:
    """The format chosen for `key` (its default before the sidebar is drawn)."""
    return st.session_state.get(key) or _DEFAULT_FORMAT[key]


def chart_config() -> dict:
    """The chart toolbar's camera button saves in the format chosen in the sidebar."""
    options = {**PLOTLY_CONFIG["toImageButtonOptions"], "format": chosen_format(IMAGE_FORMAT_KEY)}
    return {**PLOTLY_CONFIG, "toImageButtonOptions": options}


# --- the chart library, fetched while the server still works on the first chart ---
# Streamlit's browser code loads plotly (4.7 MB of JavaScript, 1-2.5 s to fetch and
# evaluate here) only when the first chart arrives. On a fresh server the first visit
# waits seconds for the models (imports, loading) before that chart is sent: the frame
# asks the browser for the library as soon as the frame is drawn, so the browser evaluates
# it meanwhile and draws the real charts as soon as they come. Streamlit loads its chart
# code as one module of its own bundle; importing that module by the same address, from
# where the bundle itself was loaded, gives the same module, so it is evaluated once.
_CHART_LIBRARY_JS = """
export default function ({ data }) {
  const bundle = document.querySelector('script[type="module"][src*="/static/js/index."]');
  if (!bundle || !data || !data.module) return;
  import(new URL(data.module, bundle.src).href).catch(() => {});
}
"""
# Its element is hidden by assets/styles/layout.css (.st-key-<key>): it takes no room.
CHART_LIBRARY_KEY = "_chart_library"


@cache
def plotly_module_name() -> str | None:
    """The file name of the pinned Streamlit's plotly module ("PlotlyChart.<hash>.js"),
    None if this Streamlit ships none (then nothing is fetched ahead). Looked up once per
    process: the frame asks for it on every rerun."""
    static = Path(st.__file__).resolve().parent / "static" / "static" / "js"
    found = sorted(static.glob("PlotlyChart.*.js"))
    return found[0].name if len(found) == 1 else None


@cache
def _chart_library_loader():
    return st.components.v2.component("seqlens_chart_library", js=_CHART_LIBRARY_JS)


def fetch_chart_library() -> None:
    """Ask the browser for the chart library now, before any chart is drawn (see above).

    An element of no height; nothing a visitor sends reaches it."""
    module = plotly_module_name()
    if module is not None:
        _chart_library_loader()(key=CHART_LIBRARY_KEY, data={"module": module}, height=0)


def show_chart(
    fig,
    key: str,
    *,
    summary: str | None = None,
    data: dict | None = None,
    picks: tuple[tuple[str, int], ...] = (),
) -> None:
    """A chart, the one line that says what it shows, and its numbers to download.

    `summary` is computed by the page from the numbers drawn (screen readers read it,
    and in presenter mode it is body text, as large and dark as the page's); it may quote
    the visitor's tokens, so it is written as literal text. `data` is only turned into
    files when a button is clicked. In presenter mode the chart is drawn for a projector
    (components/projector.py).
    A grid chart (a dict from components/grid.py) whose panel may be picked sets
    `picks`' controls, ((row's key, rows), (column's key, columns)), to the row and
    column of the cell the visitor clicks.
    """
    if isinstance(fig, dict):
        _draw_grid(fig, key, summary, picks)
    else:
        spec = fig.to_plotly_json()
        if st.session_state.get(PRESENTING_KEY):
            spec = for_projector(spec)
        st.plotly_chart(ready_for_streamlit(spec), config=chart_config(), key=key, theme=None)
    if summary is None and data is None:
        return
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        if summary is not None:
            # On a projector the summary is the line the back of the room reads: body text
            # there (its size, full contrast), a grey caption on a screen.
            line = st.markdown if st.session_state.get(PRESENTING_KEY) else st.caption
            line(markdown_literal(summary), width="stretch")
        if data is not None:
            _data_download(key, data)


# Each grid chart is a small component that hands its data to the renderer (22 kB of
# JavaScript, assets/grid_chart.js), which a page sends once per run, before its first
# grid chart (`load_grid_charts`), not once per chart: an element's code travels with
# it on every rerun. Sent the same on every run, it is a message the browser keeps in
# its cache and Streamlit then sends by reference.
_GRID_CHART_JS = """
export default function (chart) {
  if (window.__seqlensGrid) return window.__seqlensGrid(chart);
  (window.__seqlensGridQueue = window.__seqlensGridQueue || []).push(chart);
}
"""
GRID_CODE_KEY = "_grid_code"


@cache
def _grid_chart():
    return st.components.v2.component("seqlens_grid", js=_GRID_CHART_JS, isolate_styles=False)


@cache
def _grid_code():
    code = (ASSETS / "grid_chart.js").read_text(encoding="utf-8")
    return st.components.v2.component("seqlens_grid_code", js=code)


def load_grid_charts() -> None:
    """The grid charts' renderer, sent by a page that draws grid charts, before them."""
    _grid_code()(key=GRID_CODE_KEY, height=0)


def _draw_grid(spec: dict, key: str, summary: str | None, picks) -> None:
    """A grid chart (components/grid.py), saved in the image format chosen in the sidebar."""
    image_format = chosen_format(IMAGE_FORMAT_KEY)
    spec = spec | dict(
        label=summary or "",
        file=f"seqlens-{key}",
        format=image_format,
        save_label=t("app.save_chart", format=image_format.upper()),
        save_help=t("app.save_chart_help"),
    )
    if st.session_state.get(PRESENTING_KEY):
        spec = enlarged(spec, PROJECTOR_SCALE)
    # Sent as bytes: Streamlit writes a dict with the json module twice (the payload, and
    # sorted for the element's identity), ~1.2 ms for the attention page's four; orjson
    # writes them once in ~0.03 ms.
    payload = orjson.dumps(spec)
    if not picks:
        _grid_chart()(data=payload, key=key)
        return
    # A function of this module and plain values: the session keeps no page namespace.
    _grid_chart()(data=payload, key=key, on_pick_change=partial(_set_picked, key, picks))


def _set_picked(key: str, picks: tuple[tuple[str, int], ...]) -> None:
    """A grid chart's click: each control in `picks` gets the clicked cell's index, if the
    cell is one the chart has (the value comes from the browser)."""
    cell = st.session_state[key].get("pick")
    if not (isinstance(cell, list) and len(cell) == len(picks)):
        return
    if all(type(i) is int and 0 <= i < n for i, (_, n) in zip(cell, picks, strict=True)):
        st.session_state.update({name: i for i, (name, _) in zip(cell, picks, strict=True)})


def _data_download(key: str, data: dict) -> None:
    extension = chosen_format(DATA_FORMAT_KEY)
    convert, mime = DATA_FORMATS[extension]
    st.download_button(
        extension.upper(),
        data=lambda: convert(data),
        file_name=f"seqlens-{key}.{extension}",
        mime=mime,
        key=f"{key}.{extension}",
        on_click="ignore",
        icon=":material/download:",
        help=t("app.download_data_help"),
        type="tertiary",
        width="content",
    )
