"""Trained weights as model sources for the lessons.

The recurrent lesson's source is a set of four checkpoints trained together on the copy
task, one per model it compares (RNN, LSTM, GRU, Transformer): the shipped set
(`copy-lag20`) or a visitor's own run that trained all four. The lesson feeds each trained
model the task's first held-out sequence through that model's own input layer, so its
gates and gradients are those of the task it learned.

The Transformer lessons' sources are single causal Transformers that read tokens: the
shipped character-level language model (it reads the visitor's own sentence, character by
character) and induction model, or a visitor's Transformer trained on a token task (a
model of another task reads its task's own held-out sequences).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from models.nets.attention import attention_pattern
from models.nets.task_models import SequenceModel
from models.nets.transformer import Transformer
from models.training.tasks import task_from_config
from models.training.text_tasks import CharLM, Numbers

SHIPPED_SOURCE = "copy-lag20"
KINDS = ("rnn", "lstm", "gru", "transformer")
# Tasks whose inputs are token ids, one sequence: a causal Transformer of one reads them.
TOKEN_TASKS = ("copy", "reverse", "induction", "lm")
# Shipped Transformers the attention lessons offer, by checkpoint name. The induction
# model comes first: its heads have measured jobs (tests hold it to its targets); the
# language model's heads are vaguer, but it reads the visitor's own sentence.
SHIPPED_INDUCTION = "induction-transformer"
SHIPPED_LM = "lm-transformer"
SHIPPED_TRANSFORMERS = (SHIPPED_INDUCTION, SHIPPED_LM)
SHIPPED_ENCODER_DECODER = "numbers-encdec"
# How characters a heatmap label cannot show are drawn.
_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥"}
_SAVED = re.compile(r"(?P<prefix>\d{6}-copy-lag\d+)-(?P<kind>rnn|lstm|gru|transformer)")


def complete_runs(names: list[str]) -> list[str]:
    """Prefixes of saved copy-task runs (`<time>-copy-lag<k>`) that have all four models."""
    kinds: dict[str, set[str]] = {}
    for name in names:
        match = _SAVED.fullmatch(name)
        if match:
            kinds.setdefault(match["prefix"], set()).add(match["kind"])
    return sorted((p for p, k in kinds.items() if k == set(KINDS)), reverse=True)


def stem(directory: Path, source: str, kind: str) -> Path:
    return directory / f"{source}-{kind}"


def example(task_config: dict, index: int = 0) -> tuple[list[str], torch.Tensor]:
    """The task's held-out sequence number `index`: its token labels and ids `[T]`."""
    task = task_from_config(task_config)
    if task.name not in TOKEN_TASKS:
        raise ValueError(f"a trained source reads tokens: {TOKEN_TASKS}, not {task.name!r}")
    ids = task.held_out(index + 1).inputs[index]
    return [shown_token(task.vocab[i]) for i in ids.tolist()], ids


def inputs_for(model: SequenceModel, ids: torch.Tensor) -> torch.Tensor:
    """What the trained core reads at each step, `[T, d_model]`: its own input layer's output
    (for the Transformer, its token embedding W_E)."""
    with torch.no_grad():
        if model.spec.is_recurrent:
            return model.embed(ids).detach()
        return model.core.W_E[ids].detach()


def shown_token(token: str) -> str:
    """A token as a label: a space or line break drawn as a visible mark."""
    return _VISIBLE.get(token, token)


def saved_transformers(saved) -> list[str]:
    """Names of a visitor's saved models (`VisitorStore.list`) the attention lessons can
    show: causal Transformers trained on a token task, newest first."""
    return [m.name for m in saved if m.kind == "transformer" and m.task.get("name") in TOKEN_TASKS]


@dataclass(frozen=True)
class Reading:
    """What a trained Transformer reads: ids, their labels, and what was left out."""

    ids: list[int]
    tokens: list[str]
    unknown: list[str]  # characters of the sentence the model's alphabet lacks (skipped)
    n_before_cap: int  # how many ids there were before the cap
    from_sentence: bool  # the visitor's sentence, or the task's own sequence


def read(task_config: dict, text: str, limit: int, index: int = 0) -> Reading:
    """The input a model trained on `task_config` reads, at most `limit` ids (and never
    past its own context): a language model reads `text` character by character, skipping
    characters it never saw; a model of another task reads its task's held-out sequence
    number `index`, since `text` means nothing to it."""
    task = task_from_config(task_config)
    limit = min(limit, task.n_ctx)
    if isinstance(task, CharLM):
        index_of = {c: i for i, c in enumerate(task.vocab)}
        known = [c for c in text if c in index_of]
        unknown = sorted({c for c in text if c not in index_of})
        kept = known[:limit]
        return Reading(
            [index_of[c] for c in kept], [shown_token(c) for c in kept], unknown, len(known), True
        )
    tokens, ids = example(task_config, index)
    return Reading(ids.tolist()[:limit], tokens[:limit], [], len(tokens), False)


def shorter(reading: Reading) -> Reading:
    """The first half of a task's own sequence: the shorter row of a padded batch."""
    half = max(1, len(reading.ids) // 2)
    return Reading(reading.ids[:half], reading.tokens[:half], [], half, False)


def translation_example(task_config: dict) -> tuple[list[int], list[int], list[str], list[str]]:
    """The trained encoder–decoder's own held-out example with the longest source:
    (source ids, decoder input ids, source words, decoder input tokens). The decoder reads
    [BOS] and the numerals so far, as it did in training."""
    task = task_from_config(task_config)
    if not isinstance(task, Numbers):
        raise ValueError("the trained encoder–decoder translates numbers")
    number = max(task.numbers(held_out=True), key=lambda n: (len(task.encode(n)[0]), -n))
    source, target = task.encode(number)
    decoder = target[:-1]
    return source, decoder, [task.vocab[i] for i in source], [task.vocab[i] for i in decoder]


def without_causal_mask(core: Transformer) -> Transformer:
    """A frozen copy of a trained causal Transformer that applies no mask of its own, so
    the mask a lesson passes alone decides what each token sees (the same weights under
    every mask: under the causal mask it computes exactly what the trained model does)."""
    twin = Transformer(replace(core.cfg, causal=False), core.seed)
    twin.load_state_dict(core.state_dict(), strict=True)
    return twin.requires_grad_(False).eval()


def untrained(model: SequenceModel) -> SequenceModel:
    """The same model before its first training step: the lab builds every model from
    (spec, seed), so this is exactly the table and weights training started from."""
    return SequenceModel(model.spec, model.seed).freeze()


def positional_attention(core: Transformer) -> np.ndarray:
    """The first layer's attention `[head, query_pos, key_pos]` from the position vectors
    alone: what each head would do if every token vector were zero. A learned table means
    nothing by itself; this is how the model reads it (through ln1, W_Q and W_K)."""
    block = core.blocks[0]
    with torch.no_grad():
        x = block.ln1(core.pos_embed(core.cfg.n_ctx))
        attn = block.attn
        q = torch.einsum("pd,hde->hpe", x, attn.W_Q) + attn.b_Q[:, None]
        k = torch.einsum("pd,hde->hpe", x, attn.W_K) + attn.b_K[:, None]
        _, pattern = attention_pattern(q, k, causal=core.cfg.causal)
        return pattern.numpy().astype(np.float64)


def weight_by_offset(pattern: np.ndarray) -> np.ndarray:
    """`[head, offset]`: the mean weight a query puts on the key `offset` positions back
    (offset 0: itself), over the queries that have such a key."""
    n = pattern.shape[-1]
    return np.stack(
        [np.diagonal(pattern, -k, axis1=-2, axis2=-1).mean(axis=-1) for k in range(n)], axis=-1
    )


def position_cosines(table: np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair of rows of a position table `[n_pos, d_model]`."""
    table = np.asarray(table, dtype=np.float64)
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    unit = table / np.where(norms > 0, norms, 1.0)
    return unit @ unit.T


def cosine_by_offset(cosines: np.ndarray) -> np.ndarray:
    """The mean cosine between positions k apart, for k = 0 … n_pos − 1."""
    n = cosines.shape[0]
    return np.array([np.diagonal(cosines, k).mean() for k in range(n)])
