"""Probes of the lesson "Recurrence returns": what its tour steps quote, ask and check, from
its parts' offers (components/ui/parts/recurrence/).

"recurrence.two_ways": the sentence's length `n`, the largest |difference| of each form from
the parallel one (`differences`: la, ret, ret_chunk, ssm), the chunk size and the time of one
more token at the lengths timed (`times`: length → seconds under `<model>_<step|parallel>_s`).
"recurrence.state": the floats each model carries from token to token against the lengths the
state chart draws (`lengths`, `floats`: linear_attention, retention, ssm, kv_cache).
"recurrence.steps": the sequential steps of training against the lengths the steps chart draws
(`steps`: recurrent, parallel, scan, chunkwise). "recurrence.patterns": one head's patterns
`[query, key]` (softmax, linear, retention, decay) and the decay γ of the slider.
"recurrence.selective": the Δ factor and both layers' Δ and kept fraction `[pos, channel]`.
"recurrence.flow": every model's ‖∂L/∂X‖ by distance k = τ − t (index 0: the loss token),
under the run's model names, with the names drawn and the SSM's kept share of each token.
"""

from __future__ import annotations

import math

import numpy as np

from components.tours.probes import Choice, Live, Number, probe

TWO_WAYS = "recurrence.two_ways"
STATE = "recurrence.state"
STEPS = "recurrence.steps"
PATTERNS = "recurrence.patterns"
SELECTIVE = "recurrence.selective"
FLOW = "recurrence.flow"

# The fixed options of the yes/no question, in the tour file's order.
YES, NO = 0, 1
# How close to 1 every row's sum must be for "a row sums to 1" (linear attention's rows
# miss it by float32 rounding, some 1e-7).
SUMS_TO_ONE = 1e-3


# --- the same output, two ways ------------------------------------------------------------


@probe("recurrence.n_tokens", reads=(TWO_WAYS,))
def n_tokens(live: Live) -> int:
    return int(live.need(TWO_WAYS)["n"])


@probe("recurrence.difference", reads=(TWO_WAYS,))
def difference(live: Live, form: str = "la") -> float:
    """The largest |difference| of `form` (la, ret, ret_chunk, ssm) from the parallel one."""
    return float(live.need(TWO_WAYS)["differences"][form])


@probe("recurrence.chunk", reads=(TWO_WAYS,))
def chunk(live: Live) -> int:
    return int(live.need(TWO_WAYS)["chunk"])


def _length_index(lengths: np.ndarray, at, n: int) -> int:
    """Where length `at` is among the drawn lengths: "sentence" (the visitor's n),
    "longest" (the last one drawn) or a number drawn."""
    lengths = np.asarray(lengths)
    if at == "longest":
        return len(lengths) - 1
    wanted = n if at == "sentence" else int(at)
    found = np.flatnonzero(lengths == wanted)
    if not found.size:
        raise ValueError(f"the chart draws no length {wanted}")
    return int(found[0])


def _state_at(state, model: str, at) -> int:
    lengths = state["lengths"]
    return int(np.asarray(state["floats"][model])[_length_index(lengths, at, state["n"])])


@probe("recurrence.length", reads=(STATE,))
def length(live: Live, at: str | int = "longest") -> int:
    state = live.need(STATE)
    return int(np.asarray(state["lengths"])[_length_index(state["lengths"], at, state["n"])])


@probe("recurrence.state_floats", reads=(STATE,))
def state_floats(live: Live, model: str = "retention", at: str | int = "sentence") -> int:
    """The floats `model` (or kv_cache) carries at length `at`, as the state chart draws them."""
    return _state_at(live.need(STATE), model, at)


@probe("recurrence.kv_over_state", reads=(STATE,))
def kv_over_state(live: Live, model: str = "retention", at: str | int = "longest") -> Number:
    """How many times `model`'s state the KV cache holds at length `at`; within 10 %."""
    state = live.need(STATE)
    ratio = _state_at(state, "kv_cache", at) / _state_at(state, model, at)
    return Number(float(ratio), relative=0.1)


@probe("recurrence.steps_in_a_row", reads=(STEPS,))
def steps_in_a_row(live: Live, form: str = "recurrent", at: str | int = "sentence") -> int:
    """Training's sequential steps of `form` at length `at`, as the steps chart draws them."""
    drawn = live.need(STEPS)
    where = _length_index(drawn["lengths"], at, drawn["n"])
    return int(np.asarray(drawn["steps"][form])[where])


@probe("recurrence.token_time", reads=(TWO_WAYS,))
def token_time(live: Live, model: str = "linear_attention", form: str = "step") -> float:
    """µs for one more token at the longest length timed: one step from the carried state
    (`form` "step") or the parallel form recomputed over the prefix ("parallel")."""
    times = live.need(TWO_WAYS)["times"]
    return 1e6 * float(times[max(times)][f"{model}_{form}_s"])


@probe("recurrence.timed_length", reads=(TWO_WAYS,))
def timed_length(live: Live) -> int:
    return int(max(live.need(TWO_WAYS)["times"]))


# --- attention without softmax ----------------------------------------------------------------


def _pattern(live: Live, name: str) -> np.ndarray:
    return np.asarray(live.need(PATTERNS)[name], dtype=np.float64)


def _row_sums(live: Live, name: str = "retention") -> np.ndarray:
    """Each query's total weight over the keys it sees (the pattern is 0 above the diagonal)."""
    return _pattern(live, name).sum(axis=-1)


@probe("recurrence.sums_to_one", reads=(PATTERNS,))
def sums_to_one(live: Live, pattern: str = "retention") -> Choice:
    """Whether every row of `pattern` sums to 1 (yes, no: the tour file's options)."""
    ones = np.abs(_row_sums(live, pattern) - 1.0) <= SUMS_TO_ONE
    return Choice(right=YES if bool(ones.all()) else NO)


@probe("recurrence.row_sum", reads=(PATTERNS,))
def row_sum(live: Live, pattern: str = "retention", which: str = "low") -> float:
    """The least (`which` "low") or the largest ("high") row sum of `pattern`."""
    sums = _row_sums(live, pattern)
    return float(sums.min() if which == "low" else sums.max())


@probe("recurrence.negative_share", reads=(PATTERNS,))
def negative_share(live: Live, pattern: str = "retention") -> float:
    """The share of the weights a query gives the keys it sees (j ≤ i) that are below zero."""
    values = _pattern(live, pattern)
    seen = values[np.tri(values.shape[-1], dtype=bool)]
    return float((seen < 0).mean())


@probe("recurrence.gamma", reads=(PATTERNS,))
def gamma(live: Live) -> float:
    return float(live.need(PATTERNS)["gamma"])


@probe("recurrence.head", reads=(PATTERNS,))
def head(live: Live) -> str:
    return f"H{int(live.need(PATTERNS)['head'])}"


def _reach(gamma: float, level: float) -> float:
    return math.inf if gamma >= 1.0 else math.log(level) / math.log(gamma)


@probe("recurrence.reach", reads=(PATTERNS,))
def reach(live: Live, level: float = 0.01) -> float:
    """After how many tokens the decay γ^k falls below `level` (k = log level / log γ)."""
    return _reach(float(live.need(PATTERNS)["gamma"]), float(level))


@probe("recurrence.decays_within", reads=(PATTERNS,))
def decays_within(live: Live, k: int = 10, level: float = 0.01) -> bool:
    """Done when a key `k` tokens back keeps less than `level` of its weight: γ^k < level."""
    return bool(float(live.need(PATTERNS)["gamma"]) ** int(k) < float(level))


# --- the selective state ---------------------------------------------------------------------


def _kept(live: Live, layer: str) -> np.ndarray:
    return np.asarray(live.need(SELECTIVE)[layer]["kept"], dtype=np.float64)


@probe("recurrence.delta_scale", reads=(SELECTIVE,))
def delta_scale(live: Live) -> float:
    return float(live.need(SELECTIVE)["scale"])


@probe("recurrence.kept_mean", reads=(SELECTIVE,))
def kept_mean(live: Live, layer: str = "selective") -> float:
    """The mean kept fraction exp(Δ_t A) over every token and channel of `layer`."""
    return float(_kept(live, layer).mean())


@probe("recurrence.kept_spread", reads=(SELECTIVE,))
def kept_spread(live: Live, layer: str = "selective") -> float:
    """How far `layer`'s kept fraction, averaged over channels, moves from token to token:
    its largest minus its least (exactly 0 for a layer whose Δ ignores the token)."""
    means = _kept(live, layer).mean(axis=1)
    return float(means.max() - means.min())


@probe("recurrence.kept_extreme", reads=(SELECTIVE,))
def kept_extreme(live: Live, layer: str = "selective", which: str = "least") -> str:
    """The token at which `layer` keeps least (or most) of its state, mean over channels."""
    means = _kept(live, layer).mean(axis=1)
    at = int(np.argmin(means) if which == "least" else np.argmax(means))
    return str(live.need(SELECTIVE)["tokens"][at])


@probe("recurrence.kept_at_extreme", reads=(SELECTIVE,))
def kept_at_extreme(live: Live, layer: str = "selective", which: str = "least") -> float:
    means = _kept(live, layer).mean(axis=1)
    return float(means.min() if which == "least" else means.max())


# --- gradient flow through time ----------------------------------------------------------------


def _reaching(line) -> float:
    """What reaches the first token (the farthest k) for each unit at the loss token (k = 0);
    nan where the loss token gets none or a value is not finite."""
    line = np.asarray(line, dtype=np.float64)
    first, own = line[-1], line[0]
    if not (np.isfinite(first) and np.isfinite(own)) or own == 0:
        return math.nan
    return float(first / own)


@probe("recurrence.reaching", reads=(FLOW,))
def reaching(live: Live, model: str = "RNN") -> float:
    """`model`'s ‖∂L/∂X_0‖ / ‖∂L/∂X_τ‖, from the line the flow chart draws."""
    return _reaching(live.need(FLOW)["norms"][model])


@probe("recurrence.weakest", reads=(FLOW,))
def weakest(live: Live) -> Choice:
    """Which model's gradient reaching the first token is smallest, for each unit that
    reaches the loss token: the options are the models as the chart names them."""
    flow = live.need(FLOW)
    models = list(flow["norms"])
    ratios = np.array([_reaching(flow["norms"][m]) for m in models])
    if not np.isfinite(ratios).any():
        raise ValueError("no model's gradient reaches the first token measurably")
    right = int(np.nanargmin(np.where(np.isfinite(ratios), ratios, np.nan)))
    return Choice(right=right, options=tuple(str(flow["names"][m]) for m in models))


@probe("recurrence.flow_tau", reads=(FLOW,))
def flow_tau(live: Live) -> int:
    return int(live.need(FLOW)["tau"])


@probe("recurrence.ssm_kept_first", reads=(FLOW,))
def ssm_kept_first(live: Live) -> float:
    """How much of the first token's SSM state is still in the state at the loss token."""
    return float(np.asarray(live.need(FLOW)["kept"], dtype=np.float64)[0])
