"""Inside the trained induction Transformer: the previous-token head and the induction head
it learned, found by their scores (models/analysis/probes.py)."""

from __future__ import annotations

import streamlit as st

from components.i18n import t
from components.training import head_grids_figure
from components.ui.charts import show_chart
from components.ui.runs.training import INDUCTION_TASK, induction_heads
from components.ui.tour import held_back, offer, show_held_back
from models.analysis.probes import circuit

# Both scores in one chart: one summary, one download of both grids.
SCORES = ("induction", "previous_token")


def draw() -> None:
    st.subheader(t("training.heads.title"))
    heads, induction_accuracy = induction_heads()
    best = circuit(heads)
    offer("training.heads", **{name: heads[name] for name in SCORES})
    explain = t(
        "training.heads.explain",
        length=INDUCTION_TASK.length,
        shortest=INDUCTION_TASK.min_repeat,
        longest=INDUCTION_TASK.max_repeat,
    )
    # The chart and the caption that names the heads wait for the learner's answer.
    if held_back("tr_heads"):
        show_held_back()
        st.caption(explain)
        return
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
    (i_layer, i_head, i_score), (p_layer, p_head, p_score) = (
        best["induction"],
        best["previous_token"],
    )
    # One caption of two paragraphs: how the scores are measured, then what they show.
    st.caption(
        explain
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
