"""Switch attention heads off and measure what changes.

A head is switched off by zeroing its output z (its attention-weighted values) before
W_O mixes the heads, in the same forward pass (models/nets/hf_models.py, per call: the shared
model is untouched). What changes is measured where the model's output is read:

- a decoder's next-token probabilities after the last token;
- an encoder's sentence embedding (the mean of the last layer's token vectors, as
  sentence-transformers pools all-MiniLM-L6-v2), by cosine similarity, and each token's
  own vector likewise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from models.nets.hf_models import AttentionModel
from models.serving.fair_slots import Unfinished
from models.text import Tokenized

TOP_K = 8
# Heads measured together in one batched pass when every head is switched off in turn:
# the unit of that work, between which it may stop (every_head_effect's go_on). Four
# took no longer in all than 16 here (MiniLM, 128 tokens: 1.7 s against 1.9 s).
HEADS_PER_PASS = 4


@dataclass(frozen=True)
class NextTokenChange:
    """A decoder's next-token distribution with and without the chosen heads."""

    token_ids: np.ndarray  # the tokens shown: the most likely before or after
    before: np.ndarray  # their probabilities, all heads on
    after: np.ndarray  # with the chosen heads off
    kl: float  # KL(before ‖ after) over the whole vocabulary, in nats
    top_before: int  # the most likely next token, all heads on
    top_after: int


@dataclass(frozen=True)
class EmbeddingChange:
    """An encoder's sentence embedding and token vectors with and without the chosen heads."""

    cosine: float  # sentence embedding before vs after
    token_cosine: np.ndarray  # [pos]: each token's last-layer vector before vs after


def sentence_embedding(last_hidden: torch.Tensor) -> torch.Tensor:
    """Mean over positions (every token is real here: there is no padding)."""
    return last_hidden.mean(dim=1)


def _cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1)


def _kl(before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
    """KL(p ‖ q) from logits, per batch row, in nats."""
    log_p = torch.log_softmax(before.double(), dim=-1)
    log_q = torch.log_softmax(after.double(), dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(dim=-1)


def ablate(
    model: AttentionModel, tokenized: Tokenized, heads: Iterable[tuple[int, int]]
) -> NextTokenChange | EmbeddingChange:
    """What switching `heads` off (all at once) changes in the model's output."""
    base = model.forward(tokenized.ids, hidden=False)
    off = model.forward(tokenized.ids, keep=model.head_keep(heads), hidden=False)
    if model.cfg.causal:
        return next_token_change(base.next_logits[0], off.next_logits[0])
    before, after = base.last_hidden[0], off.last_hidden[0]
    return EmbeddingChange(
        cosine=float(
            _cosine(sentence_embedding(base.last_hidden), sentence_embedding(off.last_hidden))[0]
        ),
        token_cosine=_cosine(before, after).numpy(),
    )


def next_token_change(before: torch.Tensor, after: torch.Tensor, k: int = TOP_K):
    p = torch.softmax(before.double(), dim=-1)
    q = torch.softmax(after.double(), dim=-1)
    top = torch.cat([p.topk(k).indices, q.topk(k).indices])
    ids = list(dict.fromkeys(top.tolist()))  # most likely before first, then after
    return NextTokenChange(
        token_ids=np.array(ids, dtype=np.int64),
        before=p[ids].numpy(),
        after=q[ids].numpy(),
        kl=float(_kl(before, after)),
        top_before=int(p.argmax()),
        top_after=int(q.argmax()),
    )


def every_head_effect(
    model: AttentionModel,
    tokenized: Tokenized,
    batch: int = HEADS_PER_PASS,
    go_on: Callable[[], bool] = lambda: True,
) -> np.ndarray:
    """`[layer, head]`: how much switching that head off alone changes the output.

    Decoders: KL(before ‖ after) of the next-token distribution, in nats. Encoders:
    1 − cosine similarity of the sentence embedding. Several heads go through one batched
    pass (each batch row switches off its own head). Before each pass `go_on()` is asked;
    when it says no, `Unfinished` carries the grid measured so far (NaN elsewhere).
    """
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    base = model.forward(tokenized.ids, hidden=False)
    effects = np.full(n_layers * n_heads, np.nan)
    flat = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    for start in range(0, len(flat), batch):
        if not go_on():
            raise Unfinished(effects.reshape(n_layers, n_heads), start, len(flat))
        chunk = flat[start : start + batch]
        effects[start : start + len(chunk)] = _effects_of(model, tokenized, base, chunk)
    return effects.reshape(n_layers, n_heads)


def _effects_of(model: AttentionModel, tokenized: Tokenized, base, chunk) -> np.ndarray:
    """One batched pass: each row switches off its own head of `chunk`."""
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    keep = torch.ones(len(chunk), n_layers, n_heads)
    for row, (layer, head) in enumerate(chunk):
        keep[row, layer, head] = 0.0
    out = model.forward(tokenized.ids, keep=keep, hidden=False)
    if model.cfg.causal:
        return _kl(base.next_logits.expand_as(out.next_logits), out.next_logits).numpy()
    before = sentence_embedding(base.last_hidden).expand(len(chunk), -1)
    return (1.0 - _cosine(before, sentence_embedding(out.last_hidden))).numpy()
