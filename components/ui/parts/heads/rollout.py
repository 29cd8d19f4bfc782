"""Part: attention rollout, how much of each input token reaches each position through
the layers up to one."""

from __future__ import annotations

import streamlit as st

from components.grid import head_grid, position_labels
from components.i18n import t
from components.ui.charts import show_chart
from components.ui.linked import linked_slider
from components.ui.parts.heads.reading import Reading
from components.ui.tour import held_back, offer, show_held_back
from models.analysis.attention_stats import attention_rollout, strongest_link


def draw(reading: Reading) -> None:
    tokens, n_layers = reading.tokens, reading.cfg.n_layers
    rollout = attention_rollout(reading.patterns)
    through = (
        linked_slider(
            st, t("heads.rollout_layer"), 0, n_layers - 1, n_layers - 1, key="rollout_layer"
        )
        if n_layers > 1
        else 0
    )
    flow = rollout[through]
    drawn = position_labels(tokens)  # the chart's labels, as the numbers' row and column names
    offer("heads.rollout", through=through, labels=drawn, flow=flow)
    if held_back("heads.rollout"):
        show_held_back()
        return
    q_best, k_best, _ = strongest_link(flow, ignore=reading.specials) or (0, 0, 0.0)
    show_chart(
        head_grid(
            flow,
            tokens,
            query_title=t("heads.query"),
            key_title=t("heads.rollout_input"),
            weight_title=t("heads.rollout_share"),
        ),
        key="rollout",
        summary=t(
            "heads.rollout_summary",
            layer=through,
            query=tokens[q_best],
            key=tokens[k_best],
            share=float(flow[q_best, k_best]),
        ),
        data={"query": drawn, **{label: flow[:, i] for i, label in enumerate(drawn)}},
    )
    st.caption(t("heads.rollout_caption", layer=through))
    st.warning(t("heads.rollout_caveat"))
