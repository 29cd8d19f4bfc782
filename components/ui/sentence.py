"""The shared sentence: its box, its cleaning (once per run), the notes about it."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType

import streamlit as st

from components.i18n import t
from components.ui.client import session_id
from components.ui.inputs import (
    ACTIVE_WINDOW_S,
    sentence_pause_ms,
)
from models.text import READ_CHARS, Note, PreparedText, prepare_sentence

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"
DEFAULT_SENTENCE = "The animal didn't cross the street because it was too tired"
SENTENCE_KEY = "sentence"


@cache
def presets() -> Mapping[str, tuple[str, ...]]:
    """Each lesson's example sentences, read once per process; shared, so read-only."""
    examples = json.loads((ASSETS / "presets.json").read_text(encoding="utf-8"))
    return MappingProxyType({lesson: tuple(texts) for lesson, texts in examples.items()})


def _apply_preset() -> None:
    choice = st.session_state.get("preset")
    if choice:
        st.session_state[SENTENCE_KEY] = choice
    st.session_state["preset"] = None


# When each visitor's page last ran (session's id → time.monotonic()): how busy the server is.
_LAST_RUN: dict[str, float] = {}
_LAST_RUN_LOCK = threading.Lock()


def visitors_answered(now: float | None = None) -> int:
    """Visitors whose page ran in the last ACTIVE_WINDOW_S seconds, this one included."""
    now = time.monotonic() if now is None else now
    this_session = session_id()
    with _LAST_RUN_LOCK:
        _LAST_RUN[this_session] = now
        for session, at in list(_LAST_RUN.items()):
            if now - at > ACTIVE_WINDOW_S:
                del _LAST_RUN[session]
        return len(_LAST_RUN)


# Streamlit reads a pause written as text ("60ms") with pandas, which takes ~0.7 s to
# import here and which the attention lesson needs for nothing else: on a fresh server it
# would hold up the first page. The frame imports it once a page has been drawn
# (components/ui/frame.py, run_app); until then the box takes `live=True`, Streamlit's own
# 250 ms, read without pandas. Streamlit keeps the box when only its pause changes.
PAUSE_READER = "pandas"


def live_pause() -> str | bool:
    """The box's pause after a key, by how many visitors the server is answering."""
    pause = f"{sentence_pause_ms(visitors_answered())}ms"
    return pause if PAUSE_READER in sys.modules else True


def sentence_box(lesson: str = "") -> None:
    """The shared sentence: live as the visitor types, kept across pages and in the URL.

    The examples beside it are the current lesson's (the first lesson's on the home page).
    """
    examples_by_lesson = presets()
    box, examples = st.columns([3, 1], vertical_alignment="bottom")
    box.text_input(
        t("app.sentence_label"),
        value=DEFAULT_SENTENCE,
        key=SENTENCE_KEY,
        # Also cuts a longer value from the link or a script before the page reads it.
        max_chars=READ_CHARS,
        live=live_pause(),
        bind="query-params",
        help=t("app.sentence_help"),
    )
    examples.selectbox(
        t("app.preset_label"),
        options=examples_by_lesson.get(lesson) or next(iter(examples_by_lesson.values())),
        index=None,
        placeholder=t("app.preset_placeholder"),
        key="preset",
        on_change=_apply_preset,
    )


# The last sentence prepared in this session, with its raw text: the frame's pass ahead
# and the page read it in the same run, and cleaning is the one step that reads it all.
_PREPARED_KEY = "_prepared_sentence"


def current_sentence() -> PreparedText:
    raw = st.session_state.get(SENTENCE_KEY, DEFAULT_SENTENCE)
    kept = st.session_state.get(_PREPARED_KEY)
    if kept is None or kept[0] != raw:
        kept = (raw, prepare_sentence(raw))
        st.session_state[_PREPARED_KEY] = kept
    return kept[1]


def sentence_or_stop() -> PreparedText:
    """The shared sentence, with a note for whatever cleaning changed; an empty one ends
    the page here, under the message that asks for a sentence."""
    sentence = current_sentence()
    show_notes(sentence.notes)
    if sentence.is_empty:
        st.stop()
    return sentence


def show_notes(notes: tuple[Note, ...] | list[Note]) -> None:
    """Each note in words. The message boxes render markdown, so they get only our own
    strings; the visitor's text a note quotes goes through st.text, which is inert."""
    for note in notes:
        if note.code == "empty_text":
            st.info(t("note.empty_text"))
            continue
        st.warning(t(f"note.{note.code}", **note.params), icon="⚠️")
        if note.quote:
            st.text(note.quote)
