"""The recurrent lesson's shared controls: which weights the models carry, the input and the
loss step, and how constructed weights are built. Every part reads them."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from components.i18n import t
from components.ui.linked import linked_selectbox, linked_slider
from components.ui.runs import recurrent as runs
from components.ui.runs.recurrent import CONSTRUCTED
from components.ui.runs.shared import load_visitor_store
from components.ui.visitor_links import visitor_id
from models.analysis import gradient_flow as gf
from models.analysis import trained_sources as ts
from models.nets.recurrent import ACTIVATIONS, INITS
from models.text import Note
from models.training.checkpoints import CheckpointError


@dataclass(frozen=True)
class Controls:
    weights: str  # CONSTRUCTED, the shipped source or one of the visitor's runs
    folder: str  # where the trained weights are saved ("" for constructed ones)
    settings: gf.FlowSettings  # the controls, within the lesson's limits
    s: dict  # what a model reads of them: the cached run's key
    notes: list[Note]  # every value the limits changed

    @property
    def trained(self) -> bool:
        return self.weights != CONSTRUCTED


def weights_label(weights: str) -> str:
    if weights in (CONSTRUCTED, ts.SHIPPED_SOURCE):
        return t(f"recurrent.weights.{weights}")
    return t("recurrent.weights.mine", name=weights)


def _source_label(source: str) -> str:
    return t(f"recurrent.source.{source}")


def _init_label(init: str) -> str:
    return t(f"recurrent.init.{init}")


def _clip_label(clip: float) -> str:
    return f"{clip:g}"


def _weights(where, me: str) -> str:
    """The weights control; a visitor's run deleted since is replaced by constructed weights."""
    # The first view is the constructed weights, reading the visitor's sentence, so every
    # chart follows what they type; the trained models are the next option, named as such.
    # A link made on trained weights names them (they are not the default), so it keeps
    # its meaning.
    weights = linked_selectbox(
        where,
        t("recurrent.controls.weights"),
        (
            CONSTRUCTED,
            ts.SHIPPED_SOURCE,
            *ts.complete_runs([m.name for m in load_visitor_store().list(me)]),
        ),
        CONSTRUCTED,
        key="rc_weights",
        format_func=weights_label,
        help=t("recurrent.controls.weights_help"),
    )
    if weights != CONSTRUCTED:
        try:
            for kind in ts.KINDS:
                runs.checkpoint(runs.folder(weights, me), weights, kind)
        except CheckpointError:  # a visitor's run deleted meanwhile (age limit, size cap)
            st.warning(t("recurrent.trained.gone"))
            weights = CONSTRUCTED
    return weights


def draw(row, more) -> Controls:
    """The weights, r and the loss step in `row`; the other settings in `more`, in three
    columns: input, recurrent matrix, model."""
    col_weights, col_radius, col_before = row.columns((1.4, 1, 1))
    me = visitor_id()
    weights = _weights(col_weights, me)
    constructing = {"disabled": weights != CONSTRUCTED}
    radius = linked_slider(
        col_radius,
        t("recurrent.controls.radius"),
        *gf.RADIUS_RANGE,
        1.0,
        key="rc_radius",
        step=0.05,
        **constructing,
    )
    before_end = linked_slider(
        col_before, t("recurrent.controls.before_end"), 0, gf.MAX_T - 1, 0, key="rc_before"
    )
    col_input, col_matrix, col_model = more.columns(3)
    source = linked_selectbox(
        col_input,
        t("recurrent.controls.source"),
        gf.SOURCES,
        "sentence",
        key="rc_source",
        format_func=_source_label,
        disabled=weights != CONSTRUCTED,
    )
    length = linked_slider(
        col_input,
        t("recurrent.controls.length"),
        2,
        gf.MAX_T,
        64,
        key="rc_length",
        disabled=source != "synthetic" or weights != CONSTRUCTED,
    )
    activation = linked_selectbox(
        col_matrix,
        t("recurrent.controls.activation"),
        ACTIVATIONS,
        "tanh",
        key="rc_act",
        **constructing,
    )
    init = linked_selectbox(
        col_matrix,
        t("recurrent.controls.init"),
        INITS,
        "random",
        key="rc_init",
        format_func=_init_label,
        **constructing,
    )
    num_hiddens = linked_selectbox(
        col_model,
        t("recurrent.controls.hidden"),
        gf.HIDDEN_SIZES,
        64,
        key="rc_hidden",
        **constructing,
    )
    forget_bias = linked_slider(
        col_model,
        t("recurrent.controls.forget"),
        *gf.FORGET_RANGE,
        1.0,
        key="rc_forget",
        step=0.5,
        **constructing,
    )
    clip = linked_selectbox(
        col_model,
        t("recurrent.controls.clip"),
        gf.CLIP_THRESHOLDS,
        0.1,
        key="rc_clip",
        format_func=_clip_label,
    )
    settings, notes = gf.clean_settings(
        source=source,
        length=length,
        before_end=before_end,
        radius=radius,
        activation=activation,
        init=init,
        forget_bias=forget_bias,
        num_hiddens=num_hiddens,
        clip=clip,
    )
    s = {
        "num_hiddens": settings.num_hiddens,
        "activation": settings.activation,
        "init": settings.init,
        "radius": round(settings.radius, 6),
        "forget_bias": settings.forget_bias,
        "weights": weights,
    }
    folder = runs.folder(weights, me) if weights != CONSTRUCTED else ""
    return Controls(weights=weights, folder=folder, settings=settings, s=s, notes=notes)
