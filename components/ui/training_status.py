"""The visitor's training run, seen from every page while it goes on.

A run whose page stops asking about it is stopped (models/training/jobs.py): that is how the
server learns that its visitor has gone. A visitor who starts a run and reads another
lesson meanwhile has not gone, so every page other than the lab asks about the run too,
in the sidebar, and says how far it is.
"""

from __future__ import annotations

import streamlit as st

from components.i18n import t
from components.ui.client import SESSION_KEY
from models.training import jobs

JOB_KEY = "training_job"
# How often another page asks: well inside the shortest time a run may go unasked
# (job_limits: 15 s waiting, 45 s training).
ASK_EVERY_S = 5.0


def _unfinished_run() -> tuple[str, str] | None:
    job_id, session = st.session_state.get(JOB_KEY), st.session_state.get(SESSION_KEY)
    return (job_id, session) if job_id and session else None


def show_run_in_sidebar() -> None:
    """While this session's run waits or trains: its progress in the sidebar, asked for
    every ASK_EVERY_S seconds, with a link back to the lab. Nothing otherwise."""
    run = _unfinished_run()
    if run is None:
        return
    from components.ui.runs.shared import load_job_manager

    manager = load_job_manager()
    view = manager.snapshot(*run)
    if view is None or view.status in jobs.FINISHED:
        return

    @st.fragment(run_every=ASK_EVERY_S)
    def progress() -> None:
        now = manager.snapshot(*run)  # also what keeps the run going
        if now is None or now.status in jobs.FINISHED:
            st.caption(t("training.sidebar.finished"))
        elif now.status == jobs.QUEUED:
            st.caption(t("training.sidebar.queued", position=now.queue_position))
        else:
            st.progress(
                now.step / max(now.total, 1),
                text=t("training.sidebar.running", step=now.step, total=now.total),
            )
        st.page_link("pages/training.py", label=t("training.sidebar.open"), icon="🏋️")

    with st.sidebar:
        progress()
