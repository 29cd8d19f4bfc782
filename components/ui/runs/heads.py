"""The attention lesson's models and cached runs (models/serving/catalog.py,
models/nets/hf_models.py)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial

import numpy as np
import streamlit as st

from components.ui.runs.shared import first_time_under_spinner, load_checkpoint

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
    return first_time_under_spinner(loaded, "heads.loading", partial(attention_model, key))


def _close_worker_slot(slot) -> None:
    if slot is not None:
        slot.close()


# Released when the cache is cleared (a test session's end): the child process stops.
@st.cache_resource(show_spinner=False, on_release=_close_worker_slot)
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


def worker_for(key: str):
    """The worker that runs `key`'s passes: the shipped model's, if it has one; else None."""
    from models.serving.catalog import SHIPPED_KEY

    return shipped_model_worker() if key == SHIPPED_KEY else None


def _traced(key: str, model, text: str):
    """(tokens, trace) of `text`. The shipped model's pass runs in its worker once that is
    ready: there it waits for no Python lock while other visitors' pages run, and a pass
    the frame asked for ahead (ask_pass_ahead) has run while the page was drawn. Else, or
    when the worker cannot answer, the pass runs here."""
    from models.nets.pretrained import attention_trace

    worker = worker_for(key)
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
