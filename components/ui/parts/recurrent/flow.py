"""The gradient-flow run every part of the recurrent lesson draws from, what in it
overflowed or vanished, and the network two of the parts look at."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from components.i18n import t
from components.recurrent import chartable
from components.ui.linked import linked_selectbox
from components.ui.parts.recurrent.controls import Controls
from components.ui.parts.recurrent.reading import Reading
from components.ui.runs.recurrent import CELLS


@dataclass(frozen=True)
class Flow:
    controls: Controls
    reading: Reading
    result: dict  # per model (RNN, LSTM, GRU, Transformer): its gradient flow
    spectra_on: bool  # whether the result holds the step Jacobian spectra

    @property
    def distance(self) -> np.ndarray:
        return np.arange(self.reading.tau + 1)  # k = τ − t: how many steps before the loss


# The clipping part and the unit part look at one network, chosen by one control drawn in
# whichever of them is open: a control's key is its identity, so going from one tab to the
# other keeps the choice.
NETWORK_KEY = "rc_model"


def chosen_network() -> str:
    return linked_selectbox(st, t("recurrent.focus"), tuple(CELLS), "RNN", key=NETWORK_KEY)


def show_breaks(flow: Flow) -> None:
    """Overflow and underflow, named by the first step they reached."""
    result, tau = flow.result, flow.reading.tau
    nonfinite = 0
    for name in CELLS:
        model = result[name]
        if model["overflow_forward"] is not None:
            st.error(t("recurrent.overflow.forward", model=name, step=model["overflow_forward"]))
        if model["overflow_backward"] is not None:
            step = model["overflow_backward"]
            st.error(t("recurrent.overflow.backward", model=name, step=step, distance=tau - step))
        nonfinite += sum(chartable(model[k]) for k in ("grad_H", "grad_X", "H"))
    if nonfinite:
        st.warning(t("recurrent.overflow.charts", count=nonfinite))
    vanished = {
        name: tau - int(np.flatnonzero(result[name]["grad_H"][: tau + 1] == 0)[-1])
        for name in CELLS
        if (result[name]["grad_H"][: tau + 1] == 0).any()
    }
    if vanished:
        st.info(
            t(
                "recurrent.underflow",
                models=", ".join(f"{m} ({k})" for m, k in vanished.items()),
            )
        )
