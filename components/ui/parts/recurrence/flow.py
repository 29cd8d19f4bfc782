"""Part ④, "Gradient flow through time": how much of a loss at the last token reaches each
earlier input, against how many tokens before the loss it is, for the RNN, the LSTM, the GRU,
the lesson's Transformer, the selective SSM and linear attention, all on the same inputs."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.grid import position_labels
from components.i18n import t
from components.labels import token_labels
from components.recurrence.flow import (
    distance_curves,
    flow_figure,
    flow_summary,
    per_step_factor,
    ratios_text,
    reach_ratio,
)
from components.summaries import number
from components.ui.charts import show_chart
from components.ui.parts.recurrence.reading import Reading
from components.ui.parts.recurrence.selective import delta_scale
from components.ui.runs import recurrence as runs
from components.ui.tour import held_back, offer, show_held_back

# The runs' names for this lesson's two layers; the others are named as drawn.
NEW_LAYERS = (runs.SSM, runs.LINEAR_ATTENTION)


def _name(model: str) -> str:
    return t(f"recurrence.flow.{model}") if model in NEW_LAYERS else model


def _explain(result: dict, ratios: dict, tau: int, scale: float) -> str:
    rnn_ratio = ratios[_name("RNN")]
    return t(
        "recurrence.flow.explain",
        tau=tau,
        ratios=ratios_text(ratios),
        rnn_step=number(per_step_factor(rnn_ratio, tau)),
        la=number(ratios[_name(runs.LINEAR_ATTENTION)]),
        transformer=number(ratios[_name(runs.TRANSFORMER)]),
        ssm=number(ratios[_name(runs.SSM)]),
        ssm_kept=number(result[runs.SSM]["kept"][0]),
        scale=number(scale),
    )


def draw(read: Reading) -> None:
    st.subheader(t("recurrence.flow.title"))
    s = runs.RECURRENT_SETTINGS
    st.caption(
        t(
            "recurrence.flow.lead",
            activation=s.activation,
            hidden=s.num_hiddens,
            radius=s.radius,
            forget=s.forget_bias,
        )
    )
    scale = delta_scale(st)
    result = runs.flows(ids=read.ids, delta_scale=scale)
    tau = read.n_tokens - 1
    grads = {_name(model): values["grad_X"] for model, values in result.items()}
    curves = distance_curves(grads, tau)
    labels = token_labels(read.tokens)
    hover = [labels[tau - k] for k in range(tau + 1)]
    by_model = {model: values["grad_X"][tau::-1] for model, values in result.items()}
    names = {model: _name(model) for model in result}
    kept = result[runs.SSM]["kept"]
    offer("recurrence.flow", tau=tau, norms=by_model, names=names, kept=kept, scale=scale)
    if held_back("rr_flow_distance"):  # it answers the tour step's question, and so does the text
        show_held_back()
        return
    show_chart(
        flow_figure(
            curves,
            hover,
            [_name(model) for model in NEW_LAYERS],
            title=t("recurrence.flow.figure"),
            x_title=t("recurrence.flow.axis"),
        ),
        key="rr_flow_distance",
        summary=flow_summary(curves),
        data={
            "distance": np.arange(tau + 1),
            "token": [position_labels(read.tokens)[tau - k] for k in range(tau + 1)],
        }
        | {name: y for name, (_, y) in curves.items()},
    )
    if tau == 0:
        st.info(t("recurrence.flow.one_token"))
        return
    ratios = {name: reach_ratio(values, tau) for name, values in grads.items()}
    st.markdown(_explain(result, ratios, tau, scale))
