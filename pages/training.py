"""Lesson: train RNN, LSTM, GRU and Transformer side by side, and what training measured.

The parts (components/ui/parts/training/) are drawn one after another, the run first: its
panel asks about an unfinished run every second, which is what keeps the run going, so it
is on the page whatever else the visitor reads.
"""

import secrets

import streamlit as st

from components.i18n import t
from components.ui.frame import enter_lesson
from components.ui.parts.training import heads, lag, mine, ngram, run, targets, yours
from components.ui.runs.shared import load_job_manager, load_visitor_store
from components.ui.sentence import sentence_or_stop
from components.ui.training_status import SESSION_KEY
from components.ui.visitor_links import visitor_id
from models.training import jobs

enter_lesson()

st.header(t("training.title"))
st.caption(t("training.intro", running=jobs.MAX_RUNNING))
sentence = sentence_or_stop()

# Controls: the run's task, models, steps and seed -------------------------------------------
choice = run.controls()

# The run: the job manager, the visitor's store and key, this session ----------------------
manager = load_job_manager()
store = load_visitor_store()
me = visitor_id()
session = st.session_state.setdefault(SESSION_KEY, secrets.token_hex(16))

# The parts ------------------------------------------------------------------------------------
run.draw(choice, manager, session, me)  # start, stop, progress and curves
mine.draw(store, me)  # the visitor's models
lag.draw()  # measured: accuracy against lag on the copy task
targets.draw()
ngram.draw()  # the n-gram baseline
heads.draw()  # inside the trained induction Transformer
yours.draw(sentence.text)  # your sentence through the trained language models
