"""Streamlit pieces shared by every page: the sentence box, cached models, notes, charts.

Pages import from here (never from each other) so a page draws only its own widgets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from components.i18n import t
from models.inputs import Note, PreparedText, prepare_sentence

ASSETS = Path(__file__).resolve().parent.parent / "assets"
DEFAULT_SENTENCE = "The animal didn't cross the street because it was too tired"
SENTENCE_KEY = "sentence"
# Export from the chart's own toolbar, drawn by the browser: works offline.
PLOTLY_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "seqlens"},
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


@st.cache_data
def presets() -> dict[str, list[str]]:
    return json.loads((ASSETS / "presets.json").read_text(encoding="utf-8"))


def _apply_preset() -> None:
    choice = st.session_state.get("preset")
    if choice:
        st.session_state[SENTENCE_KEY] = choice
    st.session_state["preset"] = None


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
        live=True,
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


def current_sentence() -> PreparedText:
    return prepare_sentence(st.session_state.get(SENTENCE_KEY, DEFAULT_SENTENCE))


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


def show_chart(fig, key: str | None = None) -> None:
    st.plotly_chart(fig, config=PLOTLY_CONFIG, key=key, theme=None)


@st.cache_resource(show_spinner="Loading the pretrained model…")
def load_encoder():
    from models.pretrained import PretrainedEncoder, limit_threads

    limit_threads()
    return PretrainedEncoder()


@dataclass(frozen=True)
class EncoderRun:
    tokenized: object
    trace: dict[str, np.ndarray]


@st.cache_data(max_entries=128, show_spinner=False)
def encoder_run(text: str) -> EncoderRun:
    encoder = load_encoder()
    tokenized = encoder.tokenize(text)
    return EncoderRun(tokenized, encoder.run_with_cache(tokenized))


# --- SeqLens's own small models (models/tokenizer.py, models/transformer.py) ---


@st.cache_resource(show_spinner=False)
def load_tokenizer():
    from models.tokenizer import Tokenizer

    return Tokenizer()


@st.cache_resource(show_spinner=False)
def load_transformer(positional: str = "sinusoidal", causal: bool = False, seed: int = 0):
    """One frozen random Transformer per (encoding, direction, seed), shared by every session:
    only ever read (no hooks, nothing stored on it)."""
    from models.transformer import Transformer, TransformerConfig

    cfg = TransformerConfig(
        d_vocab=load_tokenizer().vocab_size, positional=positional, causal=causal
    )
    return Transformer(cfg, seed=seed)
