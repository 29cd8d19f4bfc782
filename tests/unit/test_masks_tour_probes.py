"""The masks tour's probes, on offers made as the lesson's parts make them (a real traced
head, a real generation), against the same numbers computed here another way."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from components.tours.probes import Live, MissingLive, run_probe
from models.analysis import kv_cache, masks
from models.nets.transformer import Transformer, TransformerConfig

TINY = TransformerConfig(d_model=16, n_heads=2, d_head=8, n_layers=2, n_ctx=64, d_vocab=50)
IDS = [3, 14, 15, 9, 26, 5, 35, 8, 42]
TOKENS = tuple(f"w{i}" for i in IDS)


@pytest.fixture(scope="module")
def encoder() -> Transformer:
    return Transformer(TINY, seed=3)


def _steps_offer(model, kind: str, query: int, head: int = 1) -> dict:
    """What the stepper offers: one head's steps from the lesson's own trace."""
    allowed = masks.allowed_mask(kind, len(IDS), window=1)
    _, trace = masks.run_masked(model, IDS, allowed)
    steps = masks.head_steps(trace, "blocks.0.attn", head, trace["blocks.0.ln1.hook_normalized"])
    return {
        "tokens": TOKENS,
        "key_tokens": TOKENS,
        "query": query,
        "stage": "softmax",
        "kind": kind,
        "d_head": TINY.d_head,
        "x": steps["x_query"],
        "q": steps["hook_q"],
        "k": steps["hook_k"],
        "v": steps["hook_v"],
        "qk": steps["qk"],
        "scaled": steps["scaled"],
        "scores": steps["hook_attn_scores"],
        "pattern": steps["hook_pattern"],
        "z": steps["hook_z"],
    }


def _by_hand(offer: dict, allowed_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The query's scores (sum of products, dimension by dimension) and its softmax."""
    q, k = offer["q"][offer["query"]].astype(np.float64), offer["k"].astype(np.float64)
    scores = np.array([sum(q[d] * key[d] for d in range(len(q))) for key in k])
    scaled = scores / math.sqrt(offer["d_head"])
    exp = np.where(allowed_row, np.exp(scaled - scaled[allowed_row].max()), 0.0)
    return scores, exp / exp.sum()


def test_under_the_causal_mask_a_later_key_gets_exactly_zero_weight(encoder):
    offer = _steps_offer(encoder, "causal", query=2)
    live = Live({"masks.steps": offer})
    answer = run_probe("masks.weight_to_later", live, {"ahead": 1})
    assert answer.value == 0.0
    assert answer.accepts(0.0) and answer.accepts(0.009) and not answer.accepts(0.1)
    assert run_probe("masks.query_token", live) == "w15"
    assert run_probe("masks.later_token", live, {"ahead": 1}) == "w9"
    assert run_probe("masks.masked_keys", live) == len(IDS) - 3
    assert run_probe("masks.n_keys", live) == len(IDS)
    assert not run_probe("masks.nothing_masked", live)


def test_without_a_mask_the_later_keys_weight_is_its_softmax_share(encoder):
    offer = _steps_offer(encoder, "none", query=2)
    live = Live({"masks.steps": offer})
    scores, weights = _by_hand(offer, np.ones(len(IDS), bool))
    answer = run_probe("masks.weight_to_later", live, {"ahead": 3})
    assert answer.value == pytest.approx(weights[5], abs=1e-6)
    assert answer.value > 0
    assert run_probe("masks.nothing_masked", live)
    assert run_probe("masks.top_score", live) == pytest.approx(scores.max(), abs=1e-5)
    assert run_probe("masks.top_score", live, {"scaled": True}) == pytest.approx(
        scores.max() / math.sqrt(8), abs=1e-5
    )
    assert run_probe("masks.top_score_key", live) == TOKENS[int(np.argmax(scores))]
    assert run_probe("masks.top_weight", live) == pytest.approx(weights.max(), abs=1e-6)
    assert run_probe("masks.top_weight_key", live) == TOKENS[int(np.argmax(weights))]
    assert run_probe("masks.sqrt_dk", live) == pytest.approx(math.sqrt(8))
    assert run_probe("masks.n_tokens", live) == len(IDS)
    assert run_probe("masks.width", live, {"of": "x"}) == TINY.d_model
    assert run_probe("masks.width", live, {"of": "q"}) == TINY.d_head


def test_a_window_masks_the_keys_further_than_its_reach(encoder):
    offer = _steps_offer(encoder, "window", query=4)
    live = Live({"masks.steps": offer})
    _, weights = _by_hand(offer, np.abs(np.arange(len(IDS)) - 4) <= 1)
    assert run_probe("masks.masked_keys", live) == len(IDS) - 3
    assert run_probe("masks.weight_to_later", live, {"ahead": 1}).value == pytest.approx(
        weights[5], abs=1e-6
    )
    assert run_probe("masks.weight_to_later", live, {"ahead": 2}).value == 0.0


def test_the_last_query_asks_about_itself_rather_than_past_the_end(encoder):
    offer = _steps_offer(encoder, "causal", query=len(IDS) - 1)
    live = Live({"masks.steps": offer})
    assert run_probe("masks.later_token", live) == TOKENS[-1]
    _, weights = _by_hand(offer, np.ones(len(IDS), bool))
    assert run_probe("masks.weight_to_later", live).value == pytest.approx(weights[-1], abs=1e-6)


def test_leakage_quotes_the_largest_change_before_the_edit(encoder):
    changes = masks.leakages(
        encoder,
        IDS,
        4,
        7,
        [masks.allowed_mask(kind, len(IDS)) for kind in ("causal", "none")],
    )
    live = Live(
        {
            "masks.leakage": {
                "position": 4,
                "tokens": TOKENS,
                "causal": changes[0],
                "none": changes[1],
            }
        }
    )
    assert run_probe("masks.leak_max", live, {"kind": "causal"}) == 0.0
    assert run_probe("masks.leak_max", live, {"kind": "none"}) == pytest.approx(
        float(np.max(changes[1][:4]))
    )
    assert run_probe("masks.leak_max", live, {"kind": "none"}) > 1e-4
    assert run_probe("masks.leak_token", live) == "w26"


def test_a_cached_steps_cost_is_the_first_steps_plus_one_key_a_step():
    decoder = Transformer(replace(TINY, causal=True), seed=4)
    head = kv_cache.lm_head(decoder.cfg)
    run = kv_cache.generate(decoder, head, IDS, 24)
    per_pair = kv_cache.pair_multiply_adds(decoder.cfg)
    live = Live(
        {
            "masks.kv": {
                "macs_cached": run.macs_cached / 1e6,
                "macs_full": run.macs_full / 1e6,
                "context": len(IDS),
                "n_new": 24,
                "per_pair": per_pair,
            }
        }
    )
    answer = run_probe("masks.kv_step_cost", live, {"step": 20})
    first = run_probe("masks.kv_macs_at", live, {"step": 1})
    assert answer.value == pytest.approx(first + 19 * per_pair / 1e6)
    # Counted from the shapes: step 1 runs the prompt's last token against its 9 keys, each
    # later step one more key.
    assert answer.value * 1e6 == pytest.approx(
        kv_cache.multiply_adds(decoder.cfg, 1, len(IDS) + 19)
    )
    assert answer.accepts(answer.value * 1.01) and not answer.accepts(answer.value * 1.05)
    assert run_probe("masks.kv_macs_at", live, {"step": 20, "cache": False}) > answer.value
    assert run_probe("masks.kv_per_pair", live) == per_pair
    assert run_probe("masks.kv_context", live) == len(IDS)
    assert run_probe("masks.kv_new", live) == 24


def test_a_probe_without_its_offer_says_what_it_missed():
    with pytest.raises(MissingLive, match="masks.steps"):
        run_probe("masks.weight_to_later", Live({}))
