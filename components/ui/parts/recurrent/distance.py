"""Part 1, "distance": how much of the loss reaches each input, against how many steps
before the loss it is, for every model."""

from __future__ import annotations

import streamlit as st

from components.i18n import t
from components.recurrent import lines_figure
from components.summaries import lines_summary
from components.ui.charts import show_chart
from components.ui.parts.recurrent.flow import Flow
from components.ui.tour import held_back, offer, show_held_back


def _at(flow: Flow, name: str, k: int) -> float:
    tau = flow.reading.tau
    values = flow.result[name]["grad_X"][tau::-1]
    return float(values[min(k, tau)])


def draw(flow: Flow) -> None:
    result, tau, distance = flow.result, flow.reading.tau, flow.distance
    labels = flow.reading.labels
    st.subheader(t("recurrent.distance.title"))
    hover = [labels[tau - k] for k in distance]
    curves = {name: (distance, result[name]["grad_X"][tau::-1]) for name in result}
    offer("recurrent.distance", k=distance, norms={n: y for n, (_, y) in curves.items()})
    if held_back("rc_distance"):  # it answers the tour step's question, and so does its caption
        show_held_back()
        return
    show_chart(
        lines_figure(
            curves,
            title=t("recurrent.distance.figure"),
            x_title=t("recurrent.distance.axis"),
            y_title="‖∂L/∂X_t‖",
            hover_labels={name: hover for name in curves},
        ),
        key="rc_distance",
        summary=lines_summary(curves),
        data={"distance": distance, "token": hover} | {name: y for name, (_, y) in curves.items()},
    )
    far = min(tau, 50)
    st.caption(
        t(
            "recurrent.distance.explain",
            far=far,
            rnn=_at(flow, "RNN", far),
            lstm=_at(flow, "LSTM", far),
            gru=_at(flow, "GRU", far),
            transformer=_at(flow, "Transformer", far),
            rnn0=_at(flow, "RNN", 0),
            transformer0=_at(flow, "Transformer", 0),
        )
    )
