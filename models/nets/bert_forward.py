"""A BERT encoder's forward pass written out in torch: the attention lesson's every keystroke.

The lesson's own model, all-MiniLM-L6-v2, is a BERT encoder, and a new sentence means one
forward pass of it. transformers' forward spent ~3 ms of its ~9–10 ms (20 tokens, one
torch thread) in Python around the arithmetic: ~130 module calls, masks and output checks.
Each torch call also hands the interpreter lock to another visitor's thread and waits to
get it back: a second thread running Python beside it made the pass 15–50 % slower
still. This runs the same arithmetic, in transformers' order, on the same weights, in ~60
torch calls: side by side, 13.6–13.9 → 9.1–9.9 ms alone and 15.8–15.9 → 12.2–13.9 ms
beside that thread (in a slow hour of this machine).

It reads the weights straight from the folder's safetensors file (`bert_from_folder`), so
a cold server brings no transformers model class in: importing them (and torch._dynamo,
which BERT's modeling file imports) took ~1.6 s before the first chart. A model that
transformers has loaded can be run this way too (`written_out_bert`).

tests/unit/test_bert_forward.py holds the patterns and hidden states equal, bit for bit, to
transformers' forward of the same folder, heads switched off included. Only a plain BERT
encoder qualifies (absolute positions, exact GELU, one sentence with no padding, no
dropout); anything else returns None and keeps transformers' forward.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from models.nets.attention import attention

WEIGHTS_FILE = "model.safetensors"


@dataclass(frozen=True)
class BertShape:
    """What a plain BERT encoder's config says about its weights."""

    n_layers: int
    n_heads: int
    d_model: int
    d_mlp: int
    d_vocab: int
    n_ctx: int
    n_types: int
    eps: float

    def expected(self) -> dict[str, tuple[int, ...]]:
        """Every weight the pass reads, by its name in a BertModel's state, with its shape."""
        d = self.d_model
        shapes = {
            "embeddings.word_embeddings.weight": (self.d_vocab, d),
            "embeddings.position_embeddings.weight": (self.n_ctx, d),
            "embeddings.token_type_embeddings.weight": (self.n_types, d),
            "embeddings.LayerNorm.weight": (d,),
            "embeddings.LayerNorm.bias": (d,),
        }
        for layer in range(self.n_layers):
            for name, (n_out, n_in) in _layer_linears(d, self.d_mlp).items():
                shapes[f"encoder.layer.{layer}.{name}.weight"] = (n_out, n_in)
                shapes[f"encoder.layer.{layer}.{name}.bias"] = (n_out,)
            for name in _LAYER_NORMS:
                shapes[f"encoder.layer.{layer}.{name}.weight"] = (d,)
                shapes[f"encoder.layer.{layer}.{name}.bias"] = (d,)
        return shapes


def _layer_linears(d: int, d_mlp: int) -> dict[str, tuple[int, int]]:
    return {
        "attention.self.query": (d, d),
        "attention.self.key": (d, d),
        "attention.self.value": (d, d),
        "attention.output.dense": (d, d),
        "intermediate.dense": (d_mlp, d),
        "output.dense": (d, d_mlp),
    }


_LAYER_NORMS = ("attention.output.LayerNorm", "output.LayerNorm")
_QKV = ("query", "key", "value")


class WrittenOutBert:
    """`bert(input_ids, keep)`: per layer the attention pattern and the hidden states.

    Holds the weights it reads (the loaded model's own tensors, or the file's), only ever
    reading them."""

    def __init__(self, weights: Mapping[str, torch.Tensor], shape: BertShape, n_params: int):
        self.shape = shape
        self.n_params = n_params
        self.d_head = shape.d_model // shape.n_heads
        self.w = {name: weights[name] for name in shape.expected()}

    def __call__(
        self, input_ids: torch.Tensor, keep: torch.Tensor | None = None
    ) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
        """`input_ids` [batch, pos]; `keep` [batch, layer, head], 0 switches a head's output
        off before W_O (models/nets/hf_models.py). Returns (patterns [batch, head, query_pos,
        key_pos] per layer, hidden states [batch, pos, d_model]: the embeddings, then each
        layer's output)."""
        h = self._embed(input_ids)
        patterns, hidden = [], [h]
        for layer in range(self.shape.n_layers):
            factor = None if keep is None else keep[:, layer]
            pattern, h = self._layer(f"encoder.layer.{layer}.", h, factor)
            patterns.append(pattern)
            hidden.append(h)
        return tuple(patterns), tuple(hidden)

    def _embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        w = self.w
        n_pos = input_ids.shape[1]
        # transformers adds the token type (0: no second segment) before the position.
        h = w["embeddings.word_embeddings.weight"][input_ids]
        h = h + w["embeddings.token_type_embeddings.weight"][0]
        h = h + w["embeddings.position_embeddings.weight"][:n_pos]
        return self._norm("embeddings.LayerNorm", h)

    def _layer(self, at: str, h: torch.Tensor, factor: torch.Tensor | None):
        q, k, v = (self._heads(f"{at}attention.self.{part}", h) for part in _QKV)
        # transformers multiplies by d_head^−0.5 (not ÷√d_head): the same, bit for bit.
        _, pattern, z = attention(q, k, v, scale=self.d_head**-0.5)
        z = z.transpose(1, 2)  # [batch, pos, head, d_head]
        if factor is not None:
            z = z * factor[:, None, :, None].to(z.dtype)
        z = z.reshape(*h.shape[:2], -1)
        attn_out = self._linear(f"{at}attention.output.dense", z)
        h = self._norm(f"{at}attention.output.LayerNorm", attn_out + h)
        mlp = self._linear(f"{at}output.dense", F.gelu(self._linear(f"{at}intermediate.dense", h)))
        return pattern, self._norm(f"{at}output.LayerNorm", mlp + h)

    def _heads(self, name: str, h: torch.Tensor) -> torch.Tensor:
        """[batch, pos, d_model] → [batch, head, pos, d_head]."""
        heads = self._linear(name, h).view(*h.shape[:2], self.shape.n_heads, self.d_head)
        return heads.transpose(1, 2)

    def _linear(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"])

    def _norm(self, name: str, x: torch.Tensor) -> torch.Tensor:
        w = self.w
        return F.layer_norm(x, x.shape[-1:], w[f"{name}.weight"], w[f"{name}.bias"], self.shape.eps)


def _plain_shape(config) -> BertShape | None:
    """The weights' shapes for a plain BERT encoder's config, else None.

    transformers' "gelu" is torch's exact (erf) GELU, which the pass uses."""
    plain = (
        config.model_type == "bert"
        and not getattr(config, "is_decoder", False)
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and getattr(config, "hidden_act", None) == "gelu"
        and config.hidden_size % config.num_attention_heads == 0
    )
    if not plain:
        return None
    return BertShape(
        n_layers=config.num_hidden_layers,
        n_heads=config.num_attention_heads,
        d_model=config.hidden_size,
        d_mlp=config.intermediate_size,
        d_vocab=config.vocab_size,
        n_ctx=config.max_position_embeddings,
        n_types=config.type_vocab_size,
        eps=config.layer_norm_eps,
    )


def _fits(weights: Mapping[str, torch.Tensor], shape: BertShape) -> bool:
    return all(
        name in weights and tuple(weights[name].shape) == size and weights[name].is_floating_point()
        for name, size in shape.expected().items()
    )


def _n_params(weights: Mapping[str, torch.Tensor]) -> int:
    return sum(t.numel() for t in weights.values() if t.is_floating_point())


def bert_from_folder(folder: Path, config) -> WrittenOutBert | None:
    """A plain BERT encoder straight from `folder`'s one safetensors file, in float32, as
    transformers' AutoModel would load it; None when the folder holds anything else
    (another architecture, sharded or renamed weights), which transformers then loads."""
    from safetensors.torch import load_file

    shape = _plain_shape(config)
    path = Path(folder) / WEIGHTS_FILE
    if shape is None or not path.is_file():
        return None
    weights = load_file(path)
    if not _fits(weights, shape):
        return None
    floats = {name: t.float() for name, t in weights.items() if t.is_floating_point()}
    return WrittenOutBert(floats, shape, _n_params(floats))


def written_out_bert(model: torch.nn.Module) -> WrittenOutBert | None:
    """The written-out pass of a BertModel that transformers has loaded, in eval mode, on
    its own weights; None for any other model."""
    shape = _plain_shape(model.config)
    if shape is None or type(model).__name__ != "BertModel" or model.training:
        return None
    weights = model.state_dict()
    return WrittenOutBert(weights, shape, _n_params(weights)) if _fits(weights, shape) else None
