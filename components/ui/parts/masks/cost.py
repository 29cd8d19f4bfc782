"""The lab "cost": attention's time and memory against a recurrent network's, as the
sequence grows (measured once per server)."""

from __future__ import annotations

import streamlit as st

from components.i18n import t
from components.masks import log_x_curves
from components.ui.charts import show_chart
from components.ui.runs import masks as runs
from models.analysis import cost


def draw() -> None:
    st.subheader(t("masks.cost.title"))
    with st.spinner(t("masks.measuring")):
        costs = runs.cost_lab()
    lengths = costs["length"]
    cost_left, cost_right = st.columns(2)
    with cost_left:
        show_chart(
            log_x_curves(
                {
                    t("masks.cost.attention"): costs["attn_s"] * 1e3,
                    t("masks.cost.rnn"): costs["rnn_s"] * 1e3,
                },
                lengths,
                title=t("masks.cost.time_title"),
                x_title=t("masks.cost.length"),
                y_title=t("masks.kv.time_axis"),
                log_y=True,
            ),
            key="cost_time",
            summary=t(
                "masks.cost.time_summary",
                attention=float(costs["attn_s"][-1] * 1e3),
                rnn=float(costs["rnn_s"][-1] * 1e3),
                n=int(lengths[-1]),
            ),
            data={
                "length": lengths,
                "attention_ms": costs["attn_s"] * 1e3,
                "rnn_ms": costs["rnn_s"] * 1e3,
            },
        )
    with cost_right:
        show_chart(
            log_x_curves(
                {
                    t("masks.cost.attention"): costs["attn_bytes"] / 2**20,
                    t("masks.cost.rnn"): costs["rnn_bytes"] / 2**20,
                },
                lengths,
                title=t("masks.cost.memory_title"),
                x_title=t("masks.cost.length"),
                y_title="MiB",
                log_y=True,
            ),
            key="cost_memory",
            summary=t(
                "masks.cost.memory_summary",
                attention=float(costs["attn_bytes"][-1] / 2**20),
                rnn=float(costs["rnn_bytes"][-1] / 2**20),
                n=int(lengths[-1]),
            ),
            data={
                "length": lengths,
                "attention_bytes": costs["attn_bytes"],
                "rnn_bytes": costs["rnn_bytes"],
            },
        )
    st.caption(
        t(
            "masks.cost.explain",
            attn_slope=cost.growth_exponent(lengths, costs["attn_s"]),
            rnn_slope=cost.growth_exponent(lengths, costs["rnn_s"]),
            memory_slope=cost.growth_exponent(lengths, costs["attn_bytes"]),
            n=int(lengths[-1]),
            threads=int(costs["threads"]),
            per_step=float(costs["rnn_s"][-1] / lengths[-1] * 1e6),
        )
    )
