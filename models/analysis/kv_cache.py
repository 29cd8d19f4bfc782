"""Greedy generation with a decoder, with and without a KV cache, step by step.

Without a cache, every step runs the whole sequence again and keeps only the last
position's logits. With one, a step runs the single newest token: its query meets the
keys and values of every earlier token, kept from the steps before (one more row per
step and layer), and only its own key and value are computed. A causal decoder's earlier
rows never change when a token is appended (models/analysis/masks.py's leakage proof), which is
why reusing them gives the same logits.

The decoder is models/nets/transformer.py's `Transformer` with `causal=True`; the step below
reads its weights and changes nothing on it. Logits come from a language-model head
`W_U [d_model, d_vocab]`, random like the rest (the model is untrained: the words it picks
mean nothing; what the page shows is that both ways pick the same ones, and their cost).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from models.nets.attention import attention
from models.nets.transformer import Transformer, TransformerConfig
from models.serving.timing import best_times, single_thread

Past = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: K, V `[head, pos, d_head]`


def lm_head(cfg: TransformerConfig, seed: int = 0) -> torch.Tensor:
    """`W_U [d_model, d_vocab]`, entries N(0, 1/d_model): logits of unit scale."""
    generator = torch.Generator().manual_seed(20_000 + seed)
    return torch.randn(cfg.d_model, cfg.d_vocab, generator=generator) / math.sqrt(cfg.d_model)


def _check(model: Transformer) -> None:
    if not model.cfg.causal or model.cfg.cross_attention:
        raise ValueError("the KV cache needs a causal decoder without cross-attention")
    if model.cfg.positional not in ("sinusoidal", "learned", "none"):
        raise ValueError("this step handles added positional encodings only")


def full_step(model: Transformer, ids: list[int], W_U: torch.Tensor) -> torch.Tensor:
    """Logits for the next token by running the whole sequence again: `[d_vocab]`."""
    return _full_final(model, ids) @ W_U


def _full_final(model: Transformer, ids: list[int]) -> torch.Tensor:
    """The last position's final residual (after ln_final), running the whole sequence."""
    with torch.no_grad():
        return model(ids)[-1]


def cached_step(
    model: Transformer, token: int, position: int, past: Past, W_U: torch.Tensor
) -> tuple[torch.Tensor, Past]:
    """Logits for the next token from the newest token alone and the cache of the earlier
    ones; returns the cache grown by one row per layer (a new list: `past` is kept)."""
    final, grown = _cached_final(model, token, position, past)
    return final @ W_U, grown


def _cached_final(
    model: Transformer, token: int, position: int, past: Past
) -> tuple[torch.Tensor, Past]:
    """The newest position's final residual (after ln_final) from the cache, and the
    grown cache. Matrix products, not einsum: the same sums, without einsum's per-call
    planning, which costs more than the arithmetic of a single row."""
    grown: Past = []
    with torch.no_grad():
        x = model.W_E[token][None]
        pos = model.pos_embed(position + 1)
        if pos is not None:
            x = x + pos[position]
        for block, (past_k, past_v) in zip(model.blocks, past, strict=True):
            attn = block.attn
            h = block.ln1(x)
            # [1, d] @ [head, d, d_head] → [head, 1, d_head]
            q, k, v = (
                h @ w + b[:, None]
                for w, b in ((attn.W_Q, attn.b_Q), (attn.W_K, attn.b_K), (attn.W_V, attn.b_V))
            )
            keys, values = torch.cat((past_k, k), dim=1), torch.cat((past_v, v), dim=1)
            grown.append((keys, values))
            # The newest token may see every cached one: no mask is needed.
            _, _, z = attention(q, keys, values)
            # Σ_head z_head · W_O[head]: [head, 1, d_head] @ [head, d_head, d] summed over heads
            x = x + (z @ attn.W_O).sum(dim=0) + attn.b_O
            x = x + block.mlp(block.ln2(x))
        return model.ln_final(x)[0], grown


def empty_cache(model: Transformer) -> Past:
    cfg = model.cfg
    empty = torch.zeros(cfg.n_heads, 0, cfg.d_head)
    return [(empty, empty) for _ in model.blocks]


def prefill(model: Transformer, ids: list[int]) -> Past:
    """The cache for `ids` from one pass over all of them at once (how a prompt is read):
    every layer's K and V, straight from the trace."""
    if not ids:
        return empty_cache(model)
    _, trace = model.run_with_cache(ids)
    return [
        tuple(torch.from_numpy(trace[f"blocks.{layer}.attn.hook_{x}"]) for x in "kv")
        for layer in range(model.cfg.n_layers)
    ]


def pair_multiply_adds(cfg: TransformerConfig) -> int:
    """Multiply-adds of one query meeting one key: Q·Kᵀ and weights·V, in every layer."""
    return 2 * cfg.n_layers * cfg.n_heads * cfg.d_head


def row_multiply_adds(cfg: TransformerConfig) -> int:
    """Multiply-adds of running one position through every layer's other products: its Q, K
    and V, W_O and the MLP."""
    d, hd = cfg.d_model, cfg.n_heads * cfg.d_head
    return cfg.n_layers * (3 * d * hd + hd * d + 2 * d * cfg.d_mlp)


def multiply_adds(cfg: TransformerConfig, n_rows: int, n_keys: int) -> int:
    """Multiply-adds of one step that runs `n_rows` positions against `n_keys` keys and
    turns one position into logits, counted from the shapes of its matrix products: a
    cached step (1 row, n keys) is affine in n, recomputing (n rows, n keys) quadratic."""
    return (
        n_rows * row_multiply_adds(cfg)
        + n_rows * n_keys * pair_multiply_adds(cfg)
        + cfg.d_model * cfg.d_vocab
    )


@dataclass(frozen=True)
class Generation:
    """Per generated token: the id each way picked, max |logit difference|, the cache's
    rows after the step and the multiply-adds each way."""

    prompt: list[int]
    cached_ids: list[int]
    full_ids: list[int]
    logit_difference: np.ndarray
    cache_rows: np.ndarray
    macs_cached: np.ndarray
    macs_full: np.ndarray
    # Layer 0, head 0's cached K and V after each step `[pos, d_head]`.
    keys: list[np.ndarray]
    values: list[np.ndarray]


def _check_lengths(model: Transformer, prompt: list[int], n_new: int) -> None:
    _check(model)
    if not prompt or len(prompt) + n_new > model.cfg.n_ctx:
        raise ValueError(f"prompt plus new tokens must be 1 … {model.cfg.n_ctx} long")


def generate(model: Transformer, W_U: torch.Tensor, prompt: list[int], n_new: int) -> Generation:
    """Greedy generation of `n_new` tokens both ways, side by side, step by step.

    The prompt but its last token is read into the cache in one pass (`prefill`); each
    step then runs one token and picks the next from each way's own logits.
    """
    _check_lengths(model, prompt, n_new)
    with single_thread():
        return _generate(model, W_U, prompt, n_new)[0]


def _generate(
    model: Transformer, W_U: torch.Tensor, prompt: list[int], n_new: int
) -> tuple[Generation, list[Past], list[int]]:
    """The generation, and what each step ran (the cache before it, the sequence) for
    timing it again."""
    past = prefill(model, prompt[:-1])
    cached_ids, full_ids = list(prompt), list(prompt)
    pasts, differences = [], []
    for _ in range(n_new):
        pasts.append(past)
        final_c, past = _cached_final(model, cached_ids[-1], len(cached_ids) - 1, past)
        # Both ways' logits in one product: W_U (d_model × d_vocab) is read once a step.
        logits_c, logits_f = torch.stack((final_c, _full_final(model, full_ids))) @ W_U
        cached_ids.append(int(logits_c.argmax()))
        full_ids.append(int(logits_f.argmax()))
        differences.append(float((logits_c - logits_f).abs().max()))
    # Step s ran the sequence's first len(prompt) + s tokens, the last one against pasts[s].
    lengths = [len(prompt) + step for step in range(n_new)]
    generation = Generation(
        prompt=list(prompt),
        cached_ids=cached_ids[len(prompt) :],
        full_ids=full_ids[len(prompt) :],
        logit_difference=np.array(differences),
        cache_rows=np.array(lengths),
        macs_cached=np.array([multiply_adds(model.cfg, 1, n) for n in lengths], dtype=np.int64),
        macs_full=np.array([multiply_adds(model.cfg, n, n) for n in lengths], dtype=np.int64),
        keys=[p[0][0][0].numpy().copy() for p in [*pasts[1:], past]],
        values=[p[0][1][0].numpy().copy() for p in [*pasts[1:], past]],
    )
    return generation, pasts, cached_ids


def step_times(
    model: Transformer, W_U: torch.Tensor, prompt: list[int], n_new: int
) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of every generation step with the cache and recomputing everything, timed
    on the same inputs (models/serving/timing.py). The time depends on the lengths, not on which
    tokens they are, so a page can time one prompt per length for every visitor."""
    _check_lengths(model, prompt, n_new)
    with single_thread():
        run, pasts, sequence = _generate(model, W_U, prompt, n_new)
    lengths = [int(n) for n in run.cache_rows]
    cached_calls = [
        lambda n=n, p=p: cached_step(model, sequence[n - 1], n - 1, p, W_U)
        for n, p in zip(lengths, pasts, strict=True)
    ]
    full_calls = [lambda n=n: full_step(model, sequence[:n], W_U) for n in lengths]
    seconds = best_times(cached_calls + full_calls, passes=3)
    return seconds[:n_new], seconds[n_new:]
