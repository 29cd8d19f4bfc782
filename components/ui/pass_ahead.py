"""The shipped model's pass asked ahead: the frame asks for it, the attention page
collects it and leaves the hint the next run asks from."""

from __future__ import annotations

import streamlit as st

from components.ui.runs import heads as heads_runs
from components.ui.sentence import current_sentence

# What the attention page leaves for the frame's next runs: (page, model key, sentence).
AHEAD_KEY = "_attention_ahead"


def leave_pass_ahead(page: str, key: str, text: str) -> None:
    """The attention page, once it has its pass: the next run may start its pass ahead.

    The worker starts here, the first time: after a page has been drawn, so that its
    loading (a few seconds of the other core) never holds up a fresh server's first page.
    """
    st.session_state[AHEAD_KEY] = (page, key, text)
    worker = heads_runs.worker_for(key)
    if worker is not None:
        worker.start()


def ask_pass_ahead() -> None:
    """The frame, first thing in a run: when this visitor's last page was the attention
    page with the shipped model and the sentence has changed since, the new sentence's
    pass starts in the worker now, while the frame and the page's controls are drawn
    (~10 ms of Python a run); attention_run collects it. A run cut short by the next key
    leaves the sentence it asked for, so the next run asks only for a newer one.
    """
    hint = st.session_state.get(AHEAD_KEY)
    worker = None if hint is None else heads_runs.worker_for(hint[1])
    if worker is None:
        return
    sentence = current_sentence()
    if worker.ready and not sentence.is_empty and sentence.text != hint[2]:
        tokenized = heads_runs.attention_model(hint[1]).tokenize(sentence.text)
        worker.ask_ahead(sentence.text, tokenized, instead_of=hint[2])
        st.session_state[AHEAD_KEY] = (*hint[:2], sentence.text)


def keep_pass_ahead_for(page: str) -> None:
    """The frame, once it knows the page: a hint another page left goes, so that typing
    on other lessons starts no passes nobody collects."""
    hint = st.session_state.get(AHEAD_KEY)
    if hint is not None and hint[0] != page:
        del st.session_state[AHEAD_KEY]
