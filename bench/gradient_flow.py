"""Gradient flow through time at the recurrent lesson's longest sequence, timed in process.

The lesson's own computation for T = 512 steps (models/analysis/gradient_flow.py): ‖∂L/∂H_t‖ and
‖∂L/∂X_t‖ for the RNN, LSTM and GRU (hidden size 128) and ‖∂L/∂X_t‖ for the small
Transformer, on the same inputs, with one torch thread as the server runs them
(models/serving/runtime.py). The step Jacobians' spectra, which the page draws in a chart of
their own, are timed separately. Each figure is the median of `repeats` runs after one
warm-up run; the models are built once, outside the timing, as the server caches them.
"""

from __future__ import annotations

import statistics
import time

import torch

from models.analysis import gradient_flow as gf
from models.nets.recurrent import Recurrent, RecurrentConfig
from models.nets.tokenizer import Tokenizer
from models.nets.transformer import Transformer, TransformerConfig
from models.serving.runtime import limit_threads

STEPS = gf.MAX_T
HIDDEN = 128
CELLS = ("rnn", "lstm", "gru")


def _models() -> tuple[dict[str, Recurrent], Transformer]:
    transformer = Transformer(TransformerConfig(d_vocab=Tokenizer().vocab_size))
    d_in = transformer.cfg.d_model
    cells = {
        c: Recurrent(RecurrentConfig(cell=c, num_inputs=d_in, num_hiddens=HIDDEN)) for c in CELLS
    }
    return cells, transformer


def _flows(cells: dict[str, Recurrent], transformer: Transformer, X: torch.Tensor, tau: int):
    out = {c: gf.recurrent_gradient_flow(m, X, tau) for c, m in cells.items()}
    out["transformer"] = gf.transformer_gradient_flow(transformer, X, tau)
    return out


def _spectra(cells: dict[str, Recurrent], X: torch.Tensor):
    return {
        c: gf.step_jacobian_norms(
            m, X, gf.jacobian_steps(STEPS, HIDDEN * (2 if c == "lstm" else 1))
        )
        for c, m in cells.items()
    }


def _median_seconds(work, repeats: int) -> float:
    work()  # warm-up: first-call allocations and kernel selection
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(repeats: int = 7) -> dict[str, float]:
    """Median seconds for the four flows together, and for the three spectra together."""
    limit_threads()
    cells, transformer = _models()
    X = gf.synthetic_inputs(STEPS, transformer.cfg.d_model)
    tau = gf.loss_step(STEPS, 0)
    return {
        "flows": _median_seconds(lambda: _flows(cells, transformer, X, tau), repeats),
        "spectra": _median_seconds(lambda: _spectra(cells, X), max(1, repeats // 2)),
    }
