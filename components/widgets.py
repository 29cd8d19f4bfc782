"""Streamlit pieces shared by every page: the sentence box, cached models, notes, charts.

Pages import from here (never from each other) so a page draws only its own widgets.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

import numpy as np
import orjson
import streamlit as st

from components.export import to_csv, to_json
from components.figure import ready_for_streamlit
from components.grid import enlarged
from components.i18n import LANGUAGES, t, using_language
from components.labels import markdown_literal
from components.live_pause import read_pauses_without_pandas
from components.projector import SCALE as PROJECTOR_SCALE
from components.projector import for_projector
from components.visitor_links import (  # noqa: F401  (the pages import them from here)
    VISITOR_FROM_LINK,
    VISITOR_KEY,
    VISITOR_PARAM,
    store_refusal_shown,
    visitor_id,
    visitor_link,
)
from models.inputs import (
    ACTIVE_WINDOW_S,
    READ_CHARS,
    Note,
    PreparedText,
    parse_choice,
    parse_choices,
    parse_number,
    prepare_sentence,
    sentence_pause_ms,
)

# Before any sentence box is drawn: its pause is read without pandas (see the module).
read_pauses_without_pandas()

ASSETS = Path(__file__).resolve().parent.parent / "assets"
DEFAULT_SENTENCE = "The animal didn't cross the street because it was too tired"
SENTENCE_KEY = "sentence"
# Export from the chart's own toolbar, drawn by the browser: works offline.
PLOTLY_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "seqlens"},
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


@st.cache_data
def presets() -> dict[str, list[str]]:
    return json.loads((ASSETS / "presets.json").read_text(encoding="utf-8"))


def _apply_preset() -> None:
    choice = st.session_state.get("preset")
    if choice:
        st.session_state[SENTENCE_KEY] = choice
    st.session_state["preset"] = None


# When each visitor's page last ran (session id → time.monotonic()): how busy the server is.
_LAST_RUN: dict[str, float] = {}
_LAST_RUN_LOCK = threading.Lock()


def visitors_answered(now: float | None = None) -> int:
    """Visitors whose page ran in the last ACTIVE_WINDOW_S seconds, this one included."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    now = time.monotonic() if now is None else now
    ctx = get_script_run_ctx()
    with _LAST_RUN_LOCK:
        if ctx is not None:
            _LAST_RUN[ctx.session_id] = now
        for session, at in list(_LAST_RUN.items()):
            if now - at > ACTIVE_WINDOW_S:
                del _LAST_RUN[session]
        return len(_LAST_RUN)


def sentence_box(lesson: str = "") -> None:
    """The shared sentence: live as the visitor types, kept across pages and in the URL.

    The examples beside it are the current lesson's (the first lesson's on the home page).
    """
    examples_by_lesson = presets()
    box, examples = st.columns([3, 1], vertical_alignment="bottom")
    box.text_input(
        t("app.sentence_label"),
        value=DEFAULT_SENTENCE,
        key=SENTENCE_KEY,
        # Also cuts a longer value from the link or a script before the page reads it.
        max_chars=READ_CHARS,
        live=f"{sentence_pause_ms(visitors_answered())}ms",
        bind="query-params",
        help=t("app.sentence_help"),
    )
    examples.selectbox(
        t("app.preset_label"),
        options=examples_by_lesson.get(lesson) or next(iter(examples_by_lesson.values())),
        index=None,
        placeholder=t("app.preset_placeholder"),
        key="preset",
        on_change=_apply_preset,
    )


# The last sentence prepared in this session, with its raw text: the frame's pass ahead
# and the page read it in the same run, and cleaning is the one step that reads it all.
_PREPARED_KEY = "_prepared_sentence"


def current_sentence() -> PreparedText:
    raw = st.session_state.get(SENTENCE_KEY, DEFAULT_SENTENCE)
    kept = st.session_state.get(_PREPARED_KEY)
    if kept is None or kept[0] != raw:
        kept = (raw, prepare_sentence(raw))
        st.session_state[_PREPARED_KEY] = kept
    return kept[1]


def sentence_or_stop() -> PreparedText:
    """The shared sentence, with a note for whatever cleaning changed; an empty one ends
    the page here, under the message that asks for a sentence."""
    sentence = current_sentence()
    show_notes(sentence.notes)
    if sentence.is_empty:
        st.stop()
    return sentence


def show_notes(notes: tuple[Note, ...] | list[Note]) -> None:
    """Each note in words. The message boxes render markdown, so they get only our own
    strings; the visitor's text a note quotes goes through st.text, which is inert."""
    for note in notes:
        if note.code == "empty_text":
            st.info(t("note.empty_text"))
            continue
        st.warning(t(f"note.{note.code}", **note.params), icon="⚠️")
        if note.quote:
            st.text(note.quote)


# --- controls kept in the link --------------------------------------------------------
# Every control is bound to the URL (Streamlit keeps the address bar in step). A link
# is text anyone can edit, and Streamlit silently drops a value a control cannot take;
# so before a control is first drawn, its value in the link is checked here, and a bad
# one (layer=99, T=1e9, nan) is clamped or replaced, with a note saying so.

_LINK_NOTES = "_link_notes"


def _check_link(key: str, parse) -> list[str] | None:
    """The link's texts for `key` when they set the control's value in this run."""
    # `parse` runs only when the link holds a value for a control not yet drawn, so the
    # labels it needs (every option in every language) are built only then.
    notes = st.session_state.setdefault(_LINK_NOTES, {})
    if key in st.session_state:
        return None  # the control exists already: its value is the visitor's, not the link's
    raws = st.query_params.get_all(key)
    if not raws:
        return None
    # Set even when valid: the link may name the value where the control shows a label.
    value, note = parse(raws)
    st.session_state[key] = value
    if note is not None:
        notes[key] = (note, value)
    return raws


def _relink(key: str, raws: list[str] | None, labels: list[str], value_type: str) -> None:
    """Put the control's own texts for its value back in the address bar.

    A bound control takes from a link only the labels it writes itself; for anything
    else (a link naming the value, `?mask_kind=padding`, or a label of the other
    language) Streamlit drops the parameter from the address bar, although the control
    shows the value the link asked for (set by _check_link). A link copied from there
    would lose that setting. Streamlit offers no public way to write a bound parameter,
    so its own correction step is called (tests/e2e/test_shared_links.py fails if the
    pinned Streamlit changes it).
    """
    if raws is None or raws == labels or not labels:
        return
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    written = labels[0] if value_type == "string_value" else labels
    with get_script_run_ctx().session_state.query_params() as params:
        params.set_corrected_value(key, written, value_type)


def _show_link_note(key: str, value) -> None:
    """The note stays while the control still shows the value the link was changed to."""
    noted = st.session_state[_LINK_NOTES].get(key)
    if noted is not None and noted[1] == value:
        show_notes([noted[0]])
    else:
        st.session_state[_LINK_NOTES].pop(key, None)


def _labels(options: list, format_func) -> list[list[str]]:
    """Every text a link may use for each option: a bound control writes its label, in
    the language of whoever made the link; a link written by hand may use the value."""
    names = [[str(option)] for option in options]
    for language in LANGUAGES:
        with using_language(language):
            for texts, option in zip(names, options, strict=True):
                texts.append(format_func(option))
    return names


# A control's format_func and on_click stay in the session's widget state, also while a
# visitor who left is kept for a reconnect (two minutes). A function written in a page
# refers to the page's whole namespace, every trace and figure of its last run (about
# 2.5 MB a visitor on the attention page), so controls get functions from this module.


def _label_of(labels: dict, option) -> str:
    return labels.get(option, str(option))


def kept_labels(options: list, format_func):
    """`format_func` as a lookup of the labels it gives in this run."""
    return partial(_label_of, {option: format_func(option) for option in options})


def set_state(values: dict) -> None:
    """A button's on_click: put `values` into the session state."""
    st.session_state.update(values)


def linked_selectbox(where, label: str, options, default, key: str, format_func=str, **extra):
    options = list(options)
    raws = _check_link(
        key,
        lambda raws: parse_choice(raws[-1], options, default, _labels(options, format_func)),
    )
    label_of = kept_labels(options, format_func)
    value = where.selectbox(
        label,
        options,
        index=options.index(default),
        key=key,
        format_func=label_of,
        bind="query-params",
        **extra,
    )
    # Streamlit keeps a default out of the address bar.
    _relink(key, raws and raws[-1:], [label_of(value)] if value != default else [], "string_value")
    _show_link_note(key, value)
    return value


def linked_slider(where, label: str, low, high, default, key: str, **options):
    _check_link(key, lambda raws: parse_number(raws[-1], low, high, default))
    value = where.slider(label, low, high, default, key=key, bind="query-params", **options)
    _show_link_note(key, value)
    return value


def linked_multiselect(
    where, label: str, options, default: list, key: str, max_selections: int, format_func=str
):
    options = list(options)
    raws = _check_link(
        key,
        lambda raws: parse_choices(
            raws, options, default, max_selections, _labels(options, format_func)
        ),
    )
    label_of = kept_labels(options, format_func)
    value = where.multiselect(
        label,
        options,
        default=default,
        key=key,
        max_selections=max_selections,
        format_func=label_of,
        placeholder=t("app.choices_placeholder"),  # Streamlit's own is English only
        bind="query-params",
    )
    labels = [label_of(option) for option in value] if value != default else []
    _relink(key, raws, labels, "string_array_value")
    _show_link_note(key, value)
    return value


def linked_tabs(where, options, default, key: str, format_func, opened_by: dict | None = None):
    """Tabs of which only the open one is drawn: (its option, its container).

    Content under a closed tab is neither computed nor sent, so a keystroke redraws one
    tab, not all of them. Streamlit keeps the open tab's label, in the language it was
    shown in: a label of the other language (a shared link, a switch of language) is
    read as the same tab. `opened_by` maps an option to the keys of the controls inside
    its tab: a link that sets one of them, and names no tab, opens that tab."""
    options = list(options)
    shown = [format_func(option) for option in options]

    def label_named(raw: str):
        return parse_choice(raw, shown, format_func(default), _labels(options, format_func))

    raws = _check_link(key, lambda raws: label_named(raws[-1]))
    if key not in st.session_state:
        for option, keys in (opened_by or {}).items():
            if any(control in st.query_params for control in keys):
                st.session_state[key] = format_func(option)
                break
    kept = st.session_state.get(key)
    if kept is not None and kept not in shown:
        st.session_state[key] = label_named(kept)[0]
    tabs = where.tabs(shown, default=format_func(default), key=key, bind="query-params")
    index = next(i for i, tab in enumerate(tabs) if tab.open)
    _relink(
        key, raws and raws[-1:], [shown[index]] if options[index] != default else [], "string_value"
    )
    _show_link_note(key, shown[index])
    return options[index], tabs[index]


# Whether this run is in presenter mode: set by the frame before the page draws
# (components/frame.py, presenter_toggle).
PRESENTING_KEY = "_present_chosen"

# The sidebar's two format choices: the chart toolbar's camera saves the image in one, and
# the button under each chart downloads its numbers in the other. A button per data format
# under every chart cost ~0.6 ms of server work per chart on every keystroke (an element
# and its messages), ~7 ms a rerun on the masks lesson (docs/PERFORMANCE.md). Each key
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
    and it stays legible on a projector); it may quote the visitor's tokens, so it is
    written as literal text. `data` is only turned into files when a button is clicked.
    In presenter mode the chart is drawn for a projector (components/projector.py).
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
            st.caption(markdown_literal(summary), width="stretch")
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


def _first_time_under_spinner(done: threading.Event, message_key: str, load):
    """`load()` (a cached resource) under a spinner in the visitor's language the first
    time, while it takes seconds; every later call draws no spinner at all."""
    if done.is_set():
        return load()
    with st.spinner(t(message_key)):
        value = load()
    done.set()
    return value


# --- the attention lesson's models (models/serving/catalog.py, models/nets/hf_models.py) ---


@st.cache_data(ttl=60, show_spinner=False)
def model_choices() -> list:
    """The models the operator offers (read again at most once a minute: a model copied
    into the models folder appears without a restart)."""
    from models.serving.catalog import list_models

    return list_models()


@st.cache_resource(max_entries=4, show_spinner=False)
def load_attention_model(key: str):
    """One shared instance per model, only ever read (no hooks, nothing stored on it).
    `key` is one the catalogue listed; a refused model raises ModelRefused."""
    from models.nets.hf_models import AttentionModel
    from models.nets.pretrained import PretrainedEncoder
    from models.serving.catalog import SHIPPED_KEY, Settings, model_folder
    from models.serving.runtime import limit_threads, settle_heap_after_run

    limit_threads()
    if key == SHIPPED_KEY:
        model = PretrainedEncoder()
    else:
        choice = next(c for c in model_choices() if c.key == key)
        settings = Settings.from_env()
        model = AttentionModel(model_folder(choice, settings), settings.max_params)
    settle_heap_after_run()
    return model


def load_encoder():
    from models.serving.catalog import SHIPPED_KEY

    return load_attention_model(SHIPPED_KEY)


@st.cache_resource(show_spinner=False, max_entries=1)
def _cached_lineage() -> list:
    from models.analysis.lineage import measure_all
    from models.serving.runtime import limit_threads

    limit_threads()
    return measure_all()


_lineage_measured = threading.Event()


def lineage_measurements() -> list:
    """The home table's measurements (models/analysis/lineage.py): made once per server, about a
    second on two cores, then shared by every visitor."""
    return _first_time_under_spinner(_lineage_measured, "home.measuring", _cached_lineage)


@dataclass(frozen=True)
class EncoderRun:
    tokenized: object
    trace: dict[str, np.ndarray]
    special_positions: tuple[int, ...] = ()


# A key naming a trained checkpoint rather than a catalogue entry: `checkpoint:<stem>`. Only
# the page makes these, from a shipped name or the visitor's own folder (never from a link),
# so the stem, and with it every cache entry, is one visitor's own.
CHECKPOINT_KEY = "checkpoint:"


@st.cache_resource(max_entries=64, show_spinner=False)
def load_trained_attention(stem: str):
    """A trained Transformer read like the catalogue's models
    (models/analysis/trained_attention.py), around the shared checkpoint (loaded once): only
    ever read."""
    from models.analysis.trained_attention import TrainedAttention

    return TrainedAttention(load_checkpoint(stem))


def attention_model(key: str):
    """The attention lesson's model: a trained checkpoint (`checkpoint:<stem>`) or one the
    catalogue lists."""
    if key.startswith(CHECKPOINT_KEY):
        return load_trained_attention(key.removeprefix(CHECKPOINT_KEY))
    return load_attention_model(key)


# One flag per model: set once this process has loaded it (see attention_model_shown).
_models_loaded: dict[str, threading.Event] = {}


def attention_model_shown(key: str):
    """`attention_model(key)`, under a spinner only the first time, while it loads: a
    spinner starts a timer thread, ~0.7 ms of every rerun."""
    loaded = _models_loaded.setdefault(key, threading.Event())
    return _first_time_under_spinner(loaded, "heads.loading", partial(attention_model, key))


@st.cache_resource(show_spinner=False)
def _shipped_model_worker_slot():
    from models.serving.forward_worker import worker_wanted
    from models.serving.worker_slot import WorkerSlot

    return WorkerSlot(load_encoder().path) if worker_wanted() else None


def shipped_model_worker():
    """The shipped model's forward passes in a process of their own (started by
    leave_pass_ahead; models/serving/forward_worker.py), or None where the operator turned it off.
    A worker that has failed is replaced, a few times at most (models/serving/worker_slot.py)."""
    slot = _shipped_model_worker_slot()
    return None if slot is None else slot.worker()


def _worker_for(key: str):
    """The worker that runs `key`'s passes: the shipped model's, if it has one; else None."""
    from models.serving.catalog import SHIPPED_KEY

    return shipped_model_worker() if key == SHIPPED_KEY else None


def _traced(key: str, model, text: str):
    """(tokens, trace) of `text`. The shipped model's pass runs in its worker once that is
    ready: there it waits for no Python lock while other visitors' pages run, and a pass
    the frame asked for ahead (ask_pass_ahead) has run while the page was drawn. Else, or
    when the worker cannot answer, the pass runs here."""
    from models.nets.pretrained import attention_trace

    worker = _worker_for(key)
    if worker is None:
        tokenized, trace = model.tokenize(text), None
    else:
        tokenized, future = worker.take_ahead(text) or (model.tokenize(text), None)
        trace = worker.wait(future or worker.submit(tokenized))
    if trace is None:
        trace = attention_trace(model.run_with_cache(tokenized))
    return tokenized, trace


# Every visitor's attention runs together. One run holds each layer's patterns: MiniLM's
# are 4.5 MB at 128 tokens, 0.08 MB at 16, and a 12-layer, 12-head model's 9 MB. 192 MB
# keeps ~40 long MiniLM sentences (or ~2,500 short ones, up to the count) for every
# visitor, a fraction of the server's ~700 MB, whatever sentences and models are asked for.
ATTENTION_RUNS_BYTES = 192 * 2**20
ATTENTION_RUNS_COUNT = 128


@st.cache_resource(show_spinner=False)
def attention_runs():
    """The attention runs' cache (models/serving/byte_cache.py), one per process, shared."""
    from models.serving.byte_cache import ByteLRU

    return ByteLRU(ATTENTION_RUNS_BYTES, max_entries=ATTENTION_RUNS_COUNT)


def _attention_run(key: str, text: str) -> EncoderRun:
    model = attention_model(key)
    tokenized, trace = _traced(key, model, text)
    return EncoderRun(tokenized, trace, model.special_positions(tokenized))


def attention_run(key: str, text: str) -> EncoderRun:
    """`text` read by the model `key` names; its arrays are shared, so read-only."""
    return attention_runs().get_or_make((key, text), partial(_attention_run, key, text))


# What the attention page leaves for the frame's next runs: (page, model key, sentence).
AHEAD_KEY = "_attention_ahead"


def leave_pass_ahead(page: str, key: str, text: str) -> None:
    """The attention page, once it has its pass: the next run may start its pass ahead.

    The worker starts here, the first time: after a page has been drawn, so that its
    loading (a few seconds of the other core) never holds up a fresh server's first page.
    """
    st.session_state[AHEAD_KEY] = (page, key, text)
    worker = _worker_for(key)
    if worker is not None:
        worker.start()


def ask_pass_ahead() -> None:
    """The frame, first thing in a run: when this visitor's last page was the attention
    page with the shipped model and the sentence has changed since, the new sentence's
    pass starts in the worker now, while the frame and the page's controls are drawn
    (~10 ms of Python a run); attention_run collects it. A run cut short by the next key
    leaves the sentence it asked for, so the next run asks only for a newer one.
    """
    hint = st.session_state.get(AHEAD_KEY)
    worker = None if hint is None else _worker_for(hint[1])
    if worker is None:
        return
    sentence = current_sentence()
    if worker.ready and not sentence.is_empty and sentence.text != hint[2]:
        tokenized = attention_model(hint[1]).tokenize(sentence.text)
        worker.ask_ahead(sentence.text, tokenized, instead_of=hint[2])
        st.session_state[AHEAD_KEY] = (*hint[:2], sentence.text)


def keep_pass_ahead_for(page: str) -> None:
    """The frame, once it knows the page: a hint another page left goes, so that typing
    on other lessons starts no passes nobody collects."""
    hint = st.session_state.get(AHEAD_KEY)
    if hint is not None and hint[0] != page:
        del st.session_state[AHEAD_KEY]


@st.cache_data(max_entries=128, show_spinner=False)
def ablation_run(key: str, text: str, heads: tuple[tuple[int, int], ...]):
    from models.analysis.ablation import ablate

    model = attention_model(key)
    return ablate(model, model.tokenize(text), heads)


def every_head_run(key: str, text: str) -> np.ndarray:
    """Every head switched off alone in turn (models/analysis/ablation.py): seconds of work, done
    in the heavy-work pool under a deadline (models/serving/runtime.py heavy_work), never in a
    page slot, not even while waiting for another session computing the same grid.
    Raises `Unfinished` (nothing cached) when the deadline passed or a newer run began."""
    from models.serving.runtime import page_slot_set_aside

    with page_slot_set_aside():
        return _every_head_measured(key, text)


@st.cache_data(max_entries=64, show_spinner=False)
def _every_head_measured(key: str, text: str) -> np.ndarray:
    from models.analysis.ablation import every_head_effect
    from models.serving.runtime import heavy_work

    model = attention_model(key)
    tokenized = model.tokenize(text)
    with heavy_work() as go_on:
        return every_head_effect(model, tokenized, go_on=go_on)


# --- SeqLens's own small models (models/nets/tokenizer.py, models/nets/transformer.py) ---


@st.cache_resource(show_spinner=False)
def load_tokenizer():
    from models.nets.tokenizer import Tokenizer

    return Tokenizer()


@st.cache_resource(show_spinner=False)
def load_transformer(positional: str = "sinusoidal", causal: bool = False, seed: int = 0):
    """One frozen random Transformer per (encoding, direction, seed), shared by every session:
    only ever read (no hooks, nothing stored on it)."""
    from models.nets.transformer import Transformer, TransformerConfig
    from models.serving.runtime import limit_threads, settle_heap_after_run

    limit_threads()
    cfg = TransformerConfig(
        d_vocab=load_tokenizer().vocab_size, positional=positional, causal=causal
    )
    model = Transformer(cfg, seed=seed)
    settle_heap_after_run()
    return model


# --- the recurrent lesson's models (models/nets/recurrent.py) ---


@st.cache_resource(max_entries=48, show_spinner=False)
def load_recurrent(
    cell: str,
    num_inputs: int,
    num_hiddens: int,
    activation: str = "tanh",
    init: str = "random",
    radius: float = 1.0,
    forget_bias: float = 1.0,
    seed: int = 0,
):
    """One frozen RNN, LSTM or GRU per (config, seed), shared by every session: only ever read
    (no hooks, nothing stored on it, gradients only with respect to per-request tensors)."""
    from models.nets.recurrent import Recurrent, RecurrentConfig
    from models.serving.runtime import limit_threads

    limit_threads()
    cfg = RecurrentConfig(
        cell=cell,
        num_inputs=num_inputs,
        num_hiddens=num_hiddens,
        activation=activation,
        init=init,
        radius=radius,
        forget_bias=forget_bias,
    )
    return Recurrent(cfg, seed=seed)


# --- trained models: shipped checkpoints, visitors' own, the training queue ---


@st.cache_resource(max_entries=64, show_spinner=False)
def load_checkpoint(stem: str):
    """A shipped or saved checkpoint, frozen and shared (only ever read)."""
    from models.serving.runtime import limit_threads
    from models.training import checkpoints

    limit_threads()
    return checkpoints.load(stem)


def trained_stem(name: str) -> str:
    """Where the trained model `name` is kept: with the shipped checkpoints, or in this
    visitor's own folder (a visitor's model names never clash with the shipped ones)."""
    from models.analysis import trained_sources as ts
    from models.training.train import CHECKPOINT_DIR

    if name in (*ts.SHIPPED_TRANSFORMERS, ts.SHIPPED_ENCODER_DECODER):
        return str(CHECKPOINT_DIR / name)
    return str(load_visitor_store().folder(visitor_id()) / name)


def about_trained(checkpoint, key_prefix: str) -> str:
    """Which trained weights are shown, in the string `<key_prefix>.<task>`: the task, the
    size and the result measured when training ended (the checkpoint's metrics)."""
    task, spec = checkpoint.task, checkpoint.config.get("model", {})
    metrics = checkpoint.metrics
    return t(
        f"{key_prefix}.{task.get('name')}",
        n_layers=spec.get("n_layers"),
        n_heads=spec.get("n_heads"),
        d_model=spec.get("d_model"),
        steps=checkpoint.config.get("training", {}).get("steps", "?"),
        accuracy=metrics.get("accuracy", float("nan")),
        loss=metrics.get("loss", float("nan")),
        lag=task.get("lag", "?"),
        shortest=task.get("min_repeat", "?"),
        longest=task.get("max_repeat", "?"),
    )


@st.cache_data(max_entries=8, show_spinner=False)
def induction_roles(stem: str) -> dict:
    """A trained induction model's strongest induction head and the strongest
    previous-token head in a layer before it, measured on held-out sequences
    (models/analysis/probes.py): `(layer, head, score)` each."""
    from models.analysis.probes import circuit, head_scores
    from models.training.tasks import task_from_config

    checkpoint = load_checkpoint(stem)
    return circuit(head_scores(checkpoint.model, task_from_config(checkpoint.task)))


def induction_roles_text(roles: dict, key: str) -> str:
    """The string `key` naming the measured induction and previous-token heads and scores."""
    (i_layer, i_head, i_score), (p_layer, p_head, p_score) = (
        roles["induction"],
        roles["previous_token"],
    )
    return t(
        key,
        i_layer=i_layer,
        i_head=i_head,
        i_score=i_score,
        p_layer=p_layer,
        p_head=p_head,
        p_score=p_score,
    )


@st.cache_resource(show_spinner=False)
def load_visitor_store():
    from models.serving.visitor_store import VisitorStore

    store = VisitorStore()
    store.prune()
    return store


@st.cache_resource(show_spinner=False)
def load_job_manager():
    """One queue for the whole server: at most MAX_RUNNING training runs at once. Its state
    folder, where `python -m models.training.jobs clear` leaves its request, is the visitor
    store's."""
    import logging

    from models.training.jobs import MAX_RUNNING, JobManager

    store = load_visitor_store()
    # The operator's log shows every refused, dropped, stopped and cleared run.
    log = logging.getLogger("seqlens.jobs")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)

    def save(job) -> None:
        import time

        store.prune()
        task = job.trainers and next(iter(job.trainers.values())).task
        stamp = time.strftime("%H%M%S")  # one for the run: its models' names go together
        for kind, trainer in job.trainers.items():
            store.save(
                job.requester.visitor,
                f"{task.key()}-{kind}",
                trainer.model,
                stamp=stamp,
                task=task.config(),
                training=trainer.metadata(job.finished - job.started),
                metrics=job.results.get(kind, {}),
            )

    return JobManager(max_running=MAX_RUNNING, on_finish=save, state_dir=store.root)
