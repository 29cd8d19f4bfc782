"""A BERT encoder's forward pass written out in torch: the attention lesson's every keystroke.

The lesson's own model, all-MiniLM-L6-v2, is a BERT encoder, and a new sentence means one
forward pass of it. transformers' forward spent ~3 ms of its ~10 ms (20 tokens, one torch
thread) in Python around the arithmetic: ~130 module calls, masks and output checks. Each
torch call also hands the interpreter lock to another visitor's thread and waits to get
it back; with a second thread running Python beside it the pass took ~16 ms.

This runs the same arithmetic, in transformers' order, on the loaded model's own weights,
which it only reads (the model stays shared and unchanged): ~7 ms alone, ~11 ms beside
that thread. tests/unit/test_bert_forward.py holds its patterns and hidden states equal to
transformers' forward of the same model, heads switched off included.

Only a plain BertModel as the lesson loads it qualifies (absolute positions, an encoder,
one sentence with no padding, no dropout in eval mode); any other model keeps
transformers' forward (`written_out_bert` returns None).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class _Layer:
    """One encoder layer's modules, as loaded (references, never copies or changes)."""

    query: torch.nn.Linear
    key: torch.nn.Linear
    value: torch.nn.Linear
    attn_out: torch.nn.Linear
    attn_norm: torch.nn.LayerNorm
    mlp_in: torch.nn.Linear
    act: torch.nn.Module
    mlp_out: torch.nn.Linear
    mlp_norm: torch.nn.LayerNorm


class WrittenOutBert:
    """`bert(input_ids, keep)`: per layer the attention pattern and the hidden states."""

    def __init__(self, model: torch.nn.Module):
        config = model.config
        self.n_heads = config.num_attention_heads
        self.d_head = config.hidden_size // self.n_heads
        self.embeddings = model.embeddings
        self.layers = tuple(_layer(layer) for layer in model.encoder.layer)

    def __call__(
        self, input_ids: torch.Tensor, keep: torch.Tensor | None = None
    ) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
        """`input_ids` [batch, pos]; `keep` [batch, layer, head], 0 switches a head's output
        off before W_O (models/hf_models.py). Returns (patterns [batch, head, query_pos,
        key_pos] per layer, hidden states [batch, pos, d_model]: the embeddings, then each
        layer's output)."""
        h = self._embed(input_ids)
        patterns, hidden = [], [h]
        for index, layer in enumerate(self.layers):
            factor = None if keep is None else keep[:, index]
            pattern, h = self._layer(layer, h, factor)
            patterns.append(pattern)
            hidden.append(h)
        return tuple(patterns), tuple(hidden)

    def _embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        e = self.embeddings
        n_pos = input_ids.shape[1]
        # transformers adds the token type (0: no second segment) before the position.
        h = e.word_embeddings.weight[input_ids] + e.token_type_embeddings.weight[0]
        h = h + e.position_embeddings.weight[:n_pos]
        return _norm(e.LayerNorm, h)

    def _layer(self, layer: _Layer, h: torch.Tensor, factor: torch.Tensor | None):
        q, k, v = (self._heads(linear, h) for linear in (layer.query, layer.key, layer.value))
        pattern = torch.softmax(torch.matmul(q, k.transpose(2, 3)) * self.d_head**-0.5, dim=-1)
        z = torch.matmul(pattern, v).transpose(1, 2)  # [batch, pos, head, d_head]
        if factor is not None:
            z = z * factor[:, None, :, None].to(z.dtype)
        z = z.reshape(*h.shape[:2], -1)
        h = _norm(layer.attn_norm, _linear(layer.attn_out, z) + h)
        mlp = _linear(layer.mlp_out, layer.act(_linear(layer.mlp_in, h)))
        return pattern, _norm(layer.mlp_norm, mlp + h)

    def _heads(self, linear: torch.nn.Linear, h: torch.Tensor) -> torch.Tensor:
        """[batch, pos, d_model] → [batch, head, pos, d_head]."""
        return _linear(linear, h).view(*h.shape[:2], self.n_heads, self.d_head).transpose(1, 2)


def _linear(linear: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return F.linear(x, linear.weight, linear.bias)


def _norm(norm: torch.nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)


def _layer(layer: torch.nn.Module) -> _Layer:
    attention = layer.attention
    return _Layer(
        query=attention.self.query,
        key=attention.self.key,
        value=attention.self.value,
        attn_out=attention.output.dense,
        attn_norm=attention.output.LayerNorm,
        mlp_in=layer.intermediate.dense,
        act=layer.intermediate.intermediate_act_fn,
        mlp_out=layer.output.dense,
        mlp_norm=layer.output.LayerNorm,
    )


def written_out_bert(model: torch.nn.Module) -> WrittenOutBert | None:
    """The written-out forward for a plain BERT encoder in eval mode, else None."""
    config = model.config
    plain = (
        type(model).__name__ == "BertModel"
        and config.model_type == "bert"
        and not getattr(config, "is_decoder", False)
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and not model.training
    )
    return WrittenOutBert(model) if plain else None
