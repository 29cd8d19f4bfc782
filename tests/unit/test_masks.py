"""Masks and one head's attention step by step, checked against independent computations."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models.analysis import masks
from models.nets.tokenizer import PAD, SPECIAL_TOKENS, Tokenizer
from models.nets.transformer import EncoderDecoder, Transformer, TransformerConfig, attention

TINY = TransformerConfig(d_model=16, n_heads=2, d_head=8, n_layers=2, n_ctx=32, d_vocab=50)
TOKENS = [3, 14, 15, 9, 26, 5, 35, 8, 42]
SHORT = [7, 21, 33, 4]


@pytest.fixture(scope="module")
def encoder() -> Transformer:
    return Transformer(TINY, seed=3)


@pytest.fixture(scope="module")
def encoder_decoder() -> EncoderDecoder:
    return EncoderDecoder(TINY, seed=5)


def _case(kind: str, encoder: Transformer, encoder_decoder: EncoderDecoder):
    """(trace, attention name, X of the queries, allowed) for one kind on the tiny models."""
    if kind == "cross":
        _, cache = masks.run_cross(encoder_decoder, SHORT, TOKENS)
        allowed = masks.allowed_mask("cross", len(TOKENS), len(SHORT))
        name = "decoder.blocks.1.cross_attn"
        return cache, name, cache["decoder.blocks.1.ln_cross.hook_normalized"], allowed
    ids, length = TOKENS, len(TOKENS)
    if kind == "padding":
        batch, lengths = masks.pad_batch(TOKENS, SHORT, pad_id=0)
        row = masks.padded_row(lengths)
        ids, length = list(batch[row]), lengths[row]
    allowed = masks.allowed_mask(kind, len(ids), length=length, prefix=3, window=2)
    _, cache = masks.run_masked(encoder, ids, allowed)
    return cache, "blocks.1.attn", cache["blocks.1.ln1.hook_normalized"], allowed


def test_each_mask_matches_its_closed_form():
    n = 6
    tril = torch.ones(n, n).tril().bool().numpy()
    assert (masks.allowed_mask("causal", n) == tril).all()
    assert masks.allowed_mask("none", n).all()
    q, k = np.indices((n, n))
    assert (masks.allowed_mask("window", n, window=1) == (np.abs(q - k) <= 1)).all()
    prefix = masks.allowed_mask("prefix", n, prefix=3)
    assert prefix[:3, :3].all() and (prefix[3:] == tril[3:] | (k[3:] < 3)).all()
    padding = masks.allowed_mask("padding", n, length=4)
    assert padding[:4, :4].all() and not padding[:, 4:].any() and not padding[4:].any()
    assert masks.allowed_mask("cross", 3, 7).shape == (3, 7)
    with pytest.raises(ValueError):
        masks.allowed_mask("causal", 3, 4)
    with pytest.raises(ValueError):
        masks.allowed_mask("diagonal", 3)


@pytest.mark.parametrize("kind", masks.KINDS)
def test_masked_weights_are_exactly_zero_and_other_rows_sum_to_one(kind, encoder, encoder_decoder):
    cache, name, x_query, allowed = _case(kind, encoder, encoder_decoder)
    steps = masks.head_steps(cache, name, 1, x_query)
    pattern = steps["hook_pattern"]
    assert np.isfinite(pattern).all() and np.isfinite(steps["hook_z"]).all()
    assert (pattern[~allowed] == 0).all()
    # The model masked exactly the cells the mask names.
    assert (np.isfinite(steps["hook_attn_scores"]) == allowed).all()
    empty = masks.fully_masked_rows(allowed)
    seeing = np.setdiff1d(np.arange(len(allowed)), empty)
    np.testing.assert_allclose(pattern[seeing].sum(axis=1), 1.0, atol=1e-6)
    assert (pattern[empty] == 0).all() and (steps["hook_z"][empty] == 0).all()
    if kind == "padding":
        assert list(empty) == list(range(len(SHORT), len(TOKENS)))
    else:
        assert empty.size == 0


@pytest.mark.parametrize("kind", masks.KINDS)
def test_written_out_steps_equal_fused_attention_with_the_same_boolean_mask(
    kind, encoder, encoder_decoder, float32_atol
):
    cache, name, x_query, allowed = _case(kind, encoder, encoder_decoder)
    steps = masks.head_steps(cache, name, 0, x_query)
    q, k, v = (torch.from_numpy(steps[s]) for s in ("hook_q", "hook_k", "hook_v"))
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(allowed))
    # Written out in numpy against torch's fused kernel: each output sums d_head products
    # for a score, then len(keys) weighted values, in the order each one picks.
    atol = float32_atol(fused.numpy(), TINY.d_head + len(steps["hook_k"]))
    np.testing.assert_allclose(steps["hook_z"], fused.numpy(), rtol=0, atol=atol)
    assert masks.fused_difference(steps, allowed) < atol
    # Each step follows from the one before, by the formula its title names.
    np.testing.assert_allclose(steps["qk"], steps["hook_q"] @ steps["hook_k"].T, rtol=1e-6)
    np.testing.assert_allclose(steps["scaled"], steps["qk"] / np.sqrt(TINY.d_head), rtol=1e-6)
    masked = steps["scaled"] + steps["mask"]
    np.testing.assert_allclose(masked[allowed], steps["hook_attn_scores"][allowed], atol=1e-5)
    assert (steps["mask"][~allowed] == -np.inf).all() and (steps["mask"][allowed] == 0).all()
    np.testing.assert_allclose(
        steps["hook_z"], steps["hook_pattern"] @ steps["hook_v"], rtol=1e-5, atol=1e-6
    )


def test_q_is_x_times_w_q_for_the_traced_input(encoder):
    cache, name, x_query, _ = _case("causal", encoder, None)
    attn = encoder.blocks[1].attn
    q = x_query @ attn.W_Q[0].detach().numpy() + attn.b_Q[0].detach().numpy()
    np.testing.assert_allclose(masks.head_steps(cache, name, 0, x_query)["hook_q"], q, atol=1e-5)


def test_cross_attention_is_target_by_source(encoder_decoder):
    _, cache = masks.run_cross(encoder_decoder, SHORT, TOKENS)
    for layer in range(TINY.n_layers):
        pattern = cache[f"decoder.blocks.{layer}.cross_attn.hook_pattern"]
        assert pattern.shape == (TINY.n_heads, len(TOKENS), len(SHORT))
        steps = masks.head_steps(
            cache,
            f"decoder.blocks.{layer}.cross_attn",
            0,
            cache[f"decoder.blocks.{layer}.ln_cross.hook_normalized"],
        )
        assert steps["qk"].shape == (len(TOKENS), len(SHORT))
        assert steps["hook_k"].shape == (len(SHORT), TINY.d_head)


def test_causal_leakage_is_exactly_zero_and_bidirectional_is_not(encoder, float32_atol):
    n = len(TOKENS)
    for position in (3, n - 1):
        causal = masks.leakage(encoder, TOKENS, position, 11, masks.allowed_mask("causal", n))
        none = masks.leakage(encoder, TOKENS, position, 11, masks.allowed_mask("none", n))
        assert (causal[:position] == 0).all()  # bit for bit, not merely small
        assert (none[:position] > 1e-3).all()
        assert causal[position] > 1e-3 and none[position] > 1e-3
    # The same numbers as the traced runs the step-by-step section draws from.
    edited = [*TOKENS[:3], 11, *TOKENS[4:]]
    allowed = masks.allowed_mask("none", n)
    (before, _), (after, _) = (masks.run_masked(encoder, ids, allowed) for ids in (TOKENS, edited))
    traced = np.abs(after - before).max(axis=1)
    # Both runs in one batch against one run each: each output off by up to atol.
    atol = float32_atol(before, TINY.n_layers * TINY.d_mlp)
    leakage = masks.leakage(encoder, TOKENS, 3, 11, allowed)
    np.testing.assert_allclose(leakage, traced, rtol=0, atol=2 * atol)


def _leakage_run_by_run(model, ids, position, new_id, allowed) -> np.ndarray:
    """Leakage as two plain runs of one sentence each, nothing batched."""
    edited = list(ids)
    edited[position] = new_id
    with torch.no_grad():
        before, after = (model(t, mask=torch.from_numpy(allowed)).numpy() for t in (ids, edited))
    return np.abs(after - before).max(axis=1)


def test_leakage_under_several_masks_at_once_is_leakage_under_each_alone(float32_atol):
    # The lesson's sizes (d_model 64, two layers) and sentence lengths around its 40 cap.
    model = Transformer(TransformerConfig(d_vocab=1000), seed=0)
    rng = np.random.default_rng(0)
    kinds = ("causal", "none", "window", "prefix")
    for n in (2, 20, 40):
        ids = rng.integers(5, 1000, n).tolist()
        with torch.no_grad():
            outputs_scale = model(ids).numpy()
        for position in sorted({0, n // 2, n - 1}):
            alloweds = [masks.allowed_mask(k, n, prefix=3, window=2) for k in kinds]
            together = masks.leakages(model, ids, position, 4, alloweds)
            for kind, allowed, change in zip(kinds, alloweds, together, strict=True):
                alone = _leakage_run_by_run(model, ids, position, 4, allowed)
                # Several masks in one batch against a run per mask: a difference of two
                # outputs, each off by the rounding of its batch's summation order.
                atol = 2 * float32_atol(outputs_scale, model.cfg.n_layers * model.cfg.d_mlp)
                np.testing.assert_allclose(change, alone, rtol=1e-5, atol=atol)
                if kind == "causal":
                    assert (change[:position] == 0).all()  # bit for bit
                    assert change[position] > 0


def test_causal_mask_gives_the_same_as_the_built_in_decoder():
    decoder = Transformer(replace(TINY, causal=True), seed=3)
    encoder = Transformer(TINY, seed=3)
    built_in = decoder(TOKENS)
    masked = encoder(TOKENS, mask=torch.from_numpy(masks.allowed_mask("causal", len(TOKENS))))
    assert torch.equal(built_in, masked)


def test_padding_leaves_the_real_tokens_outputs_as_without_it(encoder):
    batch, lengths = masks.pad_batch(TOKENS, SHORT, pad_id=0)
    assert batch.shape == (2, len(TOKENS)) and lengths == [len(TOKENS), len(SHORT)]
    assert (batch[1, len(SHORT) :] == 0).all() and masks.padded_row(lengths) == 1
    allowed = masks.allowed_mask("padding", len(TOKENS), length=len(SHORT))
    padded, _ = masks.run_masked(encoder, list(batch[1]), allowed)
    alone, _ = masks.run_masked(encoder, SHORT, masks.allowed_mask("none", len(SHORT)))
    np.testing.assert_allclose(padded[: len(SHORT)], alone, atol=1e-5)


def test_a_fully_masked_row_gives_zeros_not_nan():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 8, generator=g) for _ in range(3))
    allowed = torch.ones(4, 4, dtype=torch.bool)
    allowed[2] = False
    scores, pattern, z = attention(q, k, v, mask=allowed)
    assert torch.isinf(scores[:, 2]).all()
    assert (pattern[:, 2] == 0).all() and (z[:, 2] == 0).all()
    assert torch.isfinite(pattern).all()
    np.testing.assert_allclose(pattern[:, [0, 1, 3]].sum(-1).numpy(), 1.0, atol=1e-6)


def test_the_pad_id_is_the_tokenizers_pad_token():
    assert Tokenizer().id_to_token(SPECIAL_TOKENS.index(PAD)) == PAD


def test_a_trained_model_s_reading_made_once_per_task_is_what_reading_it_again_gives():
    from components.ui.runs.masks import trained_read
    from models.analysis import trained_sources as ts
    from models.training.tasks import make_task

    for task in (make_task("induction").config(), make_task("copy").config()):
        for index in (0, 1):
            again = ts.read(task, "any sentence", 40, index)
            assert trained_read(task, "any sentence", 40, index) == again
            assert trained_read(task, "another one", 40, index) == again
    # A language model reads the sentence itself, whatever was read before.
    lm = make_task("lm").config()
    for text in ("the cat", "a dog ran 😀"):
        assert trained_read(lm, text, 40) == ts.read(lm, text, 40)


# --- why −∞ and not −1e9 ---------------------------------------------------------------------


def test_minus_1e9_masks_a_key_exactly_as_minus_infinity_while_its_row_keeps_a_visible_key():
    assert torch.exp(torch.tensor(masks.LARGE_NEGATIVE, dtype=torch.float32)) == 0
    scores = torch.randn(6, 6, generator=torch.Generator().manual_seed(0)) * 4
    allowed = torch.from_numpy(masks.allowed_mask("causal", 6))
    with_inf = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    with_large = torch.softmax(scores.masked_fill(~allowed, masks.LARGE_NEGATIVE), dim=-1)
    assert torch.equal(with_inf, with_large)


def test_a_fully_masked_row_is_uniform_with_minus_1e9_and_nan_with_minus_infinity():
    np.testing.assert_array_equal(
        masks.masked_row_softmax(7, masks.LARGE_NEGATIVE), np.full(7, 1 / 7, np.float32)
    )
    assert np.isnan(masks.masked_row_softmax(7, float("-inf"))).all()
