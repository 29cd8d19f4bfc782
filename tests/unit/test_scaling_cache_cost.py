"""The √d_k lab, the KV cache and the cost lab, checked against closed forms and recomputation."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from models.analysis import cost, kv_cache, scaling
from models.nets.transformer import Transformer, TransformerConfig
from models.serving.timing import best_times

TINY = TransformerConfig(
    d_model=16, n_heads=2, d_head=8, n_layers=2, n_ctx=64, d_vocab=50, causal=True
)


# --- √d_k -----------------------------------------------------------------------------


def test_variance_of_q_dot_k_is_within_five_percent_of_d_k_up_to_512():
    measured = scaling.dot_product_variance()
    assert list(measured["d_k"]) == [2**i for i in range(10)]
    relative = measured["variance"] / measured["d_k"]
    assert np.abs(relative - 1).max() < 0.05, relative
    np.testing.assert_allclose(measured["variance_scaled"], relative)


def test_variance_estimate_uses_independent_samples_per_seed():
    a = scaling.dot_product_variance(d_ks=(4, 64), n_samples=4096, seed=1)["variance"]
    b = scaling.dot_product_variance(d_ks=(4, 64), n_samples=4096, seed=2)["variance"]
    assert not np.allclose(a, b)


def test_unscaled_softmax_sharpens_with_d_k_and_scaled_does_not():
    sharp = scaling.softmax_sharpness(d_ks=(1, 16, 512), n_keys=16, n_queries=512)
    assert sharp["entropy"][0] == pytest.approx(sharp["entropy_scaled"][0])  # √1 = 1
    assert sharp["max"][-1] > 0.85 and sharp["entropy"][-1] < 0.3
    assert sharp["max_scaled"][-1] < 0.35
    # Scaled scores are N(0, 1) whatever d_k: entropy stays put, below the uniform ln 16.
    assert np.ptp(sharp["entropy_scaled"]) < 0.1
    assert (sharp["entropy_scaled"] < math.log(16)).all()
    np.testing.assert_allclose(sharp["uniform_entropy"], math.log(16))


# --- KV cache --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def decoder() -> Transformer:
    return Transformer(TINY, seed=4)


def test_kv_cache_generation_matches_full_recomputation_at_every_step(decoder):
    W_U = kv_cache.lm_head(TINY, seed=4)
    run = kv_cache.generate(decoder, W_U, [3, 14, 15, 9, 26], n_new=12)
    assert run.cached_ids == run.full_ids and len(run.cached_ids) == 12
    assert (run.logit_difference < 1e-5).all()
    # Independently: greedy decoding by running the whole sequence with the module itself.
    ids = [3, 14, 15, 9, 26]
    for _ in range(12):
        ids.append(int((decoder(ids)[-1] @ W_U).argmax()))
    assert run.cached_ids == ids[5:]


def test_the_cache_grows_one_row_per_step_and_holds_the_full_runs_keys(decoder):
    W_U = kv_cache.lm_head(TINY)
    prompt = [1, 2, 3, 4]
    run = kv_cache.generate(decoder, W_U, prompt, n_new=6)
    assert list(run.cache_rows) == list(range(4, 10))
    assert [k.shape for k in run.keys] == [(n, TINY.d_head) for n in range(4, 10)]
    assert [v.shape for v in run.values] == [(n, TINY.d_head) for n in range(4, 10)]
    _, cache = decoder.run_with_cache(prompt + run.cached_ids[:5])
    np.testing.assert_allclose(run.keys[-1], cache["blocks.0.attn.hook_k"][0], atol=1e-5)
    np.testing.assert_allclose(run.values[-1], cache["blocks.0.attn.hook_v"][0], atol=1e-5)


def test_prefill_in_one_pass_equals_stepping_token_by_token(decoder):
    ids = [4, 8, 15, 16, 23, 42]
    W_U = kv_cache.lm_head(TINY)
    stepped = kv_cache.empty_cache(decoder)
    for position, token in enumerate(ids):
        _, stepped = kv_cache.cached_step(decoder, token, position, stepped, W_U)
    for (k, v), (k_step, v_step) in zip(kv_cache.prefill(decoder, ids), stepped, strict=True):
        assert k.shape == (TINY.n_heads, len(ids), TINY.d_head)
        torch.testing.assert_close(k, k_step, atol=1e-5, rtol=0)
        torch.testing.assert_close(v, v_step, atol=1e-5, rtol=0)


def test_every_step_is_timed_both_ways(decoder):
    cached, full = kv_cache.step_times(decoder, kv_cache.lm_head(TINY), [1, 2, 3], n_new=5)
    assert cached.shape == full.shape == (5,)
    assert np.isfinite(cached).all() and (cached > 0).all() and (full > 0).all()


def test_a_cached_step_equals_the_last_row_of_a_full_run(decoder):
    ids = [5, 6, 7, 8, 9, 10, 11]
    W_U = kv_cache.lm_head(TINY)
    past = kv_cache.empty_cache(decoder)
    for position, token in enumerate(ids):
        logits, past = kv_cache.cached_step(decoder, token, position, past, W_U)
    torch.testing.assert_close(logits, kv_cache.full_step(decoder, ids, W_U), atol=1e-5, rtol=0)


def test_multiply_adds_grow_linearly_with_cache_and_quadratically_without():
    cfg = replace(TINY, d_vocab=0)
    with_cache = [kv_cache.multiply_adds(cfg, 1, n) for n in (10, 20, 40)]
    without = [kv_cache.multiply_adds(cfg, n, n) for n in (10, 20, 40)]
    assert with_cache[2] - with_cache[1] == 2 * (with_cache[1] - with_cache[0])
    # Recomputing: linear terms in n plus the n² of the scores; second differences ≠ 0.
    n = np.array([10, 20, 30])
    full = np.array([kv_cache.multiply_adds(cfg, m, m) for m in n])
    assert full[2] - 2 * full[1] + full[0] == 2 * 100 * 2 * TINY.n_heads * TINY.d_head * 2
    assert without[0] > with_cache[0]
    # A one-token sequence costs the same either way.
    assert kv_cache.multiply_adds(TINY, 1, 1) == kv_cache.multiply_adds(cfg, 1, 1) + 16 * 50


def test_the_kv_cache_refuses_a_model_it_cannot_step(decoder):
    encoder = Transformer(replace(TINY, causal=False))
    with pytest.raises(ValueError):
        kv_cache.generate(encoder, kv_cache.lm_head(TINY), [1, 2], 2)
    with pytest.raises(ValueError):
        kv_cache.generate(decoder, kv_cache.lm_head(TINY), [1] * 60, 10)


# --- cost -----------------------------------------------------------------------------


def test_attention_memory_is_quadratic_and_the_rnns_linear():
    cfg = TransformerConfig(d_model=16, n_heads=2, d_head=8, d_vocab=10)
    measured = cost.measure(lengths=(16, 32, 64, 128), cfg=cfg)
    n = measured["length"]
    np.testing.assert_array_equal(measured["attn_bytes"], 2 * 2 * n**2 * 4)  # scores + weights
    np.testing.assert_array_equal(measured["rnn_bytes"], n * 16 * 4)
    assert cost.growth_exponent(n, measured["attn_bytes"]) == pytest.approx(2.0)
    assert cost.growth_exponent(n, measured["rnn_bytes"]) == pytest.approx(1.0)
    assert (measured["attn_s"] > 0).all() and (measured["rnn_s"] > 0).all()


def test_best_times_runs_every_call_once_per_pass_and_keeps_the_shortest():
    runs: list[str] = []
    seconds = best_times([lambda: runs.append("a"), lambda: runs.append("b")], passes=3)
    assert runs == ["a", "b"] * 3  # interleaved, not back to back
    assert seconds.shape == (2,) and (seconds > 0).all() and np.isfinite(seconds).all()
    assert torch.get_num_threads() >= 1
