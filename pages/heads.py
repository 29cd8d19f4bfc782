"""Lesson: every attention head of a pretrained model, on the visitor's sentence.

The model is all-MiniLM-L6-v2 unless the visitor picks another one the server's operator
offers (models/serving/catalog.py), a Transformer SeqLens ships trained, or one the visitor trained
(models/analysis/trained_attention.py). Below the heads: switching heads off, and attention rollout.

The parts are in components/ui/parts/heads/: the model picker, the overview drawn on every
run (every head, then the chosen one), then one tabbed part at a time (statistics, ablation,
rollout). The lesson's tour is assets/tours/heads.json.
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
    offer_reader,
    refusal_text,
)
from components.ui.parts.heads.reading import read
from components.ui.pass_ahead import leave_pass_ahead
from components.ui.runs.heads import attention_run
from components.ui.sentence import sentence_or_stop, show_notes, stop_page
from models.serving.model_files import ModelRefused

enter_lesson()
load_grid_charts()
# The opening: the title beside the model picker, one sentence, the tokens, then the first
# chart, in view at 1400 × 1000; what the model is and how to read it, one click away.
title, picker = st.columns([2, 1], vertical_alignment="bottom")
title.header(t("heads.title"), anchor=False)
with picker:
    model_key = cached_key(choose_model())
encoder = load_or_stop(model_key)
st.caption(t("heads.opening", n_layers=encoder.cfg.n_layers, n_heads=encoder.cfg.n_heads))
offer_reader(model_key)  # a sentence mostly in Chinese: the model that reads it

sentence = sentence_or_stop()

# The shipped model's pass is already running in its worker (ask_pass_ahead): what needs
# no trace (the model's description, the layer and head choices) is drawn while it runs,
# below the slots that then take the sentence's tokens and every head.
tokens_slot, all_heads_slot = st.container(), st.container()
with st.expander(t("heads.about")):
    intro(encoder.cfg, model_key, model_name(model_key))
layer, head = overview.pick_head(encoder.cfg)

with tokens_slot:
    try:
        run = attention_run(model_key, sentence.text)
    except ModelRefused as refusal:  # a model that returns no attention weights
        st.error(markdown_literal(refusal_text(refusal.code, refusal.params)))
        stop_page()
    except Exception:  # noqa: BLE001  (damaged files found only by a pass: the log has them)
        logging.getLogger(__name__).exception("model %s failed on a sentence", model_key)
        st.error(t("heads.run_failed"))
        stop_page()
    reading = read(model_key, sentence.text, encoder, run)
    show_notes(encoder.reading_notes(run.tokenized, sentence.text))
    reads_task = reading.trained and not encoder.reads_sentence
    n_tokens = len(reading.tokens)
    count = t("heads.trained.task_tokens" if reads_task else "heads.tokens", n=n_tokens)
    # A short count on the tokens' line; a longer one (a task's own sequence) above it.
    count_at, tokens_at = st.columns([1, 9]) if not reads_task else (st, st)
    count_at.caption(count)
    tokens_at.text(" · ".join(reading.tokens))
with all_heads_slot:
    overview.draw_all(reading, layer, head)
overview.draw_chosen(reading, layer, head)

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
