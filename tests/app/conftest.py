"""Helpers to drive lessons through Streamlit's AppTest, the way a visitor arrives."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from components.lessons import LESSONS

ROOT = Path(__file__).resolve().parents[2]
# The first run loads the pretrained model; later runs reuse the process-wide cache.
APP_TIMEOUT = 180


def open_lesson(url_path: str, sentence: str | None = None, **query: str) -> AppTest:
    """Open the app with query parameters, then go to the lesson, as a shared link does."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    if sentence is not None:
        at.query_params["sentence"] = sentence
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    lesson = next(lesson for lesson in LESSONS if lesson.url_path == url_path)
    at.switch_page(lesson.file).run()
    return at


def open_home(**query: str) -> AppTest:
    """The app's home page, opened from a link with these query parameters."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def chart_specs(at: AppTest) -> list[dict]:
    """Every plotly chart on the page, as the figure dict the browser receives."""
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def texts(at: AppTest) -> list[str]:
    return [el.value for el in at.text]


def messages(at: AppTest) -> list[str]:
    return [el.value for kind in ("info", "warning", "error") for el in getattr(at, kind)]


@pytest.fixture(scope="session", autouse=True)
def background_work_ends_with_the_session():
    """What the app started in this process (training threads, the forward worker's child)
    ends with the session, as at a server's end: nothing is left inside torch at exit."""
    yield
    import streamlit as st

    st.cache_resource.clear()


@pytest.fixture(params=[lesson.url_path for lesson in LESSONS])
def lesson_path(request) -> str:
    return request.param


# Links that open a lesson's other tabs (only the open tab is drawn), for the tests that
# look at every chart a lesson sends.
OTHER_TABS = {
    "training": [{"tr_part": part} for part in ("lag", "heads", "yours")],
    "heads": [{"ablate": "L3 H1"}, {"view": "rollout"}],
    "masks": [{"mask_part": part} for part in ("scale", "kv", "cost")],
    "positional": [{"pe_view": view} for view in ("sinusoidal", "rope", "trained")],
    "recurrent": [{"rc_part": part} for part in ("theory", "clipping", "units", "gates")],
    "recurrence": [{"rr_part": part} for part in ("patterns", "selective", "flow", "trained")],
}


def every_tab(lesson_path: str, sentence: str, **query) -> list[AppTest]:
    """The lesson opened on its first tab, then on each other tab it has, by a link."""
    views = [{}, *OTHER_TABS.get(lesson_path, [])]
    return [open_lesson(lesson_path, sentence, **query, **view) for view in views]


def grid_specs(at: AppTest) -> list[dict]:
    """Every grid chart (components/grid.py) on the page, as the spec the browser receives."""
    return [
        json.loads(el.proto.bytes)
        for el in at.get("bidi_component")
        if el.proto.component_name == "seqlens_grid"
    ]


def every_chart(at: AppTest) -> list[dict]:
    """Plotly figures and grid charts, as the browser receives them."""
    return chart_specs(at) + grid_specs(at)


def chart_keys(at: AppTest) -> set[str]:
    """The keys of every chart on the page, plotly or grid."""
    grids = [el for el in at.get("bidi_component") if el.proto.component_name == "seqlens_grid"]
    return {el.proto.id.rsplit("-", 1)[-1] for el in [*at.get("plotly_chart"), *grids]}


def chart(at: AppTest, key: str) -> dict:
    """The chart drawn with `key` (its element id ends with the key): a plotly figure, or
    a grid chart's spec."""
    for el in at.get("plotly_chart"):
        if el.proto.id.endswith(f"-{key}"):
            return json.loads(el.proto.spec)
    for el in at.get("bidi_component"):
        if el.proto.component_name == "seqlens_grid" and el.proto.id.endswith(f"-{key}"):
            return json.loads(el.proto.bytes)
    raise AssertionError(f"no chart with key {key!r}")


def grid_values(spec: dict, panel: int = 0) -> np.ndarray:
    """A grid chart panel's cell values, rows × columns (sent as float32 bytes)."""
    drawn = spec["panels"][panel]
    values = np.frombuffer(base64.b64decode(drawn["z"]), dtype="<f4")
    return values.reshape(drawn["rows"], drawn["cols"]).astype(float)


def grid_columns(spec: dict, panel: int = 0) -> list[str]:
    return spec["panels"][panel]["columns"]


def plotly_array(value) -> np.ndarray:
    """A plotly array as sent to the browser: a list, or base64 `bdata` with a dtype."""
    if isinstance(value, dict) and "bdata" in value:
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        if "shape" in value:
            shape = value["shape"]
            shape = [int(n) for n in shape.split(",")] if isinstance(shape, str) else shape
            data = data.reshape(shape)
        return data
    return np.asarray(value, dtype=np.float64)


def heatmap_grid(z) -> np.ndarray:
    """A heatmap's z as sent (binary, or lists with None for an empty cell, as NaN)."""
    if isinstance(z, dict):
        return plotly_array(z).astype(float)
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)


def save_shipped(store, visitor: str, name: str, stamp: str = "", as_name: str = "") -> str:
    """Save the shipped checkpoint `name` among `visitor`'s models (under `as_name` if
    given), as the training lab saves a run; returns the name it was saved under."""
    from models.training import checkpoints
    from models.training.train import CHECKPOINT_DIR

    saved = checkpoints.load(CHECKPOINT_DIR / name)
    return store.save(
        visitor, as_name or name, saved.model, stamp, task=saved.task, metrics=saved.metrics
    ).name


def one_time_link(store, visitor: str) -> str:
    """What `?visitor=` carries in a link the training page gives: a token for `visitor`'s
    key that the first session to open it uses up."""
    return store.mint_link(visitor)


def link_token(code: str) -> str:
    """The one-time token in a link the page shows."""
    from urllib.parse import parse_qs, urlparse

    return parse_qs(urlparse(code).query)["visitor"][0]


def forget_visitor(store, visitor: str) -> None:
    """Delete every model saved for `visitor`."""
    for model in store.list(visitor):
        store._delete(model.stem)


def data_cache_bytes(function_name: str) -> int:
    """What Streamlit's data caches hold for `function_name`, as its own stats count it."""
    from streamlit.runtime.caching import get_data_cache_stats_provider

    stats = get_data_cache_stats_provider().get_stats()
    return sum(
        stat.byte_length
        for family in stats.values()
        for stat in family
        if stat.cache_name.endswith(function_name)
    )


def record_first_arguments(monkeypatch, owner, name: str) -> list:
    """Wrap `owner.<name>` so that each call's first argument is recorded, in order, in the
    list returned; the calls still go through."""
    recorded: list = []
    real = getattr(owner, name)

    def recording(first, *args, **kwargs):
        recorded.append(first)
        return real(first, *args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    return recorded


@pytest.fixture
def operator_models_folder(models_dir, monkeypatch):
    """The server's operator points SEQLENS_MODELS_DIR at the test module's `models_dir`
    (and offers no Hugging Face cache); the model list is read afresh around the test."""
    from components.ui.runs.heads import model_choices

    monkeypatch.setenv("SEQLENS_MODELS_DIR", str(models_dir))
    monkeypatch.setenv("SEQLENS_USE_HF_CACHE", "0")
    model_choices.clear()
    yield
    model_choices.clear()
