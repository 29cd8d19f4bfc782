"""Lesson: what trained sequence models measured, and training RNN, LSTM, GRU and
Transformer side by side.

What training measured (ngram.py, lag.py, targets.py, heads.py, yours.py) is in tabs, one
drawn at a time; the first, the n-gram baseline, reads the visitor's sentence. The run
(components/ui/parts/training/run.py, progress.py, mine.py) is drawn on every run of the
page, below the tabs: its panel asks about an unfinished run every second, which is what
keeps the run going, so it is on the page whatever tab the visitor reads.
"""

import streamlit as st

from components.i18n import t
from components.ui.client import session_id
from components.ui.frame import enter_lesson
from components.ui.parts import open_part
from components.ui.parts.training import heads, lag, mine, ngram, run, targets, yours
from components.ui.runs.shared import load_job_manager, load_visitor_store
from components.ui.sentence import sentence_or_stop
from components.ui.visitor_links import visitor_id
from models.training import jobs

enter_lesson()


st.header(t("training.title"))
st.caption(t("training.intro"))
sentence = sentence_or_stop()

# What training measured, one tab at a time: only the open one is drawn. Every control of
# the page but the n-gram part's character is the run's, below the tabs, so no control
# opens a tab (no `opened_by`); a link opens one by its name (`?tr_part=heads`), as the
# home page's n-gram row opens `ngram`.
part, tab = open_part("training")
with tab:
    if part == "ngram":
        ngram.draw(sentence.text)  # the n-gram baseline, on the visitor's sentence
    elif part == "lag":
        lag.draw()  # accuracy against lag on the copy task
        targets.draw()  # the targets every shipped model is tested against, folded away
    elif part == "heads":
        heads.draw()  # inside the trained induction Transformer
    else:
        yours.draw(sentence.text)  # your sentence through the trained language models
st.caption(t("training.parts_hint"))

# Controls: the run's task, models, steps and seed -------------------------------------------
choice = run.controls(running=jobs.MAX_RUNNING)

# The run: the job manager, the visitor's store and key, this session ----------------------
manager = load_job_manager()
store = load_visitor_store()
me = visitor_id()
session = session_id()

# The run's parts, on every run of the page ----------------------------------------------------
run.draw(choice, manager, session, me)  # start, stop, progress and curves
mine.draw(store, me)  # the visitor's models
