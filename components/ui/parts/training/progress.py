"""The run as it goes: waiting, training or done; its loss and score curves, step by step,
and the held-out results once it has finished (drawn by the run's panel, run.py)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.recurrent import lines_figure
from components.ui.charts import show_chart
from components.ui.visitor_links import store_refusal_shown
from models.training import jobs
from models.training.task_base import Task


def _curves(view: jobs.JobView, field: str) -> dict:
    return {
        t(f"training.model.{kind}"): (
            np.asarray(c.steps),
            np.asarray(getattr(c, field), dtype=np.float64),
        )
        for kind, c in view.curves.items()
    }


def _last(curves: dict, digits: str) -> str:
    return " · ".join(f"{name} {y[-1]:{digits}}" for name, (_, y) in curves.items() if len(y))


def draw(view: jobs.JobView, run_task: Task) -> None:
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
                t("training.column.model"): [t(f"training.model.{k}") for k in view.results],
                t("training.column.loss"): [r["loss"] for r in view.results.values()],
                t(f"training.metric.{run_task.metric}"): [
                    r.get(run_task.metric, float("nan")) for r in view.results.values()
                ],
            },
            hide_index=True,
        )
