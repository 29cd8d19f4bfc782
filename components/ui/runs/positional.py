"""The positional-encoding lesson's models and cached runs (models/analysis/positional.py,
models/analysis/trained_sources.py).

They live here, not in pages/positional.py: a page runs again on every rerun, and a
`st.cache_data` decorator run again re-reads its function's source to key the cache
(~0.25 ms for a few lines, ~0.5 ms for twenty); in a module they are made once per process.
Cached functions are called with keyword arguments: a positional one costs Streamlit a look
at the signature to name it.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.ui.runs.shared import load_checkpoint, load_tokenizer, load_transformer
from models.analysis import positional as pe
from models.analysis import trained_sources as ts

ORDER_PAIRS = (("dog bites man", "man bites dog"), ("我爱你", "你爱我"))


def transformers() -> dict:
    """The lesson's random Transformer for every scheme (shared, only ever read)."""
    return {scheme: load_transformer(scheme) for scheme in pe.SCHEMES}


def learned_table(n_pos: int) -> np.ndarray:
    """The first `n_pos` rows of the random learned Transformer's position table."""
    return load_transformer("learned").W_pos[:n_pos].numpy().astype(np.float64)


@st.cache_data(max_entries=64, show_spinner=False)
def order_effects(ids: tuple[int, ...], order: str, seed: int) -> dict:
    return pe.order_effects(transformers(), ids, order, seed)


@st.cache_data(show_spinner=False)
def pair_distances() -> list[tuple[str, str, float]]:
    return pe.pair_distances(transformers(), load_tokenizer(), ORDER_PAIRS)


@st.cache_data(max_entries=16, show_spinner=False)
def training_views(stem: str) -> dict:
    """What the lesson shows of the trained model `stem` names, before ("before": as built,
    ts.untrained) and after training: each head's attention from position alone, its mean
    weight by offset, and the mean cosine of neighbouring positions. It reads no sentence."""
    trained = load_checkpoint(stem).model
    views = {}
    for when, model in (("before", ts.untrained(trained)), ("after", trained)):
        pattern = ts.positional_attention(model.core)
        views[when] = {
            "pattern": pattern,
            "by_offset": ts.weight_by_offset(pattern),
            "near": float(ts.cosine_by_offset(ts.position_cosines(model.core.W_pos.numpy()))[1]),
        }
    return views
