"""The cached runs of the parts "The same output, two ways" and "Attention without softmax"
of the lesson "Recurrence returns" (Streamlit glue): linear attention, retention and the
selective SSM on the first block's inputs of the visitor's sentence, and their costs."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import streamlit as st
import torch

from components.ui.runs import recurrence as runs
from models.analysis import recurrence_cost
from models.nets.linear_attention import linear_attention_parallel, linear_attention_recurrent
from models.nets.retention import (
    decay_mask,
    default_gammas,
    retention_chunkwise,
    retention_parallel,
    retention_recurrent,
)
from models.nets.selective_ssm import SelectiveSSM, SSMConfig
from models.serving.runtime import heavy_work, limit_threads, page_slot_set_aside


@st.cache_resource(show_spinner=False)
def load_ssm() -> SelectiveSSM:
    """The lesson's frozen random selective SSM layer, shared by every session and only
    ever read: it reads the same 64-dimensional input X the Transformer's first block does."""
    limit_threads()
    return SelectiveSSM(SSMConfig(d_model=64), seed=0)


@cache
def retnet_gammas() -> tuple[float, ...]:
    """RetNet's decay per head for the lesson Transformer's heads, 1 − 2^(−5−h)."""
    return tuple(float(g) for g in default_gammas(runs.lesson_transformer().cfg.n_heads))


def _block_inputs(ids: tuple[int, ...]) -> dict[str, torch.Tensor]:
    """The first block's q, k, v `[head, pos, d_head]` and X `[pos, d_model]` as float32
    tensors of their own (the cached arrays are read-only and shared)."""
    first = runs.first_block(ids)
    return {name: torch.tensor(np.array(first[name])) for name in ("q", "k", "v", "X")}


def _max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max())


@st.cache_data(max_entries=64, show_spinner=False)
def two_ways(ids: tuple[int, ...], chunk: int) -> dict:
    """Every model's output on `ids` by each of its forms, float32 as computed: linear
    attention and retention `[head, pos, d_head]` (retention also chunkwise, `chunk` tokens
    to a chunk), the SSM `[pos, d_model]`; the largest |difference| of each form from the
    parallel one; and the floats of the state tensors each carried after the last token."""
    x = _block_inputs(ids)
    q, k, v = x["q"], x["k"], x["v"]
    gammas = torch.tensor(retnet_gammas(), dtype=q.dtype)
    ssm = load_ssm()
    with torch.no_grad():
        _, la_parallel = linear_attention_parallel(q, k, v)
        la_recurrent, la_state, la_norm = linear_attention_recurrent(q, k, v)
        _, ret_parallel = retention_parallel(q, k, v, gammas)
        ret_recurrent, ret_state = retention_recurrent(q, k, v, gammas)
        ret_chunkwise = retention_chunkwise(q, k, v, gammas, chunk)
        ssm_parallel, _ = ssm.run_with_cache(x["X"], mode="parallel")
        ssm_sequential, ssm_trace = ssm.run_with_cache(x["X"], mode="sequential")
    measured = recurrence_cost.measured_state_floats(
        la_state, la_norm, ret_state, torch.from_numpy(ssm_trace["ssm_h"]), k, v
    )
    outputs = dict(
        la_parallel=la_parallel,
        la_recurrent=la_recurrent,
        ret_parallel=ret_parallel,
        ret_recurrent=ret_recurrent,
        ret_chunkwise=ret_chunkwise,
        ssm_parallel=ssm_parallel,
        ssm_sequential=ssm_sequential,
    )
    differences = dict(
        la=_max_difference(la_parallel, la_recurrent),
        ret=_max_difference(ret_parallel, ret_recurrent),
        ret_chunk=_max_difference(ret_parallel, ret_chunkwise),
        ssm=_max_difference(ssm_parallel, ssm_sequential),
    )
    return {
        "outputs": {name: value.numpy() for name, value in outputs.items()},
        "differences": differences,
        "state_floats": measured,
        "dtype": str(q.dtype).removeprefix("torch."),
        "ssm": dict(d_inner=ssm.cfg.d_inner, d_state=ssm.cfg.d_state),
    }


# The timings take well under a second each; they are measured once per length and server
# (the time does not depend on the words) in the heavy-work pool, alone, holding no page
# slot (models/serving/runtime.py heavy_work), as the masks lesson's cost lab is.


def per_token_times(length: int) -> dict[str, float]:
    with page_slot_set_aside():
        return _per_token_times(length)


@st.cache_data(max_entries=48, show_spinner=False)
def _per_token_times(length: int) -> dict[str, float]:
    cfg = runs.lesson_transformer().cfg
    with heavy_work(deadline_s=math.inf):  # timings cut short mean nothing
        return recurrence_cost.per_token_times(length, cfg.n_heads, cfg.d_head, load_ssm().cfg)


@st.cache_data(max_entries=64, show_spinner=False)
def linear_patterns(ids: tuple[int, ...]) -> np.ndarray:
    """Linear attention's implicit pattern `[head, query, key]` on the first block's q, k."""
    x = _block_inputs(ids)
    with torch.no_grad():
        pattern, _ = linear_attention_parallel(x["q"], x["k"], x["v"])
    return pattern.numpy()


@st.cache_data(max_entries=256, show_spinner=False)
def retention_pattern(ids: tuple[int, ...], head: int, gamma: float) -> dict[str, np.ndarray]:
    """Retention's pattern (q kᵀ) ⊙ D `[query, key]` for one head at decay `gamma`, and the
    decay mask D itself."""
    x = _block_inputs(ids)
    one = slice(head, head + 1)
    gammas = torch.tensor([gamma], dtype=x["q"].dtype)
    with torch.no_grad():
        pattern, _ = retention_parallel(x["q"][one], x["k"][one], x["v"][one], gammas)
        mask = decay_mask(len(ids), gammas)
    return {"pattern": pattern[0].numpy(), "decay": mask[0].numpy()}
