"""The recurrent lesson's models and cached runs (Streamlit glue).

They live here, not in pages/recurrent.py: a page runs again on every rerun, and a
`st.cache_data` decorator run again re-reads its function's source to key the cache
(~1 ms each); in a module they are made once per process. Cached functions are called
with keyword arguments: a positional one costs Streamlit a look at the signature to name it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import streamlit as st

from components.ui.runs.shared import (
    load_checkpoint,
    load_recurrent,
    load_transformer,
    load_visitor_store,
)
from models.analysis import gradient_flow as gf
from models.analysis import trained_sources as ts
from models.nets.recurrent import largest_singular_value
from models.training.train import CHECKPOINT_DIR

CELLS = {"RNN": "rnn", "LSTM": "lstm", "GRU": "gru"}
CONSTRUCTED = "constructed"  # weights built from the controls; otherwise trained ones


def folder(source: str, visitor: str) -> str:
    """Where `source`'s checkpoints are: shipped with the app, or this visitor's own runs."""
    if source == ts.SHIPPED_SOURCE:
        return str(CHECKPOINT_DIR)
    return str(load_visitor_store().folder(visitor))


def checkpoint(folder: str, source: str, kind: str):
    """A trained model saved in `folder` (shipped, or one visitor's runs), shared and frozen."""
    return load_checkpoint(str(ts.stem(Path(folder), source, kind)))


def trained_radius(folder: str, source: str) -> float:
    """r of a trained RNN: its own W_hh's largest singular value."""
    return largest_singular_value(checkpoint(folder, source, "rnn").model.core.W_hh)


def _model(cell: str, d_in: int, s: dict, folder: str):
    """The shared frozen model for these settings (only the settings a cell reads are keyed)."""
    if s["weights"] != CONSTRUCTED:
        return checkpoint(folder, s["weights"], cell).model.core
    return load_recurrent(
        cell=cell,
        num_inputs=d_in,
        num_hiddens=s["num_hiddens"],
        activation=s["activation"] if cell == "rnn" else "tanh",
        init=s["init"],
        radius=s["radius"],
        forget_bias=s["forget_bias"] if cell == "lstm" else 1.0,
    )


@st.cache_data(max_entries=16, show_spinner=False)
def flows(
    ids: tuple[int, ...] | None, length: int, tau: int, s: dict, spectra: bool, folder: str
) -> dict:
    """The gradient flow of every model; with `spectra`, for the recurrent ones also the
    step Jacobian spectra, taken from the same forward pass. Constructed weights read the
    shared inputs; trained ones (saved in `folder`) each read their own view of their
    task's example."""
    out = {}
    if s["weights"] == CONSTRUCTED:
        X = gf.lesson_inputs(load_transformer(), ids, length)
        for name, cell in CELLS.items():
            model = _model(cell, X.shape[1], s, folder)
            out[name] = gf.recurrent_gradient_flow(model, X, tau, spectra=spectra)
        out["Transformer"] = gf.transformer_gradient_flow(load_transformer(), X, tau)
        return out
    example = ts.example(s["task"])[1]
    for name, cell in (*CELLS.items(), ("Transformer", "transformer")):
        model = checkpoint(folder, s["weights"], cell).model
        X = ts.inputs_for(model, example)
        if cell == "transformer":
            out[name] = gf.transformer_gradient_flow(model.core, X, tau)
        else:
            out[name] = gf.recurrent_gradient_flow(model.core, X, tau, spectra=spectra)
    return out


@st.cache_data(max_entries=16, show_spinner=False)
def linear_orthogonal(length: int, tau: int, num_hiddens: int, radius: float) -> np.ndarray:
    """‖∂L/∂H_t‖ of a linear RNN with W_hh = r·Q: it reads no input (∂L/∂H_t = u·W_hhᵀ^(τ−t)),
    so it is measured on zero inputs of the sentence's length, and shared by every sentence
    of that length."""
    d_in = load_transformer().cfg.d_model
    model = load_recurrent(
        cell="rnn",
        num_inputs=d_in,
        num_hiddens=num_hiddens,
        activation="linear",
        init="orthogonal",
        radius=radius,
    )
    return gf.input_free_grad_H(model, length, tau)
