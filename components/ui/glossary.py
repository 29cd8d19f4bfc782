"""The glossary's button in the frame's top bar, beside the presenter switch: a popover
listing the current page's terms in plain words (components/glossary.py), in the page's
language. Its contents are one markdown element, drawn on every run; nothing in it comes
from the visitor."""

from __future__ import annotations

import streamlit as st

from components.glossary import glossary_markdown
from components.i18n import t
from components.lessons import LESSONS

GLOSSARY_KEY = "_glossary"
_LESSON_PATHS = frozenset(lesson.url_path for lesson in LESSONS)


def glossary_button(bar, url_path: str) -> None:
    """The glossary of the page at `url_path`, drawn in `bar` (the frame's top bar)."""
    intro = "glossary.intro" if url_path in _LESSON_PATHS else "glossary.intro_home"
    with bar, st.popover(t("glossary.button"), help=t("glossary.help"), key=GLOSSARY_KEY):
        st.caption(t(intro))
        st.markdown(glossary_markdown(url_path))
