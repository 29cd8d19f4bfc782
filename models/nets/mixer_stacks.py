"""Trainable stacks of one sequence mixer: a selective state-space layer or linear attention.

The training lab's "ssm" and "linear" cores (models/nets/task_models.py). Each is `n_layers`
pre-norm residual blocks, as the lessons' Transformer is built, with the attention swapped
for another mixer:

    x = x + mixer(ln1(x))        the mixer: `SelectiveSSM` (models/nets/selective_ssm.py)
                                 or `LinearAttentionLayer` (models/nets/linear_attention.py)
    x = x + mlp(ln2(x))          the Transformer's MLP (models/nets/transformer.py)

and `ln_final` after the last block. The mixers' arithmetic is theirs, imported, never
written again here: a trained layer of the stack is the same layer the lessons take apart.

The state-space blocks are Mamba's S6 alone: no short convolution and no multiplicative
gate around the layer (the layer's own docstring says what it leaves out). Bare, a stack of
two learns selective copying (models/training/train.py holds it to 90% on held-out data).

`positional="learned"` adds a learned table `W_pos [n_ctx, d_model]` to the input, as the
lessons' Transformer does: attention, linear or softmax, has no sense of order beyond its
causal mask. A recurrence reads in order already: the SSM runs without one ("none").

Inputs are `[pos, d_model]` or `[batch, pos, d_model]`; built from (config, seed) with a
private generator; frozen unless `requires_grad`; nothing is stored during a forward pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from models.nets.linear_attention import LinearAttentionConfig, LinearAttentionLayer
from models.nets.selective_ssm import SelectiveSSM, SSMConfig
from models.nets.transformer import MLP, TransformerConfig

MIXERS = ("ssm", "linear")
POSITIONAL = ("none", "learned")
# Each mixer's name for running step by step, carrying its state (the same numbers).
RECURRENT_MODE = {"ssm": "sequential", "linear": "recurrent"}


@dataclass(frozen=True)
class StackConfig:
    mixer: str  # "ssm" or "linear"
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4  # linear attention: heads of d_model // n_heads
    d_state: int = 16  # the SSM's state per channel
    expand: int = 2  # the SSM's d_inner = expand · d_model, as Mamba's
    d_mlp: int = 256
    positional: str = "none"
    n_ctx: int = 64  # rows of the learned table

    def __post_init__(self) -> None:
        if self.mixer not in MIXERS:
            raise ValueError(f"mixer must be one of {MIXERS}, got {self.mixer!r}")
        if self.positional not in POSITIONAL:
            raise ValueError(f"positional must be one of {POSITIONAL}, got {self.positional!r}")
        sizes = (self.d_model, self.n_layers, self.n_heads, self.d_state, self.expand, self.d_mlp)
        if min(*sizes, self.n_ctx) < 1:
            raise ValueError("every size must be positive")
        if self.mixer == "linear" and self.d_model % self.n_heads:
            raise ValueError("d_model must split into n_heads heads")

    def mixer_config(self) -> SSMConfig | LinearAttentionConfig:
        d = self.d_model
        if self.mixer == "ssm":
            return SSMConfig(d_model=d, d_inner=self.expand * d, d_state=self.d_state)
        return LinearAttentionConfig(d_model=d, n_heads=self.n_heads, d_head=d // self.n_heads)


def layer_seed(seed: int, layer: int) -> int:
    """Each layer's own seed, from the stack's: plain arithmetic, so that a stack built on
    torch's "meta" device (shapes only, models/training/checkpoints.py) needs no numbers."""
    return (seed * 7919 + 104_729 * (layer + 1)) % 2**31


def _normal(generator: torch.Generator, std: float, *shape: int) -> nn.Parameter:
    return nn.Parameter(torch.randn(*shape, generator=generator) * std)


class MixerBlock(nn.Module):
    def __init__(self, cfg: StackConfig, generator: torch.Generator, seed: int):
        super().__init__()
        d = cfg.d_model
        self.mixer_kind = cfg.mixer
        self.ln1 = nn.LayerNorm(d)
        mixer_cfg = cfg.mixer_config()
        if cfg.mixer == "ssm":
            self.mixer = SelectiveSSM(mixer_cfg, seed, requires_grad=True)
        else:
            self.mixer = LinearAttentionLayer(mixer_cfg, seed, requires_grad=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = MLP(TransformerConfig(d_model=d, d_mlp=cfg.d_mlp), generator)

    def forward(self, x: torch.Tensor, recurrent: bool = False) -> torch.Tensor:
        normalized = self.ln1(x)
        mode = RECURRENT_MODE[self.mixer_kind] if recurrent else "parallel"
        x = x + self.mixer(normalized, mode=mode)
        return x + self.mlp(self.ln2(x))


class MixerStack(nn.Module):
    """`X [..., pos, d_model]` → the last block's output after `ln_final`, same shape."""

    def __init__(self, cfg: StackConfig, seed: int = 0, requires_grad: bool = False):
        super().__init__()
        self.cfg = cfg
        self.seed = seed
        generator = torch.Generator().manual_seed(seed)
        if cfg.positional == "learned":
            self.W_pos = _normal(generator, math.sqrt(0.5), cfg.n_ctx, cfg.d_model)
        self.blocks = nn.ModuleList(
            MixerBlock(cfg, generator, layer_seed(seed, layer)) for layer in range(cfg.n_layers)
        )
        self.ln_final = nn.LayerNorm(cfg.d_model)
        self.requires_grad_(requires_grad)
        self.train(requires_grad)

    def freeze(self) -> MixerStack:
        """Read-only from now on, safe to share between threads."""
        self.requires_grad_(False)
        self.eval()
        return self

    def forward(self, X: torch.Tensor, recurrent: bool = False) -> torch.Tensor:
        """`recurrent` runs every mixer as a loop over positions that carries its state
        (the SSM's "sequential", linear attention's "recurrent"): the same numbers as the
        parallel form, up to rounding."""
        if X.ndim not in (2, 3) or X.shape[-1] != self.cfg.d_model or X.shape[-2] < 1:
            raise ValueError(f"X must be [pos ≥ 1, {self.cfg.d_model}] or [batch, pos, d_model]")
        x = X
        if hasattr(self, "W_pos"):
            n_pos = X.shape[-2]
            if n_pos > self.cfg.n_ctx:
                raise ValueError(f"a learned table has {self.cfg.n_ctx} rows, not {n_pos}")
            x = x + self.W_pos[:n_pos].to(X.dtype)
        for block in self.blocks:
            x = block(x, recurrent)
        return self.ln_final(x)
