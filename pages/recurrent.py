"""Lesson: RNN, LSTM and GRU, live, and how far a gradient travels back through time."""

import numpy as np
import streamlit as st

from components.i18n import t
from components.palette import BLACK, BLUE, ORANGE, SKY_BLUE, VERMILLION
from components.recurrent import (
    chartable,
    clipping_figure,
    gates_figure,
    lines_figure,
    step_labels,
    unit_heatmap,
)
from components.summaries import (
    clipping_summary,
    grid_summary,
    lines_summary,
    means_summary,
    medians_summary,
)
from components.ui.charts import load_grid_charts, show_chart
from components.ui.frame import enter_lesson
from components.ui.linked import linked_selectbox, linked_slider, set_state
from components.ui.runs import recurrent as runs
from components.ui.runs.recurrent import CELLS, CONSTRUCTED
from components.ui.runs.shared import load_tokenizer, load_transformer, load_visitor_store
from components.ui.sentence import sentence_or_stop, show_notes
from components.ui.visitor_links import visitor_id
from models.analysis import gradient_flow as gf
from models.analysis import trained_sources as ts
from models.nets.recurrent import ACTIVATIONS, INITS
from models.nets.tokenizer import MAX_TOKENS
from models.text import Note, tokenization_notes
from models.training.checkpoints import CheckpointError
from models.training.train import CHECKPOINT_DIR

enter_lesson()

# The controls that build the constructed weights (trained weights ignore them).
CONSTRUCTION_KEYS = ("rc_source", "rc_length", "rc_radius", "rc_act", "rc_init", "rc_hidden")
CONSTRUCTION_KEYS += ("rc_forget",)
LATCHED = 0.9  # a forget gate above this at every step keeps the cell's content
SPECTRA_KEY = "_rc_spectra"  # set once the visitor asks for the spectra of their sentence


def _folder(source: str) -> str:
    """Where `source`'s checkpoints are: shipped with the app, or this visitor's own runs."""
    return str(CHECKPOINT_DIR if source == ts.SHIPPED_SOURCE else load_visitor_store().folder(me))


def _checkpoint(source: str, kind: str):
    return runs.checkpoint(_folder(source), source, kind)


d_model = load_transformer().cfg.d_model
st.header(t("recurrent.title"))
st.caption(t("recurrent.intro", d_model=d_model))

sentence = sentence_or_stop()

# Controls --------------------------------------------------------------------------------
st.subheader(t("recurrent.controls.title"))
col_input, col_matrix, col_model = st.columns(3)
me = visitor_id()
# A first visit opens on the shipped trained weights, so the gates mean something. The
# control's default stays the constructed weights, so a link keeps its meaning: one made
# on trained weights names them, and one carrying any construction setting (every link
# made before trained weights were the first view) opens on constructed weights.
if "rc_weights" not in st.session_state and not any(
    key in st.query_params for key in ("rc_weights", *CONSTRUCTION_KEYS)
):
    st.session_state["rc_weights"] = ts.SHIPPED_SOURCE
weights = linked_selectbox(
    col_input,
    t("recurrent.controls.weights"),
    (
        CONSTRUCTED,
        ts.SHIPPED_SOURCE,
        *ts.complete_runs([m.name for m in load_visitor_store().list(me)]),
    ),
    CONSTRUCTED,
    key="rc_weights",
    format_func=lambda w: (
        t(f"recurrent.weights.{w}")
        if w in (CONSTRUCTED, ts.SHIPPED_SOURCE)
        else t("recurrent.weights.mine", name=w)
    ),
)
if weights != CONSTRUCTED:
    try:
        for kind in ts.KINDS:
            _checkpoint(weights, kind)
    except CheckpointError:  # a visitor's run deleted meanwhile (age limit, size cap)
        st.warning(t("recurrent.trained.gone"))
        weights = CONSTRUCTED
source = linked_selectbox(
    col_input,
    t("recurrent.controls.source"),
    gf.SOURCES,
    "sentence",
    key="rc_source",
    format_func=lambda s: t(f"recurrent.source.{s}"),
    disabled=weights != CONSTRUCTED,
)
length = linked_slider(
    col_input,
    t("recurrent.controls.length"),
    2,
    gf.MAX_T,
    64,
    key="rc_length",
    disabled=source != "synthetic" or weights != CONSTRUCTED,
)
before_end = linked_slider(
    col_input, t("recurrent.controls.before_end"), 0, gf.MAX_T - 1, 0, key="rc_before"
)
constructing = {"disabled": weights != CONSTRUCTED}
radius = linked_slider(
    col_matrix,
    t("recurrent.controls.radius"),
    *gf.RADIUS_RANGE,
    1.0,
    key="rc_radius",
    step=0.05,
    **constructing,
)
activation = linked_selectbox(
    col_matrix,
    t("recurrent.controls.activation"),
    ACTIVATIONS,
    "tanh",
    key="rc_act",
    **constructing,
)
init = linked_selectbox(
    col_matrix,
    t("recurrent.controls.init"),
    INITS,
    "random",
    key="rc_init",
    format_func=lambda s: t(f"recurrent.init.{s}"),
    **constructing,
)
num_hiddens = linked_selectbox(
    col_model,
    t("recurrent.controls.hidden"),
    gf.HIDDEN_SIZES,
    64,
    key="rc_hidden",
    **constructing,
)
forget_bias = linked_slider(
    col_model,
    t("recurrent.controls.forget"),
    *gf.FORGET_RANGE,
    1.0,
    key="rc_forget",
    step=0.5,
    **constructing,
)
clip = linked_selectbox(
    col_model,
    t("recurrent.controls.clip"),
    gf.CLIP_THRESHOLDS,
    0.1,
    key="rc_clip",
    format_func=lambda c: f"{c:g}",
)
settings, setting_notes = gf.clean_settings(
    source=source,
    length=length,
    before_end=before_end,
    radius=radius,
    activation=activation,
    init=init,
    forget_bias=forget_bias,
    num_hiddens=num_hiddens,
    clip=clip,
)
s = {
    "num_hiddens": settings.num_hiddens,
    "activation": settings.activation,
    "init": settings.init,
    "radius": round(settings.radius, 6),
    "forget_bias": settings.forget_bias,
    "weights": weights,
}

# Input -----------------------------------------------------------------------------------
ids: tuple[int, ...] | None = None
tokens = None
if s["weights"] != CONSTRUCTED:
    # Trained weights read the task they learned: its first held-out sequence.
    s["task"] = _checkpoint(s["weights"], "rnn").task
    tokens = ts.example(s["task"])[0]
    accuracies = {
        name: _checkpoint(s["weights"], cell).metrics.get("accuracy")
        for name, cell in (*CELLS.items(), ("Transformer", "transformer"))
    }
    st.info(
        t(
            "recurrent.trained.which",
            weights=t(f"recurrent.weights.{s['weights']}")
            if s["weights"] == ts.SHIPPED_SOURCE
            else t("recurrent.weights.mine", name=s["weights"]),
            lag=s["task"].get("lag", "?"),
            length=s["task"].get("length", "?"),
            accuracies=", ".join(
                f"{name} {value:.1%}" for name, value in accuracies.items() if value is not None
            ),
        )
    )
    st.caption(t("recurrent.trained.note", task=" ".join(tokens)))
elif settings.source == "sentence":
    encoded = load_tokenizer().encode(sentence.text, MAX_TOKENS)
    setting_notes += tokenization_notes(
        len(encoded.ids),
        encoded.n_tokens_before_cap,
        MAX_TOKENS,
        encoded.unknown_spans(sentence.text),
        vocabulary="own_",
    )
    ids, tokens = tuple(encoded.ids), list(encoded.tokens)
n_steps = len(tokens) if tokens is not None else settings.length
tau = gf.loss_step(n_steps, settings.before_end)
if settings.before_end > n_steps - 1:
    setting_notes.append(Note("recurrent_loss_moved", {"asked": settings.before_end, "tau": tau}))
show_notes(setting_notes)
labels = step_labels(tokens, n_steps)
drawn_labels = step_labels(tokens, n_steps, escaped=False)  # grid charts draw text as it is
if tokens is not None:
    st.caption(t("recurrent.tokens", n=n_steps))
    st.text(" · ".join(tokens))
st.info(t("recurrent.loss", tau=tau, n=n_steps))
if tokens is not None:
    st.text(t("recurrent.loss_token", token=tokens[tau]))

# The exact spectra of every step's Jacobian are the costliest numbers here. Where the
# inputs follow the visitor's typing they are computed once asked for, and from then on
# at every keystroke of the visit; a task's sequence or a synthetic one does not change
# as the visitor types, so there they are always computed (once, then cached).
follows_typing = ids is not None
spectra_on = not follows_typing or bool(st.session_state.get(SPECTRA_KEY))
result = runs.flows(
    ids=ids,
    length=n_steps,
    tau=tau,
    s=s,
    spectra=spectra_on,
    folder=_folder(s["weights"]) if s["weights"] != CONSTRUCTED else "",
)
distance = np.arange(tau + 1)  # k = τ − t: how many steps before the loss

# Overflow and underflow, named by the first step they reached.
nonfinite = 0
for name in CELLS:
    flow = result[name]
    if flow["overflow_forward"] is not None:
        st.error(t("recurrent.overflow.forward", model=name, step=flow["overflow_forward"]))
    if flow["overflow_backward"] is not None:
        step = flow["overflow_backward"]
        st.error(t("recurrent.overflow.backward", model=name, step=step, distance=tau - step))
    nonfinite += sum(chartable(flow[k]) for k in ("grad_H", "grad_X", "H"))
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

# 1. Gradient against distance --------------------------------------------------------------
st.subheader(t("recurrent.distance.title"))
hover = [labels[tau - k] for k in distance]
curves = {name: (distance, result[name]["grad_X"][tau::-1]) for name in result}
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


def _at(name: str, k: int) -> float:
    values = result[name]["grad_X"][tau::-1]
    return float(values[min(k, tau)])


far = min(tau, 50)
st.caption(
    t(
        "recurrent.distance.explain",
        far=far,
        rnn=_at("RNN", far),
        lstm=_at("LSTM", far),
        gru=_at("GRU", far),
        transformer=_at("Transformer", far),
        rnn0=_at("RNN", 0),
        transformer0=_at("Transformer", 0),
    )
)

# 4. Theory: r^k against the RNN, and the step Jacobians -------------------------------------
st.subheader(t("recurrent.theory.title"))
trained = s["weights"] != CONSTRUCTED
# Trained weights set no r: it is their own W_hh's largest singular value, not the slider's.
r = runs.trained_radius(_folder(s["weights"]), s["weights"]) if trained else settings.radius
theory = gf.linear_orthogonal_theory(r, tau)
formula = t("recurrent.theory.formula", r=r)
rnn_line = t(f"recurrent.theory.{'trained' if trained else 'yours'}")
rnn_grad = result["RNN"]["grad_H"][tau::-1]
theory_curves = {formula: (distance, theory[::-1]), rnn_line: (distance, rnn_grad)}
if not trained:
    # The linear orthogonal RNN is built from the controls: it checks r^k, and only the
    # constructed weights share its r (with trained ones it would be another network).
    measured = runs.linear_orthogonal(
        length=n_steps, tau=tau, num_hiddens=s["num_hiddens"], radius=s["radius"]
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.abs(measured[tau::-1] / theory[::-1] - 1)
    checked = min(tau, 100)
    finite_relative = relative[: checked + 1][np.isfinite(relative[: checked + 1])]
    worst = float(finite_relative.max()) if finite_relative.size else float("nan")
    theory_curves = {t("recurrent.theory.measured"): (distance, measured[tau::-1])} | theory_curves
theory_col, jacobian_col = st.columns(2)
with theory_col:
    show_chart(
        lines_figure(
            theory_curves,
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
        summary=lines_summary(theory_curves),
        data={"distance": distance} | {name: y for name, (_, y) in theory_curves.items()},
    )
with jacobian_col:
    if spectra_on:
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
    else:
        st.button(
            t("recurrent.jacobian.run"),
            key="rc_spectra_go",
            on_click=set_state,
            args=({SPECTRA_KEY: True},),
            icon=":material/functions:",
        )
        st.caption(t("recurrent.jacobian.pending", n=n_steps))


def _median(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else float("nan")


st.caption(
    t("recurrent.theory.trained_explain", r=r)
    if trained
    else t("recurrent.theory.explain", r=r, checked=checked, worst=worst, act=settings.activation)
)
if spectra_on:
    jacobian_text = t(
        "recurrent.jacobian.explain",
        rnn=_median(spectra["RNN"][1]),
        lstm=_median(spectra["LSTM"][1]),
        gru=_median(spectra["GRU"][1]),
        r=r,
    )
    sampled = {name: len(steps) for name, (steps, _) in spectra.items() if len(steps) < n_steps}
    if sampled:
        counts = ", ".join(f"{m}: {k}" for m, k in sampled.items())
        jacobian_text += " " + t("recurrent.jacobian.sampled", sampled=counts, n=n_steps)
    st.caption(jacobian_text)

# 5. Clipping --------------------------------------------------------------------------------
st.subheader(t("recurrent.clip.title"))
focus = linked_selectbox(st, t("recurrent.focus"), tuple(CELLS), "RNN", key="rc_model")
summary = gf.clip_summary(result[focus]["grad_X_rows"], tau, settings.clip)
without, with_clip = t("recurrent.clip.without"), t("recurrent.clip.with", c=settings.clip)
clip_left, clip_right = st.columns(2)
totals = {without: summary["total"], with_clip: summary["norm_clipped"]}
shares = {without: summary["early_share"], with_clip: summary["early_share_clipped"]}
clip_curves = {
    without: (distance, summary["per_step"][::-1]),
    with_clip: (distance, summary["per_step_clipped"][::-1]),
}
with clip_left:
    show_chart(
        clipping_figure(
            totals,
            shares,
            settings.clip,
            title=t("recurrent.clip.figure", model=focus),
            total_title=t("recurrent.clip.total"),
            share_title=t("recurrent.clip.share", n_early=summary["n_early"]),
        ),
        key="rc_clip_bars",
        summary=clipping_summary(totals, shares, summary["n_early"]),
        data={
            "case": list(totals),
            "total_norm": list(totals.values()),
            "early_share": list(shares.values()),
        },
    )
with clip_right:
    show_chart(
        lines_figure(
            clip_curves,
            title=t("recurrent.clip.lines", model=focus),
            x_title=t("recurrent.distance.axis"),
            y_title="‖∂L/∂X_t‖",
            colors={without: BLUE, with_clip: ORANGE},
            hline=settings.clip,
        ),
        key="rc_clip_lines",
        summary=lines_summary(clip_curves),
        data={"distance": distance} | {name: y for name, (_, y) in clip_curves.items()},
    )
if np.isfinite(summary["total"]):
    st.caption(
        t(
            "recurrent.clip.explain",
            total=summary["total"],
            clipped=summary["norm_clipped"],
            c=settings.clip,
            share=100 * summary["early_share"],
            share_clipped=100 * summary["early_share_clipped"],
            n_early=summary["n_early"],
        )
    )
else:
    st.caption(t("recurrent.clip.nonfinite", c=settings.clip))

# 2. The gradient per hidden unit -------------------------------------------------------------
st.subheader(t("recurrent.units.title"))
units = result[focus]["grad_H_units"][: tau + 1]
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

# 3. Gates -----------------------------------------------------------------------------------
st.subheader(t("recurrent.gates.title"))
lstm_col, gru_col = st.columns(2)
with lstm_col:
    lstm = result["LSTM"]
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
    gru = result["GRU"]
    show_chart(
        gates_figure(
            {k: gru[k] for k in ("Z", "R", "H")}, drawn_labels, title=t("recurrent.gates.gru")
        ),
        key="rc_gates_gru",
        summary=means_summary({k: gru[k] for k in ("Z", "R", "H")}),
        data={"step": labels, "unit": np.arange(gru["Z"].shape[1])}
        | {k: gru[k] for k in ("Z", "R", "H")},
    )
forget_mean = float(np.nanmean(np.where(np.isfinite(lstm["F"]), lstm["F"], np.nan)))
n_units = lstm["F"].shape[1]
gate_text = t(
    "recurrent.gates.explain",
    forget=forget_mean,
    bias=settings.forget_bias,
    shown=min(32, n_units),
    n=n_units,
    z=float(np.nanmean(gru["Z"])),
)
if s["weights"] != CONSTRUCTED:
    # A latched unit keeps its cell through the wait between reading the symbols and
    # recalling them: its forget gate stays open at every step of it.
    wait = slice(int(s["task"].get("length", 0)), int(s["task"].get("lag", n_steps)))
    latched = int((np.nan_to_num(lstm["F"][wait]) > LATCHED).all(axis=0).sum())
    gate_text = t(
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
st.caption(gate_text)
