"""What self-attention and a recurrent network cost as the sequence grows, measured.

Self-attention over n positions makes an n × n score matrix per head: its memory and
multiply-adds grow as n², but all n positions are computed at once, by a fixed number of
matrix products whatever n is. An RNN keeps one hidden state: memory and work grow as n,
but step t needs step t − 1, so it takes n steps one after another.

The numbers are timed here: one attention layer of models/nets/attention.py and one RNN
layer of models/nets/recurrent.py with the same width, on random inputs. Memory is what the
attention layer's score and weight tensors (and the RNN's hidden states) actually occupy.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from models.nets.attention import attention
from models.nets.recurrent import Recurrent, RecurrentConfig
from models.nets.transformer import TransformerConfig
from models.serving.timing import THREADS, best_times

LENGTHS = tuple(2**i for i in range(4, 11))  # 16 … 1024


def measure(
    lengths=LENGTHS, cfg: TransformerConfig | None = None, seed: int = 0
) -> dict[str, np.ndarray]:
    """Time (the best of five interleaved passes, seconds) and memory (bytes) per length
    for one self-attention layer and one RNN layer of width d_model."""
    cfg = cfg or TransformerConfig()
    generator = torch.Generator().manual_seed(seed)
    h, e, d = cfg.n_heads, cfg.d_head, cfg.d_model
    W = [torch.randn(h, d, e, generator=generator) / math.sqrt(d) for _ in range(3)]
    rnn = Recurrent(RecurrentConfig(cell="rnn", num_inputs=d, num_hiddens=d), seed=seed)
    out: dict[str, list] = {k: [] for k in ("attn_bytes", "rnn_bytes")}
    attention_calls, rnn_calls = [], []
    with torch.no_grad():
        for n in lengths:
            x = torch.randn(n, d, generator=generator)

            def self_attention(x=x):
                q, k, v = (torch.einsum("pd,hde->hpe", x, w) for w in W)
                return attention(q, k, v)

            scores, pattern, _ = self_attention()
            out["attn_bytes"].append(
                scores.element_size() * scores.nelement()
                + pattern.element_size() * pattern.nelement()
            )
            hidden = rnn(x)["H"]
            out["rnn_bytes"].append(hidden.element_size() * hidden.nelement())
            attention_calls.append(self_attention)
            rnn_calls.append(lambda x=x: rnn(x))
        seconds = best_times(attention_calls + rnn_calls, passes=5)
    out["attn_s"], out["rnn_s"] = seconds[: len(lengths)], seconds[len(lengths) :]
    result = {k: np.array(v, dtype=np.float64) for k, v in out.items()}
    result["length"] = np.array(lengths, dtype=np.float64)
    result["threads"] = np.array(THREADS)
    # QKᵀ and weights·V: the products whose size depends on n.
    result["attn_macs"] = 2 * h * e * result["length"] ** 2
    return result


def growth_exponent(lengths: np.ndarray, values: np.ndarray, last: int = 4) -> float:
    """The slope of log(values) against log(lengths) over the `last` longest lengths: 2 for
    a quadratic cost, 1 for a linear one (short lengths are dominated by fixed overheads)."""
    x, y = np.log(lengths[-last:]), np.log(values[-last:])
    return float(np.polyfit(x, y, 1)[0])
