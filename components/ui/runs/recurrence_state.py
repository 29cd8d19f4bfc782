"""The cached runs of the parts "The selective state" and "Gradient flow through time" of the
lesson "Recurrence returns" (Streamlit glue): the selective SSM and its time-invariant twin on
the first block's inputs of the visitor's sentence, with Δ scaled, and the gradient flow of
every model of the lesson on the same inputs.

Cached functions are called with keyword arguments (a positional one costs Streamlit a look at
the signature) and keyed on plain values: the token ids and the Δ factor.
"""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from components.ui.runs import recurrence as runs
from components.ui.runs.shared import load_recurrent
from models.analysis import gradient_flow as gf
from models.analysis import recurrence_flow as rf
from models.nets.linear_attention import LinearAttentionConfig, LinearAttentionLayer
from models.nets.selective_ssm import SelectiveSSM, SSMConfig
from models.serving.runtime import limit_threads

# The recurrent lesson's models as its first view builds them (components/ui/parts/recurrent/
# controls.py defaults, checked by gf.clean_settings): tanh RNN, random recurrent matrices of
# largest singular value 1, 64 hidden units, LSTM forget bias 1.
RECURRENT_SETTINGS = gf.clean_settings()[0]
CELLS = {"RNN": "rnn", "LSTM": "lstm", "GRU": "gru"}
SSM = "ssm"
LINEAR_ATTENTION = "linear_attention"
TRANSFORMER = "Transformer"


@st.cache_resource(show_spinner=False)
def load_ssm() -> SelectiveSSM:
    """The lesson's frozen random selective SSM layer, shared by every session and only
    ever read: it reads the same 64-dimensional input X the Transformer's first block does."""
    limit_threads()
    return SelectiveSSM(SSMConfig(d_model=64), seed=0)


@st.cache_resource(show_spinner=False)
def load_time_invariant_ssm() -> SelectiveSSM:
    """The same layer without selection (Δ, B, C constants; the weights the two kinds share
    are the same numbers for one seed), shared and only ever read."""
    limit_threads()
    return SelectiveSSM(SSMConfig(d_model=64, selective=False), seed=0)


@st.cache_resource(show_spinner=False)
def load_linear_attention() -> LinearAttentionLayer:
    """The lesson's frozen random linear-attention layer, shared and only ever read."""
    limit_threads()
    return LinearAttentionLayer(LinearAttentionConfig(), seed=0)


def _inputs(ids: tuple[int, ...]) -> torch.Tensor:
    """The first block's input X `[pos, d_model]` as a float32 tensor of its own (the cached
    array is read-only and shared)."""
    return torch.tensor(np.array(runs.first_block(ids)["X"]))


def _state_of(layer: SelectiveSSM, X: torch.Tensor, delta_scale: float) -> dict[str, np.ndarray]:
    trace = rf.ssm_trace(layer, X, delta_scale)
    return {
        "delta": trace["ssm_delta"],
        "kept": trace["ssm_decay"],
        "h_norm": rf.state_norms(trace["ssm_h"]),
    }


@st.cache_data(max_entries=128, show_spinner=False)
def selective_state(ids: tuple[int, ...], delta_scale: float) -> dict[str, dict]:
    """Both layers on `ids` with every Δ multiplied by `delta_scale` (the layer's own weights
    and selective_scan_sequential, models/analysis/recurrence_flow.py ssm_forward): Δ and the
    kept fraction exp(Δ A) (mean over states) `[pos, d_inner]`, ‖h_t‖ `[pos]`, float32."""
    X = _inputs(ids)
    return {
        "selective": _state_of(load_ssm(), X, delta_scale),
        "lti": _state_of(load_time_invariant_ssm(), X, delta_scale),
    }


def _recurrent(cell: str, d_in: int):
    s = RECURRENT_SETTINGS
    return load_recurrent(
        cell=cell,
        num_inputs=d_in,
        num_hiddens=s.num_hiddens,
        activation=s.activation if cell == "rnn" else "tanh",
        init=s.init,
        radius=s.radius,
        forget_bias=s.forget_bias if cell == "lstm" else 1.0,
    )


def _kept(result: dict) -> dict:
    return {"grad_X": result["grad_X"], "loss": result["loss"]}


@st.cache_data(max_entries=64, show_spinner=False)
def flows(ids: tuple[int, ...], delta_scale: float) -> dict[str, dict]:
    """Every model's ‖∂L/∂X_t‖ `[pos]` and loss, L = u · output_τ at the last token, on the
    same inputs X (the first block's input of `ids`); the SSM's with Δ × `delta_scale`, and
    its `kept [pos]` (how much of each token's state reaches the last one)."""
    X = _inputs(ids)
    tau = X.shape[0] - 1
    out = {
        name: _kept(gf.recurrent_gradient_flow(_recurrent(cell, X.shape[1]), X, tau))
        for name, cell in CELLS.items()
    }
    transformer = runs.lesson_transformer()
    # The Transformer adds its positions to what it reads: fed its token vectors W_E[ids], its
    # first block reads X itself, and ∂L/∂(W_E[ids] + P) = ∂L/∂X.
    tokens = gf.lesson_inputs(transformer, ids, len(ids))
    out[TRANSFORMER] = _kept(gf.transformer_gradient_flow(transformer, tokens, tau))
    ssm = rf.ssm_gradient_flow(load_ssm(), X, tau, delta_scale=delta_scale)
    kept = rf.ssm_kept_until(load_ssm(), X, tau, delta_scale=delta_scale)
    out[SSM] = _kept(ssm) | {"kept": kept}
    out[LINEAR_ATTENTION] = _kept(
        rf.linear_attention_gradient_flow(load_linear_attention(), X, tau)
    )
    return out
