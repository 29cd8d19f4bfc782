"""Part ③, "The selective state": the selective SSM's step sizes Δ_t over the visitor's tokens,
how much of its state each step keeps, exp(Δ_t A), and the state's size ‖h_t‖, beside the
time-invariant layer on the same tokens; a control multiplies every Δ."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from components.grid import position_labels
from components.i18n import t
from components.labels import markdown_literal, token_labels
from components.recurrence.selective import (
    MAX_CHANNELS,
    extremes,
    spread,
    state_grid,
    state_grid_summary,
    state_lines,
    state_lines_summary,
    token_means,
    widest_channel,
)
from components.summaries import number
from components.ui.charts import load_grid_charts, show_chart
from components.ui.linked import linked_slider
from components.ui.parts.recurrence.reading import Reading
from components.ui.runs import recurrence as runs
from components.ui.tour import offer
from models.analysis.recurrence_flow import DELTA_SCALE_RANGE

# The Δ factor's control: its log10, so that ×0.1 … ×10 are evenly spaced. Its key is its
# identity: the gradient-flow part draws the same control, and the value goes with the tab.
DELTA_KEY = "rr_dt_scale"
EXPONENT_RANGE = tuple(math.log10(v) for v in DELTA_SCALE_RANGE)  # (−1, 1)
LAYERS = ("selective", "lti")


def delta_scale(where) -> float:
    """The Δ factor 10^x the visitor set (x in [−1, 1], a link kept to it), as the runs key it."""
    low, high = EXPONENT_RANGE
    exponent = linked_slider(
        where,
        t("recurrence.selective.dt_scale"),
        low,
        high,
        0.0,
        key=DELTA_KEY,
        step=0.1,
        format="10^%.1f",
        help=t("recurrence.selective.dt_scale_help"),
    )
    return round(10.0 ** round(float(exponent), 2), 6)


def _layer_name(layer: str) -> str:
    return t(f"recurrence.selective.{layer}")


def _grids(state: dict, names: list[str]) -> None:
    for column, layer in zip(st.columns(2), LAYERS, strict=True):
        values = state[layer]
        with column:
            show_chart(
                state_grid(
                    values["delta"],
                    values["kept"],
                    names,
                    title=t(f"recurrence.selective.grid_{layer}"),
                ),
                key=f"rr_selective_grid_{layer}",
                summary=_layer_name(layer)
                + ": "
                + state_grid_summary(values["delta"], values["kept"], names),
                data={"token": names, "channel": np.arange(MAX_CHANNELS)}
                | {
                    "delta": values["delta"][:, :MAX_CHANNELS],
                    "kept": values["kept"][:, :MAX_CHANNELS],
                },
            )


def _lines(state: dict, tokens: tuple[str, ...], names: list[str]) -> None:
    labels = token_labels(tokens)  # escaped for plotly
    series = {
        _layer_name(layer): {
            "delta": token_means(state[layer]["delta"]),
            "kept": token_means(state[layer]["kept"]),
            "h_norm": state[layer]["h_norm"],
        }
        for layer in LAYERS
    }
    show_chart(
        state_lines(
            series,
            labels,
            titles=[t(f"recurrence.selective.row_{row}") for row in ("delta", "kept", "h_norm")],
            title=t("recurrence.selective.lines_title"),
        ),
        key="rr_selective_lines",
        summary=state_lines_summary(series, names),
        data={"token": names}
        | {
            f"{layer}_{name}": values
            for layer, key in zip(LAYERS, series, strict=True)
            for name, values in series[key].items()
        },
    )


def _metrics(spreads: dict) -> None:
    columns = st.columns(4)
    for column, (layer, which) in zip(
        columns,
        ((layer, which) for layer in LAYERS for which in ("tokens", "channels")),
        strict=True,
    ):
        column.metric(
            t(f"recurrence.selective.metric_{which}", layer=_layer_name(layer)),
            f"{spreads[layer][which]:.3g}",
            help=t(f"recurrence.selective.metric_{which}_help"),
        )


def _explain(state: dict, base: dict, names: list[str], scale: float, spreads: dict) -> str:
    """The measured numbers, in four sentences; tokens escaped for markdown."""
    kept = state["selective"]["kept"]
    least, most = extremes(kept)
    means = token_means(kept)
    channel, channel_least, channel_most = widest_channel(kept[:, :MAX_CHANNELS])
    sentences = [
        t(
            "recurrence.selective.explain_spread",
            scale=number(scale),
            sel_tokens=number(spreads["selective"]["tokens"]),
            sel_channels=number(spreads["selective"]["channels"]),
            lti_tokens=number(spreads["lti"]["tokens"]),
            lti_channels=number(spreads["lti"]["channels"]),
        ),
        t(
            "recurrence.selective.explain_tokens",
            least=markdown_literal(names[least]),
            least_value=number(means[least]),
            most=markdown_literal(names[most]),
            most_value=number(means[most]),
            channel=channel,
            channel_least=markdown_literal(names[channel_least]),
            channel_low=number(kept[channel_least, channel]),
            channel_most=markdown_literal(names[channel_most]),
            channel_high=number(kept[channel_most, channel]),
        ),
    ]
    mean_kept = number(float(np.mean(kept)))
    if scale == 1.0:
        sentences.append(t("recurrence.selective.explain_scale_one", mean_kept=mean_kept))
    else:
        base_kept = number(float(np.mean(base["selective"]["kept"])))
        sentences.append(
            t(
                "recurrence.selective.explain_scale",
                mean_kept=mean_kept,
                scale=number(scale),
                base_kept=base_kept,
            )
        )
    sentences.append(t("recurrence.selective.explain_paper"))
    return " ".join(sentences)


def draw(read: Reading) -> None:
    st.subheader(t("recurrence.selective.title"))
    cfg = runs.load_ssm().cfg
    st.caption(t("recurrence.selective.lead", d_inner=cfg.d_inner, d_state=cfg.d_state))
    scale = delta_scale(st)
    load_grid_charts()
    state = runs.selective_state(ids=read.ids, delta_scale=scale)
    base = state if scale == 1.0 else runs.selective_state(ids=read.ids, delta_scale=1.0)
    names = position_labels(read.tokens)  # as text: grid charts draw it, summaries quote it
    offer("recurrence.selective", scale=scale, tokens=read.tokens, **state)
    _grids(state, names)
    _lines(state, read.tokens, names)
    spreads = {layer: spread(state[layer]["kept"]) for layer in LAYERS}
    if read.n_tokens == 1:
        st.info(t("recurrence.selective.one_token"))
    _metrics(spreads)
    st.markdown(_explain(state, base, names, scale, spreads))
