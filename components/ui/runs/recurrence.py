"""The cached runs of the lesson "Recurrence returns" (Streamlit glue): the first block's
inputs of the visitor's sentence, which every model here reads; linear attention, retention
and the selective SSM on them, each by its forms, and their costs; the selective SSM and its
time-invariant twin with Δ scaled; the gradient flow of every model on the same inputs; and
the trained models of selective copying and induction, with the table measured of them.

Cached functions are keyed on plain values: the token ids, the chunk size, the head, γ,
the Δ factor and the held-out sequence.
"""

from __future__ import annotations

import json
import math
from functools import cache

import numpy as np
import streamlit as st

from components.ui.runs.shared import load_checkpoint, load_recurrent, load_transformer
from models.analysis import gradient_flow as gf
from models.analysis import recurrence_cost
from models.analysis import recurrence_lesson as rl
from models.analysis import trained_selective as tsel
from models.nets.linear_attention import (
    LinearAttentionConfig,
    LinearAttentionLayer,
)
from models.nets.retention import (
    default_gammas,
)
from models.nets.selective_ssm import SelectiveSSM, SSMConfig
from models.serving.runtime import heavy_work, limit_threads, page_slot_set_aside
from models.training.recurrence_table import TABLE_FILE
from models.training.tasks import make_task, task_from_config
from models.training.train import CHECKPOINT_DIR, SELECTIVE_COPY, checkpoint_name, recipe_for

# The block whose queries, keys and values every pattern on the page compares.
BLOCK = "blocks.0"


def lesson_transformer():
    """The lesson's random causal Transformer, shared and only ever read."""
    return load_transformer("sinusoidal", causal=True)


@st.cache_data(max_entries=256, show_spinner=False)
def first_block(ids: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The first block's input, its q, k, v and its softmax pattern on `ids` (non-empty):
    the inputs of every model here, and the pattern the others are compared with."""
    _, cache = lesson_transformer().run_with_cache(list(ids))
    return {
        "X": cache[f"{BLOCK}.hook_resid_pre"],
        "q": cache[f"{BLOCK}.attn.hook_q"],
        "k": cache[f"{BLOCK}.attn.hook_k"],
        "v": cache[f"{BLOCK}.attn.hook_v"],
        "softmax_pattern": cache[f"{BLOCK}.attn.hook_pattern"],
    }


# --- ① the same output, two ways; ② attention without softmax ----------------------------


@st.cache_resource(show_spinner=False)
def load_ssm() -> SelectiveSSM:
    """The lesson's frozen random selective SSM layer, shared by every session and only
    ever read: it reads the same 64-dimensional input X the Transformer's first block does."""
    limit_threads()
    return SelectiveSSM(SSMConfig(d_model=64), seed=0)


@cache
def retnet_gammas() -> tuple[float, ...]:
    """RetNet's decay per head for the lesson Transformer's heads, 1 − 2^(−5−h)."""
    return tuple(float(g) for g in default_gammas(lesson_transformer().cfg.n_heads))


@st.cache_data(max_entries=64, show_spinner=False)
def two_ways(ids: tuple[int, ...], chunk: int) -> dict:
    """models/analysis/recurrence_lesson.py two_ways on `ids`, RetNet's γ per head."""
    return rl.two_ways(first_block(ids), load_ssm(), retnet_gammas(), chunk)


# The timings take well under a second each; they are measured once per length and server
# (the time does not depend on the words) in the heavy-work pool, alone, holding no page
# slot (models/serving/runtime.py heavy_work), as the masks lesson's cost lab is.


def per_token_times(length: int) -> dict[str, float]:
    with page_slot_set_aside():
        return _per_token_times(length)


@st.cache_data(max_entries=48, show_spinner=False)
def _per_token_times(length: int) -> dict[str, float]:
    cfg = lesson_transformer().cfg
    with heavy_work(deadline_s=math.inf):  # timings cut short mean nothing
        return recurrence_cost.per_token_times(length, cfg.n_heads, cfg.d_head, load_ssm().cfg)


@st.cache_data(max_entries=64, show_spinner=False)
def linear_patterns(ids: tuple[int, ...]) -> np.ndarray:
    """Linear attention's implicit pattern `[head, query, key]` on the first block's q, k."""
    return rl.linear_patterns(first_block(ids))


@st.cache_data(max_entries=256, show_spinner=False)
def retention_pattern(ids: tuple[int, ...], head: int, gamma: float) -> dict[str, np.ndarray]:
    """Retention's pattern (q kᵀ) ⊙ D `[query, key]` for one head at decay `gamma`, and the
    decay mask D itself."""
    return rl.retention_pattern(first_block(ids), head, gamma)


# --- ③ the selective state; ④ gradient flow through time -----------------------------------

# The recurrent lesson's models as its first view builds them (components/ui/parts/recurrent/
# controls.py defaults, checked by gf.clean_settings): tanh RNN, random recurrent matrices of
# largest singular value 1, 64 hidden units, LSTM forget bias 1.
RECURRENT_SETTINGS = gf.clean_settings()[0]
CELLS = {"RNN": "rnn", "LSTM": "lstm", "GRU": "gru"}
SSM, LINEAR_ATTENTION, TRANSFORMER = rl.SSM, rl.LINEAR_ATTENTION, rl.TRANSFORMER


@st.cache_resource(show_spinner=False)
def load_time_invariant_ssm() -> SelectiveSSM:
    """The same layer without selection (Δ, B, C constants; the weights the two kinds share
    are the same numbers for one seed), shared and only ever read."""
    limit_threads()
    return SelectiveSSM(SSMConfig(d_model=64, selective=False), seed=0)


@st.cache_resource(show_spinner=False)
def load_linear_attention() -> LinearAttentionLayer:
    """The lesson's frozen random linear-attention layer, shared and only ever read."""
    limit_threads()
    return LinearAttentionLayer(LinearAttentionConfig(), seed=0)


@st.cache_data(max_entries=128, show_spinner=False)
def selective_state(ids: tuple[int, ...], delta_scale: float) -> dict[str, dict]:
    """Both layers on `ids` with every Δ multiplied by `delta_scale` (the layer's own weights
    and selective_scan_sequential, models/analysis/recurrence_flow.py ssm_forward): Δ and the
    kept fraction exp(Δ A) (mean over states) `[pos, d_inner]`, ‖h_t‖ `[pos]`, float32."""
    first = first_block(ids)
    return {
        "selective": rl.selective_state(load_ssm(), first, delta_scale),
        "lti": rl.selective_state(load_time_invariant_ssm(), first, delta_scale),
    }


def _recurrent(cell: str, d_in: int):
    s = RECURRENT_SETTINGS
    return load_recurrent(
        cell=cell,
        num_inputs=d_in,
        num_hiddens=s.num_hiddens,
        activation=s.activation if cell == "rnn" else "tanh",
        init=s.init,
        radius=s.radius,
        forget_bias=s.forget_bias if cell == "lstm" else 1.0,
    )


@st.cache_data(max_entries=64, show_spinner=False)
def flows(ids: tuple[int, ...], delta_scale: float) -> dict[str, dict]:
    """Every model's ‖∂L/∂X_t‖ `[pos]` and loss, L = u · output_τ at the last token, on the
    same inputs X (the first block's input of `ids`); the SSM's with Δ × `delta_scale`, and
    its `kept [pos]` (how much of each token's state reaches the last one)."""
    first = first_block(ids)
    cells = {name: _recurrent(cell, first["X"].shape[1]) for name, cell in CELLS.items()}
    model = lesson_transformer()
    return rl.flows(first, ids, cells, model, load_ssm(), load_linear_attention(), delta_scale)


# --- ⑤ trained, not only random -------------------------------------------------------------
# The shipped checkpoints of selective copying and induction, their measured table
# (models/training/recurrence_table.py), and the trained selective SSM read on the task's
# held-out sequences. The visitor's sentence plays no part: each model reads its own task.

SHOWN_SEQUENCES = 8  # the first held-out sequences of selective copying a visitor can pick


def trained_table() -> dict | None:
    """The measured table as its file holds it, or None when it is not there (a tiny file,
    read on each run: a new table shows without restarting the server)."""
    path = CHECKPOINT_DIR / TABLE_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def trained_sizes(table: dict) -> dict[str, int]:
    """The smallest and largest width (d_model) and number of training steps of the models
    the table's accuracies measure, from the recipes that trained them."""
    recipes = [
        recipe_for(task_from_config(table["settings"]["tasks"][task]), kind)
        for task, row in table["accuracy"].items()
        for kind, value in row.items()
        if value is not None
    ]
    widths, steps = [r.d_model for r in recipes] or [0], [r.steps for r in recipes] or [0]
    return dict(d_low=min(widths), d_high=max(widths), steps_low=min(steps), steps_high=max(steps))


def selective_copy_task():
    """Selective copying as the shipped checkpoints were trained on it."""
    return make_task("selective_copy", **dict(SELECTIVE_COPY))


def trained_ssm():
    """The shipped selective state-space stack trained on selective copying: a frozen
    checkpoint, shared and only ever read (CheckpointError when it is not shipped)."""
    return load_checkpoint(str(CHECKPOINT_DIR / checkpoint_name(selective_copy_task(), "ssm")))


@st.cache_data(max_entries=1, show_spinner=False)
def _held_out() -> dict[str, np.ndarray]:
    """Selective copying's held-out sequences, as the table's accuracies score them."""
    batch = selective_copy_task().held_out()
    return {"inputs": batch.inputs.numpy(), "targets": batch.targets.numpy()}


@st.cache_data(max_entries=SHOWN_SEQUENCES, show_spinner=False)
def trained_reading(seq: int) -> dict:
    """The trained SSM on held-out sequence `seq` (0 … SHOWN_SEQUENCES − 1): its ids and
    targets `[pos]`, each position's kind, the first layer's Δ and kept fraction exp(Δ A)
    (mean over states) `[pos, d_inner]` and their means over channels `[pos]` (float64);
    the answer slots, the symbols they should write, the probabilities there `[slot, n_out]`,
    their argmax and how many of those are right."""
    held = _held_out()
    ids, targets = held["inputs"][seq], held["targets"][seq]
    reading = tsel.first_layer_reading(trained_ssm().model, ids)
    slots = tsel.answer_slots(targets)
    probabilities = tsel.softmax(reading["logits"][slots])
    predicted = probabilities.argmax(axis=-1)
    return {
        "ids": ids,
        "targets": targets,
        "kinds": tsel.position_kinds(ids, selective_copy_task().n_symbols),
        "delta": reading["ssm_delta"],
        "kept": reading["ssm_decay"],
        "delta_mean": reading["ssm_delta"].astype(np.float64).mean(axis=-1),
        "kept_mean": reading["ssm_decay"].astype(np.float64).mean(axis=-1),
        "slots": slots,
        "truth": targets[slots],
        "probabilities": probabilities,
        "predicted": predicted,
        "right": int((predicted == targets[slots]).sum()),
    }


@st.cache_data(max_entries=1, show_spinner=False)
def trained_delta_by_kind() -> dict:
    """The first layer's Δ and kept fraction, mean over channels, then over every position
    of each kind in all the held-out sequences (`{kind: mean}`); how far Δ ranges over the
    blanks; and how many sequences were read."""
    held = _held_out()
    reading = tsel.first_layer_reading(trained_ssm().model, held["inputs"])
    kinds = tsel.position_kinds(held["inputs"], selective_copy_task().n_symbols)
    delta = reading["ssm_delta"].astype(np.float64).mean(axis=-1)
    blanks = delta[kinds == tsel.BLANK]
    return {
        "delta": tsel.means_by_kind(delta, kinds),
        "kept": tsel.means_by_kind(reading["ssm_decay"].mean(axis=-1), kinds),
        "blank_range": {"low": float(blanks.min()), "high": float(blanks.max())},
        "n_sequences": int(held["inputs"].shape[0]),
    }
