"""The training run: the task, the models, steps and seed; start, stop, and the run drawn
while it waits and trains (components/ui/parts/training/progress.py).

The run's panel asks the job manager about the run every second while it is unfinished:
that asking is also what keeps the run going (models/training/jobs.py stops a run nobody
asks about), so the panel is drawn on every run of the page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import streamlit as st

from components.i18n import t
from components.ui.client import client_address
from components.ui.linked import linked_multiselect, linked_selectbox, linked_slider, set_state
from components.ui.parts.training import progress
from components.ui.training_status import JOB_KEY
from components.ui.visitor_links import store_refusal_shown
from models.training import job_limits, jobs
from models.training.task_base import Task
from models.training.tasks import TASKS, make_task

MAX_STEPS = 1500
START_REQUESTED, STOP_REQUESTED = "_tr_start_requested", "_tr_stop_requested"


@dataclass(frozen=True)
class Choice:
    """What the controls ask for; the start button goes in `start_column`."""

    task: Task
    kinds: list[str]
    steps: int
    seed: int
    start_column: object


def _task_label(name: str) -> str:
    return t(f"training.task.{name}")


def _model_label(kind: str) -> str:
    return t(f"training.model.{kind}")


def controls(running: int) -> Choice:
    st.subheader(t("training.controls.title"))
    with st.expander(t("training.runs.title")):
        st.caption(t("training.runs.explain", running=running))
    # The models' column is the widest: its chips (up to four) stay on one line, also on a
    # projector's larger type.
    col_task, col_models, col_run = st.columns([1.3, 1.9, 1])
    task_name = linked_selectbox(
        col_task,
        t("training.controls.task"),
        tuple(TASKS),
        "copy",
        key="tr_task",
        format_func=_task_label,
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
        format_func=_model_label,
    )
    steps = linked_slider(col_run, t("training.controls.steps"), 10, MAX_STEPS, 300, key="tr_steps")
    seed = linked_slider(col_run, t("training.controls.seed"), 0, 9, 0, key="tr_seed")
    return Choice(task, kinds, steps, seed, col_models)


def _start(choice: Choice, manager: jobs.JobManager, requester: job_limits.Requester) -> None:
    """Start the run the controls ask for, or say why it is refused."""
    request = jobs.RunRequest(choice.task.config(), tuple(choice.kinds), choice.steps, choice.seed)
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


def draw(choice: Choice, manager: jobs.JobManager, session: str, me: str) -> None:
    """The start button, the limits, and the panel of this session's run."""
    # A click is kept as a request in the session until the page acts on it: the button's own
    # True lasts one run, which the frame may start again before the page draws (frame.py).
    choice.start_column.button(
        t("training.start"),
        type="primary",
        disabled=not choice.kinds,
        key="tr_start",
        on_click=set_state,
        args=({START_REQUESTED: True},),
    )
    if st.session_state.pop(START_REQUESTED, False) and choice.kinds:
        _start(choice, manager, job_limits.Requester(session, client_address(), me))
    if not choice.kinds:
        choice.start_column.info(t("training.pick_models"))
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
    _run_panel(choice.task, manager, session)


def _run_panel(task: Task, manager: jobs.JobManager, session: str) -> None:
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
                t("training.stop"),
                key="tr_stop",
                on_click=set_state,
                args=({STOP_REQUESTED: True},),
            )
        if st.session_state.pop(STOP_REQUESTED, False):
            manager.stop(view.id, session)
            view = manager.snapshot(view.id, session)
        progress.draw(view, task)  # the curves are of the run started from these controls
        if live and view.status in jobs.FINISHED:
            st.rerun()  # the whole page: stop polling, list the new models

    run_panel()
