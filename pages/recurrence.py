"""Lesson: recurrence returns. Linear attention, retention and a selective state space, on the
visitor's sentence, beside the RNN and the Transformer."""

import streamlit as st

from components.i18n import t
from components.ui.frame import enter_lesson
from components.ui.parts import open_part
from components.ui.parts.recurrence import flow, patterns, reading, selective, trained, two_ways
from components.ui.runs import recurrence as runs
from components.ui.sentence import sentence_or_stop, show_notes, stop_page

enter_lesson()


st.header(t("recurrence.title"))
st.caption(t("recurrence.lead"))
sentence = sentence_or_stop()

# The cached run every part reads: the sentence's tokens, their vectors and the queries, keys
# and values of the lesson's random Transformer (components/ui/parts/recurrence/reading.py).
read = reading.read(sentence.text)
if read is None:
    st.info(t("recurrence.no_tokens"))
    stop_page()
show_notes(read.notes)
count_col, tokens_col, about_col = st.columns([1.3, 8, 4], vertical_alignment="center")
count_col.caption(t("recurrence.tokens", n=read.n_tokens))
tokens_col.text(" · ".join(read.tokens))
with about_col.expander(t("recurrence.about"), icon=":material/menu_book:"):
    st.markdown(t("recurrence.about_text", **runs.lesson_transformer().cfg.sizes()))
    st.caption(t("recurrence.parts_hint"))

# The parts, one tab each: only the open one is drawn, so a keystroke reruns one part.
# A link that sets a part's own control opens that part (the head is shared by ① and ②);
# ⑤ reads trained models on their own task, and draws whatever the sentence is.
part, tab = open_part(
    "recurrence",
    opened_by={
        "two_ways": ("rr_chunk",),
        "patterns": ("rr_gamma",),
        "selective": ("rr_dt_scale",),
        "trained": ("rr_seq",),
    },
)
with tab:
    if part == "two_ways":
        two_ways.draw(read)
    elif part == "patterns":
        patterns.draw(read)
    elif part == "selective":
        selective.draw(read)
    elif part == "flow":
        flow.draw(read)
    else:
        trained.draw(read)
