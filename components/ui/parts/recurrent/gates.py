"""Part 5, "gates": the LSTM's and the GRU's gates over the input, and what the LSTM's
forget gate keeps."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.recurrent import gates_figure
from components.summaries import means_summary
from components.ui.charts import load_grid_charts, show_chart
from components.ui.parts.recurrent.flow import Flow
from components.ui.tour import offer

LATCHED = 0.9  # a forget gate above this at every step keeps the cell's content


def _wait(flow: Flow) -> slice | None:
    """The steps between reading a trained task's symbols and recalling them (None for
    constructed weights): a latched unit keeps its cell, its forget gate open, through them."""
    if not flow.controls.trained:
        return None
    task = flow.controls.s["task"]
    return slice(int(task.get("length", 0)), int(task.get("lag", flow.reading.n_steps)))


def _explain(flow: Flow) -> str:
    lstm, gru = flow.result["LSTM"], flow.result["GRU"]
    controls = flow.controls
    forget_mean = float(np.nanmean(np.where(np.isfinite(lstm["F"]), lstm["F"], np.nan)))
    n_units = lstm["F"].shape[1]
    if not controls.trained:
        return t(
            "recurrent.gates.explain",
            forget=forget_mean,
            bias=controls.settings.forget_bias,
            shown=min(32, n_units),
            n=n_units,
            z=float(np.nanmean(gru["Z"])),
        )
    wait = _wait(flow)
    latched = int((np.nan_to_num(lstm["F"][wait]) > LATCHED).all(axis=0).sum())
    return t(
        "recurrent.gates.trained",
        forget=forget_mean,
        latched=latched,
        n=n_units,
        level=LATCHED,
        start=wait.start,
        end=wait.stop - 1,
        shown=min(32, n_units),
        z=float(np.nanmean(gru["Z"])),
    )


def draw(flow: Flow) -> None:
    labels, drawn_labels = flow.reading.labels, flow.reading.drawn_labels
    st.subheader(t("recurrent.gates.title"))
    load_grid_charts()  # the gates are grid charts; the unit part, in its own tab, sends its own
    wait = _wait(flow)
    offer(
        "recurrent.gates",
        forget=flow.result["LSTM"]["F"],
        bias=flow.controls.settings.forget_bias,
        trained=flow.controls.trained,
        wait=None if wait is None else (wait.start, wait.stop),
        level=LATCHED,
    )
    lstm_col, gru_col = st.columns(2)
    with lstm_col:
        lstm = flow.result["LSTM"]
        show_chart(
            gates_figure(
                {k: lstm[k] for k in ("I", "F", "O", "C")},
                drawn_labels,
                title=t("recurrent.gates.lstm"),
            ),
            key="rc_gates_lstm",
            summary=means_summary({k: lstm[k] for k in ("I", "F", "O", "C")}),
            data={"step": labels, "unit": np.arange(lstm["F"].shape[1])}
            | {k: lstm[k] for k in ("I", "F", "O", "C")},
        )
    with gru_col:
        gru = flow.result["GRU"]
        show_chart(
            gates_figure(
                {k: gru[k] for k in ("Z", "R", "H")}, drawn_labels, title=t("recurrent.gates.gru")
            ),
            key="rc_gates_gru",
            summary=means_summary({k: gru[k] for k in ("Z", "R", "H")}),
            data={"step": labels, "unit": np.arange(gru["Z"].shape[1])}
            | {k: gru[k] for k in ("Z", "R", "H")},
        )
    st.caption(_explain(flow))
