"""The trainable models of the training lab: an input layer, a core, a readout.

The core is one of SeqLens's own models, unchanged, so a trained core is shown by the same
lessons that show a constructed one: `Recurrent` (RNN, LSTM, GRU), a causal `Transformer`,
an `EncoderDecoder`, or a `MixerStack` (models/nets/mixer_stacks.py) of selective
state-space layers ("ssm") or linear-attention layers ("linear"). Around it:

- `W_in [n_in, d_model]`: an embedding table for token inputs, or the weights of a linear
  layer for feature inputs (the adding problem's value and marker); the Transformer uses
  its own `W_E` as its embedding;
- `W_U [d_model, n_out]`, `b_U [n_out]`: one readout for every position.

A model is built from (spec, seed) with a private generator. Training switches gradients on
for its own copy; once trained, `freeze()` makes it read-only like every shared model.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
from torch import nn

from models.nets.mixer_stacks import MIXERS, MixerStack, StackConfig
from models.nets.recurrent import CELLS, Recurrent, RecurrentConfig
from models.nets.transformer import EncoderDecoder, Transformer, TransformerConfig

KINDS = (*CELLS, "transformer", "encdec", *MIXERS)
LABELS = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU", "transformer": "Transformer"}
LABELS["encdec"] = "Encoder–decoder"
LABELS["ssm"] = "State space (selective)"
LABELS["linear"] = "Linear attention"
# The mixer stacks' settings a spec does not name: the SSM's state per channel and its
# d_inner / d_model (Mamba's are 16 and 2; with 8 and 1 a stack trains on a CPU in minutes
# and still learns selective copying), and the MLP's width per d_model, the Transformer's.
D_STATE, EXPAND, MLP_RATIO = 8, 1, 4


@dataclass(frozen=True)
class ModelSpec:
    kind: str
    n_in: int  # vocabulary size, or the number of input features when `features`
    n_out: int  # classes per position (1: a regression)
    d_model: int = 64  # the hidden size of a recurrent core
    features: bool = False
    n_layers: int = 2
    n_heads: int = 4
    n_ctx: int = 64
    positional: str = "learned"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if min(self.n_in, self.n_out, self.d_model, self.n_layers, self.n_heads, self.n_ctx) < 1:
            raise ValueError("every size must be positive")
        if self.features and self.kind not in CELLS:
            raise ValueError("only recurrent models read feature vectors")
        if self.kind in ("transformer", "encdec") and self.d_model % (2 * self.n_heads):
            raise ValueError("d_model must split into n_heads heads of even size")
        if self.kind == "linear" and self.d_model % self.n_heads:
            raise ValueError("d_model must split into n_heads heads")
        if self.kind in MIXERS and self.positional not in ("learned", "none"):
            raise ValueError("a mixer stack's positions are learned or none")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> ModelSpec:
        """A spec from a description read from a file: every setting of the type it has here
        and every size within SIZE_LIMITS, so a description cannot ask for a huge model."""
        if not isinstance(raw, dict):
            raise ValueError("a model description is a JSON object")
        known = {f.name: f for f in fields(cls)}
        unknown = set(raw) - set(known)
        if unknown:
            raise ValueError(f"unknown model settings: {sorted(map(str, unknown))[:5]}")
        for name, value in raw.items():
            _check_setting(name, value)
        return cls(**raw)

    @property
    def is_recurrent(self) -> bool:
        return self.kind in CELLS

    @property
    def is_mixer_stack(self) -> bool:
        return self.kind in MIXERS


# Far above what the lab trains (the largest ships n_in 418, d_model 64, 2 layers), far below
# what would take a server's memory: a description past these is refused, not built.
SIZE_LIMITS = {
    "n_in": 8192,
    "n_out": 8192,
    "d_model": 512,
    "n_layers": 8,
    "n_heads": 16,
    "n_ctx": 2048,
}
_TEXT_SETTINGS = ("kind", "positional")


def _check_setting(name: str, value) -> None:
    if name in SIZE_LIMITS:
        # bool is an int in Python; a float such as 64.0 is not a size
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{name} must be a whole number, got {value!r:.40}")
        if not 1 <= value <= SIZE_LIMITS[name]:
            raise ValueError(f"{name} must be between 1 and {SIZE_LIMITS[name]}, got {value}")
    elif name in _TEXT_SETTINGS and not isinstance(value, str):
        raise ValueError(f"{name} must be text, got {value!r:.40}")
    elif name == "features" and not isinstance(value, bool):
        raise ValueError(f"features must be true or false, got {value!r:.40}")


def stack_config(spec: ModelSpec) -> StackConfig:
    """The mixer stack a spec of kind "ssm" or "linear" describes."""
    return StackConfig(
        mixer=spec.kind,
        d_model=spec.d_model,
        n_layers=spec.n_layers,
        n_heads=spec.n_heads,
        d_state=D_STATE,
        expand=EXPAND,
        d_mlp=MLP_RATIO * spec.d_model,
        positional=spec.positional,
        n_ctx=spec.n_ctx,
    )


def _normal(generator: torch.Generator, std: float, *shape: int) -> nn.Parameter:
    return nn.Parameter(torch.randn(*shape, generator=generator) * std)


class SequenceModel(nn.Module):
    """Input layer, core, readout: `[batch, T]` token ids (or `[batch, T, n_in]` features)
    in, `[batch, T, n_out]` out."""

    def __init__(self, spec: ModelSpec, seed: int = 0):
        super().__init__()
        self.spec = spec
        self.seed = seed
        generator = torch.Generator().manual_seed(seed)
        d = spec.d_model
        if spec.is_mixer_stack:
            self.W_in = _normal(generator, 1.0, spec.n_in, d)
            self.core = MixerStack(stack_config(spec), seed)
        elif spec.is_recurrent:
            in_std = 1 / math.sqrt(spec.n_in) if spec.features else 1.0
            self.W_in = _normal(generator, in_std, spec.n_in, d)
            self.core = Recurrent(
                RecurrentConfig(cell=spec.kind, num_inputs=d, num_hiddens=d, init="orthogonal"),
                seed,
            )
        else:
            cfg = TransformerConfig(
                d_model=d,
                n_heads=spec.n_heads,
                d_head=d // spec.n_heads,
                n_layers=spec.n_layers,
                n_ctx=spec.n_ctx,
                d_vocab=spec.n_in,
                d_mlp=4 * d,
                positional=spec.positional,
                causal=True,
            )
            core = EncoderDecoder if spec.kind == "encdec" else Transformer
            self.core = core(cfg, seed)
        self.W_U = _normal(generator, 1 / math.sqrt(d), d, spec.n_out)
        self.b_U = nn.Parameter(torch.zeros(spec.n_out))
        self.requires_grad_(True)

    def freeze(self) -> SequenceModel:
        """Read-only from now on, safe to share between threads."""
        self.requires_grad_(False)
        self.eval()
        return self

    def embed(self, inputs: torch.Tensor) -> torch.Tensor:
        """What a recurrent core or a mixer stack reads: `X [..., T, d_model]`."""
        if self.spec.features:
            return inputs.to(torch.float32) @ self.W_in
        return self.W_in[inputs]

    def hidden(self, inputs: torch.Tensor, decoder_inputs: torch.Tensor | None = None):
        """The core's output `[..., T, d_model]` before the readout."""
        if self.spec.is_recurrent:
            return self.core(self.embed(inputs))["H"]
        if self.spec.is_mixer_stack:
            return self.core(self.embed(inputs))
        if self.spec.kind == "encdec":
            if decoder_inputs is None:
                raise ValueError("an encoder–decoder needs the decoder's inputs")
            return self.core(inputs, decoder_inputs)
        return self.core(inputs)

    def forward(self, inputs: torch.Tensor, decoder_inputs: torch.Tensor | None = None):
        return self.hidden(inputs, decoder_inputs) @ self.W_U + self.b_U

    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        """`forward(inputs)` without gradients, for reading a trained model on every rerun.

        An LSTM core runs through torch's fused LSTM with the core's own weights: the same
        numbers (float32 rounding) in one call instead of a Python step per character
        (64 characters: ~0.3 ms against ~3 ms). The core's loop keeps the gates, which
        the lessons draw; the readout needs only H."""
        with torch.no_grad():
            if self.spec.kind != "lstm" or self.spec.features:
                return self(inputs)
            return _fused_lstm_hidden(self.core, self.embed(inputs)) @ self.W_U + self.b_U

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


# torch's LSTM orders its gates (input, forget, cell candidate, output); ours (I, F, O, C_tilde).
_TORCH_LSTM_ORDER = ("I", "F", "C_tilde", "O")


def _fused_lstm_hidden(core: Recurrent, X: torch.Tensor) -> torch.Tensor:
    """`core(X)["H"]` for an LSTM core from zero state, by `torch.lstm`. Nothing is stored
    on the shared core: its weights are rearranged into torch's layout on each call."""
    parts = [core.weights(gate) for gate in _TORCH_LSTM_ORDER]
    W_x, W_h, b = (torch.cat([part[i] for part in parts], dim=-1) for i in range(3))
    batch = X if X.ndim == 3 else X.reshape(-1, *X.shape[-2:])
    zeros = batch.new_zeros((1, batch.shape[0], core.cfg.num_hiddens))
    params = [W_x.T.contiguous(), W_h.T.contiguous(), b, torch.zeros_like(b)]
    H, _, _ = torch.lstm(batch, (zeros, zeros), params, True, 1, 0.0, False, False, True)
    return H.reshape(*X.shape[:-1], core.cfg.num_hiddens)
