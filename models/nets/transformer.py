"""A small Transformer with its attention written out, for looking inside.

One file, minGPT-style: a frozen config, explicit Q/K/V, scores, mask, softmax and
weighted sum (no fused kernels, which never materialise the weights we draw); the
attention itself is models/nets/attention.py's, which every model here shares. Blocks are
pre-LayerNorm. `Transformer` is an encoder (`causal=False`, every token sees every token)
or a decoder (`causal=True`); a decoder built with `cross_attention=True` also attends to
an encoder's output, and `EncoderDecoder` pairs the two.

`run_with_cache(tokens)` returns the output (the final residual stream after LayerNorm,
`[pos, d_model]`) and a fresh dict of numpy arrays with TransformerLens names
(docs/DESIGN.md, Glossary): `hook_embed`, `hook_pos_embed` (additive encodings only),
`blocks.{l}.hook_resid_pre|hook_resid_post`, `blocks.{l}.attn.hook_q|hook_k|hook_v`
`[head, pos, d_head]` (after RoPE when used), `hook_attn_scores` (after scale, ALiBi
bias and mask, before softmax; masked entries are −inf), `hook_pattern`
`[head, query_pos, key_pos]`, `hook_z` `[head, query_pos, d_head]`, `hook_result`
`[query_pos, d_model]`; cross-attention uses `blocks.{l}.cross_attn.*`. Nothing is stored
on the module, so one instance can serve many threads.

The weights are random, drawn from (config, seed) with a private generator: the lessons
that use this model show what the architecture does before any training. Positional
encodings (models/analysis/positional.py) are options: sinusoidal, learned, rope, alibi, none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models.analysis import positional as pe
from models.nets.attention import attention

Cache = dict[str, np.ndarray]


@dataclass(frozen=True)
class TransformerConfig:
    d_model: int = 64
    n_heads: int = 4
    d_head: int = 16
    n_layers: int = 2
    # The length the model is built for: a learned table has exactly n_ctx rows; the
    # formula-based encodings (sinusoidal, rope, alibi) and none also run past it.
    n_ctx: int = 512
    d_vocab: int = 1000
    d_mlp: int = 256
    positional: str = "sinusoidal"
    causal: bool = False
    cross_attention: bool = False
    rope_base: float = pe.BASE

    def __post_init__(self) -> None:
        if self.positional not in pe.SCHEMES:
            raise ValueError(f"positional must be one of {pe.SCHEMES}, got {self.positional!r}")
        if min(self.d_model, self.n_heads, self.d_head, self.n_layers, self.n_ctx) < 1:
            raise ValueError("every size must be positive")
        if self.d_model % 2 or self.d_head % 2:
            raise ValueError("d_model and d_head must be even (encodings work on pairs)")

    def sizes(self) -> dict[str, int]:
        """The sizes a lesson's introduction names."""
        return dict(
            d_model=self.d_model,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_head=self.d_head,
            n_ctx=self.n_ctx,
        )


def _record(cache: Cache | None, name: str, value: torch.Tensor) -> None:
    if cache is not None:
        cache[name] = value.detach().to(torch.float32).cpu().numpy().copy()


@lru_cache(maxsize=8)
def _sinusoids(n_pos: int, d_model: int) -> torch.Tensor:
    """The sinusoidal table in float32, made once per size and shared: a row does not
    depend on the table's length, so shorter inputs read its first rows (callers add it,
    never write into it)."""
    return torch.from_numpy(pe.sinusoidal_table(n_pos, d_model)).float()


def _normal(generator: torch.Generator, std: float, *shape: int) -> nn.Parameter:
    return nn.Parameter(torch.randn(*shape, generator=generator) * std)


def rope(x: torch.Tensor, positions: torch.Tensor, base: float = pe.BASE) -> torch.Tensor:
    """Rotate each pair (x_2i, x_2i+1) of `x[head, pos, d_head]` by pos·θ_i."""
    freqs = torch.from_numpy(pe.frequencies(x.shape[-1], base))
    angles = positions.to(torch.float64)[:, None] * freqs[None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, cfg: TransformerConfig, generator: torch.Generator, cross: bool):
        super().__init__()
        self.cfg = cfg
        self.cross = cross
        h, d, e = cfg.n_heads, cfg.d_model, cfg.d_head
        std = 1 / math.sqrt(d)
        self.W_Q = _normal(generator, std, h, d, e)
        self.W_K = _normal(generator, std, h, d, e)
        self.W_V = _normal(generator, std, h, d, e)
        self.W_O = _normal(generator, 1 / math.sqrt(h * e), h, e, d)
        self.b_Q = nn.Parameter(torch.zeros(h, e))
        self.b_K = nn.Parameter(torch.zeros(h, e))
        self.b_V = nn.Parameter(torch.zeros(h, e))
        self.b_O = nn.Parameter(torch.zeros(d))

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None,
        cache: Cache | None,
        name: str,
        mask: torch.Tensor | None = None,
        keep: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """`keep` (`[..., n_heads]`, per call) multiplies each head's output z before W_O
        mixes the heads: 0 switches a head off, None leaves the computation as it is."""
        source = memory if self.cross else x
        # `...` is an optional batch dimension (training runs batches; the lessons do not).
        q = torch.einsum("...pd,hde->...hpe", x, self.W_Q) + self.b_Q[:, None]
        k = torch.einsum("...pd,hde->...hpe", source, self.W_K) + self.b_K[:, None]
        v = torch.einsum("...pd,hde->...hpe", source, self.W_V) + self.b_V[:, None]
        bias = None
        # Position enters self-attention only; cross-attention compares content.
        if not self.cross and self.cfg.positional == "rope":
            positions = torch.arange(x.shape[-2])
            q = rope(q, positions, self.cfg.rope_base)
            k = rope(k, positions, self.cfg.rope_base)
        if not self.cross and self.cfg.positional == "alibi":
            n = x.shape[-2]
            alibi = pe.alibi_bias(self.cfg.n_heads, n, n, causal=self.cfg.causal)
            bias = torch.from_numpy(alibi).to(x.dtype)
        causal = self.cfg.causal and not self.cross
        scores, pattern, z = attention(q, k, v, causal=causal, bias=bias, mask=mask)
        if keep is not None:
            z = z * keep.to(z.dtype)[..., :, None, None]
        result = torch.einsum("...hqe,hed->...qd", z, self.W_O) + self.b_O
        for hook, value in (
            ("hook_q", q),
            ("hook_k", k),
            ("hook_v", v),
            ("hook_attn_scores", scores),
            ("hook_pattern", pattern),
            ("hook_z", z),
            ("hook_result", result),
        ):
            _record(cache, f"{name}.{hook}", value)
        return result


class MLP(nn.Module):
    def __init__(self, cfg: TransformerConfig, generator: torch.Generator):
        super().__init__()
        self.W_in = _normal(generator, 1 / math.sqrt(cfg.d_model), cfg.d_model, cfg.d_mlp)
        self.b_in = nn.Parameter(torch.zeros(cfg.d_mlp))
        self.W_out = _normal(generator, 1 / math.sqrt(cfg.d_mlp), cfg.d_mlp, cfg.d_model)
        self.b_out = nn.Parameter(torch.zeros(cfg.d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x @ self.W_in + self.b_in) @ self.W_out + self.b_out


class Block(nn.Module):
    def __init__(self, cfg: TransformerConfig, generator: torch.Generator):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg, generator, cross=False)
        if cfg.cross_attention:
            self.ln_cross = nn.LayerNorm(cfg.d_model)
            self.cross_attn = Attention(cfg, generator, cross=True)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg, generator)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None,
        cache: Cache | None,
        layer: int,
        mask: torch.Tensor | None = None,
        cross_mask: torch.Tensor | None = None,
        head_keep: torch.Tensor | None = None,
    ) -> torch.Tensor:
        _record(cache, f"blocks.{layer}.hook_resid_pre", x)
        normalized = self.ln1(x)
        _record(cache, f"blocks.{layer}.ln1.hook_normalized", normalized)
        keep = None if head_keep is None else head_keep[..., layer, :]
        x = x + self.attn(normalized, None, cache, f"blocks.{layer}.attn", mask, keep)
        if hasattr(self, "cross_attn"):
            query_in = self.ln_cross(x)
            _record(cache, f"blocks.{layer}.ln_cross.hook_normalized", query_in)
            x = x + self.cross_attn(
                query_in, memory, cache, f"blocks.{layer}.cross_attn", cross_mask
            )
        mlp_out = self.mlp(self.ln2(x))
        _record(cache, f"blocks.{layer}.hook_mlp_out", mlp_out)
        x = x + mlp_out
        _record(cache, f"blocks.{layer}.hook_resid_post", x)
        return x


class Transformer(nn.Module):
    """An encoder or decoder built from (config, seed); frozen unless `requires_grad`."""

    def __init__(self, cfg: TransformerConfig, seed: int = 0, requires_grad: bool = False):
        super().__init__()
        self.cfg = cfg
        self.seed = seed
        generator = torch.Generator().manual_seed(seed)
        # Token and learned position vectors have unit-scale entries, like the
        # sinusoids (mean square 1/2), so neither drowns the other in the sum.
        self.W_E = _normal(generator, 1.0, cfg.d_vocab, cfg.d_model)
        if cfg.positional == "learned":
            self.W_pos = _normal(generator, math.sqrt(0.5), cfg.n_ctx, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg, generator) for _ in range(cfg.n_layers))
        self.ln_final = nn.LayerNorm(cfg.d_model)
        self.requires_grad_(requires_grad)
        self.train(requires_grad)

    def pos_embed(self, n_pos: int) -> torch.Tensor | None:
        """The additive position vectors `[n_pos, d_model]`, or None if position is not added."""
        if self.cfg.positional == "sinusoidal":
            # Every length up to n_ctx reads one table: the lessons run many lengths.
            return _sinusoids(max(n_pos, self.cfg.n_ctx), self.cfg.d_model)[:n_pos]
        if self.cfg.positional == "learned":
            if n_pos > self.cfg.n_ctx:
                raise ValueError(
                    f"a learned table has {self.cfg.n_ctx} rows: no vector for position {n_pos - 1}"
                )
            return self.W_pos[:n_pos]
        return None

    def _tokens(self, tokens, batched: bool) -> torch.Tensor:
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        if tokens.ndim not in ((1, 2) if batched else (1,)) or tokens.numel() == 0:
            raise ValueError("tokens must be a non-empty 1-D sequence of ids")
        if int(tokens.min()) < 0 or int(tokens.max()) >= self.cfg.d_vocab:
            raise ValueError(f"token ids must be in [0, {self.cfg.d_vocab})")
        return tokens

    def _run(
        self,
        tokens,
        memory: torch.Tensor | None,
        cache: Cache | None,
        mask: torch.Tensor | None = None,
        cross_mask: torch.Tensor | None = None,
        head_keep: torch.Tensor | None = None,
    ) -> torch.Tensor:
        # A batch `[batch, pos]` only without a cache: traces are of one sequence.
        tokens = self._tokens(tokens, batched=cache is None)
        if self.cfg.cross_attention and memory is None:
            raise ValueError("a decoder with cross-attention needs the encoder's output")
        x = self.W_E[tokens]
        _record(cache, "hook_embed", x)
        pos = self.pos_embed(tokens.shape[-1])
        if pos is not None:
            _record(cache, "hook_pos_embed", pos)
            x = x + pos
        for layer, block in enumerate(self.blocks):
            x = block(x, memory, cache, layer, mask, cross_mask, head_keep)
        out = self.ln_final(x)
        _record(cache, "hook_output", out)
        return out

    def forward(
        self,
        tokens,
        memory: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        cross_mask: torch.Tensor | None = None,
        head_keep: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """`mask` (boolean `[pos, pos]`, True = may see) restricts self-attention in every
        block, on top of `causal`; `cross_mask` (`[pos, source_pos]`) cross-attention.

        `head_keep` (`[..., n_layers, n_heads]`, given per call, never stored) multiplies
        each self-attention head's output z before W_O: 1 keeps a head, 0 switches it off.
        A leading batch dimension runs one sequence under several settings at once."""
        return self._run(tokens, memory, None, mask, cross_mask, head_keep)

    def run_with_cache(
        self,
        tokens,
        memory: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        cross_mask: torch.Tensor | None = None,
        head_keep: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Cache]:
        cache: Cache = {}
        with torch.no_grad():
            out = self._run(tokens, memory, cache, mask, cross_mask, head_keep)
        return out, cache


class EncoderDecoder(nn.Module):
    """A bidirectional encoder and a causal decoder whose blocks cross-attend to it."""

    def __init__(self, cfg: TransformerConfig, seed: int = 0, requires_grad: bool = False):
        super().__init__()
        self.encoder = Transformer(replace(cfg, causal=False, cross_attention=False), seed)
        self.decoder = Transformer(
            replace(cfg, causal=True, cross_attention=True), seed + 1, requires_grad
        )
        self.encoder.requires_grad_(requires_grad)
        self.encoder.train(requires_grad)

    def forward(self, source, target) -> torch.Tensor:
        return self.decoder(target, memory=self.encoder(source))

    def run_with_cache(self, source, target) -> tuple[torch.Tensor, Cache]:
        memory, encoder_cache = self.encoder.run_with_cache(source)
        out, decoder_cache = self.decoder.run_with_cache(target, memory=memory)
        cache = {f"encoder.{k}": v for k, v in encoder_cache.items()}
        cache.update({f"decoder.{k}": v for k, v in decoder_cache.items()})
        return out, cache
