"""Lesson: attention masks and attention step by step, on the visitor's sentence."""

import streamlit as st

from components.i18n import t
from components.ui.frame import enter_lesson
from components.ui.parts import open_part
from components.ui.parts.masks import cost, kv, masks, scale
from components.ui.parts.masks.reading import encode
from components.ui.runs.shared import load_transformer
from components.ui.sentence import sentence_or_stop, show_notes

enter_lesson()


# The lesson's shared controls: the sentence, as its random Transformer reads it.
cfg = load_transformer("sinusoidal").cfg
st.header(t("masks.title"))
st.caption(t("masks.intro"))

sentence = sentence_or_stop()
ids, tokens, notes = encode(sentence.text)
show_notes(notes)
count_col, tokens_col, about_col = st.columns([1.3, 8, 4], vertical_alignment="center")
count_col.caption(t("masks.tokens", n=len(ids)))
tokens_col.text(" · ".join(tokens))
with about_col.expander(t("masks.about")):
    st.caption(t("masks.intro_long", **cfg.sizes()))
    st.caption(t("masks.parts_hint"))

# The lesson's parts, one tab each: only the open one is computed, so typing reruns one
# part. The first holds what the masks do (step by step, and the leakage proof on the
# visitor's sentence); the others are labs.
part, tab = open_part(
    "masks",
    # A link that sets a lab's control (as links made before the tabs did) opens its tab.
    opened_by={"scale": ("scale_keys",), "kv": ("kv_context", "kv_new", "kv_step")},
)
with tab:
    if part == "masks":
        masks.draw(sentence.text, ids, tokens, cfg)
    elif part == "scale":
        scale.draw(cfg)
    elif part == "kv":
        kv.draw(ids, cfg)
    else:
        cost.draw()
