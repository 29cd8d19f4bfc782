"""The leakage proof on the visitor's sentence: change one token and see which earlier
positions' outputs move, with the causal mask and without any."""

from __future__ import annotations

import streamlit as st

from components.i18n import t
from components.labels import token_labels
from components.masks import leakage_figure
from components.ui.charts import show_chart
from components.ui.linked import linked_selectbox, linked_slider
from components.ui.parts.masks.reading import SHOWN_TOKENS
from components.ui.runs import masks as runs
from components.ui.runs.shared import load_tokenizer
from components.ui.tour import offer

REPLACEMENTS = ("elephant", "never", "cold", "猫", "?")


def draw(ids: list[int], tokens: list[str]) -> None:
    st.subheader(t("masks.leak.title"))
    n = len(ids)
    if n < 2:
        st.info(t("masks.leak.too_short"))
    else:
        pos_col, word_col = st.columns(2)
        # Fixed bounds keep a shared link meaningful; past the sentence's end means its last token.
        chosen = linked_slider(
            pos_col, t("masks.leak.position"), 1, SHOWN_TOKENS - 1, SHOWN_TOKENS - 1, key="leak_pos"
        )
        position = min(chosen, n - 1)
        if chosen != position:
            pos_col.caption(t("masks.leak.past_end", chosen=chosen, n=n, position=position))
        word = linked_selectbox(
            word_col, t("masks.leak.word"), REPLACEMENTS, "elephant", key="leak_word"
        )
        new_id = load_tokenizer().token_id(word)
        if new_id == ids[position]:
            new_id = load_tokenizer().token_id("never" if word != "never" else "cold")
        changes = runs.leakage_by_mask(tuple(ids), position, new_id)
        offer("masks.leakage", position=position, tokens=tokens, **changes)
        edited_tokens = list(tokens)
        edited_tokens[position] = load_tokenizer().id_to_token(new_id)
        st.text(" · ".join(edited_tokens))
        show_chart(
            leakage_figure(
                {t(f"masks.kind.{k}"): v for k, v in changes.items()},
                token_labels(tokens),
                position,
                title=t("masks.leak.figure", position=position),
                y_title=t("masks.leak.axis"),
                edited_text=t("masks.leak.edited"),
            ),
            key="mask_leakage",
            summary=t(
                "masks.leak.summary",
                causal=float(changes["causal"][:position].max()),
                bidirectional=float(changes["none"][:position].max()),
                position=position,
            ),
            data={"token": tokens, **{f"max_change_{k}": v for k, v in changes.items()}},
        )
        before = slice(0, position)
        st.caption(
            t(
                "masks.leak.explain",
                position=position,
                causal=float(changes["causal"][before].max()),
                identical=int((changes["causal"][before] == 0).sum()),
                earlier=position,
                bidirectional=float(changes["none"][before].max()),
            )
        )
