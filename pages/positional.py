"""Lesson: positional encodings, measured on the visitor's sentence and a small Transformer.

Its parts are in components/ui/parts/positional/, its cached runs in
components/ui/runs/positional.py."""

import streamlit as st

from components.i18n import t
from components.ui.frame import enter_lesson
from components.ui.parts import open_part
from components.ui.parts.positional import rope, sinusoidal, trained
from components.ui.parts.positional import sentence as sentence_part
from components.ui.runs.shared import load_tokenizer, load_transformer
from components.ui.sentence import sentence_or_stop, show_notes
from components.ui.visitor_links import visitor_id
from models.nets.tokenizer import MAX_TOKENS
from models.text import tokenization_notes

enter_lesson()


# --- shared controls: the lesson's model and the visitor's sentence ---
cfg = load_transformer("sinusoidal").cfg
st.header(t("positional.title"))
# The opening: two sentences; what the models are and where the numbers come from, a
# click away.
st.markdown(t("positional.lead"))
with st.expander(t("positional.about")):
    st.caption(t("positional.intro", **cfg.sizes()))

sentence = sentence_or_stop()
# Read whatever tab is open: a visitor key in the link is taken out of the address bar
# (and a bad one noted) at once, not only when the tab with the trained models opens.
me = visitor_id()

# --- the run every part shares: the sentence's tokens ---
encoded = load_tokenizer().encode(sentence.text, MAX_TOKENS)
show_notes(
    tokenization_notes(
        len(encoded.ids),
        encoded.n_tokens_before_cap,
        MAX_TOKENS,
        encoded.unknown_spans(sentence.text),
        vocabulary="own_",
    )
)
tokens = list(encoded.tokens)
count, line = st.columns([1, 9])
count.caption(t("positional.tokens", n=len(tokens)))
line.text(" · ".join(tokens))

# --- the parts ---
# One tab at a time: a keystroke redraws the open tab, not the whole lesson. The first
# tab holds what reads the visitor's sentence; the others read only their own controls.
view, panel = open_part(
    "positional",
    opened_by={
        "sinusoidal": ("pe_offset",),
        "rope": ("pe_shift", "pe_built"),
        "trained": ("pe_trained", "pe_trained_head"),
    },
)
with panel:
    if view == "sentence":
        sentence_part.draw(cfg, tuple(encoded.ids), tokens)
    elif view == "sinusoidal":
        sinusoidal.draw(cfg)
    elif view == "rope":
        rope.draw(cfg, len(tokens))
    else:
        trained.draw(me)
