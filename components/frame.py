"""The frame every lesson lives in: page setup, navigation, the shared sentence box.

app.py runs it. A lesson file runs it too when Streamlit starts that file on its
own, which happens once per server: while no session has yet called st.navigation,
Streamlit treats pages/ as a legacy page folder and answers a deep link such as
/heads by running pages/heads.py alone. The lesson then draws the frame, whose
st.navigation routes the same URL back to the lesson, inside the frame, with the
sentence from the URL. Every later visit goes straight through app.py.
"""

from __future__ import annotations

import logging
import threading

import streamlit as st

from components.i18n import t
from components.lessons import LESSONS
from components.widgets import sentence_box

_run = threading.local()


def inside_frame() -> bool:
    """Whether the frame is drawing the current page (each script run has its own thread)."""
    return getattr(_run, "inside", False)


def run_app() -> None:
    st.set_page_config(page_title="SeqLens", page_icon="🔭", layout="wide")
    home = st.Page("pages/home.py", title=t("nav.home"), icon="🏠", default=True)
    lessons = [
        st.Page(lesson.file, title=t(lesson.title_key), url_path=lesson.url_path, icon=lesson.icon)
        for lesson in LESSONS
    ]
    page = st.navigation([home, *lessons])
    st.title(t("app.title"))
    st.caption(t("app.tagline"))
    sentence_box(page.url_path)
    _run.inside = True
    try:
        page.run()
    except Exception:
        # Visitors get a plain message and keep their sentence; the details go to the log.
        logging.getLogger("seqlens").exception("page %s failed", page.url_path)
        st.error(t("app.error"))
    finally:
        _run.inside = False


def enter_lesson() -> None:
    """First line of every lesson: when Streamlit ran the file alone, draw the frame instead."""
    if not inside_frame():
        run_app()
        st.stop()
