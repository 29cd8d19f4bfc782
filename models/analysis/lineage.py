"""The road from n-gram models to GPT, measured: one small model of each kind, the same
input vectors, the same four questions.

Each architecture maps input vectors `X [L, d]` to outputs `Y [L, d]`:

- ``ngram``: a fixed window (Bengio-style neural 3-gram), Y_t = tanh(W·[X_{t−2}; X_{t−1}; X_t]);
- ``rnn`` and ``lstm``: SeqLens's recurrent cells (models/nets/recurrent.py), Y_t = H_t;
- ``rnn_attention``: an RNN whose states then attend to each other (the 2014 step:
  attention on top of recurrence), Y = H + softmax(H·Hᵀ/√d)·H;
- ``encoder`` (BERT's kind): SeqLens's Transformer, every token sees every token;
- ``decoder`` (GPT's kind): the same with the causal mask.

The questions, each a function that measures (nothing here is a quoted number):

- `dependency_depth`: operations on the longest chain from an input to the last output,
  counted in the autograd graph; what must happen one after another, however many cores;
- `forward_seconds`: wall time of one forward pass (the fastest of a few);
- `first_token_reach`: how much of the last output's gradient reaches the first token,
  relative to the last token;
- `sees_later_tokens`: whether the first output changes with the last input (gradient ≠ 0);
  both gradients are measured in float32, as every lesson runs, and again in float64: a
  float32 0 with a float64 value above 0 is underflow (the dependence is there, smaller than
  float32's smallest number), a 0 in both is a model that cannot depend on that token;
- `saved_bytes`: bytes autograd keeps for the backward pass (training memory).

Models are built fresh from fixed seeds with frozen parameters; gradients go only to the
input tensor made for each call.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from models.analysis.gradient_flow import synthetic_inputs
from models.analysis.transformer_backward import transformer_from_embeddings
from models.nets.attention import attention
from models.nets.recurrent import Recurrent, RecurrentConfig, readout
from models.nets.transformer import Transformer, TransformerConfig

ARCHITECTURES = ("ngram", "rnn", "lstm", "rnn_attention", "encoder", "decoder")
WIDTH = 64
WINDOW = 3
# Short and long: enough to show how each measurement grows with L, cheap on 2 cores.
LENGTHS = (32, 128)

Model = Callable[[torch.Tensor], torch.Tensor]


def _window_model(d: int, seed: int, dtype: torch.dtype) -> Model:
    generator = torch.Generator().manual_seed(seed)
    W = (torch.randn(WINDOW * d, d, generator=generator) / math.sqrt(WINDOW * d)).to(dtype)

    def run(X: torch.Tensor) -> torch.Tensor:
        # Every window at once: position t reads X_{t−2}, X_{t−1}, X_t (zeros before the start).
        padded = torch.cat([X.new_zeros(WINDOW - 1, d), X])
        windows = torch.cat([padded[i : i + X.shape[0]] for i in range(WINDOW)], dim=1)
        return torch.tanh(windows @ W)

    return run


def _recurrent_model(cell: str, d: int, seed: int) -> Model:
    # The cell computes in its input's dtype: float64 inputs give a float64 pass.
    model = Recurrent(RecurrentConfig(cell=cell, num_inputs=d, num_hiddens=d), seed=seed)
    return lambda X: model(X)["H"]


def _rnn_attention_model(d: int, seed: int) -> Model:
    rnn = _recurrent_model("rnn", d, seed)

    def run(X: torch.Tensor) -> torch.Tensor:
        H = rnn(X)
        # The states are the queries, keys and values alike: softmax(H·Hᵀ/√d)·H.
        return H + attention(H, H, H)[2]

    return run


def _transformer_model(d: int, seed: int, causal: bool, dtype: torch.dtype) -> Model:
    model = Transformer(TransformerConfig(d_model=d, causal=causal), seed=seed).to(dtype)
    return lambda X: transformer_from_embeddings(model, X)


def build(
    architecture: str, d: int = WIDTH, seed: int = 0, dtype: torch.dtype = torch.float32
) -> Model:
    """A frozen model of that kind: a function from `X [L, d]` to `Y [L, d]`, computing in
    `dtype` (float64: the same weights, each float32 value exactly, with a wider range)."""
    if architecture == "ngram":
        return _window_model(d, seed, dtype)
    if architecture in ("rnn", "lstm"):
        return _recurrent_model(architecture, d, seed)
    if architecture == "rnn_attention":
        return _rnn_attention_model(d, seed)
    if architecture in ("encoder", "decoder"):
        return _transformer_model(d, seed, architecture == "decoder", dtype)
    raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}")


def _input(length: int, d: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return synthetic_inputs(length, d).to(dtype).requires_grad_(True)


# --- the measurements --------------------------------------------------------------------


def dependency_depth(model: Model, length: int, d: int = WIDTH) -> int:
    """Operations on the longest chain from the input to the last output, in the autograd
    graph that computing the last output built. Each must wait for the one before."""
    X = _input(length, d)
    with torch.enable_grad():
        root = model(X)[-1].sum().grad_fn
    # Longest path to the input's leaf, without recursion (a 512-step RNN chains thousands).
    depth: dict[object, int] = {}
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if node in depth:
            continue
        children = [child for child, _ in node.next_functions if child is not None]
        if not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in children if child not in depth)
            continue
        if type(node).__name__ == "AccumulateGrad":
            depth[node] = 0 if node.variable is X else -1
            continue
        reached = [depth[child] for child in children if depth.get(child, -1) >= 0]
        depth[node] = 1 + max(reached) if reached else -1
    return max(depth[root], 0)


def forward_seconds(model: Model, length: int, d: int = WIDTH, repeats: int = 5) -> float:
    """Wall time of one forward pass without gradients: the fastest of a few, as timeit
    advises (on a shared server the slower runs measure the other visitors, not the model)."""
    X = synthetic_inputs(length, d)
    times = []
    with torch.no_grad():
        model(X)  # warm-up
        for _ in range(repeats):
            start = time.perf_counter()
            model(X)
            times.append(time.perf_counter() - start)
    return min(times)


def _input_gradient(
    model: Model, length: int, d: int, output_pos: int, dtype: torch.dtype
) -> torch.Tensor:
    """∂(u · Y_pos)/∂X for a fixed random unit vector u: `[L, d]`, computed in `dtype`."""
    X = _input(length, d, dtype)
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(model(X)[output_pos] @ readout(d).to(dtype), (X,))
    return grad


def first_token_reach(
    model: Model, length: int, d: int = WIDTH, dtype: torch.dtype = torch.float32
) -> float:
    """‖∂L/∂X_0‖ / ‖∂L/∂X_{L−1}‖ for L = u · Y_{L−1}: the share of the last output's gradient
    that reaches the first token. 0 in float32 may be underflow; see `measure`."""
    grad = _input_gradient(model, length, d, -1, dtype).double().norm(dim=1)
    return float(grad[0] / grad[-1]) if grad[-1] > 0 else float("nan")


def sees_later_tokens(
    model: Model, length: int, d: int = WIDTH, dtype: torch.dtype = torch.float32
) -> float:
    """‖∂(u · Y_0)/∂X_{L−1}‖: above zero when the first output depends on the last input."""
    return float(_input_gradient(model, length, d, 0, dtype)[-1].double().norm())


def saved_bytes(model: Model, length: int, d: int = WIDTH) -> int:
    """Bytes autograd keeps for the backward pass of one forward pass (each tensor once)."""
    X = _input(length, d)
    seen: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        if tensor is not X:
            seen[id(tensor)] = tensor.numel() * tensor.element_size()
        return tensor

    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        output = model(X)
    del output
    return sum(seen.values())


@dataclass(frozen=True)
class Measured:
    """Every measurement of one architecture; tuples follow LENGTHS. `reach` and `sees_later`
    are float32 measurements; the `_float64` ones are the same gradients in float64, which
    tell a float32 underflow (0 in float32 only) from no dependence at all (0 in both)."""

    architecture: str
    depth: tuple[int, ...]
    seconds: tuple[float, ...]
    reach: float
    sees_later: float
    memory: tuple[int, ...]
    reach_float64: float
    sees_later_float64: float


def measure(architecture: str, lengths: tuple[int, ...] = LENGTHS, d: int = WIDTH) -> Measured:
    model = build(architecture, d)
    wide = build(architecture, d, dtype=torch.float64)
    longest = max(lengths)
    return Measured(
        architecture=architecture,
        depth=tuple(dependency_depth(model, n, d) for n in lengths),
        seconds=tuple(forward_seconds(model, n, d) for n in lengths),
        reach=first_token_reach(model, longest, d),
        sees_later=sees_later_tokens(model, longest, d),
        memory=tuple(saved_bytes(model, n, d) for n in lengths),
        reach_float64=first_token_reach(wide, longest, d, torch.float64),
        sees_later_float64=sees_later_tokens(wide, longest, d, torch.float64),
    )


def measure_all(lengths: tuple[int, ...] = LENGTHS, d: int = WIDTH) -> list[Measured]:
    return [measure(name, lengths, d) for name in ARCHITECTURES]
