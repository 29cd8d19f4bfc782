"""Home: what SeqLens is and where each lesson starts."""

import streamlit as st

from components.i18n import t
from components.lessons import LESSONS

st.header(t("home.title"))
st.markdown(t("home.intro"))
for lesson in LESSONS:
    with st.container(border=True):
        st.page_link(lesson.file, label=t(lesson.title_key), icon=lesson.icon)
        st.caption(t(lesson.blurb_key))
st.caption(t("home.offline"))
