"""Home: the road from n-grams to GPT on one screen, a table of what the app measures
about each kind of model, and where each lesson starts."""

import streamlit as st

from components.i18n import t
from components.lessons import LESSONS
from components.lineage import COLUMNS, cells, headers, lesson_for
from components.ui.runs.home import lineage_measurements
from models.analysis.lineage import LENGTHS, WIDTH

STAGES = ("ngram", "rnn", "lstm", "attention", "transformer", "bert_gpt")

st.header(t("home.title"))
st.markdown(t("home.intro"))

# The story, left to right --------------------------------------------------------------
# (In a keyed container: on a tablet, assets/styles/layout.css wraps it into rows of three.)
story = st.container(key="story")
for column, stage in zip(story.columns(len(STAGES)), STAGES, strict=True):
    with column.container(border=True, height="stretch"):
        st.markdown(f"**{t(f'home.stage.{stage}.name')}**")
        st.caption(t(f"home.stage.{stage}.text"))

# The measured table: one row per architecture, its lesson one click away -------------------
st.subheader(t("home.table_title"))
st.caption(t("home.table_intro", width=WIDTH))
measured = lineage_measurements()
widths = [2.2, 1.4, 1.4, 1.2, 1.2, 1.5]
titles = headers(LENGTHS)
with st.container(key="lineage_table"):
    for column, text in zip(
        st.columns(widths), [t("home.col.model"), *(titles[c] for c in COLUMNS)], strict=True
    ):
        column.markdown(f"**{text}**")
    for row in measured:
        row_cells = cells(row)
        first, *rest = st.columns(widths, vertical_alignment="center")
        link = lesson_for(row.architecture)
        name = t(f"home.row.{row.architecture}")
        if link is None:
            first.markdown(name)
            first.caption(t("home.table.no_lesson"))
        else:
            first.page_link(
                link.lesson.file,
                label=name,
                icon=link.lesson.icon,
                query_params=link.query or None,
            )
        for column, key in zip(rest, COLUMNS, strict=True):
            column.markdown(row_cells[key])
st.caption(t("home.table_explain"))

# The lessons ------------------------------------------------------------------------------
st.subheader(t("home.lessons_title"))
for lesson in LESSONS:
    with st.container(border=True):
        st.page_link(lesson.file, label=t(lesson.title_key), icon=lesson.icon)
        st.caption(t(lesson.blurb_key))
st.caption(t("home.offline"))
