"""Gradient clipping by norm, on the gradient that reaches every input step.

The recurrent lesson's clipping view: torch's own clip_grad_norm_ scales the whole gradient
down to the threshold, and the early steps' share of it stays where it was.
"""

from __future__ import annotations

import math

import numpy as np
import torch

# The share of the steps before the loss called "early" in the clipping view.
EARLY_FRACTION = 0.25


def clip_summary(grad_rows: np.ndarray, tau: int, threshold: float) -> dict:
    """Clip the gradient `[T, d]` (every step's ∂L/∂X_t together) with torch's own
    clip_grad_norm_ on a fresh tensor, and say how much of it the early steps hold.

    "Early" is the first quarter of the steps up to the loss (at least one step). Shares are of
    the squared norm, so the shares of all steps add up to 1. Clipping multiplies every step by
    the same factor: the total falls to the threshold, the shares stay exactly where they were.
    """
    grads = torch.from_numpy(np.ascontiguousarray(grad_rows[: tau + 1], dtype=np.float32))
    holder = torch.zeros_like(grads, requires_grad=True)
    holder.grad = grads.clone()
    total = float(torch.nn.utils.clip_grad_norm_([holder], max_norm=threshold))
    clipped = holder.grad.numpy().astype(np.float64)
    n_early = max(1, int((tau + 1) * EARLY_FRACTION))
    result = {"total": total, "n_early": n_early, "threshold": float(threshold)}
    for name, rows in (("", grads.numpy().astype(np.float64)), ("_clipped", clipped)):
        with np.errstate(over="ignore", invalid="ignore"):
            per_step = (rows**2).sum(axis=1)
            whole = float(per_step.sum())
            share = float(per_step[:n_early].sum() / whole) if whole > 0 else float("nan")
        result["per_step" + name] = np.sqrt(per_step)
        result["norm" + name] = math.sqrt(whole) if math.isfinite(whole) else whole
        result["early_share" + name] = share
    return result
