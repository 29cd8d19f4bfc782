"""A trained SeqLens Transformer, read by the attention lesson like its Hugging Face models.

The lesson and models/analysis/ablation.py ask a model for `cfg` (an AttentionConfig), `tokenize`,
`special_positions`, `run_with_cache`, `forward(ids, keep, hidden)`, `head_keep`,
`vocab_token` and `reading_notes` (models/nets/hf_models.py). `TrainedAttention` answers them
for a causal Transformer the training lab trained on a token task (models/nets/task_models.py):
its core is models/nets/transformer.py's `Transformer`, its output its own readout W_U, b_U.

What it reads (models/analysis/trained_sources.py `read`): the character language model reads the
visitor's sentence character by character, skipping characters its alphabet lacks (a note
says which); a model of another task reads its task's own held-out sequence, since a
sentence means nothing to it. That sequence ends on the last position the task scores, so
the output the lesson measures is one the model was trained to give there (for the
induction model: the symbol that followed this one in the first copy).

The model is shared and only read: a head is switched off by a factor passed with the call
(`Transformer.forward(..., head_keep=)`), nothing is stored on it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch

from models.analysis.trained_sources import TOKEN_TASKS, read, shown_token
from models.nets.hf_models import MAX_TOKENS, AttentionConfig, Outputs, keep_factors
from models.serving.model_files import ModelRefused
from models.text import Note, Tokenized, tokenization_notes
from models.training.checkpoints import Checkpoint
from models.training.task_base import IGNORE
from models.training.tasks import task_from_config
from models.training.text_tasks import CharLM

MODEL_TYPE = "seqlens"
# The trace names the lesson reads, as AttentionModel.run_with_cache gives them.
TRACE_HOOKS = (".attn.hook_pattern", ".hook_resid_pre")


class NothingToRead(ModelRefused):
    """The language model knows none of the sentence's characters."""

    def __init__(self):
        super().__init__("nothing_to_read")


def last_scored_end(task) -> int:
    """How many tokens of the task's first held-out sequence to read so that the last one
    is a position the task scores (its output there was trained)."""
    scored = torch.nonzero(task.held_out(1).targets[0] != IGNORE).flatten()
    return int(scored[-1]) + 1 if len(scored) else task.n_ctx


class TrainedAttention:
    """A trained causal Transformer (a `SequenceModel` of kind "transformer") of a token task."""

    def __init__(self, checkpoint: Checkpoint):
        model = checkpoint.model
        self.task = task_from_config(checkpoint.task)
        if model.spec.kind != "transformer" or self.task.name not in TOKEN_TASKS:
            raise ValueError("the attention lesson reads Transformers trained on a token task")
        self.model = model
        self.task_config = checkpoint.task
        self.reads_sentence = isinstance(self.task, CharLM)
        core = model.core.cfg
        self.cfg = AttentionConfig(
            n_layers=core.n_layers,
            n_heads=core.n_heads,
            d_model=core.d_model,
            d_head=core.d_head,
            n_ctx=core.n_ctx,
            d_vocab=model.spec.n_out,
            n_kv_heads=core.n_heads,
            causal=True,
            model_type=MODEL_TYPE,
        )
        self.n_params = model.n_parameters()
        self._index = {c: i for i, c in enumerate(self.task.vocab)}

    # --- text in ------------------------------------------------------------------

    def tokenize(self, text: str, max_tokens: int = MAX_TOKENS) -> Tokenized:
        reading = read(self.task_config, text, max_tokens)
        if not reading.from_sentence:
            end = last_scored_end(self.task)
            ids, tokens = reading.ids[:end], reading.tokens[:end]
            return Tokenized(tuple(ids), tuple(tokens), ((0, 0),) * len(ids), len(ids))
        if not reading.ids:
            raise NothingToRead
        known = [(i, i + 1) for i, c in enumerate(text) if c in self._index]
        return Tokenized(
            ids=tuple(reading.ids),
            tokens=tuple(reading.tokens),
            offsets=tuple(known[: len(reading.ids)]),
            n_tokens_before_cap=reading.n_before_cap,
        )

    def special_positions(self, tokenized: Tokenized) -> tuple[int, ...]:
        return ()  # no [CLS] or <s>: every position holds a token of the text or the task

    def reading_notes(self, tokenized: Tokenized, text: str) -> list[Note]:
        """What was lost of the sentence: characters the alphabet lacks, or past the
        context the model was trained on. A task's own sequence loses nothing."""
        if not self.reads_sentence:
            return []
        cap = min(MAX_TOKENS, self.cfg.n_ctx)
        unknown = read(self.task_config, text, cap).unknown
        n = len(tokenized.ids)
        return tokenization_notes(n, tokenized.n_tokens_before_cap, cap, unknown, "char_")

    def vocab_token(self, token_id) -> str:
        token_id = int(token_id)
        if 0 <= token_id < len(self.task.vocab):
            return shown_token(self.task.vocab[token_id])
        return f"#{token_id}"

    # --- forward passes -------------------------------------------------------------

    def forward(
        self, ids: Iterable[int], keep: torch.Tensor | None = None, hidden: bool = True
    ) -> Outputs:
        """Next-token logits after `ids` from the model's own readout, once per row of
        `keep` ([batch, layer, head]). The attention and hidden states are in
        `run_with_cache`'s trace; the ablation reads only the logits, so none are kept
        here whatever `hidden` says."""
        tokens = torch.tensor([list(ids)])
        if keep is not None:
            tokens = tokens.expand(keep.shape[0], -1)
        with torch.inference_mode():
            last = self.model.core(tokens, head_keep=keep)[:, -1]
            logits = last @ self.model.W_U + self.model.b_U
        return Outputs((), (), logits, None)

    def run_with_cache(self, tokenized: Tokenized) -> dict[str, np.ndarray]:
        """A fresh trace under the names AttentionModel.run_with_cache gives, from the
        Transformer's own `run_with_cache`."""
        _, cache = self.model.core.run_with_cache(list(tokenized.ids))
        last_post = f"blocks.{self.cfg.n_layers - 1}.hook_resid_post"
        trace = {
            "tokens": np.array(tokenized.tokens, dtype=str),
            "token_ids": np.array(tokenized.ids, dtype=np.int64),
        }
        trace |= {k: v for k, v in cache.items() if k.endswith(TRACE_HOOKS) or k == last_post}
        return trace

    def head_keep(self, ablate: Iterable[tuple[int, int]]) -> torch.Tensor:
        return keep_factors(self.cfg, ablate)
