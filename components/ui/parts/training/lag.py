"""Accuracy against lag on the copy task, as measured when the shipped models were trained:
how far back each kind of model can remember."""

from __future__ import annotations

import json

import numpy as np
import streamlit as st

from components.i18n import t
from components.recurrent import lines_figure
from components.ui.charts import show_chart
from components.ui.tour import held_back, offer, show_held_back
from models.nets.task_models import LABELS
from models.training.train import CHECKPOINT_DIR, COPY_LAG_FILE


def draw() -> None:
    st.subheader(t("training.lag.title"))
    lag_table = json.loads((CHECKPOINT_DIR / COPY_LAG_FILE).read_text(encoding="utf-8"))
    lags = np.asarray(lag_table["lags"])
    by_lag = {
        LABELS[kind]: (lags, np.asarray([row[str(lag)] for lag in lags], dtype=np.float64))
        for kind, row in lag_table["accuracy"].items()
    }
    offer(
        "training.lag",
        lags=lags,
        models=tuple(by_lag),
        accuracy=np.asarray([y for _, y in by_lag.values()]),
        chance=lag_table["chance"],
    )
    if held_back("tr_lag_accuracy"):
        show_held_back()
    else:
        _chart(by_lag, lags, lag_table["chance"])
    at_20 = {name: y[list(lags).index(20)] for name, (_, y) in by_lag.items()} if 20 in lags else {}
    st.caption(
        t(
            "training.lag.explain",
            chance=lag_table["chance"],
            rnn=at_20.get("RNN", float("nan")),
            lstm=at_20.get("LSTM", float("nan")),
            transformer=at_20.get("Transformer", float("nan")),
        )
    )


def _chart(by_lag: dict, lags: np.ndarray, chance: float) -> None:
    show_chart(
        lines_figure(
            by_lag,
            title=t("training.lag.figure"),
            x_title=t("training.lag.axis"),
            y_title=t("training.metric.accuracy"),
            log_y=False,
            hline=chance,
        ),
        key="tr_lag_accuracy",
        summary=t(
            "training.lag.summary",
            lag=int(lags[-1]),
            values=" · ".join(f"{name} {y[-1]:.0%}" for name, (_, y) in by_lag.items()),
        ),
        data={"lag": lags, **{name: y for name, (_, y) in by_lag.items()}},
    )
