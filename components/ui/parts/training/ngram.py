"""The n-gram baseline on the visitor's sentence: how many of its n-grams the training text
never contains, beside the held-out text's; the perplexity of each n-gram order beside the
trained language models'; and what the bigram model expects after a character of the
sentence."""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import streamlit as st

from components.i18n import t
from components.recurrent import lines_figure
from components.training import NGRAM_COLOR, bars_figure, char_label, perplexity_colors
from components.ui.charts import show_chart
from components.ui.linked import linked_selectbox
from components.ui.runs.training import LM_TASK, bigram_next, sentence_unseen
from components.ui.tour import held_back, offer, show_held_back
from models.nets.task_models import LABELS
from models.training.train import CHECKPOINT_DIR, LM_BASELINE_FILE

AFTER_KEY = "tr_after"
_AFTER_TEXT = "_tr_after_text"


def _share(value: float) -> str:
    return f"{value:.0%}" if np.isfinite(value) else "–"


def draw(text: str) -> None:
    # A bold line, not a heading: the tab names the part, and the lab's first chart stays
    # in view at 1400×1000.
    st.markdown(f"**{t('training.ngram.title')}**")
    baseline = json.loads((CHECKPOINT_DIR / LM_BASELINE_FILE).read_text(encoding="utf-8"))
    orders = np.asarray(baseline["orders"])
    unseen = np.asarray(baseline["unseen_share"], dtype=np.float64)
    mine = sentence_unseen(text, tuple(int(n) for n in orders))
    offer("training.sparsity", orders=orders, held_out=unseen, sentence=mine, chars=text)
    sparse_col, ppl_col = st.columns(2)
    with sparse_col:
        held_name, mine_name = t("training.ngram.held_out"), t("training.ngram.yours")
        show_chart(
            lines_figure(
                {held_name: (orders, unseen), mine_name: (orders, mine)},
                title=t("training.ngram.figure"),
                x_title="n",
                y_title=t("training.ngram.unseen"),
                log_y=False,
                colors={held_name: NGRAM_COLOR},
            ),
            key="tr_ngram_unseen",
            summary=t(
                "training.ngram.summary",
                first=int(orders[0]),
                low=_share(unseen[0]),
                mine_low=_share(mine[0]),
                last=int(orders[-1]),
                high=_share(unseen[-1]),
                mine_high=_share(mine[-1]),
            ),
            data={"n": orders, "unseen_share": unseen, "your_sentence": mine},
        )
    with ppl_col:
        labels = [t("training.ppl.ngram", n=int(n)) for n in orders] + [
            LABELS[k] for k in baseline["neural_perplexity"]
        ]
        values = baseline["ngram_perplexity"] + list(baseline["neural_perplexity"].values())
        offer(
            "training.perplexity",
            orders=orders,
            ngram=np.asarray(baseline["ngram_perplexity"], dtype=np.float64),
            neural={LABELS[k]: v for k, v in baseline["neural_perplexity"].items()},
        )
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
    with st.expander(t("training.ngram.more")):
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
    _next_character(text)


def _after_option(text: str, position: int) -> str:
    return f"{position}: {char_label(text[position])}"


def _next_character(text: str) -> None:
    """The bigram model's likeliest characters after one character of the sentence."""
    st.subheader(t("training.next.title"))
    known = set(LM_TASK.vocab)
    positions = [i for i, c in enumerate(text) if c in known]
    if not positions:
        st.info(t("training.next.none"))
        return
    # A new sentence starts again from its first character; a link restores its own.
    if st.session_state.get(_AFTER_TEXT, text) != text:
        st.session_state[AFTER_KEY] = positions[0]
    st.session_state[_AFTER_TEXT] = text
    position = linked_selectbox(
        st,
        t("training.next.after"),
        positions,
        positions[0],
        key=AFTER_KEY,
        format_func=partial(_after_option, text),
    )
    after = text[position]
    chars, probs = bigram_next(after)
    sentence = tuple(dict.fromkeys(text[i] for i in positions))  # its characters, once each
    offer("training.next", after=after, chars=chars, probs=probs, sentence=sentence)
    if held_back("tr_ngram_next"):
        show_held_back()
        return
    labels = [char_label(c) for c in chars]
    show_chart(
        bars_figure(
            labels,
            probs,
            title=t("training.next.figure", after=char_label(after)),
            y_title=t("training.next.axis"),
            colors=[NGRAM_COLOR] * len(labels),
            value_format=".2f",
        ),
        key="tr_ngram_next",
        summary=t("training.next.summary", after=char_label(after), best=labels[0], p=probs[0]),
        data={"next": labels, "probability": probs},
    )
    st.caption(t("training.next.explain"))
