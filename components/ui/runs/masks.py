"""The masks lesson's cached runs and measurements (Streamlit glue).

They live here, not in pages/masks.py: a page runs again on every rerun, and a
`st.cache_data` decorator run again re-reads its function's source to key the cache
(~0.6 ms each); in a module they are made once per process.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np
import streamlit as st

from components.masks_steps import StepCase, StepCharts, StepMeasures, build_step_charts
from components.ui.runs.shared import load_checkpoint, load_tokenizer, load_transformer
from components.ui.sentence import DEFAULT_SENTENCE
from models.analysis import cost, kv_cache, masks, scaling
from models.analysis import trained_sources as ts
from models.serving.runtime import heavy_work, page_slot_set_aside


def trained_read(task: dict, text: str, limit: int, index: int = 0) -> ts.Reading:
    """`ts.read`: what a model trained on `task` reads. A model of a token task reads its
    task's own held-out sequence, the same for every sentence: made once per process."""
    own = _task_reading(json.dumps(task, sort_keys=True), limit, index)
    return ts.read(task, text, limit, index) if own.from_sentence else own


@lru_cache(maxsize=32)
def _task_reading(task_json: str, limit: int, index: int) -> ts.Reading:
    """Shared by every session: callers only read it."""
    return ts.read(json.loads(task_json), "", limit, index)


# The KV cache's time per step is measured on this text, the same for every visitor.
TIMING_TEXT = DEFAULT_SENTENCE


@st.cache_resource(show_spinner=False)
def load_encoder_decoder():
    """A random encoder–decoder (same sizes as the encoder), shared by every session and
    only ever read."""
    from models.nets.transformer import EncoderDecoder

    return EncoderDecoder(load_transformer("sinusoidal").cfg, seed=0)


@st.cache_resource(max_entries=16, show_spinner=False)
def load_unmasked(stem: str):
    """A trained Transformer that applies only the lesson's mask, shared and read-only."""
    return ts.without_causal_mask(load_checkpoint(stem).model.core)


def step_model(stem: str):
    """The model the step-by-step section runs: `stem` names a trained checkpoint, or is
    empty for the lesson's random Transformer."""
    return load_unmasked(stem) if stem else load_transformer("sinusoidal")


# The lesson's traces of every visitor together. The largest: a 40-token step-by-step
# trace is 0.3 MB (0.8 MB with cross-attention), a 384 + 64-token generation 3.3 MB; by
# count alone (64, 64 and 16 entries) they could hold ~125 MB. 48 MB keeps ~15 of the
# largest generations, or ~150 step-by-step traces.
TRACES_BYTES = 48 * 2**20
TRACES_COUNT = 144


@st.cache_resource(show_spinner=False)
def traces():
    """The step-by-step, cross-attention and generation runs (models/serving/byte_cache.py)."""
    from models.serving.byte_cache import ByteLRU

    return ByteLRU(TRACES_BYTES, max_entries=TRACES_COUNT)


def masked_run(stem: str, ids: tuple[int, ...], allowed: np.ndarray) -> dict:
    """The trace of `ids` under `allowed` (a shared entry: its arrays are read-only)."""
    key = ("masked", stem, ids, allowed.shape, np.asarray(allowed, dtype=bool).tobytes())
    return traces().get_or_make(
        key, lambda: masks.run_masked(step_model(stem), list(ids), allowed)[1]
    )


def _cross_run(stem: str, source: tuple[int, ...], target: tuple[int, ...]) -> dict:
    model = load_checkpoint(stem).model.core if stem else load_encoder_decoder()
    return masks.run_cross(model, list(source), list(target))[1]


def cross_run(stem: str, source: tuple[int, ...], target: tuple[int, ...]) -> dict:
    key = ("cross", stem, source, target)
    return traces().get_or_make(key, lambda: _cross_run(stem, source, target))


def step_trace(case: StepCase) -> dict:
    """The trace the step-by-step section draws (a shared entry: its arrays are read-only)."""
    if case.cross:
        return cross_run(case.stem, case.source, case.ids)
    return masked_run(case.stem, case.ids, case.allowed_matrix())


@lru_cache(maxsize=16)
def step_charts(case: StepCase, head: int, d_head: int, d_model: int, language: str) -> StepCharts:
    """The ten heatmaps of `head`'s attention in `case`, their lines and the checks: built
    once per (run, head, language) in a process and shared by every session
    (components/masks_steps.py)."""
    trace = step_trace(case)
    steps = masks.head_steps(trace, case.name, head, trace[case.query_input])
    allowed = np.isfinite(steps["hook_attn_scores"])
    empty_rows = masks.fully_masked_rows(allowed)
    uniform = (
        float(masks.masked_row_softmax(allowed.shape[-1], masks.LARGE_NEGATIVE).max())
        if empty_rows.size
        else None
    )
    measures = StepMeasures(empty_rows, masks.fused_difference(steps, allowed), uniform)
    return build_step_charts(case, steps, masks.STEPS, measures, d_head, d_model, language)


@st.cache_data(max_entries=64, show_spinner=False)
def leakage_by_mask(ids: tuple[int, ...], position: int, new_id: int) -> dict[str, np.ndarray]:
    kinds = ("causal", "none")
    changes = masks.leakages(
        load_transformer("sinusoidal"),
        list(ids),
        position,
        new_id,
        [masks.allowed_mask(kind, len(ids)) for kind in kinds],
    )
    return dict(zip(kinds, changes, strict=True))


# The measurements below take ~1-5 s each (step_timings at 384 + 64 tokens 5 s, the
# softmax's sharpness at 64 keys 2 s, here), each new slider value anew: they run in the
# heavy-work pool, one at a time, holding no page slot (models/serving/runtime.py heavy_work);
# those a slider keys hold none either while another session measures the same value.
# Each runs to its end (timings cut short mean nothing); a session's older run still
# waiting for its turn gives way to its newer one.


@st.cache_data(show_spinner=False)
def variance_lab() -> dict[str, np.ndarray]:
    """Once per server (no slider): only that first time may a page wait for it."""
    with heavy_work(deadline_s=math.inf):
        return scaling.dot_product_variance()


def sharpness_lab(n_keys: int) -> dict[str, np.ndarray]:
    with page_slot_set_aside():
        return _sharpness_lab(n_keys)


@st.cache_data(max_entries=16, show_spinner=False)
def _sharpness_lab(n_keys: int) -> dict[str, np.ndarray]:
    with heavy_work(deadline_s=math.inf):
        return scaling.softmax_sharpness(n_keys=n_keys)


@st.cache_resource(show_spinner=False)
def load_lm_head():
    return kv_cache.lm_head(load_transformer("sinusoidal", causal=True).cfg)


def _generation(prompt: tuple[int, ...], n_new: int) -> kv_cache.Generation:
    model = load_transformer("sinusoidal", causal=True)
    return kv_cache.generate(model, load_lm_head(), list(prompt), n_new)


def generation(prompt: tuple[int, ...], n_new: int) -> kv_cache.Generation:
    return traces().get_or_make(("generation", prompt, n_new), lambda: _generation(prompt, n_new))


def step_timings(context: int, n_new: int) -> tuple[np.ndarray, np.ndarray]:
    """Timed once per (length, steps) for everyone: the time does not depend on the words."""
    with page_slot_set_aside():
        return _step_timings(context, n_new)


@st.cache_data(max_entries=32, show_spinner=False)
def _step_timings(context: int, n_new: int) -> tuple[np.ndarray, np.ndarray]:
    prompt = load_tokenizer().encode(TIMING_TEXT).ids
    prompt = list(prompt * (context // len(prompt) + 1))[:context]
    model = load_transformer("sinusoidal", causal=True)
    with heavy_work(deadline_s=math.inf):  # timed alone, too: no other heavy work beside it
        return kv_cache.step_times(model, load_lm_head(), prompt, n_new)


@st.cache_data(show_spinner=False)
def cost_lab() -> dict[str, np.ndarray]:
    """Once per server, as variance_lab."""
    with heavy_work(deadline_s=math.inf):
        return cost.measure()
