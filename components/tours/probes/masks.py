"""Probes of this lesson: what its tour steps quote, ask and check, from its parts' offers.

The stepper offers "masks.steps": the open head's steps as its charts draw them (x, q,
k, v, qk, scaled, scores after the mask with −∞ where masked, pattern, z), the query row
it follows, the tokens, the mask kind and d_head. The leakage proof offers
"masks.leakage" (max |Δ output| per position, by mask), the KV cache lab "masks.kv" (its
multiply-adds per step, in millions, as its chart draws them, and one query–key pair's
cost).
"""

from __future__ import annotations

import math

import numpy as np

from components.tours.probes import Live, Number, probe

STEPS = "masks.steps"
LEAKAGE = "masks.leakage"
KV = "masks.kv"


def _query(steps) -> int:
    return int(steps["query"])


def _later(steps, ahead: int) -> int:
    """The key `ahead` positions after the query (the last key when fewer are left)."""
    return min(_query(steps) + int(ahead), len(steps["key_tokens"]) - 1)


@probe("masks.n_tokens", reads=(STEPS,))
def n_tokens(live: Live) -> int:
    return len(live.need(STEPS)["tokens"])


@probe("masks.width", reads=(STEPS,))
def width(live: Live, of: str = "x") -> int:
    """How many numbers a row of `of` (x, q, k, v or z) holds."""
    return int(np.asarray(live.need(STEPS)[of]).shape[-1])


@probe("masks.query_token", reads=(STEPS,))
def query_token(live: Live) -> str:
    steps = live.need(STEPS)
    return str(steps["tokens"][_query(steps)])


@probe("masks.later_token", reads=(STEPS,))
def later_token(live: Live, ahead: int = 1) -> str:
    steps = live.need(STEPS)
    return str(steps["key_tokens"][_later(steps, ahead)])


@probe("masks.sqrt_dk", reads=(STEPS,))
def sqrt_dk(live: Live) -> float:
    return math.sqrt(int(live.need(STEPS)["d_head"]))


def _score_row(steps, scaled: bool = False) -> np.ndarray:
    """q·k of the query with every key (÷√d_k when `scaled`), as the stepper draws it."""
    return np.asarray(steps["scaled" if scaled else "qk"], dtype=np.float64)[_query(steps)]


@probe("masks.top_score", reads=(STEPS,))
def top_score(live: Live, scaled: bool = False) -> float:
    """The query's highest score over every key (before the mask), ÷√d_k when `scaled`:
    at the key where the unscaled one is highest."""
    steps = live.need(STEPS)
    top = int(np.argmax(_score_row(steps)))
    return float(_score_row(steps, scaled)[top])


@probe("masks.top_score_key", reads=(STEPS,))
def top_score_key(live: Live) -> str:
    steps = live.need(STEPS)
    return str(steps["key_tokens"][int(np.argmax(_score_row(steps)))])


@probe("masks.masked_keys", reads=(STEPS,))
def masked_keys(live: Live) -> int:
    """How many keys the mask hides from the query (−∞ in its row)."""
    steps = live.need(STEPS)
    return int((~np.isfinite(np.asarray(steps["scores"])[_query(steps)])).sum())


@probe("masks.n_keys", reads=(STEPS,))
def n_keys(live: Live) -> int:
    return len(live.need(STEPS)["key_tokens"])


@probe("masks.nothing_masked", reads=(STEPS,))
def nothing_masked(live: Live) -> bool:
    """Done when no cell of the drawn scores is −∞: every query sees every key."""
    return bool(np.isfinite(np.asarray(live.need(STEPS)["scores"])).all())


@probe("masks.weight_to_later", reads=(STEPS,))
def weight_to_later(live: Live, ahead: int = 1) -> Number:
    """The weight the query gives the key `ahead` positions later, as the softmax row
    draws it; answers within 0.01 count."""
    steps = live.need(STEPS)
    weight = float(np.asarray(steps["pattern"])[_query(steps), _later(steps, ahead)])
    return Number(weight, relative=0.0, absolute=0.01)


@probe("masks.top_weight", reads=(STEPS,))
def top_weight(live: Live) -> float:
    steps = live.need(STEPS)
    return float(np.asarray(steps["pattern"])[_query(steps)].max())


@probe("masks.top_weight_key", reads=(STEPS,))
def top_weight_key(live: Live) -> str:
    steps = live.need(STEPS)
    return str(steps["key_tokens"][int(np.argmax(np.asarray(steps["pattern"])[_query(steps)]))])


@probe("masks.leak_max", reads=(LEAKAGE,))
def leak_max(live: Live, kind: str = "causal") -> float:
    """The largest change, at a position before the changed one, under `kind`
    ("causal" or "none")."""
    leakage = live.need(LEAKAGE)
    before = np.asarray(leakage[kind], dtype=np.float64)[: int(leakage["position"])]
    return float(before.max()) if before.size else 0.0


@probe("masks.leak_token", reads=(LEAKAGE,))
def leak_token(live: Live) -> str:
    leakage = live.need(LEAKAGE)
    return str(leakage["tokens"][int(leakage["position"])])


@probe("masks.kv_macs_at", reads=(KV,))
def kv_macs_at(live: Live, step: int = 1, cache: bool = True) -> float:
    """Millions of multiply-adds of generation step `step`, with the cache or without."""
    kv = live.need(KV)
    return float(kv["macs_cached" if cache else "macs_full"][int(step) - 1])


@probe("masks.kv_step_cost", reads=(KV,))
def kv_step_cost(live: Live, step: int = 20) -> Number:
    """Millions of multiply-adds of step `step` with the cache, as the chart draws them;
    within 2 % counts (a guess that the cost grows with the steps, as without the cache,
    is far off: each step adds one key's worth, small beside the rest of the step)."""
    kv = live.need(KV)
    return Number(float(kv["macs_cached"][int(step) - 1]), relative=0.02)


@probe("masks.kv_per_pair", reads=(KV,))
def kv_per_pair(live: Live) -> int:
    return int(live.need(KV)["per_pair"])


@probe("masks.kv_new", reads=(KV,))
def kv_new(live: Live) -> int:
    return int(live.need(KV)["n_new"])


@probe("masks.kv_context", reads=(KV,))
def kv_context(live: Live) -> int:
    return int(live.need(KV)["context"])
