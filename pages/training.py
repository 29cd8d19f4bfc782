"""Lesson: train RNN, LSTM, GRU and Transformer side by side, and what training measured."""

import json
import math
import secrets

import numpy as np
import streamlit as st

from components.i18n import t
from components.labels import escape_label, token_labels
from components.recurrent import lines_figure
from components.training import (
    NGRAM_COLOR,
    bars_figure,
    head_grids_figure,
    perplexity_colors,
)
from components.ui.charts import show_chart
from components.ui.client import client_address
from components.ui.frame import enter_lesson
from components.ui.linked import linked_multiselect, linked_selectbox, linked_slider, set_state
from components.ui.runs.shared import load_checkpoint, load_job_manager, load_visitor_store
from components.ui.sentence import sentence_or_stop
from components.ui.training_status import JOB_KEY, SESSION_KEY
from components.ui.visitor_links import (
    VISITOR_FROM_LINK,
    store_refusal_shown,
    visitor_id,
    visitor_link,
)
from models.analysis.probes import circuit
from models.nets.task_models import LABELS
from models.training import job_limits, jobs
from models.training.tasks import TASKS, make_task
from models.training.train import (
    CHECKPOINT_DIR,
    COPY_LAG_FILE,
    LM_BASELINE_FILE,
    TARGETS,
    checkpoint_name,
)

enter_lesson()

MAX_STEPS = 1500
START_REQUESTED, STOP_REQUESTED = "_tr_start_requested", "_tr_stop_requested"

st.header(t("training.title"))
st.caption(t("training.intro", running=jobs.MAX_RUNNING))
sentence = sentence_or_stop()

# Controls --------------------------------------------------------------------------------
st.subheader(t("training.controls.title"))
# The models' column is the widest: its chips (up to four) stay on one line, also on a
# projector's larger type.
col_task, col_models, col_run = st.columns([1.3, 1.9, 1])
task_name = linked_selectbox(
    col_task,
    t("training.controls.task"),
    tuple(TASKS),
    "copy",
    key="tr_task",
    format_func=lambda name: t(f"training.task.{name}"),
)
lag = linked_slider(
    col_task,
    t("training.controls.lag"),
    5,
    60,
    20,
    key="tr_lag",
    disabled=task_name != "copy",
)
task = make_task(task_name, lag=lag) if task_name == "copy" else make_task(task_name)
col_task.caption(t(f"training.about.{task_name}"))
kinds = linked_multiselect(
    col_models,
    t("training.controls.models"),
    task.models,
    list(task.models),
    key=f"tr_models_{task_name}",
    max_selections=len(task.models),
    format_func=lambda kind: LABELS[kind],
)
steps = linked_slider(col_run, t("training.controls.steps"), 10, MAX_STEPS, 300, key="tr_steps")
seed = linked_slider(col_run, t("training.controls.seed"), 0, 9, 0, key="tr_seed")

manager = load_job_manager()
store = load_visitor_store()
me = visitor_id()
session = st.session_state.setdefault(SESSION_KEY, secrets.token_hex(16))
# A click is kept as a request in the session until the page acts on it: the button's own
# True lasts one run, which the frame may start again before the page draws (frame.py).
col_models.button(
    t("training.start"),
    type="primary",
    disabled=not kinds,
    key="tr_start",
    on_click=set_state,
    args=({START_REQUESTED: True},),
)
if st.session_state.pop(START_REQUESTED, False) and kinds:
    request = jobs.RunRequest(task.config(), tuple(kinds), steps, seed)
    requester = job_limits.Requester(session, client_address(), me)
    try:
        st.session_state[JOB_KEY] = manager.submit(requester, request).id
    except jobs.QueueFull:
        st.error(t("training.queue_full"))
    except job_limits.Refused as refused:
        minutes = max(1, math.ceil((refused.retry_after_s or 0) / 60))
        st.error(
            t(f"training.refused.{refused.limit}", allowed=refused.allowed, minutes=minutes)
            if refused.limit != job_limits.TOO_BIG
            else t("training.refused.too_big", allowed=refused.allowed, cost=request.cost)
        )
if not kinds:
    col_models.info(t("training.pick_models"))
store_refusal_shown(st.warning)
limits = manager.limits
st.caption(
    t(
        "training.limits",
        per_client=limits.per_client,
        budget=limits.steps_per_hour,
        wait=limits.queued_timeout_s,
        reconnect=limits.reconnect_s,
    )
)


def _curves(view: jobs.JobView, field: str) -> dict:
    return {
        LABELS[kind]: (np.asarray(c.steps), np.asarray(getattr(c, field), dtype=np.float64))
        for kind, c in view.curves.items()
    }


def _last(curves: dict, digits: str) -> str:
    return " · ".join(f"{name} {y[-1]:{digits}}" for name, (_, y) in curves.items() if len(y))


def _draw_run(view: jobs.JobView) -> None:
    run_task = task  # the curves are of the run started from these controls
    if view.status == jobs.QUEUED:
        st.info(t("training.queued", position=view.queue_position))
    elif view.status == jobs.RUNNING:
        st.progress(
            view.step / view.total, text=t("training.progress", step=view.step, total=view.total)
        )
    else:
        st.success(t(f"training.status.{view.status}", step=view.step, seconds=view.seconds))
    if view.error and not store_refusal_shown(st.error):  # why saving failed, if it did
        st.error(t("training.failed"))
    if view.reason in (jobs.UNPOLLED, jobs.CLEARED):
        st.caption(t(f"training.reason.{view.reason}"))
    loss, score = _curves(view, "loss"), _curves(view, "score")
    if not any(len(x) for x, _ in loss.values()):
        return
    left, right = st.columns(2)
    with left:
        show_chart(
            lines_figure(
                loss,
                title=t("training.loss.figure"),
                x_title=t("training.step"),
                y_title=t("training.loss.axis"),
            ),
            key="tr_loss",
            summary=t("training.loss.summary", step=view.step, values=_last(loss, ".4f")),
            data={name: y for name, (_, y) in loss.items()},
        )
    with right:
        metric = run_task.metric
        show_chart(
            lines_figure(
                score,
                title=t(f"training.score.figure.{metric}"),
                x_title=t("training.step"),
                y_title=t(f"training.metric.{metric}"),
                log_y=metric == "mse",
            ),
            key="tr_score",
            summary=t("training.score.summary", step=view.step, values=_last(score, ".3f")),
            data={name: y for name, (_, y) in score.items()},
        )
    if view.results:
        st.caption(t("training.held_out"))
        st.dataframe(
            {
                t("training.column.model"): [LABELS[k] for k in view.results],
                t("training.column.loss"): [r["loss"] for r in view.results.values()],
                t(f"training.metric.{run_task.metric}"): [
                    r.get(run_task.metric, float("nan")) for r in view.results.values()
                ],
            },
            hide_index=True,
        )


job_id = st.session_state.get(JOB_KEY)
first_view = manager.snapshot(job_id, session) if job_id else None
live = first_view is not None and first_view.status not in jobs.FINISHED


@st.fragment(run_every=1.0 if live else None)
def run_panel() -> None:
    view = manager.snapshot(job_id, session) if job_id else None  # also the heartbeat
    if view is None:
        st.info(t("training.idle"))
        return
    if view.status not in jobs.FINISHED:
        st.button(
            t("training.stop"), key="tr_stop", on_click=set_state, args=({STOP_REQUESTED: True},)
        )
    if st.session_state.pop(STOP_REQUESTED, False):
        manager.stop(view.id, session)
        view = manager.snapshot(view.id, session)
    _draw_run(view)
    if live and view.status in jobs.FINISHED:
        st.rerun()  # the whole page: stop polling, list the new models


run_panel()

# The visitor's models -----------------------------------------------------------------------
st.subheader(t("training.mine.title"))
mine = store.list(me)
if mine:
    st.dataframe(
        {
            t("training.column.name"): [m.name for m in mine],
            t("training.column.model"): [LABELS.get(m.kind, m.kind) for m in mine],
            t("training.column.metrics"): [
                ", ".join(f"{k} {v:.4g}" for k, v in m.metrics.items()) for m in mine
            ],
        },
        hide_index=True,
    )
st.caption(
    t(
        "training.mine.explain",
        count=len(mine),
        mb=store.max_bytes / 2**20,
        total_mb=store.max_total / 2**20,
        hours=store.max_age / 3600,
    )
)
if not mine and st.session_state.get(VISITOR_FROM_LINK):
    st.info(t("training.key.empty", hours=store.max_age / 3600))
# A link only once there is something to bring back, so a session that trains nothing makes
# none. Folded away: a page on a projector must not show the class this visitor's link.
if mine and (link := visitor_link("training")):
    with st.expander(t("training.key.title")):
        st.caption(t("training.key.explain", hours=store.max_age / 3600))
        st.code(link, language=None)

# Measured: accuracy against lag on the copy task -------------------------------------------
st.subheader(t("training.lag.title"))
lag_table = json.loads((CHECKPOINT_DIR / COPY_LAG_FILE).read_text(encoding="utf-8"))
lags = np.asarray(lag_table["lags"])
by_lag = {
    LABELS[kind]: (lags, np.asarray([row[str(lag)] for lag in lags], dtype=np.float64))
    for kind, row in lag_table["accuracy"].items()
}
show_chart(
    lines_figure(
        by_lag,
        title=t("training.lag.figure"),
        x_title=t("training.lag.axis"),
        y_title=t("training.metric.accuracy"),
        log_y=False,
        hline=lag_table["chance"],
    ),
    key="tr_lag_accuracy",
    summary=t(
        "training.lag.summary",
        lag=int(lags[-1]),
        values=" · ".join(f"{name} {y[-1]:.0%}" for name, (_, y) in by_lag.items()),
    ),
    data={"lag": lags, **{name: y for name, (_, y) in by_lag.items()}},
)
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
targets = [
    t(
        "training.target",
        task=t(f"training.task.{target.task}"),
        model=LABELS[target.kind],
        metric=t(f"training.metric.{target.metric}"),
        sign="≤" if target.metric == "mse" else "≥",
        threshold=target.threshold,
    )
    for target in TARGETS
]
with st.expander(t("training.targets.title")):
    st.text("\n".join(targets))
    st.caption(t("training.targets.command"))
    st.code("python -m models.training.train --all", language="bash")

# The n-gram baseline ----------------------------------------------------------------------
st.subheader(t("training.ngram.title"))
baseline = json.loads((CHECKPOINT_DIR / LM_BASELINE_FILE).read_text(encoding="utf-8"))
orders = np.asarray(baseline["orders"])
unseen = np.asarray(baseline["unseen_share"], dtype=np.float64)
sparse_col, ppl_col = st.columns(2)
with sparse_col:
    unseen_name = t("training.ngram.unseen")
    show_chart(
        lines_figure(
            {unseen_name: (orders, unseen)},
            title=t("training.ngram.figure"),
            x_title="n",
            y_title=unseen_name,
            log_y=False,
        ),
        key="tr_ngram_unseen",
        summary=t(
            "training.ngram.summary",
            first=int(orders[0]),
            low=unseen[0],
            last=int(orders[-1]),
            high=unseen[-1],
        ),
        data={"n": orders, "unseen_share": unseen},
    )
with ppl_col:
    labels = [t("training.ppl.ngram", n=int(n)) for n in orders] + [
        LABELS[k] for k in baseline["neural_perplexity"]
    ]
    values = baseline["ngram_perplexity"] + list(baseline["neural_perplexity"].values())
    best = int(np.argmin(values))
    show_chart(
        bars_figure(
            labels,
            values,
            title=t("training.ppl.figure"),
            y_title=t("training.ppl.axis"),
            colors=perplexity_colors(labels),
        ),
        key="tr_perplexity",
        summary=t("training.ppl.summary", best=labels[best], value=values[best]),
        data={"model": labels, "perplexity": values},
    )
neural = baseline["neural_perplexity"]
best_order = int(np.argmin(baseline["ngram_perplexity"]))
st.caption(
    t(
        "training.ngram.explain",
        train=baseline["train_chars"],
        held=baseline["held_out_chars"],
        best_n=int(orders[best_order]),
        best_ngram=baseline["ngram_perplexity"][best_order],
        best_neural=LABELS[min(neural, key=neural.get)],
        best_neural_ppl=min(neural.values()),
        worst_neural=LABELS[max(neural, key=neural.get)],
        worst_neural_ppl=max(neural.values()),
    )
)

# Inside the trained induction Transformer ----------------------------------------------------
st.subheader(t("training.heads.title"))
induction_task = make_task("induction")


@st.cache_data(show_spinner=False)
def induction_heads() -> tuple[dict, float]:
    """The shipped model's head scores and its recorded held-out accuracy on the repeat."""
    from models.analysis.probes import head_scores

    stem = str(CHECKPOINT_DIR / checkpoint_name(induction_task, "transformer"))
    loaded = load_checkpoint(stem)
    return head_scores(loaded.model, induction_task), loaded.metrics["accuracy"]


heads, induction_accuracy = induction_heads()
best = circuit(heads)
# Both scores in one chart: one summary, one download of both grids.
SCORES = ("induction", "previous_token")
show_chart(
    head_grids_figure(
        {t(f"training.heads.{name}"): heads[name] for name in SCORES},
        x_title=t("training.heads.head"),
        y_title=t("training.heads.layer"),
    ),
    key="tr_heads",
    summary=" · ".join(
        t(
            f"training.heads.summary_{name}",
            layer=best[name][0],
            head=best[name][1],
            score=best[name][2],
        )
        for name in SCORES
    ),
    data={f"{name}_layer{i}": row for name in SCORES for i, row in enumerate(heads[name])},
)
(i_layer, i_head, i_score), (p_layer, p_head, p_score) = best["induction"], best["previous_token"]
# One caption of two paragraphs: how the scores are measured, then what they show.
st.caption(
    t(
        "training.heads.explain",
        length=induction_task.length,
        shortest=induction_task.min_repeat,
        longest=induction_task.max_repeat,
    )
    + "\n\n"
    + t(
        "training.heads.circuit",
        p_layer=p_layer,
        p_head=p_head,
        p_score=p_score,
        i_layer=i_layer,
        i_head=i_head,
        i_score=i_score,
        accuracy=induction_accuracy,
    )
)

# Your sentence through the trained language models -----------------------------------------
st.subheader(t("training.yours.title"))
lm_task = make_task("lm")
BEST_NGRAM = 4


@st.cache_resource(show_spinner=False)
def ngram_model():
    from models.analysis.ngram import WittenBell

    return WittenBell(lm_task.split()[0], BEST_NGRAM, lm_task.vocab)


@st.cache_data(max_entries=64, show_spinner=False)
def surprisal(text: str) -> dict[str, np.ndarray]:
    from models.analysis.probes import char_surprisal, ngram_surprisal

    out = {"ngram": ngram_surprisal(ngram_model(), text)}
    for kind in ("lstm", "transformer"):
        stem = str(CHECKPOINT_DIR / checkpoint_name(lm_task, kind))
        out[kind] = char_surprisal(load_checkpoint(stem).model, text, lm_task.vocab)
    return out


chars = list(sentence.text[: lm_task.context])
if len(sentence.text) > lm_task.context:
    st.info(t("training.yours.cut", n=lm_task.context))
if len(chars) < 2:
    st.info(t("training.yours.short"))
else:
    ngram_name = t("training.ppl.ngram", n=BEST_NGRAM)
    bits = {
        ngram_name if kind == "ngram" else LABELS[kind]: values
        for kind, values in surprisal("".join(chars)).items()
    }
    unknown = sorted(set(chars).difference(lm_task.vocab))
    if unknown:
        st.warning(t("training.yours.unknown", count=len(unknown)))
        st.text(" ".join(unknown))
    labels = token_labels(chars)[1:]
    # Hover shows the characters read before each one, so the context is visible.
    context = ["".join(chars[max(0, i - 12) : i + 1]) for i in range(1, len(chars))]
    positions = np.arange(1, len(chars))
    show_chart(
        lines_figure(
            {name: (positions, values) for name, values in bits.items()},
            title=t("training.yours.figure"),
            x_title=t("training.yours.axis"),
            y_title=t("training.yours.bits"),
            log_y=False,
            colors={ngram_name: NGRAM_COLOR},
            hover_labels={name: [escape_label(c) for c in context] for name in bits},
        ),
        key="tr_yours",
        summary=t(
            "training.yours.summary",
            values=" · ".join(
                f"{name} {np.nanmean(v):.2f}" for name, v in bits.items() if np.isfinite(v).any()
            ),
        ),
        data={"character": labels, **bits},
    )
    st.caption(t("training.yours.explain"))
