"""Part 2, "theory": the RNN's gradient against r^k (measured on a linear orthogonal RNN
built from the controls), and the largest factor each step's Jacobian can stretch by."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.palette import BLACK, SKY_BLUE, VERMILLION
from components.recurrent import lines_figure
from components.summaries import lines_summary, medians_summary
from components.ui.charts import show_chart
from components.ui.linked import set_state
from components.ui.parts.recurrent.flow import Flow
from components.ui.runs import recurrent as runs
from components.ui.runs.recurrent import CELLS
from components.ui.tour import held_back, offer, show_held_back
from models.analysis import gradient_flow as gf

SPECTRA_KEY = "_rc_spectra"  # set once the visitor asks for the spectra of their sentence


def _median(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else float("nan")


def _theory(flow: Flow, r: float) -> str | None:
    """The theory chart; the caption that says how close its lines are (None while a tour
    step's question holds them back)."""
    controls, tau, distance = flow.controls, flow.reading.tau, flow.distance
    theory = gf.linear_orthogonal_theory(r, tau)
    formula = t("recurrent.theory.formula", r=r)
    rnn_line = t(f"recurrent.theory.{'trained' if controls.trained else 'yours'}")
    rnn_grad = flow.result["RNN"]["grad_H"][tau::-1]
    curves = {formula: (distance, theory[::-1]), rnn_line: (distance, rnn_grad)}
    measured = None
    if controls.trained:
        caption = t("recurrent.theory.trained_explain", r=r)
    else:
        # The linear orthogonal RNN is built from the controls: it checks r^k, and only the
        # constructed weights share its r (with trained ones it would be another network).
        measured = runs.linear_orthogonal(
            length=flow.reading.n_steps,
            tau=tau,
            num_hiddens=controls.s["num_hiddens"],
            radius=controls.s["radius"],
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.abs(measured[tau::-1] / theory[::-1] - 1)
        checked = min(tau, 100)
        finite_relative = relative[: checked + 1][np.isfinite(relative[: checked + 1])]
        worst = float(finite_relative.max()) if finite_relative.size else float("nan")
        curves = {t("recurrent.theory.measured"): (distance, measured[tau::-1])} | curves
        activation = controls.settings.activation
        caption = t("recurrent.theory.explain", r=r, checked=checked, worst=worst, act=activation)
    offer(
        "recurrent.theory",
        k=distance,
        r=r,
        control_r=controls.settings.radius,
        trained=controls.trained,
        formula=theory[::-1],
        measured=None if measured is None else measured[tau::-1],
        network=rnn_grad,
    )
    if held_back("rc_theory"):
        show_held_back()
        return None
    show_chart(
        lines_figure(
            curves,
            title=t("recurrent.theory.figure"),
            x_title=t("recurrent.distance.axis"),
            y_title="‖∂L/∂H_t‖",
            dashed=(formula,),
            widths={t("recurrent.theory.measured"): 6},
            colors={
                t("recurrent.theory.measured"): SKY_BLUE,
                formula: BLACK,
                rnn_line: VERMILLION,
            },
        ),
        key="rc_theory",
        summary=lines_summary(curves),
        data={"distance": distance} | {name: y for name, (_, y) in curves.items()},
    )
    return caption


def _spectra(flow: Flow, r: float) -> str | None:
    """The step Jacobian norms, or the button that asks for them; the caption once drawn."""
    n_steps = flow.reading.n_steps
    if not flow.spectra_on:
        st.button(
            t("recurrent.jacobian.run"),
            key="rc_spectra_go",
            on_click=set_state,
            args=({SPECTRA_KEY: True},),
            icon=":material/functions:",
        )
        st.caption(t("recurrent.jacobian.pending", n=n_steps))
        return None
    result = flow.result
    spectra = {
        name: (result[name]["jacobian_steps"], result[name]["jacobian_norms"]) for name in CELLS
    }
    show_chart(
        lines_figure(
            {name: (steps, norms) for name, (steps, norms) in spectra.items()},
            title=t("recurrent.jacobian.figure"),
            x_title=t("recurrent.step"),
            y_title="‖∂H_t/∂H_{t−1}‖₂",
            log_y=True,
            hline=1.0,
        ),
        key="rc_jacobian",
        summary=medians_summary({name: norms for name, (_, norms) in spectra.items()}),
        # One row per model and step: each model samples its own steps.
        data={
            "model": [name for name, (steps, _) in spectra.items() for _ in steps],
            "step": np.concatenate([steps for steps, _ in spectra.values()]),
            "norm": np.concatenate([norms for _, norms in spectra.values()]),
        },
    )
    caption = t(
        "recurrent.jacobian.explain",
        rnn=_median(spectra["RNN"][1]),
        lstm=_median(spectra["LSTM"][1]),
        gru=_median(spectra["GRU"][1]),
        r=r,
    )
    sampled = {name: len(steps) for name, (steps, _) in spectra.items() if len(steps) < n_steps}
    if sampled:
        counts = ", ".join(f"{m}: {k}" for m, k in sampled.items())
        caption += " " + t("recurrent.jacobian.sampled", sampled=counts, n=n_steps)
    return caption


def draw(flow: Flow) -> None:
    st.subheader(t("recurrent.theory.title"))
    controls = flow.controls
    # Trained weights set no r: it is their own W_hh's largest singular value, not the slider's.
    if controls.trained:
        r = runs.trained_radius(controls.folder, controls.weights)
    else:
        r = controls.settings.radius
    theory_col, jacobian_col = st.columns(2)
    with theory_col:
        theory_caption = _theory(flow, r)
    with jacobian_col:
        jacobian_caption = _spectra(flow, r)
    if theory_caption is not None:
        st.caption(theory_caption)
    if jacobian_caption is not None:
        st.caption(jacobian_caption)
