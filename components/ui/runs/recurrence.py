"""The cached runs of the lesson "Recurrence returns" (Streamlit glue)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.ui.runs.shared import load_transformer

# The block whose queries, keys and values every pattern on the page compares.
BLOCK = "blocks.0"


def lesson_transformer():
    """The lesson's random causal Transformer, shared and only ever read."""
    return load_transformer("sinusoidal", causal=True)


@st.cache_data(max_entries=256, show_spinner=False)
def first_block(ids: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The first block's input, its q, k, v and its softmax pattern on `ids` (non-empty):
    the inputs of every model here, and the pattern the others are compared with."""
    _, cache = lesson_transformer().run_with_cache(list(ids))
    return {
        "X": cache[f"{BLOCK}.hook_resid_pre"],
        "q": cache[f"{BLOCK}.attn.hook_q"],
        "k": cache[f"{BLOCK}.attn.hook_k"],
        "v": cache[f"{BLOCK}.attn.hook_v"],
        "softmax_pattern": cache[f"{BLOCK}.attn.hook_pattern"],
    }
