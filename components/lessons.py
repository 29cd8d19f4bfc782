"""The lessons, in menu order: one entry per file in pages/. Plain data, no st.*.

The order follows the road the home page tells: recurrent networks first (the n-gram
baseline they beat is a part of the training lab), then attention (the heads), what a
Transformer adds to it (positions, masks), the recurrences that came back (linear attention,
retention, a selective state space), and last the lab that trains them all side by side.

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
    # The lesson's parts, as tabs: the link key that opens one (`?<part_key>=<part>`), the
    # parts in order (the first opens by default), and the i18n prefix of their tab labels.
    part_key: str
    parts: tuple[str, ...]
    part_labels: str


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        "pages/recurrent.py",
        "recurrent",
        "🔁",
        "nav.recurrent",
        "home.recurrent",
        "rc_part",
        ("distance", "theory", "clipping", "units", "gates"),
        "recurrent.part",
    ),
    Lesson(
        "pages/heads.py",
        "heads",
        "🔍",
        "nav.heads",
        "home.heads",
        "view",
        ("statistics", "ablation", "rollout"),
        "heads.view",
    ),
    Lesson(
        "pages/positional.py",
        "positional",
        "📍",
        "nav.positional",
        "home.positional",
        "pe_view",
        ("sentence", "sinusoidal", "rope", "trained"),
        "positional.view",
    ),
    Lesson(
        "pages/masks.py",
        "masks",
        "🎭",
        "nav.masks",
        "home.masks",
        "mask_part",
        ("masks", "scale", "kv", "cost"),
        "masks.part",
    ),
    Lesson(
        "pages/recurrence.py",
        "recurrence",
        "🌀",
        "nav.recurrence",
        "home.recurrence",
        "rr_part",
        ("two_ways", "patterns", "selective", "flow", "trained"),
        "recurrence.part",
    ),
    Lesson(
        "pages/training.py",
        "training",
        "🏋️",
        "nav.training",
        "home.training",
        "tr_part",
        ("ngram", "lag", "heads", "yours"),
        "training.part",
    ),
)


def lesson_named(url_path: str) -> Lesson:
    """The lesson at `url_path` (KeyError for any other name)."""
    for lesson in LESSONS:
        if lesson.url_path == url_path:
            return lesson
    raise KeyError(url_path)
