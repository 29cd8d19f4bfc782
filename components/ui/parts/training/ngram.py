"""The n-gram baseline: how quickly longer n-grams run out of examples, and the perplexity
of each n-gram order beside the trained language models'."""

from __future__ import annotations

import json

import numpy as np
import streamlit as st

from components.i18n import t
from components.recurrent import lines_figure
from components.training import bars_figure, perplexity_colors
from components.ui.charts import show_chart
from models.nets.task_models import LABELS
from models.training.train import CHECKPOINT_DIR, LM_BASELINE_FILE


def draw() -> None:
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
