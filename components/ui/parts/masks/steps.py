"""Attention step by step under a mask: the controls, the run they name (on the lesson's
random Transformer or a trained one), then the stepper over one head's steps."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from components.i18n import current_language, t
from components.masks_steps import StepCase
from components.ui.parts.masks import stepper
from components.ui.parts.masks.reading import SHOWN_TOKENS, encode
from components.ui.parts.masks.step_controls import StepSetup, step_controls
from components.ui.runs import masks as runs
from components.ui.sentence import show_notes
from models.analysis import masks
from models.analysis import trained_sources as ts
from models.nets.tokenizer import PAD, SPECIAL_TOKENS
from models.nets.transformer import TransformerConfig
from models.text import prepare_sentence
from models.training.checkpoints import Checkpoint


class NothingToRead(Exception):
    """The trained model knows none of the characters it was given."""


def trained_reading(checkpoint: Checkpoint, text: str, second: bool = False) -> ts.Reading:
    """What the trained model reads for the sentence (or the second one), with a note for
    the characters it never saw; a model of a token task reads its task's sequences."""
    reading = runs.trained_read(checkpoint.task, text, SHOWN_TOKENS)
    if not reading.from_sentence:
        return (
            ts.shorter(runs.trained_read(checkpoint.task, text, SHOWN_TOKENS, index=1))
            if second
            else reading
        )
    if reading.unknown:
        # The characters are the visitor's: shown through st.text only.
        st.warning(t("masks.weights.unknown", count=len(reading.unknown)), icon="⚠️")
        st.text(" ".join(reading.unknown)[:200])
    if reading.n_before_cap > len(reading.ids):
        st.caption(t("masks.weights.cut", n=len(reading.ids), total=reading.n_before_cap))
    return reading


def step_input(
    checkpoint: Checkpoint | None, text: str, second: bool = False
) -> tuple[list[int], list[str]]:
    """Ids and labels the step-by-step model reads for `text`."""
    if checkpoint is None:
        step_ids, step_tokens, step_notes = encode(text)
        if second:
            show_notes(step_notes)
        return step_ids, step_tokens
    reading = trained_reading(checkpoint, text, second)
    return reading.ids, reading.tokens


def attention_case(setup: StepSetup, sentence_text: str, second_text: str) -> StepCase:
    """The traced run `setup.kind` needs; stops with NothingToRead when the trained model
    has nothing to read."""
    checkpoint, layer = setup.checkpoint, setup.layer
    if setup.kind == "cross":
        if checkpoint is None:
            source_ids, source_tokens = step_input(None, second_text, second=True)
            target_ids, target_tokens = step_input(None, sentence_text)
        else:
            source_ids, target_ids, source_tokens, target_tokens = ts.translation_example(
                checkpoint.task
            )
            setup.options.text(" ".join(source_tokens) + "  →  " + " ".join(target_tokens))
        return StepCase.translation(
            setup.stem, source_ids, target_ids, layer, source_tokens, target_tokens
        )
    query_ids, query_tokens = step_input(checkpoint, sentence_text)
    if not query_ids:  # every character unknown to the trained model
        raise NothingToRead
    length = len(query_ids)
    if setup.kind == "padding":
        second_ids, second_tokens = step_input(checkpoint, second_text, second=True)
        if not second_ids:
            raise NothingToRead
        pad_id = SPECIAL_TOKENS.index(PAD) if checkpoint is None else 0
        batch, lengths = masks.pad_batch(query_ids, second_ids, pad_id)
        rows = [
            list(row_tokens) + [PAD] * (batch.shape[1] - len(row_tokens))
            for row_tokens in (query_tokens, second_tokens)
        ]
        row = masks.padded_row(lengths)
        query_ids, query_tokens, length = [int(i) for i in batch[row]], rows[row], lengths[row]
        with setup.options:
            st.caption(t("masks.padding.batch", row=row + 1, length=length, padded=len(query_ids)))
            st.text("\n".join(" · ".join(r) for r in rows))
    allowed = masks.allowed_mask(
        setup.kind, len(query_ids), length=length, prefix=setup.prefix, window=setup.window
    )
    return StepCase.masked(setup.stem, query_ids, allowed, layer, query_tokens)


def draw_steps(setup: StepSetup, case: StepCase) -> None:
    """One head's attention through the stepper, on its steps built once per run, head
    and language (components/ui/runs/masks.py)."""
    built = runs.step_charts(
        case, setup.head, setup.cfg.d_head, setup.cfg.d_model, current_language()
    )
    stepper.draw(built, case, setup.kind, setup.cfg.d_head)


def draw(sentence_text: str, cfg: TransformerConfig) -> None:
    """The section on the visitor's sentence; `cfg` is the lesson's random Transformer's."""
    setup = step_controls(cfg)
    checkpoint, kind = setup.checkpoint, setup.kind
    second = prepare_sentence(setup.second_raw)
    needs_second = kind in ("padding", "cross") and (
        checkpoint is None or (kind == "padding" and checkpoint.task.get("name") == "lm")
    )
    if needs_second:
        show_notes([note for note in second.notes if note.code != "empty_text"])
    case = None
    if not (needs_second and second.is_empty):
        try:
            with setup.notes:
                case = attention_case(setup, sentence_text, second.text)
        except NothingToRead:
            # The first view follows the sentence whatever it is: the random weights'
            # tokenizer reads anything.
            st.info(t("masks.weights.nothing"))
            setup = replace(setup, checkpoint=None, stem="", cfg=cfg)
            case = attention_case(setup, sentence_text, second.text)
    if needs_second and second.is_empty:
        st.info(t("masks.second_needed"))
    if case is not None:
        if setup.checkpoint is not None and setup.kind != "cross":
            # What the trained model reads (its characters, or its task's own sequence) in
            # view above its steps: the token line at the top is the random Transformer's.
            count, line = st.columns([2, 9], vertical_alignment="center")
            count.caption(t("masks.weights.reads", n=len(case.query_tokens)))
            line.text(" · ".join(case.query_tokens))  # the visitor's characters: inert
        draw_steps(setup, case)
