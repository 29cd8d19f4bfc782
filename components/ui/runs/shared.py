"""Models several lessons share, loaded once per process and only ever read."""

from __future__ import annotations

import threading
import time

import streamlit as st

from components.i18n import t
from components.ui.visitor_links import visitor_id


def first_time_under_spinner(done: threading.Event, message_key: str, load):
    """`load()` (a cached resource) under a spinner in the visitor's language the first
    time, while it takes seconds; every later call draws no spinner at all."""
    if done.is_set():
        return load()
    with st.spinner(t(message_key)):
        value = load()
    done.set()
    return value


# --- SeqLens's own small models (models/nets/tokenizer.py, models/nets/transformer.py) ---


@st.cache_resource(show_spinner=False)
def load_tokenizer():
    from models.nets.tokenizer import Tokenizer

    return Tokenizer()


@st.cache_resource(show_spinner=False)
def load_transformer(positional: str = "sinusoidal", causal: bool = False, seed: int = 0):
    """One frozen random Transformer per (encoding, direction, seed), shared by every session:
    only ever read (no hooks, nothing stored on it)."""
    from models.nets.transformer import Transformer, TransformerConfig
    from models.serving.runtime import limit_threads, settle_heap_after_run

    limit_threads()
    cfg = TransformerConfig(
        d_vocab=load_tokenizer().vocab_size, positional=positional, causal=causal
    )
    model = Transformer(cfg, seed=seed)
    settle_heap_after_run()
    return model


# --- the recurrent lesson's models (models/nets/recurrent.py) ---


@st.cache_resource(max_entries=48, show_spinner=False)
def load_recurrent(
    cell: str,
    num_inputs: int,
    num_hiddens: int,
    activation: str = "tanh",
    init: str = "random",
    radius: float = 1.0,
    forget_bias: float = 1.0,
    seed: int = 0,
):
    """One frozen RNN, LSTM or GRU per (config, seed), shared by every session: only ever read
    (no hooks, nothing stored on it, gradients only with respect to per-request tensors)."""
    from models.nets.recurrent import Recurrent, RecurrentConfig
    from models.serving.runtime import limit_threads

    limit_threads()
    cfg = RecurrentConfig(
        cell=cell,
        num_inputs=num_inputs,
        num_hiddens=num_hiddens,
        activation=activation,
        init=init,
        radius=radius,
        forget_bias=forget_bias,
    )
    return Recurrent(cfg, seed=seed)


# --- trained models: shipped checkpoints, visitors' own, the training queue ---


@st.cache_resource(max_entries=64, show_spinner=False)
def load_checkpoint(stem: str):
    """A shipped or saved checkpoint, frozen and shared (only ever read)."""
    from models.serving.runtime import limit_threads
    from models.training import checkpoints

    limit_threads()
    return checkpoints.load(stem)


def trained_stem(name: str) -> str:
    """Where the trained model `name` is kept: with the shipped checkpoints, or in this
    visitor's own folder (a visitor's model names never clash with the shipped ones)."""
    from models.analysis import trained_sources as ts
    from models.training.train import CHECKPOINT_DIR, CHINESE_LM

    if name in (*ts.SHIPPED_TRANSFORMERS, ts.SHIPPED_ENCODER_DECODER, CHINESE_LM):
        return str(CHECKPOINT_DIR / name)
    return str(load_visitor_store().folder(visitor_id()) / name)


def about_trained(checkpoint, key_prefix: str) -> str:
    """Which trained weights are shown, in the string `<key_prefix>.<task>`: the task, the
    size and the result measured when training ended (the checkpoint's metrics)."""
    task, spec = checkpoint.task, checkpoint.config.get("model", {})
    metrics = checkpoint.metrics
    return t(
        f"{key_prefix}.{task.get('name')}",
        n_layers=spec.get("n_layers"),
        n_heads=spec.get("n_heads"),
        d_model=spec.get("d_model"),
        steps=checkpoint.config.get("training", {}).get("steps", "?"),
        accuracy=metrics.get("accuracy", float("nan")),
        loss=metrics.get("loss", float("nan")),
        lag=task.get("lag", "?"),
        shortest=task.get("min_repeat", "?"),
        longest=task.get("max_repeat", "?"),
    )


@st.cache_data(max_entries=8, show_spinner=False)
def induction_roles(stem: str) -> dict:
    """A trained induction model's strongest induction head and the strongest
    previous-token head in a layer before it, measured on held-out sequences
    (models/analysis/probes.py): `(layer, head, score)` each."""
    from models.analysis.probes import circuit, head_scores
    from models.training.tasks import task_from_config

    checkpoint = load_checkpoint(stem)
    return circuit(head_scores(checkpoint.model, task_from_config(checkpoint.task)))


@st.cache_data(max_entries=4, show_spinner=False)
def previous_char_head(stem: str) -> tuple[int, int, float, float]:
    """A character model's strongest previous-character head, measured on its held-out
    text (models/analysis/char_heads.py): `(layer, head, score, even)`, `even` the score
    of a head that spreads its weight evenly, on windows as long."""
    from models.analysis.char_heads import (
        even_previous_weight,
        held_out_windows,
        previous_char_scores,
    )
    from models.training.tasks import task_from_config

    checkpoint = load_checkpoint(stem)
    task = task_from_config(checkpoint.task)
    windows = held_out_windows(task)
    scores = previous_char_scores(checkpoint.model, windows)
    layer, head = divmod(int(scores.argmax()), scores.shape[1])
    return layer, head, float(scores[layer, head]), even_previous_weight(len(windows[0]))


def induction_roles_text(roles: dict, key: str) -> str:
    """The string `key` naming the measured induction and previous-token heads and scores."""
    (i_layer, i_head, i_score), (p_layer, p_head, p_score) = (
        roles["induction"],
        roles["previous_token"],
    )
    return t(
        key,
        i_layer=i_layer,
        i_head=i_head,
        i_score=i_score,
        p_layer=p_layer,
        p_head=p_head,
        p_score=p_score,
    )


@st.cache_resource(show_spinner=False)
def load_visitor_store():
    from models.serving.visitor_store import VisitorStore

    store = VisitorStore()
    store.prune()
    return store


def _close_job_manager(manager) -> None:
    manager.close()


# Released when the cache is cleared (a test session's end): the runs stop, the threads end.
@st.cache_resource(show_spinner=False, on_release=_close_job_manager)
def load_job_manager():
    """One queue for the whole server: at most MAX_RUNNING training runs at once. Its state
    folder, where `python -m models.training.jobs clear` leaves its request, is the visitor
    store's."""
    import logging

    from models.training.jobs import MAX_RUNNING, JobManager

    store = load_visitor_store()
    # The operator's log shows every refused, dropped, stopped and cleared run.
    log = logging.getLogger("seqlens.jobs")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)

    def save(job) -> None:

        store.prune()
        task = job.trainers and next(iter(job.trainers.values())).task
        stamp = time.strftime("%H%M%S")  # one for the run: its models' names go together
        # Saved before the queue marks the run finished (models/training/jobs.py): its
        # length is measured now, on the queue's clock (time.monotonic).
        seconds = (job.finished or time.monotonic()) - job.started
        for kind, trainer in job.trainers.items():
            store.save(
                job.requester.visitor,
                f"{task.key()}-{kind}",
                trainer.model,
                stamp=stamp,
                task=task.config(),
                training=trainer.metadata(seconds),
                metrics=job.results.get(kind, {}),
            )

    return JobManager(max_running=MAX_RUNNING, on_finish=save, state_dir=store.root)
