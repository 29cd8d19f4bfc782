"""What the recurrent lesson's models read, and where the loss sits: a trained task's own
sequence, the visitor's sentence, or a random sequence."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from components.i18n import t
from components.recurrent import step_labels
from components.ui.parts.recurrent.controls import Controls, weights_label
from components.ui.runs import recurrent as runs
from components.ui.runs.recurrent import CELLS
from components.ui.runs.shared import load_tokenizer
from components.ui.sentence import show_notes
from components.ui.tour import offer
from models.analysis import gradient_flow as gf
from models.analysis import trained_sources as ts
from models.nets.tokenizer import MAX_TOKENS
from models.text import Note, PreparedText, tokenization_notes


@dataclass(frozen=True)
class Reading:
    ids: tuple[int, ...] | None  # the sentence's token ids; None where the input is not typed
    tokens: list[str] | None  # None for a random sequence
    n_steps: int
    tau: int  # the loss step
    labels: list[str]  # one per step, escaped for plotly
    drawn_labels: list[str]  # the same, as text (grid charts draw text as it is)


def _trained_task(controls: Controls) -> list[str]:
    """The task trained weights learned, said; its first held-out sequence, to read."""
    s = controls.s
    # Trained weights read the task they learned: its first held-out sequence.
    s["task"] = runs.checkpoint(controls.folder, s["weights"], "rnn").task
    tokens = ts.example(s["task"])[0]
    accuracies = {
        name: runs.checkpoint(controls.folder, s["weights"], cell).metrics.get("accuracy")
        for name, cell in (*CELLS.items(), ("Transformer", "transformer"))
    }
    st.info(
        t(
            "recurrent.trained.which",
            weights=weights_label(s["weights"]),
            lag=s["task"].get("lag", "?"),
            length=s["task"].get("length", "?"),
            accuracies=", ".join(
                f"{name} {value:.1%}" for name, value in accuracies.items() if value is not None
            ),
        )
    )
    st.caption(t("recurrent.trained.note", task=" ".join(tokens)))
    return tokens


def draw(controls: Controls, sentence: PreparedText) -> Reading:
    """The sequence and the loss step, shown with every note on them."""
    settings, setting_notes = controls.settings, list(controls.notes)
    ids: tuple[int, ...] | None = None
    tokens = None
    if controls.trained:
        tokens = _trained_task(controls)
    elif settings.source == "sentence":
        encoded = load_tokenizer().encode(sentence.text, MAX_TOKENS)
        setting_notes += tokenization_notes(
            len(encoded.ids),
            encoded.n_tokens_before_cap,
            MAX_TOKENS,
            encoded.unknown_spans(sentence.text),
            vocabulary="own_",
        )
        ids, tokens = tuple(encoded.ids), list(encoded.tokens)
    n_steps = len(tokens) if tokens is not None else settings.length
    tau = gf.loss_step(n_steps, settings.before_end)
    if settings.before_end > n_steps - 1:
        setting_notes.append(
            Note("recurrent_loss_moved", {"asked": settings.before_end, "tau": tau})
        )
    show_notes(setting_notes)
    reading = Reading(
        ids=ids,
        tokens=tokens,
        n_steps=n_steps,
        tau=tau,
        labels=step_labels(tokens, n_steps),
        drawn_labels=step_labels(tokens, n_steps, escaped=False),
    )
    offer(
        "recurrent.reading",
        tokens=tokens,
        n_steps=n_steps,
        tau=tau,
        weights=controls.weights,
        trained=controls.trained,
    )
    # One line of numbers, then the tokens as plain text (a token may hold markup). The
    # token at the loss step is named apart when it is not the last one shown.
    last = tau == n_steps - 1
    st.caption(t(f"recurrent.{'loss_last' if last else 'loss'}", tau=tau, n=n_steps))
    if tokens is not None:
        st.text(" · ".join(tokens))
        if not last:
            st.text(t("recurrent.loss_token", token=tokens[tau]))
    return reading
