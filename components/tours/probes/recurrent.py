"""Probes of this lesson: what its tour steps quote, ask and check, from its parts' offers.

The offers (components/ui/parts/recurrent/): "recurrent.reading" (the tokens, the loss step),
"recurrent.distance" (‖∂L/∂X_t‖ of every model against k = τ − t, as the first chart draws
it), "recurrent.theory" (r^k, the linear orthogonal RNN and the RNN of the controls, each
‖∂L/∂H_t‖ against k; r and the slider's value), "recurrent.clipping" (the totals and the
early shares without and with clipping) and "recurrent.gates" (the LSTM's forget gates).
Every line is indexed by k: index 0 is the loss step itself.
"""

from __future__ import annotations

import numpy as np

from components.tours.probes import Choice, Live, Number, probe

# The fixed options of the choice questions, in the tour file's order.
LARGER, SMALLER = 0, 1
SHARE_LARGER, SHARE_SAME, SHARE_SMALLER = 0, 1, 2


def _at(line, k: int | None) -> int:
    """The index of distance k on a line (the farthest one for None, or past the end)."""
    last = len(line) - 1
    return last if k is None else min(max(int(k), 0), last)


def _ratio(line, k: int | None) -> float:
    """How much of the gradient at the loss step is left k steps back."""
    line = np.asarray(line, dtype=np.float64)
    return float(line[_at(line, k)] / line[0])


@probe("recurrent.n_tokens", reads=("recurrent.reading",))
def n_tokens(live: Live) -> int:
    return int(live.need("recurrent.reading")["n_steps"])


@probe("recurrent.tau", reads=("recurrent.reading",))
def tau(live: Live) -> int:
    return int(live.need("recurrent.reading")["tau"])


@probe("recurrent.token", reads=("recurrent.reading",))
def token(live: Live, which: str = "loss") -> str:
    """The first token, or the one at the loss step (a step's number for a random input)."""
    reading = live.need("recurrent.reading")
    step = 0 if which == "first" else int(reading["tau"])
    tokens = reading["tokens"]
    return f"t = {step}" if tokens is None else str(tokens[step])


@probe("recurrent.first_vs_loss", reads=("recurrent.distance",))
def first_vs_loss(live: Live, model: str = "RNN") -> Choice:
    """Whether `model`'s gradient reaching the farthest input (the first token) is larger or
    smaller than at the loss step. One that overflowed to inf on the way back is larger."""
    line = np.asarray(live.need("recurrent.distance")["norms"][model], dtype=np.float64)
    far = line[-1]
    larger = bool(far > line[0]) or (np.isinf(far) and not np.isinf(line[0]))
    return Choice(right=LARGER if larger else SMALLER)


@probe("recurrent.reaching", reads=("recurrent.distance",))
def reaching(live: Live, model: str = "RNN", k: int | None = None) -> float:
    """`model`'s ‖∂L/∂X‖ k steps back (the first token for no k), over its value at the loss."""
    return _ratio(live.need("recurrent.distance")["norms"][model], k)


@probe("recurrent.r", reads=("recurrent.theory",))
def radius(live: Live) -> float:
    """r of the theory chart: the slider's, or the trained W_hh's largest singular value."""
    return float(live.need("recurrent.theory")["r"])


@probe("recurrent.k", reads=("recurrent.theory",))
def distance(live: Live, k: int = 10) -> int:
    """k, or the farthest distance the sentence has when it is shorter."""
    return _at(live.need("recurrent.theory")["k"], k)


@probe("recurrent.linear_after", reads=("recurrent.theory",))
def linear_after(live: Live, k: int = 10) -> Number:
    """How much of the gradient the linear orthogonal RNN keeps k steps back, as measured
    (its line on the theory chart; ‖∂L/∂H_τ‖ = ‖u‖ = 1)."""
    measured = live.need("recurrent.theory")["measured"]
    if measured is None:  # trained weights: the chart draws no linear RNN
        raise ValueError("the linear RNN is drawn with constructed weights only")
    return Number(_ratio(measured, k), relative=0.1)


@probe("recurrent.theory_after", reads=("recurrent.theory",))
def theory_after(live: Live, k: int = 10) -> float:
    """r^k, as the dashed line draws it."""
    return _ratio(live.need("recurrent.theory")["formula"], k)


@probe("recurrent.network_after", reads=("recurrent.theory",))
def network_after(live: Live, k: int = 10) -> float:
    """How much of the gradient the RNN of the controls keeps k steps back."""
    return _ratio(live.need("recurrent.theory")["network"], k)


def growth_per_step(line) -> float:
    """The factor by which a line's finite points grow per step on average: exp of the
    least-squares slope of ln ‖·‖ against k (nan with fewer than two such points)."""
    line = np.asarray(line, dtype=np.float64)
    k = np.arange(len(line))
    kept = np.isfinite(line) & (line > 0)
    if kept.sum() < 2:
        return float("nan")
    slope = np.polyfit(k[kept], np.log(line[kept]), 1)[0]
    return float(np.exp(slope))


@probe("recurrent.grows", reads=("recurrent.theory",))
def grows(live: Live, above: float = 1.1, factor: float = 1.05) -> bool:
    """Done when the slider's r is above `above` AND the RNN's line on the theory chart grows
    back through time: by at least `factor` a step on average, and higher at its farthest
    finite point than at the loss step."""
    theory = live.need("recurrent.theory")
    if not float(theory["control_r"]) > above:
        return False
    line = np.asarray(theory["network"], dtype=np.float64)
    finite = line[np.isfinite(line)]
    if finite.size < 2 or not finite[-1] > line[0]:
        return False
    return bool(growth_per_step(line) >= factor)


@probe("recurrent.clip", reads=("recurrent.clipping",))
def clip(live: Live) -> float:
    return float(live.need("recurrent.clipping")["clip"])


@probe("recurrent.clip_share", reads=("recurrent.clipping",))
def clip_share(live: Live) -> Choice:
    """Whether clipping makes the early steps' share of the gradient larger, the same (to
    float32 rounding) or smaller, from the shares the clipping chart draws."""
    before, after = (float(v) for v in live.need("recurrent.clipping")["shares"].values())
    if np.isclose(after, before, rtol=1e-3, atol=0.0, equal_nan=True):
        return Choice(right=SHARE_SAME)
    return Choice(right=SHARE_LARGER if after > before else SHARE_SMALLER)


def _forget(live: Live) -> np.ndarray:
    forget = np.asarray(live.need("recurrent.gates")["forget"], dtype=np.float64)
    return forget[np.isfinite(forget)]


@probe("recurrent.forget_mean", reads=("recurrent.gates",))
def forget_mean(live: Live) -> float:
    """The LSTM's mean forget gate over every step and unit the gates chart draws."""
    return float(_forget(live).mean())


@probe("recurrent.forget_bias", reads=("recurrent.gates",))
def forget_bias(live: Live) -> float:
    return float(live.need("recurrent.gates")["bias"])


@probe("recurrent.latched", reads=("recurrent.gates",))
def latched(live: Live) -> int:
    """Trained LSTM units whose forget gate stays above the level at every step of the wait
    between reading the symbols and recalling them (0 for constructed weights)."""
    gates = live.need("recurrent.gates")
    if gates["wait"] is None:
        return 0
    start, stop = gates["wait"]
    forget = np.nan_to_num(np.asarray(gates["forget"], dtype=np.float64)[start:stop])
    return int((forget > gates["level"]).all(axis=0).sum())


@probe("recurrent.latch_level", reads=("recurrent.gates",))
def latch_level(live: Live) -> float:
    return float(live.need("recurrent.gates")["level"])


@probe("recurrent.units", reads=("recurrent.gates",))
def units(live: Live) -> int:
    return int(np.asarray(live.need("recurrent.gates")["forget"]).shape[1])
