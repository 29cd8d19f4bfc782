"""The parts of each lesson: one idea each, with its controls, its cached run and its charts."""

from __future__ import annotations

from functools import partial

import streamlit as st

from components.i18n import t
from components.lessons import lesson_named
from components.ui.linked import linked_tabs


def part_label(labels: str, part: str) -> str:
    """A part's name as its tab shows it: the UI string `<labels>.<part>`."""
    return t(f"{labels}.{part}")


def open_part(lesson: str, opened_by: dict | None = None):
    """The parts of `lesson` (components/lessons.py) as tabs, the first one open by default:
    (the open part's name, its container). Only the open part is drawn, so a keystroke
    redraws one part. A link opens a part by `?<part_key>=<name>` or by its tab's label in
    either language; `opened_by` maps a part to the keys of the controls inside it, so a
    link that sets one of them opens it."""
    about = lesson_named(lesson)
    parts = list(about.parts)
    return linked_tabs(
        st,
        parts,
        parts[0],
        key=about.part_key,
        format_func=partial(part_label, about.part_labels),
        opened_by=opened_by,
    )
