"""Home: the choice first (the class tour across the lessons, or the lessons freely, each
with its own tour), then the road from n-grams to GPT, a table of what the app measures
about each kind of model, and the lessons with what each one's tour covers."""

import streamlit as st

from components.i18n import t
from components.lessons import LESSONS
from components.lineage import (
    CLASS_TOUR,
    COLUMNS,
    STAGES,
    cells,
    facts_text,
    headers,
    lesson_for,
    lessons_text,
    stage_link,
    step_lines,
    tour_facts,
    tour_heading,
)
from components.tours.schema import say, tour_of_lesson, tours
from components.ui.runs.home import lineage_measurements
from components.ui.tour import start_link
from models.analysis.lineage import LENGTHS, WIDTH

shipped = tours()


def what_it_covers(tour) -> None:
    """The tour's steps, one line each, folded: a teacher opens them to see the plan."""
    with st.expander(t("home.tour.covers", steps=len(tour.steps)), key=f"home_steps_{tour.id}"):
        st.markdown("\n".join(step_lines(tour)))


st.header(t("home.title"))
st.markdown(t("home.intro"))

# The choice: the class tour, or the lessons freely ----------------------------------------
tour_column, free_column = st.container(key="choice").columns(2)
class_tour = shipped.get(CLASS_TOUR)
if class_tour is not None:
    facts = tour_facts(class_tour)
    card = tour_column.container(border=True, height="stretch", key="choice_tour")
    with card:
        st.subheader(t("home.choice.tour", minutes=facts.minutes), anchor=False)
        st.markdown(tour_heading(class_tour))
        st.caption(f"{facts_text(facts)} · {lessons_text(facts)}")
        start_link(card, CLASS_TOUR, f"**{t('home.choice.start')}**")
        what_it_covers(class_tour)
with free_column.container(border=True, height="stretch", key="choice_free"):
    st.subheader(t("home.choice.free"), anchor=False)
    st.caption(t("home.choice.free_text"))
    for lesson in LESSONS:
        name, tour_of_it = st.columns([3, 2], vertical_alignment="center")
        name.page_link(lesson.file, label=t(lesson.title_key), icon=lesson.icon)
        own = tour_of_lesson(lesson.url_path)
        if own is not None:
            start_link(tour_of_it, own.id, t("home.tour.take", minutes=own.minutes))

# The story, left to right, each stage one click from its lesson -----------------------------
# (In a keyed container: on a tablet, assets/styles/layout.css wraps it into rows of three.)
st.subheader(t("home.road_title"))
story = st.container(key="story")
for column, stage in zip(story.columns(len(STAGES)), STAGES, strict=True):
    with column.container(border=True, height="stretch"):
        st.markdown(f"**{t(f'home.stage.{stage}.name')}**")
        st.caption(t(f"home.stage.{stage}.text"))
        link = stage_link(stage)
        if link is not None:
            st.page_link(
                link.lesson.file,
                label=link.label(),
                icon=link.lesson.icon,
                query_params=link.query or None,
            )

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

# The lessons, each with what its tour covers ------------------------------------------------
st.subheader(t("home.lessons_title"))
lesson_list = st.container(key="lessons")
for lesson in LESSONS:
    with lesson_list.container(border=True):
        st.page_link(lesson.file, label=t(lesson.title_key), icon=lesson.icon)
        st.caption(t(lesson.blurb_key))
        own = tour_of_lesson(lesson.url_path)
        if own is not None:
            st.markdown(f"**{say(own.title)}** · {facts_text(tour_facts(own))}")
            what_it_covers(own)
st.caption(t("home.offline"))
