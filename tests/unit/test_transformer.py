"""The written-out Transformer: exact attention, the trace, and a module left untouched."""

from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import models.nets.attention as attention_module
import models.nets.transformer as transformer_module
from models.nets.transformer import (
    EncoderDecoder,
    Transformer,
    TransformerConfig,
    attention,
)

TINY = TransformerConfig(d_model=16, n_heads=2, d_head=8, n_layers=2, n_ctx=12, d_vocab=50)
TOKENS = [3, 14, 15, 9, 26, 5, 35]


def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(array)


@pytest.mark.parametrize("causal", [False, True])
def test_explicit_attention_equals_fused_attention(causal):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 7, 8, generator=g) for _ in range(3))
    _, pattern, z = attention(q, k, v, causal=causal)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert (z - expected).abs().max() < 1e-5
    assert torch.allclose(pattern.sum(-1), torch.ones(3, 7), atol=1e-6)
    if causal:
        assert (pattern.triu(1) == 0).all()


@pytest.mark.parametrize("positional", ["none", "sinusoidal", "learned", "rope", "alibi"])
@pytest.mark.parametrize("causal", [False, True])
def test_traced_attention_equals_fused_attention_on_the_same_q_k_v(positional, causal):
    from dataclasses import replace

    from models.analysis.positional import alibi_bias

    model = Transformer(replace(TINY, positional=positional, causal=causal), seed=1)
    _, cache = model.run_with_cache(TOKENS)
    n = len(TOKENS)
    for layer in range(TINY.n_layers):
        q, k, v = (_tensor(cache[f"blocks.{layer}.attn.hook_{x}"]) for x in "qkv")
        mask = None
        if positional == "alibi":
            mask = torch.from_numpy(alibi_bias(TINY.n_heads, n, n, causal)).float()
            if causal:
                mask = mask.masked_fill(torch.ones(n, n).triu(1).bool(), float("-inf"))
        expected = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal and mask is None
        )
        z = _tensor(cache[f"blocks.{layer}.attn.hook_z"])
        assert (z - expected).abs().max() < 1e-5
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"]
        assert pattern.shape == (TINY.n_heads, n, n)
        if causal:
            assert np.all(np.triu(pattern, 1) == 0)
            future = np.triu(np.ones((n, n), dtype=bool), 1)
            scores = cache[f"blocks.{layer}.attn.hook_attn_scores"]
            assert np.isneginf(scores[:, future]).all() and np.isfinite(scores[:, ~future]).all()
        else:
            assert np.all(pattern > 0)


def test_cross_attention_reads_the_encoder_and_equals_fused_attention():
    model = EncoderDecoder(TINY, seed=2)
    source, target = TOKENS, [1, 2, 3, 4]
    out, cache = model.run_with_cache(source, target)
    assert out.shape == (len(target), TINY.d_model)
    for layer in range(TINY.n_layers):
        name = f"decoder.blocks.{layer}.cross_attn"
        q, k, v = (_tensor(cache[f"{name}.hook_{x}"]) for x in "qkv")
        assert cache[f"{name}.hook_pattern"].shape == (TINY.n_heads, len(target), len(source))
        expected = F.scaled_dot_product_attention(q, k, v)
        assert (_tensor(cache[f"{name}.hook_z"]) - expected).abs().max() < 1e-5
    # The decoder's self-attention is causal; the encoder's is not.
    assert np.all(np.triu(cache["decoder.blocks.0.attn.hook_pattern"], 1) == 0)
    assert np.all(cache["encoder.blocks.0.attn.hook_pattern"] > 0)
    # Changing the source changes the decoder's output only through cross-attention.
    other, _ = model.run_with_cache([7, 7, 7], target)
    assert (other - out).abs().max() > 1e-3


def test_trace_has_the_design_names_and_shapes():
    _, cache = Transformer(TINY, seed=0).run_with_cache(TOKENS)
    n, h, e = len(TOKENS), TINY.n_heads, TINY.d_head
    assert cache["hook_pos_embed"].shape == (n, TINY.d_model)
    for layer in range(TINY.n_layers):
        for hook in ("hook_q", "hook_k", "hook_v", "hook_z"):
            assert cache[f"blocks.{layer}.attn.{hook}"].shape == (h, n, e)
        assert cache[f"blocks.{layer}.attn.hook_attn_scores"].shape == (h, n, n)
        for hook in ("hook_resid_pre", "hook_resid_post"):
            assert cache[f"blocks.{layer}.{hook}"].shape == (n, TINY.d_model)
    assert all(isinstance(value, np.ndarray) for value in cache.values())
    # resid_post of one layer is resid_pre of the next.
    np.testing.assert_array_equal(
        cache["blocks.0.hook_resid_post"], cache["blocks.1.hook_resid_pre"]
    )


def test_run_with_cache_leaves_the_module_unchanged_and_returns_a_fresh_cache():
    model = EncoderDecoder(TINY, seed=3)
    state = copy.deepcopy(model.state_dict())
    attributes = {name: dict(vars(m)) for name, m in model.named_modules()}
    flags = [(p.requires_grad, p.grad) for p in model.parameters()]
    out1, cache1 = model.run_with_cache(TOKENS, [1, 2])
    cache1["decoder.hook_output"][:] = 0
    out2, cache2 = model.run_with_cache(TOKENS, [1, 2])
    assert cache2 is not cache1 and np.abs(cache2["decoder.hook_output"]).max() > 0
    assert torch.equal(out1, out2)
    after = model.state_dict()
    assert state.keys() == after.keys()
    assert all(torch.equal(state[k], after[k]) for k in state)
    assert {name: dict(vars(m)) for name, m in model.named_modules()}.keys() == attributes.keys()
    for name, m in model.named_modules():
        now = vars(m)
        assert now.keys() == attributes[name].keys()
        for key, value in attributes[name].items():
            if key in ("_parameters", "_buffers", "_modules"):
                assert now[key].keys() == value.keys()
            elif key not in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks"):
                assert now[key] == value or now[key] is value
        assert not m._forward_hooks and not m._forward_pre_hooks
    assert [(p.requires_grad, p.grad) for p in model.parameters()] == flags


def test_built_from_config_and_seed_deterministically_and_frozen_by_default():
    a, b, c = Transformer(TINY, seed=5), Transformer(TINY, seed=5), Transformer(TINY, seed=6)
    assert all(
        torch.equal(x, y)
        for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )
    assert not torch.equal(a.W_E, c.W_E)
    assert not any(p.requires_grad for p in a.parameters()) and not a.training
    trainable = Transformer(TINY, seed=5, requires_grad=True)
    assert all(p.requires_grad for p in trainable.parameters())
    # Building a model does not touch the global random state.
    torch.manual_seed(0)
    expected = torch.rand(1)
    torch.manual_seed(0)
    Transformer(TINY, seed=9)
    assert torch.equal(torch.rand(1), expected)


def test_learned_table_has_no_row_past_n_ctx_while_formulas_run_on():
    from dataclasses import replace

    too_long = list(range(TINY.n_ctx + 1))
    with pytest.raises(ValueError, match="no vector for position"):
        Transformer(replace(TINY, positional="learned")).run_with_cache(too_long)
    for positional in ("sinusoidal", "rope", "alibi", "none"):
        out, _ = Transformer(replace(TINY, positional=positional)).run_with_cache(too_long)
        assert torch.isfinite(out).all()


def test_bad_inputs_are_refused():
    model = Transformer(TINY)
    for tokens in ([], [TINY.d_vocab], [-1], [[1, 2]]):
        with pytest.raises(ValueError):
            model.run_with_cache(tokens)
    with pytest.raises(ValueError):
        TransformerConfig(positional="spiral")


def test_the_visualised_path_uses_no_fused_attention_and_no_pickle():
    source = inspect.getsource(transformer_module) + inspect.getsource(attention_module)
    for forbidden in (
        "scaled_dot_product_attention",
        "MultiheadAttention",
        "nn.Transformer",
        "torch.load",
        "pickle",
    ):
        assert forbidden not in source


@pytest.mark.parametrize("n_pos", [1, 7, TINY.n_ctx, TINY.n_ctx + 5])
def test_sinusoidal_positions_are_the_formula_s_rows_whatever_length_was_asked_first(n_pos):
    """The table is made once and shared across lengths: every length still gets exactly
    the formula's rows, and adding them leaves the shared table as it was."""
    from dataclasses import replace

    from models.analysis.positional import sinusoidal_table

    model = Transformer(replace(TINY, positional="sinusoidal"), seed=0)
    longer = model.pos_embed(n_pos + 3).clone()
    pos = model.pos_embed(n_pos)
    expected = torch.from_numpy(sinusoidal_table(n_pos, TINY.d_model)).float()
    assert torch.equal(pos, expected)
    _, cache = model.run_with_cache(list(range(min(n_pos, 7))))
    assert torch.equal(model.pos_embed(n_pos + 3), longer)
    assert np.array_equal(cache["hook_pos_embed"], expected[: min(n_pos, 7)].numpy())
