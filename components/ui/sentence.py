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

from components.i18n import current_language, normalise_language, t
from components.ui.client import session_id
from components.ui.inputs import (
    ACTIVE_WINDOW_S,
    sentence_pause_ms,
)
from models.text import READ_CHARS, Note, PreparedText, prepare_sentence

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"
DEFAULT_SENTENCE = "The animal didn't cross the street because it was too tired"
# The sentence a visitor who has typed none sees, in each language.
DEFAULT_SENTENCES: Mapping[str, str] = MappingProxyType(
    {"en": DEFAULT_SENTENCE, "zh": "我的猫坐在温暖的笔记本电脑上，因为它累了"}
)
SENTENCE_KEY = "sentence"
# The default the box was last drawn with: a sentence still equal to it was not typed.
_DEFAULT_SHOWN = "_sentence_default"


def default_sentence(language: str | None = None) -> str:
    """The default sentence in `language` (the current language by default)."""
    return DEFAULT_SENTENCES[normalise_language(language or current_language())]


@cache
def presets() -> Mapping[str, Mapping[str, tuple[str, ...]]]:
    """Each language's example sentences for each lesson, read once per process; shared,
    so read-only."""
    examples = json.loads((ASSETS / "presets.json").read_text(encoding="utf-8"))
    return MappingProxyType(
        {
            language: MappingProxyType({lesson: tuple(texts) for lesson, texts in by.items()})
            for language, by in examples.items()
        }
    )


def examples_for(lesson: str, language: str | None = None) -> tuple[str, ...]:
    """The lesson's examples in `language` (the first lesson's for a page with none)."""
    by_lesson = presets()[normalise_language(language or current_language())]
    return by_lesson.get(lesson) or next(iter(by_lesson.values()))


def follow_language(default: str) -> None:
    """Make `default` the box's default. A sentence the visitor has not typed, still the
    default the box was last drawn with (the other language's), becomes this one; a typed
    sentence, or one from a link, stays as it is."""
    shown = st.session_state.get(_DEFAULT_SHOWN)
    if shown is not None and shown != default and st.session_state.get(SENTENCE_KEY) == shown:
        st.session_state[SENTENCE_KEY] = default
    st.session_state[_DEFAULT_SHOWN] = default


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

    The examples beside it are the current lesson's (the first lesson's on the home page),
    in the visitor's language, and so is the default sentence.
    """
    default = default_sentence()
    follow_language(default)
    box, examples = st.columns([3, 1], vertical_alignment="bottom")
    box.text_input(
        t("app.sentence_label"),
        value=default,
        key=SENTENCE_KEY,
        # Also cuts a longer value from the link or a script before the page reads it.
        max_chars=READ_CHARS,
        live=live_pause(),
        bind="query-params",
        help=t("app.sentence_help"),
    )
    examples.selectbox(
        t("app.preset_label"),
        options=examples_for(lesson),
        index=None,
        placeholder=t("app.preset_placeholder"),
        key="preset",
        on_change=_apply_preset,
    )


# The last sentence prepared in this session, with its raw text: the frame's pass ahead
# and the page read it in the same run, and cleaning is the one step that reads it all.
_PREPARED_KEY = "_prepared_sentence"


def raw_sentence() -> str:
    """The box's text as typed; before the box is drawn in a new session (the frame's pass
    ahead), the default."""
    raw = st.session_state.get(SENTENCE_KEY)
    if raw is None:
        raw = st.session_state.get(_DEFAULT_SHOWN) or default_sentence()
    return str(raw)


def current_sentence() -> PreparedText:
    raw = raw_sentence()
    kept = st.session_state.get(_PREPARED_KEY)
    if kept is None or kept[0] != raw:
        kept = (raw, prepare_sentence(raw))
        st.session_state[_PREPARED_KEY] = kept
    return kept[1]


# Whether this run's page ended where it meant to (st.stop through stop_page): a run
# that ends so has drawn what it had to, unlike one cut short by a newer run.
_stopped = threading.local()


def stop_page() -> None:
    """End the page here, on purpose (st.stop)."""
    _stopped.now = True
    st.stop()


def stopped_on_purpose() -> bool:
    """Whether this run's page called stop_page; asking forgets it."""
    stopped, _stopped.now = getattr(_stopped, "now", False), False
    return stopped


def sentence_or_stop() -> PreparedText:
    """The shared sentence, with a note for whatever cleaning changed; an empty one ends
    the page here, under the message that asks for a sentence."""
    sentence = current_sentence()
    show_notes(sentence.notes)
    if sentence.is_empty:
        stop_page()
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
