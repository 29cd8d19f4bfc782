"""What the lesson "Recurrence returns" computes on the first block's arrays of the visitor's
sentence (`X [pos, d_model]`, `q, k, v [head, pos, d_head]`, numpy, read-only and shared):
every model's output by each of its forms, the implicit patterns, the selective state with Δ
scaled, and the gradient flow of every model on the same inputs. Arrays in, arrays out, so the
lesson's cached runs (components/ui/runs/recurrence.py) hold no tensors.
"""

from __future__ import annotations

import numpy as np
import torch

from models.analysis import gradient_flow as gf
from models.analysis import recurrence_cost
from models.analysis import recurrence_flow as rf
from models.nets.linear_attention import (
    LinearAttentionLayer,
    linear_attention_parallel,
    linear_attention_recurrent,
)
from models.nets.retention import (
    decay_mask,
    retention_chunkwise,
    retention_parallel,
    retention_recurrent,
)
from models.nets.selective_ssm import SelectiveSSM

SSM = "ssm"
LINEAR_ATTENTION = "linear_attention"
TRANSFORMER = "Transformer"


def _tensors(first: dict[str, np.ndarray], *names: str) -> tuple[torch.Tensor, ...]:
    """Float32 tensors of their own of `first`'s arrays (those are read-only and shared)."""
    return tuple(torch.tensor(np.array(first[name])) for name in names)


def _max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max())


def two_ways(first: dict, ssm: SelectiveSSM, gammas: tuple[float, ...], chunk: int) -> dict:
    """Every model's output by each of its forms, float32 as computed: linear attention and
    retention `[head, pos, d_head]` (retention also chunkwise, `chunk` tokens to a chunk, with
    decay `gammas` per head), the SSM `[pos, d_model]`; the largest |difference| of each form
    from the parallel one; and the floats of the state tensors each carried after the last
    token."""
    q, k, v, X = _tensors(first, "q", "k", "v", "X")
    decays = torch.tensor(gammas, dtype=q.dtype)
    with torch.no_grad():
        _, la_parallel = linear_attention_parallel(q, k, v)
        la_recurrent, la_state, la_norm = linear_attention_recurrent(q, k, v)
        _, ret_parallel = retention_parallel(q, k, v, decays)
        ret_recurrent, ret_state = retention_recurrent(q, k, v, decays)
        ret_chunkwise = retention_chunkwise(q, k, v, decays, chunk)
        ssm_parallel = ssm(X, mode="parallel")
        ssm_trace = ssm.trace_tensors(X, mode="sequential")
    ssm_sequential = ssm_trace["ssm_out"]
    measured = recurrence_cost.measured_state_floats(
        la_state, la_norm, ret_state, ssm_trace["ssm_h"], k, v
    )
    outputs = dict(
        la_parallel=la_parallel,
        la_recurrent=la_recurrent,
        ret_parallel=ret_parallel,
        ret_recurrent=ret_recurrent,
        ret_chunkwise=ret_chunkwise,
        ssm_parallel=ssm_parallel,
        ssm_sequential=ssm_sequential,
    )
    differences = dict(
        la=_max_difference(la_parallel, la_recurrent),
        ret=_max_difference(ret_parallel, ret_recurrent),
        ret_chunk=_max_difference(ret_parallel, ret_chunkwise),
        ssm=_max_difference(ssm_parallel, ssm_sequential),
    )
    return {
        "outputs": {name: value.numpy() for name, value in outputs.items()},
        "differences": differences,
        "state_floats": measured,
        "dtype": str(q.dtype).removeprefix("torch."),
        "ssm": dict(d_inner=ssm.cfg.d_inner, d_state=ssm.cfg.d_state),
    }


def linear_patterns(first: dict) -> np.ndarray:
    """Linear attention's implicit pattern `[head, query, key]` on the first block's q, k."""
    q, k, v = _tensors(first, "q", "k", "v")
    with torch.no_grad():
        pattern, _ = linear_attention_parallel(q, k, v)
    return pattern.numpy()


def retention_pattern(first: dict, head: int, gamma: float) -> dict[str, np.ndarray]:
    """Retention's pattern (q kᵀ) ⊙ D `[query, key]` for one head at decay `gamma`, and the
    decay mask D itself."""
    one = slice(head, head + 1)
    q, k, v = (t[one] for t in _tensors(first, "q", "k", "v"))
    gammas = torch.tensor([gamma], dtype=q.dtype)
    with torch.no_grad():
        pattern, _ = retention_parallel(q, k, v, gammas)
        mask = decay_mask(q.shape[1], gammas)
    return {"pattern": pattern[0].numpy(), "decay": mask[0].numpy()}


def selective_state(layer: SelectiveSSM, first: dict, delta_scale: float) -> dict:
    """`layer` on the first block's input with every Δ × `delta_scale`: Δ and the kept
    fraction exp(Δ A) (mean over states) `[pos, d_inner]`, ‖h_t‖ `[pos]`, float32."""
    (X,) = _tensors(first, "X")
    trace = rf.ssm_trace(layer, X, delta_scale)
    return {
        "delta": trace["ssm_delta"],
        "kept": trace["ssm_decay"],
        "h_norm": rf.state_norms(trace["ssm_h"]),
    }


def _kept(result: dict) -> dict:
    return {"grad_X": result["grad_X"], "loss": result["loss"]}


def flows(
    first: dict,
    ids: tuple[int, ...],
    recurrent: dict,
    transformer,
    ssm: SelectiveSSM,
    linear: LinearAttentionLayer,
    delta_scale: float,
) -> dict[str, dict]:
    """Every model's ‖∂L/∂X_t‖ `[pos]` and loss, L = u · output_τ at the last token, on the
    same inputs X (the first block's input of `ids`): the `recurrent` cells by name, the
    lesson's `transformer`, the SSM with Δ × `delta_scale` (and its `kept [pos]`, how much of
    each token's state reaches the last one), and linear attention."""
    (X,) = _tensors(first, "X")
    tau = X.shape[0] - 1
    out = {
        name: _kept(gf.recurrent_gradient_flow(model, X, tau)) for name, model in recurrent.items()
    }
    # The Transformer adds its positions to what it reads: fed its token vectors W_E[ids], its
    # first block reads X itself, and ∂L/∂(W_E[ids] + P) = ∂L/∂X.
    tokens = gf.lesson_inputs(transformer, ids, len(ids))
    out[TRANSFORMER] = _kept(gf.transformer_gradient_flow(transformer, tokens, tau))
    ssm_flow = rf.ssm_gradient_flow(ssm, X, tau, delta_scale=delta_scale)
    kept = rf.ssm_kept_until(ssm, X, tau, delta_scale=delta_scale)
    out[SSM] = _kept(ssm_flow) | {"kept": kept}
    out[LINEAR_ATTENTION] = _kept(rf.linear_attention_gradient_flow(linear, X, tau))
    return out
