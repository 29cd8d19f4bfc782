"""The visitor's sentence through the trained language models: how surprised the n-gram
baseline, the LSTM and the Transformer are by each character, in bits."""

from __future__ import annotations

import numpy as np
import streamlit as st

from components.i18n import t
from components.labels import escape_label, token_labels
from components.recurrent import lines_figure
from components.training import NGRAM_COLOR
from components.ui.charts import show_chart
from components.ui.runs.training import BEST_NGRAM, LM_TASK, surprisal
from components.ui.tour import offer
from models.nets.task_models import LABELS


def draw(text: str) -> None:
    st.subheader(t("training.yours.title"))
    chars = list(text[: LM_TASK.context])
    if len(text) > LM_TASK.context:
        st.info(t("training.yours.cut", n=LM_TASK.context))
    if len(chars) < 2:
        st.info(t("training.yours.short"))
        return
    ngram_name = t("training.ppl.ngram", n=BEST_NGRAM)
    bits = {
        ngram_name if kind == "ngram" else LABELS[kind]: values
        for kind, values in surprisal("".join(chars)).items()
    }
    offer("training.surprisal", bits=bits, ngram=ngram_name, chars="".join(chars))
    unknown = sorted(set(chars).difference(LM_TASK.vocab))
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
