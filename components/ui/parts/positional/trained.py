"""Part "trained": what training makes of a learned position table, read from a trained
Transformer's attention from position alone, before and after training."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.masks import step_heatmap
from components.positional import curves_figure
from components.ui.charts import show_chart
from components.ui.linked import linked_selectbox, linked_slider
from components.ui.runs.positional import training_views
from components.ui.runs.shared import load_checkpoint, load_visitor_store, trained_stem
from components.ui.tour import held_back, offer, show_held_back
from models.analysis import trained_sources as ts
from models.training.checkpoints import CheckpointError


def trained_label(name: str) -> str:
    if name in ts.SHIPPED_TRANSFORMERS:
        return t(f"positional.trained.{name}")
    return t("positional.trained.mine", name=name)


def draw(me: str) -> None:
    """What training makes of a learned table (`me`: the visitor, whose own models are
    offered beside the shipped ones)."""
    st.subheader(t("positional.trained.title"))
    trained_col, head_col = st.columns([2, 1])
    trained_name = linked_selectbox(
        trained_col,
        t("positional.trained.model"),
        (*ts.SHIPPED_TRANSFORMERS, *ts.saved_transformers(load_visitor_store().list(me))),
        ts.SHIPPED_TRANSFORMERS[0],
        key="pe_trained",
        format_func=trained_label,
    )
    try:
        trained = load_checkpoint(trained_stem(trained_name))
    except CheckpointError:  # a visitor's model deleted meanwhile (age limit, size cap)
        trained = None
        st.warning(t("positional.trained.gone"))
    if trained is not None and trained.model.core.cfg.positional != "learned":
        trained = None
        st.info(t("positional.trained.no_table"))
    if trained is None:
        return
    core = trained.model.core
    trained_head = linked_slider(
        head_col,
        t("positional.trained.head"),
        0,
        core.cfg.n_heads - 1,
        0,
        key="pe_trained_head",
    )
    spec, metrics = trained.config.get("model", {}), trained.metrics
    st.info(
        t(
            "positional.trained.about",
            model=trained_label(trained_name),
            n_layers=spec.get("n_layers"),
            n_heads=spec.get("n_heads"),
            d_model=spec.get("d_model"),
            n_ctx=spec.get("n_ctx"),
            steps=trained.config.get("training", {}).get("steps", "?"),
            accuracy=metrics.get("accuracy", float("nan")),
        )
    )
    views = training_views(stem=trained_stem(trained_name))
    offsets = {when: view["by_offset"] for when, view in views.items()}
    strongest = {
        when: (int(np.argmax(w[trained_head])), float(np.max(w[trained_head])))
        for when, w in offsets.items()
    }
    offer("positional.trained", head=trained_head, **offsets)
    # A tour's question on what training made of the head waits for the learner's
    # prediction: what the trained model shows (its heatmap, its curves, the sentence on them).
    hidden = held_back("positional.trained")
    draw_patterns(core.cfg, views, strongest, trained_head, hidden)
    if hidden:
        return
    draw_by_offset(offsets["after"])
    near = {when: view["near"] for when, view in views.items()}
    st.caption(
        t(
            "positional.trained.explain",
            head=trained_head,
            offset=strongest["after"][0],
            share=strongest["after"][1],
            before=float(offsets["before"][trained_head][strongest["after"][0]]),
            near_before=near["before"],
            near_after=near["after"],
            n=core.cfg.n_ctx,
        )
        + (
            " " + t("positional.trained.induction")
            if trained.task.get("name") == "induction"
            else ""
        )
    )


def draw_patterns(cfg, views: dict, strongest: dict, trained_head: int, hidden: bool) -> None:
    """The head's attention from position alone, before and after training, side by side
    (`hidden`: the one after training waits for a tour question's answer)."""
    patterns = {when: view["pattern"] for when, view in views.items()}
    positions = [str(i) for i in range(cfg.n_ctx)]
    # The model's own causal mask: keys after the query, drawn grey.
    future = np.triu(np.ones((cfg.n_ctx, cfg.n_ctx), dtype=bool), 1)
    future &= bool(cfg.causal)
    for column, (when, pattern) in zip(st.columns(2), patterns.items(), strict=True):
        offset, share = strongest[when]
        with column:
            if hidden and when == "after":
                show_held_back()
                continue
            show_chart(
                step_heatmap(
                    pattern[trained_head],
                    t(f"positional.trained.{when}", head=trained_head),
                    positions,
                    positions,
                    x_title=t("positional.rope.key_pos"),
                    y_title=t("positional.rope.query_pos"),
                    masked=future,
                    masked_text="0",
                    weights=True,
                    value_name=t("positional.trained.weight"),
                    cell_text=False,
                ),
                key=f"pe_trained_{when}",
                summary=t(
                    "positional.trained.summary",
                    when=t(f"positional.trained.{when}_short"),
                    head=trained_head,
                    offset=offset,
                    share=share,
                ),
                data={"query": positions, "key": positions, "weight": pattern[trained_head]},
            )


def draw_by_offset(after: np.ndarray) -> None:
    """Every head's mean weight by offset after training."""
    ks = np.arange(after.shape[1])
    per_head = {t("positional.trained.head_line", head=h): after[h] for h in range(len(after))}
    show_chart(
        curves_figure(
            per_head,
            ks,
            title=t("positional.trained.by_offset"),
            x_title=t("positional.trained.offset_axis"),
            y_title=t("positional.trained.mean_weight"),
        ),
        key="pe_trained_offset",
        summary=" · ".join(
            t(
                "positional.trained.head_peak",
                head=h,
                offset=int(np.argmax(w)),
                share=float(w.max()),
            )
            for h, w in enumerate(after)
        ),
        data={"offset": ks} | per_head,
    )
