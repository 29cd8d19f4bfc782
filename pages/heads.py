"""Lesson: every attention head of a pretrained model, on the visitor's sentence.

The model is all-MiniLM-L6-v2 unless the visitor picks another one the server's operator
offers (models/serving/catalog.py), a Transformer SeqLens ships trained, or one the visitor trained
(models/analysis/trained_attention.py). Below the heads: switching heads off, and attention rollout.

The parts are in components/ui/parts/heads/: the model picker, the overview drawn on every
run, then one tabbed part at a time (statistics, ablation, rollout).
"""

import logging

import streamlit as st

from components.i18n import t
from components.labels import markdown_literal
from components.ui.charts import load_grid_charts
from components.ui.frame import enter_lesson
from components.ui.parts import open_part
from components.ui.parts.heads import ablation, overview, rollout, statistics
from components.ui.parts.heads.model_picker import (
    cached_key,
    choose_model,
    intro,
    load_or_stop,
    model_name,
    refusal_text,
)
from components.ui.parts.heads.reading import read
from components.ui.pass_ahead import leave_pass_ahead
from components.ui.runs.heads import attention_run
from components.ui.sentence import sentence_or_stop, show_notes
from models.serving.model_files import ModelRefused

enter_lesson()
load_grid_charts()
st.header(t("heads.title"))
model_key = cached_key(choose_model())
encoder = load_or_stop(model_key)
intro(encoder.cfg, model_key, model_name(model_key))

sentence = sentence_or_stop()

# The shipped model's pass is already running in its worker (ask_pass_ahead): what needs
# no trace, the layer and head choices, is drawn while it runs, below the slot that then
# takes the sentence's tokens.
tokens_slot = st.container()
layer, head = overview.pick_head(encoder.cfg)

with tokens_slot:
    try:
        run = attention_run(model_key, sentence.text)
    except ModelRefused as refusal:  # a model that returns no attention weights
        st.error(markdown_literal(refusal_text(refusal.code, refusal.params)))
        st.stop()
    except Exception:  # noqa: BLE001  (damaged files found only by a pass: the log has them)
        logging.getLogger(__name__).exception("model %s failed on a sentence", model_key)
        st.error(t("heads.run_failed"))
        st.stop()
    reading = read(model_key, sentence.text, encoder, run)
    show_notes(encoder.reading_notes(run.tokenized, sentence.text))
    reads_task = reading.trained and not encoder.reads_sentence
    n_tokens = len(reading.tokens)
    st.caption(t("heads.trained.task_tokens" if reads_task else "heads.tokens", n=n_tokens))
    st.text(" · ".join(reading.tokens))

overview.draw(reading, layer, head)

# One tab at a time: a keystroke redraws the open tab's part, not all three.
DRAW = {
    "statistics": statistics.draw,
    "ablation": ablation.draw,
    "rollout": rollout.draw,
}
view, panel = open_part(
    "heads",
    opened_by={"ablation": ("ablate",), "rollout": ("rollout_layer",)},
)
with panel:
    DRAW[view](reading)
# Drawn: the next run may ask for its pass ahead (and the worker starts, the first time).
leave_pass_ahead("heads", model_key, sentence.text)
