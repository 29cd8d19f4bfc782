"""The masks part's step-by-step controls: which weights, which mask, which layer and
head, the window, the prefix and the second sentence."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from components.i18n import t
from components.ui.linked import linked_selectbox, linked_slider, linked_text, set_state
from components.ui.parts.masks.reading import SHOWN_TOKENS
from components.ui.runs.shared import (
    about_trained,
    induction_roles,
    induction_roles_text,
    load_checkpoint,
    load_visitor_store,
    trained_stem,
)
from components.ui.visitor_links import visitor_id
from models.analysis import masks
from models.analysis import trained_sources as ts
from models.nets.transformer import TransformerConfig
from models.text import READ_CHARS
from models.training.checkpoints import Checkpoint, CheckpointError

SECOND_KEY = "second"
DEFAULT_SECOND = "它太累了"
RANDOM = "random"  # the lesson's own random Transformer; otherwise a trained checkpoint


@dataclass(frozen=True)
class StepSetup:
    """What the step-by-step section's controls chose; `checkpoint` is None for the
    lesson's random Transformer, else the trained one (kept under `stem`). Defined here,
    not in the page: a class statement run on every rerun costs ~1.5 ms."""

    kind: str
    checkpoint: Checkpoint | None
    stem: str
    cfg: TransformerConfig
    layer: int
    head: int
    window: int
    prefix: int
    second_raw: str
    # Where the notes on what the model reads go: under the line naming the weights.
    notes: object
    # Where the batch or the example the mask runs on is written: with the mask's options.
    options: object


def weights_label(weights: str) -> str:
    if weights == RANDOM or weights in ts.SHIPPED_TRANSFORMERS:
        return t(f"masks.weights.{weights}")
    return t("masks.weights.mine", name=weights)


def kind_label(kind: str) -> str:
    return t(f"masks.kind.{kind}")


def step_controls(cfg: TransformerConfig) -> StepSetup:
    """The controls, drawn; `cfg` is the lesson's random Transformer's. The first view
    reads the visitor's sentence (the shipped character language model); the trained task
    models, which read their own task's sequences, are one choice away under Weights."""
    weights_col, kind_col, layer_col, head_col = st.columns([3, 3, 1, 1])
    weights = linked_selectbox(
        weights_col,
        t("masks.weights"),
        (
            ts.SHIPPED_LM,
            RANDOM,
            *(stem for stem in ts.SHIPPED_TRANSFORMERS if stem != ts.SHIPPED_LM),
            *ts.saved_transformers(load_visitor_store().list(visitor_id())),
        ),
        ts.SHIPPED_LM,
        key="mask_weights",
        format_func=weights_label,
    )
    kind = linked_selectbox(
        kind_col,
        t("masks.kind"),
        masks.KINDS,
        "causal",
        key="mask_kind",
        format_func=kind_label,
    )
    # Cross-attention needs an encoder–decoder: trained weights show the shipped translator.
    step_stem, checkpoint = "", None
    if weights != RANDOM:
        stem = trained_stem(ts.SHIPPED_ENCODER_DECODER if kind == "cross" else weights)
        try:
            checkpoint, step_stem = load_checkpoint(stem), stem
        except CheckpointError:  # a visitor's model deleted meanwhile (age limit, size cap)
            st.warning(t("masks.weights.gone"))
    if checkpoint is None:
        step_cfg = cfg
    elif kind == "cross":
        step_cfg = checkpoint.model.core.decoder.cfg
    else:
        step_cfg = checkpoint.model.core.cfg
    layer = (
        linked_slider(layer_col, t("masks.layer"), 0, step_cfg.n_layers - 1, 0, key="mask_layer")
        if step_cfg.n_layers > 1
        else 0
    )
    head = linked_slider(head_col, t("masks.head"), 0, step_cfg.n_heads - 1, 0, key="mask_head")
    about_col, options_col = st.columns(2)
    notes = _about_weights(about_col, checkpoint, step_stem, kind)
    needs_options = kind in ("padding", "cross", "prefix", "window")
    options = options_col.expander(t("masks.options"), expanded=needs_options)
    with options:
        window_col, prefix_col = st.columns(2)
        window = linked_slider(
            window_col,
            t("masks.window"),
            1,
            16,
            2,
            key="mask_window",
            disabled=kind != "window",
        )
        prefix = linked_slider(
            prefix_col,
            t("masks.prefix"),
            1,
            SHOWN_TOKENS,
            3,
            key="mask_prefix",
            disabled=kind != "prefix",
        )
        second_raw = linked_text(
            st,
            t("masks.second_label"),
            DEFAULT_SECOND,
            key=SECOND_KEY,
            max_chars=READ_CHARS,
            help=t("masks.second_help"),
        )
        st.caption(t(f"masks.kind.explain.{kind}", prefix=prefix, window=window))
    return StepSetup(
        kind,
        checkpoint,
        step_stem,
        step_cfg,
        layer,
        head,
        window,
        prefix,
        second_raw,
        notes,
        options,
    )


def _about_weights(where, checkpoint: Checkpoint | None, stem: str, kind: str):
    """An expander named by what the shown model reads, holding the rest; returned for
    the notes on what the model reads."""
    if checkpoint is None:
        reads = "random"
    elif kind == "cross":
        reads = "cross"
    else:
        reads = "sentence" if checkpoint.task.get("name") == "lm" else "task"
    about = where.expander(t(f"masks.weights.shown.{reads}"))
    with about:
        if checkpoint is None:
            st.caption(t("masks.weights.about.random"))
        else:
            st.info(about_trained(checkpoint, "masks.weights.about"))
        if checkpoint is not None and checkpoint.task.get("name") == "induction":
            roles = induction_roles(stem)
            i_layer, i_head, _ = roles["induction"]
            # The button goes under the text: beside it, a narrow screen cut its label.
            st.caption(induction_roles_text(roles, "masks.weights.roles"))
            st.button(
                t("masks.weights.jump", layer=i_layer, head=i_head),
                key="mask_jump",
                on_click=set_state,
                args=({"mask_layer": i_layer, "mask_head": i_head},),
            )
    return about
