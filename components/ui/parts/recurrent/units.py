"""Part 4, "units": the gradient of one network per hidden unit and per step, as a heatmap
(the network chosen by the same control as in the clipping part)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.recurrent import unit_heatmap
from components.summaries import grid_summary
from components.ui.charts import load_grid_charts, show_chart
from components.ui.parts.recurrent.flow import Flow, chosen_network


def draw(flow: Flow) -> None:
    tau, labels, drawn_labels = flow.reading.tau, flow.reading.labels, flow.reading.drawn_labels
    st.subheader(t("recurrent.units.title"))
    focus = chosen_network()
    units = flow.result[focus]["grad_H_units"][: tau + 1]
    with np.errstate(divide="ignore"):
        log_units = np.log10(np.abs(units))
    load_grid_charts()  # the heatmaps below are grid charts
    show_chart(
        unit_heatmap(
            units,
            drawn_labels[: tau + 1],
            title=t("recurrent.units.figure", model=focus),
            value_name="log10 |∂L/∂H|",
        ),
        key="rc_units",
        summary=grid_summary(
            log_units, labels[: tau + 1], np.arange(units.shape[1]), value_name="log10 |∂L/∂H|"
        ),
        data={"step": labels[: tau + 1], "unit": np.arange(units.shape[1]), "grad_H": units},
    )
    st.caption(t("recurrent.units.explain", model=focus, n=units.shape[1]))
