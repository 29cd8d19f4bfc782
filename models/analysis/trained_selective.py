"""The trained selective state-space stack read on its own task: its first layer's step
sizes Δ_t over one selective-copying sequence, and what it answers at the recall markers.

The stack (models/nets/mixer_stacks.py `MixerStack`) returns only its last output, and its
first SSM layer reads `ln1` of the embedded tokens (plus the position table, when the stack
has one). That input is computed here by calling the model's own submodules in the order
the stack calls them (`stack_input`, then `block_pieces` for each block, then `ln_final` and
the readout): no hooks, nothing stored on a module, so the shared frozen model is only read.
tests/unit/test_trained_selective.py holds the composition to the stack's own forward pass.

Positions of a selective-copying sequence are of three kinds: a symbol to be copied, a
blank between them, and a recall marker (an answer slot: at the k-th marker the k-th symbol
must be written). `position_kinds` tells them apart by token id, as the task makes them
(models/training/synthetic_tasks.py SelectiveCopy: symbols 0…n_symbols−1, then the blank,
then the marker).
"""

from __future__ import annotations

import numpy as np
import torch

from models.nets.task_models import SequenceModel
from models.training.task_base import IGNORE

SYMBOL, BLANK, RECALL = "symbol", "blank", "recall"
KINDS = (SYMBOL, BLANK, RECALL)


def _check_stack(model: SequenceModel) -> None:
    if model.spec.kind != "ssm":
        raise ValueError(f"a selective state-space stack is of kind 'ssm', not {model.spec.kind!r}")


def stack_input(model: SequenceModel, ids: torch.Tensor) -> torch.Tensor:
    """What the stack's first block reads, `[..., pos, d_model]`: the embedded tokens, plus
    the learned position table when the stack has one (MixerStack.forward's first lines)."""
    x = model.embed(ids)
    table = getattr(model.core, "W_pos", None)
    if table is not None:
        x = x + table[: ids.shape[-1]].to(x.dtype)
    return x


def block_pieces(block: torch.nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """One pre-norm block on its input `x`, piece by piece (MixerBlock.forward, parallel
    form): `normalized` = ln1(x), what the mixer reads; `mixed`, its output; `resid_mid` =
    x + mixed; `resid_post` = resid_mid + mlp(ln2(resid_mid)), the block's output."""
    normalized = block.ln1(x)
    mixed = block.mixer(normalized, mode="parallel")
    middle = x + mixed
    return {
        "normalized": normalized,
        "mixed": mixed,
        "resid_mid": middle,
        "resid_post": middle + block.mlp(block.ln2(middle)),
    }


def readout(model: SequenceModel, last: torch.Tensor) -> torch.Tensor:
    """Logits `[..., pos, n_out]` from the last block's output: ln_final, then W_U, b_U."""
    return model.core.ln_final(last) @ model.W_U + model.b_U


def first_layer_reading(model: SequenceModel, ids) -> dict[str, np.ndarray]:
    """The stack of kind "ssm" on token ids `[pos]` or `[batch, pos]` (a tensor or an integer
    array): its first SSM layer's
    trace (`ssm_*`, docs/DESIGN.md "Selective state space", computed by the layer's own
    `run_with_cache` on the layer's own input), that input `layer_input [..., pos, d_model]`,
    and the model's `logits [..., pos, n_out]`, all numpy arrays in the model's dtype,
    computed without gradients."""
    _check_stack(model)
    ids = torch.as_tensor(ids)
    with torch.no_grad():
        first = model.core.blocks[0]
        pieces = block_pieces(first, stack_input(model, ids))
        _, trace = first.mixer.run_with_cache(pieces["normalized"], mode="parallel")
        x = pieces["resid_post"]
        for block in model.core.blocks[1:]:
            x = block_pieces(block, x)["resid_post"]
        logits = readout(model, x)
    return trace | {
        "layer_input": pieces["normalized"].numpy().copy(),
        "logits": logits.numpy().copy(),
    }


def position_kinds(ids: np.ndarray, n_symbols: int) -> np.ndarray:
    """Each position's kind (SYMBOL, BLANK or RECALL) for selective-copying ids `[..., pos]`."""
    ids = np.asarray(ids)
    kinds = np.full(ids.shape, SYMBOL, dtype=object)
    kinds[ids == n_symbols] = BLANK
    kinds[ids == n_symbols + 1] = RECALL
    return kinds


def answer_slots(targets: np.ndarray) -> np.ndarray:
    """The positions a sequence is scored at (its recall markers), from its targets `[pos]`."""
    return np.flatnonzero(np.asarray(targets) != IGNORE)


def means_by_kind(values: np.ndarray, kinds: np.ndarray) -> dict[str, float]:
    """The mean of `values [..., pos]` over the positions of each kind (NaN for a kind the
    sequences lack), in float64."""
    values = np.asarray(values, dtype=np.float64)
    return {
        kind: float(values[kinds == kind].mean()) if (kinds == kind).any() else float("nan")
        for kind in KINDS
    }


def softmax(logits: np.ndarray) -> np.ndarray:
    """Probabilities over the last axis, in float64."""
    z = np.asarray(logits, dtype=np.float64)
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)
