"""The lessons, in menu order: one entry per file in pages/. Plain data, no st.*.

`url_path` is the file's stem: on a fresh server Streamlit may run a deep-linked
file alone (see components/frame.py), and it finds the file by that name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lesson:
    file: str
    url_path: str
    icon: str
    # i18n keys: the menu title and the one-paragraph description on the home page.
    title_key: str
    blurb_key: str


LESSONS: tuple[Lesson, ...] = (
    Lesson("pages/heads.py", "heads", "🔍", "nav.heads", "home.heads"),
    Lesson("pages/positional.py", "positional", "📍", "nav.positional", "home.positional"),
    Lesson("pages/masks.py", "masks", "🎭", "nav.masks", "home.masks"),
    Lesson("pages/recurrent.py", "recurrent", "🔁", "nav.recurrent", "home.recurrent"),
    Lesson("pages/training.py", "training", "🏋️", "nav.training", "home.training"),
)
